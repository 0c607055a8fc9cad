package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseScheduledAt(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tests := []struct {
		name, value string
		tz          *string
		user        string
		want        string // RFC 3339 UTC; "" means an error containing err
		err         string
	}{
		{"Z", "2026-12-01T09:30:00Z", nil, "", "2026-12-01T09:30:00Z", ""},
		{"Z ignores timezone", "2026-12-01T09:30:00Z", str("Asia/Tokyo"), "", "2026-12-01T09:30:00Z", ""},
		{"offset", "2026-12-01T09:30:00+05:30", nil, "", "2026-12-01T04:00:00Z", ""},
		{"negative offset ignores timezone", "2026-12-01T09:30:00-08:00", str("Europe/Paris"), "", "2026-12-01T17:30:00Z", ""},
		{"fractional", "2026-12-01T09:30:00.250Z", nil, "", "2026-12-01T09:30:00.25Z", ""},
		{"+default in user zone", "2026-12-01T09:30:00+default", nil, "Europe/Paris", "2026-12-01T08:30:00Z", ""},
		{"+default without user zone is UTC", "2026-12-01T09:30:00+default", nil, "", "2026-12-01T09:30:00Z", ""},
		{"timezone default", "2026-07-01T09:30:00", str("default"), "America/New_York", "2026-07-01T13:30:00Z", ""},
		{"IANA zone", "2026-07-01T09:30", str("Asia/Kolkata"), "UTC", "2026-07-01T04:00:00Z", ""},
		{"spring-forward gap moves forward", "2026-03-29T02:30:00", str("Europe/Paris"), "", "2026-03-29T01:30:00Z", ""},
		{"fall-back overlap takes the earlier", "2026-10-25T02:30:00", str("Europe/Paris"), "", "2026-10-25T00:30:00Z", ""},
		{"US gap", "2026-03-08T02:15:00", str("America/Chicago"), "", "2026-03-08T08:15:00Z", ""},
		{"US overlap", "2026-11-01T01:15:00", str("America/Chicago"), "", "2026-11-01T06:15:00Z", ""},
		{"Lord Howe half-hour DST", "2026-10-04T02:15:00", str("Australia/Lord_Howe"), "", "2026-10-03T15:45:00Z", ""},
		// Every ISO 8601 form clients send.
		{"minutes Z", "2027-01-15T09:30Z", nil, "", "2027-01-15T09:30:00Z", ""},
		{"minutes offset", "2027-01-15T09:30+05:30", nil, "", "2027-01-15T04:00:00Z", ""},
		{"minutes naive in zone", "2027-01-15T09:30", str("Europe/Paris"), "", "2027-01-15T08:30:00Z", ""},
		{"minutes +default", "2027-01-15T09:30+default", nil, "Asia/Tokyo", "2027-01-15T00:30:00Z", ""},
		{"lower-case z", "2027-01-15T09:30:00z", nil, "", "2027-01-15T09:30:00Z", ""},
		{"lower-case t and z", "2027-01-15t09:30z", nil, "", "2027-01-15T09:30:00Z", ""},
		{"lower-case t naive", "2027-01-15t09:30:00", str("UTC"), "", "2027-01-15T09:30:00Z", ""},
		{"basic offset", "2027-01-15T09:30:00+0530", nil, "", "2027-01-15T04:00:00Z", ""},
		{"basic offset with minutes only", "2027-01-15T09:30-0800", nil, "", "2027-01-15T17:30:00Z", ""},
		{"hour offset", "2027-01-15T09:30:00+05", nil, "", "2027-01-15T04:30:00Z", ""},
		{"negative hour offset", "2027-01-15T09:30-03", nil, "", "2027-01-15T12:30:00Z", ""},
		{"offset -00:00", "2027-01-15T09:30:00-00:00", nil, "", "2027-01-15T09:30:00Z", ""},
		{"one fractional digit", "2027-01-15T09:30:00.5Z", nil, "", "2027-01-15T09:30:00.5Z", ""},
		{"milliseconds", "2027-01-15T09:30:00.123+01:00", nil, "", "2027-01-15T08:30:00.123Z", ""},
		{"microseconds naive", "2027-01-15T09:30:00.123456", str("UTC"), "", "2027-01-15T09:30:00.123456Z", ""},
		{"nanoseconds", "2027-01-15T09:30:00.123456789Z", nil, "", "2027-01-15T09:30:00.123456789Z", ""},
		{"twelve digits truncated", "2027-01-15T09:30:00.123456789999Z", nil, "", "2027-01-15T09:30:00.123456789Z", ""},
		{"decimal comma", "2027-01-15T09:30:00,25Z", nil, "", "2027-01-15T09:30:00.25Z", ""},
		{"leap day", "2028-02-29T12:00Z", nil, "", "2028-02-29T12:00:00Z", ""},
		{"surrounding spaces", "  2027-01-15T09:30Z ", nil, "", "2027-01-15T09:30:00Z", ""},

		// Forms still refused, each with a clear reason.
		{"no date", "09:30:00Z", nil, "", "", "must start with a date YYYY-MM-DD"},
		{"date only", "2026-12-01", str("UTC"), "", "", "has a date but no time of day"},
		{"date only Z", "2026-12-01Z", nil, "", "", "followed by T and the time of day"},
		{"space for T", "2026-12-01 09:30:00Z", nil, "", "", "followed by T and the time of day"},
		{"hour only", "2027-01-15T09Z", nil, "", "", "needs minutes (hh:mm)"},
		{"basic time", "2027-01-15T0930Z", nil, "", "", "written with colons"},
		{"basic date", "20270115T09:30Z", nil, "", "", "must start with a date YYYY-MM-DD"},
		{"ordinal date", "2027-015T09:30Z", nil, "", "", "must start with a date YYYY-MM-DD"},
		{"one-digit hour", "2027-01-15T9:30Z", nil, "", "", "must be hh:mm"},
		{"one-digit seconds", "2027-01-15T09:30:5Z", nil, "", "", "seconds must be two digits"},
		{"point without digits", "2027-01-15T09:30:00.Z", nil, "", "", "followed by digits"},
		{"fraction without seconds", "2027-01-15T09:30.5Z", nil, "", "", `".5Z" after the time`},
		{"month 13", "2027-13-01T09:30Z", nil, "", "", "month 13 does not exist"},
		{"February 30", "2027-02-30T09:30Z", nil, "", "", "2027-02 has no day 30"},
		{"not a leap year", "2027-02-29T09:30Z", nil, "", "", "2027-02 has no day 29"},
		{"hour 24", "2027-01-15T24:00Z", nil, "", "", "hour 24 does not exist"},
		{"minute 60", "2027-01-15T09:60Z", nil, "", "", "minute 60 does not exist"},
		{"leap second", "2027-01-15T23:59:60Z", nil, "", "", "no leap seconds"},
		{"bad offset", "2026-12-01T09:30:00+25:00", nil, "", "", "offset +25:00 is out of range"},
		{"bad offset minutes", "2026-12-01T09:30:00+05:75", nil, "", "", "offset +05:75 is out of range"},
		{"one-digit offset", "2026-12-01T09:30:00+5", nil, "", "", "offset must be ±hh:mm, ±hhmm or ±hh"},
		{"three-digit offset", "2026-12-01T09:30:00+053", nil, "", "", "offset must be ±hh:mm, ±hhmm or ±hh"},
		{"zone name after the time", "2026-12-01T09:30:00 Europe/Paris", nil, "", "", "neither Z nor an offset"},
		{"trailing text", "2026-12-01T09:30:00Zabc", nil, "", "", `"abc" after the offset`},
		{"unknown zone", "2026-12-01T09:30:00", str("Mars/Olympus"), "", "", "not an IANA time zone"},
		{"+default with an offset", "2026-12-01T09:30:00+02:00+default", nil, "", "", "both an offset and +default"},
		{"+default with Z", "2026-12-01T09:30Z+default", nil, "", "", "both an offset and +default"},
		{"naive without zone", "2026-12-01T09:30:00", nil, "", "", "has no offset"},
		{"naive minutes without zone", "2027-01-15T09:30", nil, "", "", "has no offset"},
		{"empty", " ", nil, "", "", "must not be empty"},
		{"garbage", "tomorrow", str("UTC"), "", "", "is not an ISO 8601 date-time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseScheduledAt(tc.value, tc.tz, tc.user)
			if tc.err != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Format(time.RFC3339Nano))
		})
	}
}

func TestScheduleWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	require.NoError(t, checkScheduleWindow(now.Add(-30*time.Second), now), "within the grace")
	require.ErrorContains(t, checkScheduleWindow(now.Add(-2*time.Minute), now), "in the past")
	require.NoError(t, checkScheduleWindow(now.AddDate(1, 0, 0), now))
	require.ErrorContains(t, checkScheduleWindow(now.AddDate(1, 0, 0).Add(time.Second), now), "more than one year")
}
