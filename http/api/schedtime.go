package api

import (
	"fmt"
	"strings"
	"time"
)

// ScheduleGrace is how far in the past a schedule time may be (clock skew) and still count as
// the future.
const ScheduleGrace = 60 * time.Second

// ParseScheduledAt resolves the spec's time forms to an instant:
//   - ISO 8601 with Z or a numeric offset: that instant (timezone is ignored);
//   - a naive date-time with the suffix +default, or with timezone "default": wall time in the
//     user's time zone (UTC when none is set);
//   - a naive date-time with timezone set to an IANA zone: wall time in that zone.
//
// The date-time is ISO 8601's calendar date and time of day as clients send them (see
// parseDateTime): minutes with or without seconds, any number of fractional digits, Z or z, T or
// t, offsets ±hh:mm, ±hhmm or ±hh. A naive time with neither +default nor a timezone is refused
// rather than guessed. A wall time that does not exist in its zone (the spring-forward gap) is
// moved forward by the length of the gap, and one that occurs twice (the fall-back overlap) is
// the earlier of the two instants, as in java.time.
func ParseScheduledAt(value string, timezone *string, userZone string) (time.Time, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return time.Time{}, fmt.Errorf("scheduledAt: must not be empty")
	}
	if strings.HasSuffix(v, "+default") {
		dt, err := parseDateTime(strings.TrimSuffix(v, "+default"))
		if err != nil {
			return time.Time{}, scheduleFormError(value, err)
		}
		if dt.hasOffset {
			return time.Time{}, fmt.Errorf("scheduledAt: %q has both an offset and +default; use one", value)
		}
		return naiveIn(dt.wall, userZone)
	}
	dt, err := parseDateTime(v)
	if err != nil {
		return time.Time{}, scheduleFormError(value, err)
	}
	if dt.hasOffset {
		return dt.wall.Add(-time.Duration(dt.offset) * time.Second), nil
	}
	if timezone == nil || strings.TrimSpace(*timezone) == "" {
		return time.Time{}, fmt.Errorf("scheduledAt: %q has no offset: add Z or an offset, the suffix +default, or a timezone", value)
	}
	zone := strings.TrimSpace(*timezone)
	if zone == "default" {
		return naiveIn(dt.wall, userZone)
	}
	return naiveIn(dt.wall, zone)
}

func scheduleFormError(value string, err error) error {
	return fmt.Errorf("scheduledAt: %q is not an ISO 8601 date-time: %v (expected e.g. 2026-12-01T09:30:00Z, "+
		"2026-12-01T09:30+05:30, or 2026-12-01T09:30 with a timezone)", value, err)
}

// dateTime is a parsed ISO 8601 date-time: its wall-clock fields (in a UTC time.Time) and, when
// it carried one, its offset from UTC in seconds.
type dateTime struct {
	wall      time.Time
	hasOffset bool
	offset    int
}

// parseDateTime reads ISO 8601's extended calendar date and time of day:
//
//	YYYY-MM-DD ( T | t ) hh:mm [ :ss [ ( . | , ) fraction ] ] [ Z | z | ±hh:mm | ±hhmm | ±hh ]
//
// The fraction has any number of digits (beyond nanoseconds it is truncated). Refused: a date or
// a time alone, hours alone, the basic forms of date and time (20261201T0930), week and ordinal
// dates, 24:00, leap seconds, fields out of range and offsets of 24 hours or more. Errors say
// what is wrong, without the "scheduledAt" prefix.
func parseDateTime(v string) (dateTime, error) {
	var dt dateTime
	r := reader{s: v}
	year, ok := r.digits(4)
	if !ok || !r.byte('-') {
		return dt, fmt.Errorf("it must start with a date YYYY-MM-DD")
	}
	month, ok := r.digits(2)
	if !ok || !r.byte('-') {
		return dt, fmt.Errorf("it must start with a date YYYY-MM-DD")
	}
	day, ok := r.digits(2)
	if !ok {
		return dt, fmt.Errorf("it must start with a date YYYY-MM-DD")
	}
	if r.done() {
		return dt, fmt.Errorf("it has a date but no time of day")
	}
	if !r.byte('T') && !r.byte('t') {
		return dt, fmt.Errorf("the date must be followed by T and the time of day")
	}
	hour, ok := r.digits(2)
	if !ok {
		return dt, fmt.Errorf("the time of day must be hh:mm, hh:mm:ss or hh:mm:ss.fraction")
	}
	if !r.byte(':') {
		if _, basic := r.digits(2); basic {
			return dt, fmt.Errorf("the time of day must be written with colons (hh:mm)")
		}
		return dt, fmt.Errorf("the time of day needs minutes (hh:mm)")
	}
	minute, ok := r.digits(2)
	if !ok {
		return dt, fmt.Errorf("the time of day must be hh:mm, hh:mm:ss or hh:mm:ss.fraction")
	}
	second, nanos := 0, 0
	if r.byte(':') {
		if second, ok = r.digits(2); !ok {
			return dt, fmt.Errorf("the seconds must be two digits")
		}
		if r.byte('.') || r.byte(',') {
			frac := r.run()
			if frac == "" {
				return dt, fmt.Errorf("the decimal point must be followed by digits")
			}
			for i := 0; i < 9; i++ {
				nanos *= 10
				if i < len(frac) {
					nanos += int(frac[i] - '0')
				}
			}
		}
	}
	switch {
	case month < 1 || month > 12:
		return dt, fmt.Errorf("month %02d does not exist", month)
	case day < 1 || day > daysIn(year, month):
		return dt, fmt.Errorf("%04d-%02d has no day %02d", year, month, day)
	case hour > 23:
		return dt, fmt.Errorf("hour %02d does not exist (00 to 23)", hour)
	case minute > 59:
		return dt, fmt.Errorf("minute %02d does not exist", minute)
	case second > 59:
		return dt, fmt.Errorf("second %02d does not exist (no leap seconds)", second)
	}
	dt.wall = time.Date(year, time.Month(month), day, hour, minute, second, nanos, time.UTC)
	if r.done() {
		return dt, nil
	}
	switch {
	case r.byte('Z') || r.byte('z'):
		dt.hasOffset = true
	case r.peek() == '+' || r.peek() == '-':
		from := r.i
		sign := 1
		if r.next() == '-' {
			sign = -1
		}
		oh, ok := r.digits(2)
		if !ok {
			return dt, fmt.Errorf("the offset must be ±hh:mm, ±hhmm or ±hh")
		}
		om := 0
		colon := r.byte(':')
		if colon || !r.done() {
			if om, ok = r.digits(2); !ok {
				return dt, fmt.Errorf("the offset must be ±hh:mm, ±hhmm or ±hh")
			}
		}
		if oh > 23 || om > 59 {
			return dt, fmt.Errorf("the offset %s is out of range (at most ±23:59)", v[from:r.i])
		}
		dt.hasOffset, dt.offset = true, sign*(oh*3600+om*60)
	default:
		return dt, fmt.Errorf("%q after the time is neither Z nor an offset", r.rest())
	}
	if !r.done() {
		return dt, fmt.Errorf("%q after the offset is not part of a date-time", r.rest())
	}
	return dt, nil
}

