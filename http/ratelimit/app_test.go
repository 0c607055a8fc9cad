package ratelimit_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
)

// The plan's hourly quota through a running Herald: its headers, and exactly the quota served
// to concurrent requests of two keys of one user.
func TestRateLimitHeadersAndExactQuota(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Plan: "free"})
	// A second key of the same user shares the quota.
	k2, err := auth.CreateKey(context.Background(), h.App.Store, "owner@example.com", "second", 0, time.Now())
	require.NoError(t, err)

	r := h.Do("GET", "/v1/me", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "60", r.Header.Get("RateLimit-Limit"))
	require.Equal(t, "59", r.Header.Get("RateLimit-Remaining"))
	reset, err := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
	require.NoError(t, err)
	require.True(t, reset > 3500 && reset <= 3600, reset)
	require.Equal(t, `"free";q=60;w=3600`, r.Header.Get("RateLimit-Policy"))
	require.Equal(t, `"free";r=59;t=`+strconv.Itoa(reset), r.Header.Get("RateLimit"))

	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := h.Key
			if i%2 == 1 {
				key = k2.Key
			}
			r := h.DoKey(key, "GET", "/v1/accounts", nil, nil)
			switch r.Status {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
				if r.ErrorCode(t) != "rate_limit_exceeded" || r.Header.Get("Retry-After") == "" {
					t.Errorf("429 without its code or Retry-After: %s", r.Body)
				}
			default:
				t.Errorf("unexpected %d", r.Status)
			}
		}(i)
	}
	wg.Wait()
	require.Equal(t, int64(59), ok.Load(), "60 requests per hour in all, one spent above")
	require.Equal(t, int64(141), limited.Load())
}
