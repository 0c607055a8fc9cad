package api

import (
	"fmt"
	"strings"
	"time"
)

// ScheduleGrace is how far in the past a schedule time may be (clock skew) and still count as
// the future.
const ScheduleGrace = 60 * time.Second

var naiveLayouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02T15:04"}

// ParseScheduledAt resolves the spec's time forms to an instant:
//   - ISO 8601 with Z or a numeric offset: that instant (timezone is ignored);
//   - a naive date-time with the suffix +default, or with timezone "default": wall time in the
//     user's time zone (UTC when none is set);
//   - a naive date-time with timezone set to an IANA zone: wall time in that zone.
//
// A naive time with neither is refused rather than guessed. A wall time that does not exist in
// its zone (the spring-forward gap) is moved forward by the length of the gap, and one that
// occurs twice (the fall-back overlap) is the earlier of the two instants, as in java.time.
func ParseScheduledAt(value string, timezone *string, userZone string) (time.Time, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return time.Time{}, fmt.Errorf("scheduledAt: must not be empty")
	}
	if strings.HasSuffix(v, "+default") {
		naive := strings.TrimSuffix(v, "+default")
		if hasOffset(naive) {
			return time.Time{}, fmt.Errorf("scheduledAt: %q has both an offset and +default; use one", value)
		}
		return naiveIn(naive, userZone, "the account's time zone")
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if hasOffset(v) {
		return time.Time{}, fmt.Errorf("scheduledAt: %q is not an ISO 8601 date-time (expected e.g. 2026-12-01T09:30:00+01:00)", value)
	}
	if timezone == nil || strings.TrimSpace(*timezone) == "" {
		return time.Time{}, fmt.Errorf("scheduledAt: %q has no offset: add Z or an offset, the suffix +default, or a timezone", value)
	}
	zone := strings.TrimSpace(*timezone)
	if zone == "default" {
		return naiveIn(v, userZone, "the account's time zone")
	}
	return naiveIn(v, zone, zone)
}

// hasOffset reports whether a date-time string ends in Z or a numeric offset.
func hasOffset(v string) bool {
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		return true
	}
	if i := strings.LastIndexAny(v, "+-"); i > 10 {
		return true
	}
	return false
}

func naiveIn(v, zone, what string) (time.Time, error) {
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return time.Time{}, fmt.Errorf("timezone: %q is not an IANA time zone", zone)
	}
	var wall time.Time
	parsed := false
	for _, layout := range naiveLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			wall, parsed = t, true
			break
		}
	}
	if !parsed {
		return time.Time{}, fmt.Errorf("scheduledAt: %q is not a date-time (expected e.g. 2026-12-01T09:30:00)", v)
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