// reader walks a string byte by byte.
type reader struct {
	s string
	i int
}

func (r *reader) done() bool   { return r.i >= len(r.s) }
func (r *reader) rest() string { return r.s[r.i:] }

func (r *reader) peek() byte {
	if r.done() {
		return 0
	}
	return r.s[r.i]
}

func (r *reader) next() byte {
	b := r.peek()
	r.i++
	return b
}

// byte consumes b if it comes next.
func (r *reader) byte(b byte) bool {
	if r.peek() == b && !r.done() {
		r.i++
		return true
	}
	return false
}

// digits consumes exactly n decimal digits.
func (r *reader) digits(n int) (int, bool) {
	if r.i+n > len(r.s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(r.s[r.i : r.i+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	r.i += n
	return v, true
}

// run consumes the decimal digits that come next.
func (r *reader) run() string {
	start := r.i
	for !r.done() && r.s[r.i] >= '0' && r.s[r.i] <= '9' {
		r.i++
	}
	return r.s[start:r.i]
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// naiveIn places a wall-clock time (read as UTC fields) in an IANA zone ("" is UTC).
func naiveIn(wall time.Time, zone string) (time.Time, error) {
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return time.Time{}, fmt.Errorf("timezone: %q is not an IANA time zone", zone)
	}
	return resolveWall(wall, loc), nil
}

// resolveWall finds the instant of a wall-clock time (read as UTC fields) in loc.
func resolveWall(wall time.Time, loc *time.Location) time.Time {
	_, before := wall.Add(-36 * time.Hour).In(loc).Zone()
	_, after := wall.Add(36 * time.Hour).In(loc).Zone()
	var valid []time.Time
	for _, off := range []int{before, after} {
		t := wall.Add(-time.Duration(off) * time.Second)
		local := t.In(loc)
		if local.Year() == wall.Year() && local.YearDay() == wall.YearDay() && local.Hour() == wall.Hour() &&
			local.Minute() == wall.Minute() && local.Second() == wall.Second() {
			valid = append(valid, t)
		}
		if before == after {
			break
		}
	}
	switch len(valid) {
	case 0: // the gap: read with the offset before it, which moves it forward by the gap
		return wall.Add(-time.Duration(before) * time.Second).UTC()
	case 1:
		return valid[0].UTC()
	}
	if valid[1].Before(valid[0]) {
		return valid[1].UTC()
	}
	return valid[0].UTC()
}

// checkScheduleWindow applies the spec's rules: in the future (within the grace) and at most one
// year ahead.
func checkScheduleWindow(at, now time.Time) error {
	if at.Before(now.Add(-ScheduleGrace)) {
		return fmt.Errorf("scheduledAt: %s is in the past", at.Format(time.RFC3339))
	}
	if at.After(now.AddDate(1, 0, 0)) {
		return fmt.Errorf("scheduledAt: %s is more than one year ahead", at.Format(time.RFC3339))
	}
	return nil
}
