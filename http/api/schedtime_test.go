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
		{"no date", "09:30:00Z", nil, "", "", "not an ISO 8601"},
		{"date only", "2026-12-01", str("UTC"), "", "", "not a date-time"},
		{"bad offset", "2026-12-01T09:30:00+25:00", nil, "", "", "not an ISO 8601"},
		{"unknown zone", "2026-12-01T09:30:00", str("Mars/Olympus"), "", "", "not an IANA time zone"},
		{"+default with an offset", "2026-12-01T09:30:00+02:00+default", nil, "", "", "both an offset and +default"},
		{"naive without zone", "2026-12-01T09:30:00", nil, "", "", "has no offset"},
		{"empty", " ", nil, "", "", "must not be empty"},
		{"garbage", "tomorrow", str("UTC"), "", "", "not a date-time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
