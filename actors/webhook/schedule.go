package webhook

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSchedule is the wait after each failed attempt: after the first failure 10 s, then 1 min,
// 5 min, 15 min, 30 min, 1 h, 2 h, 4 h, then every 8 h; each wait is multiplied by a random factor
// between 0.8 and 1.2 (jitter). No attempt is made more than RetryWindow after the event: the
// attempts of an endpoint that never answers fall at about 0, 10 s, 1 min 10 s, 6 min, 21 min,
// 51 min, 1 h 51 min, 3 h 51 min, 7 h 51 min, 15 h 51 min and 23 h 51 min, and a last one when
// the 24 hours end.
var DefaultSchedule = []time.Duration{
	10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour,
}

// RetryWindow is how long after its event a delivery is retried.
const RetryWindow = 24 * time.Hour

// MinRetryAfter is the shortest wait a Retry-After header can ask for.
const MinRetryAfter = time.Second

// nextAttempt returns when to try again after the attempts-th attempt failed at now, or ok=false
// when the retry window is spent. retryAfter > 0 (the receiver's Retry-After) replaces the
// schedule's wait; jitter returns a factor in [0.8, 1.2].
func nextAttempt(schedule []time.Duration, attempts int, eventAt, now time.Time, retryAfter time.Duration, window time.Duration, jitter func() float64) (time.Time, bool) {
	deadline := eventAt.Add(window)
	if !now.Before(deadline) {
		return time.Time{}, false
	}
	var wait time.Duration
	if retryAfter > 0 {
		wait = max(retryAfter, MinRetryAfter)
	} else {
		i := attempts - 1
		if i >= len(schedule) {
			i = len(schedule) - 1
		}
		if i < 0 {
			i = 0
		}
		wait = time.Duration(float64(schedule[i]) * jitter())
	}
	next := now.Add(wait)
	if next.After(deadline) {
		next = deadline
	}
	return next, true
}

// parseRetryAfter reads a Retry-After header (delay in seconds or an HTTP date); 0 when absent or
// unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > int64(RetryWindow/time.Second) {
			n = int64(RetryWindow / time.Second)
		}
		return max(time.Duration(n)*time.Second, MinRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return max(d, MinRetryAfter)
		}
		return MinRetryAfter
	}
	return 0
}
