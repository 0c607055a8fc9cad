package webhook

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNextAttempt(t *testing.T) {
	t.Parallel()
	event := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	one := func() float64 { return 1 }
	cases := []struct {
		name       string
		attempts   int
		now        time.Time
		retryAfter time.Duration
		jitter     func() float64
		want       time.Time
		ok         bool
	}{
		{"first failure waits 10s", 1, event, 0, one, event.Add(10 * time.Second), true},
		{"second waits 1m", 2, event.Add(time.Minute), 0, one, event.Add(2 * time.Minute), true},
		{"ninth waits 8h", 9, event.Add(time.Hour), 0, one, event.Add(9 * time.Hour), true},
		{"past the table the last wait repeats", 30, event.Add(time.Hour), 0, one, event.Add(9 * time.Hour), true},
		{"jitter low", 1, event, 0, func() float64 { return 0.8 }, event.Add(8 * time.Second), true},
		{"jitter high", 1, event, 0, func() float64 { return 1.2 }, event.Add(12 * time.Second), true},
		{"Retry-After replaces the schedule", 5, event, 7 * time.Second, one, event.Add(7 * time.Second), true},
		{"Retry-After is at least 1s", 5, event, time.Millisecond, one, event.Add(time.Second), true},
		{"never past the window", 10, event.Add(20 * time.Hour), 0, one, event.Add(24 * time.Hour), true},
		{"window spent", 11, event.Add(24 * time.Hour), 0, one, time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := nextAttempt(DefaultSchedule, tc.attempts, event, tc.now, tc.retryAfter, RetryWindow, tc.jitter)
			require.Equal(t, tc.ok, ok)
			require.True(t, tc.want.Equal(got), "got %s want %s", got, tc.want)
		})
	}
	// The documented schedule: an endpoint that never answers gets 12 attempts, the 11th at
	// 23 h 51 min 10 s and the last when the 24-hour window ends.
	at, n := event, 1
	var times []time.Duration
	for {
		next, ok := nextAttempt(DefaultSchedule, n, event, at, 0, RetryWindow, one)
		if !ok {
			break
		}
		at, n = next, n+1
		times = append(times, at.Sub(event))
	}
	require.Equal(t, 12, n)
	require.Equal(t, 23*time.Hour+51*time.Minute+10*time.Second, times[9])
	require.Equal(t, RetryWindow, times[10])
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, 120*time.Second, parseRetryAfter("120", now))
	require.Equal(t, time.Second, parseRetryAfter("0", now))
	require.Equal(t, RetryWindow, parseRetryAfter("99999999", now))
	require.Equal(t, 90*time.Second, parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now))
	require.Equal(t, time.Second, parseRetryAfter(now.Add(-time.Hour).Format(http.TimeFormat), now))
	require.Zero(t, parseRetryAfter("", now))
	require.Zero(t, parseRetryAfter("soon", now))
	require.Zero(t, parseRetryAfter("-5", now))
}
