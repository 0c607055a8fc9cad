package ratelimit_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/ratelimit"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// sharedQuotas opens a node's shared quotas on url, the node joined as a live one.
func sharedQuotas(t *testing.T, url string) *persistence.Quotas {
	t.Helper()
	ctx := context.Background()
	l, err := persistence.OpenLeases(ctx, url, time.Minute)
	require.NoError(t, err)
	t.Cleanup(l.Close)
	_, err = l.Join(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	q, err := persistence.OpenQuotas(ctx, url, time.Minute)
	require.NoError(t, err)
	t.Cleanup(q.Close)
	return q
}

// Over several nodes a user's hourly quota is one: a running Herald with shared quotas and two
// other nodes counting the same user's requests at once serve exactly the plan's quota together,
// and the Herald's headers and 429s are as on a single node.
func TestSharedQuotaIsOneOverEveryNode(t *testing.T) {
	url := pgtest.URL(t)
	h := apptest.Start(t, apptest.Options{Plan: "free", Config: func(c *app.Config) { c.SharedQuotas = sharedQuotas(t, url) }})
	others := []*ratelimit.Shared{ratelimit.NewShared(cluster.NewQuotas(sharedQuotas(t, url))), ratelimit.NewShared(cluster.NewQuotas(sharedQuotas(t, url)))}

	r := h.Do("GET", "/v1/me", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "60", r.Header.Get("RateLimit-Limit"))
	remaining, err := strconv.Atoi(r.Header.Get("RateLimit-Remaining"))
	require.NoError(t, err)
	require.Equal(t, 59, remaining)
	reset, err := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
	require.NoError(t, err)
	require.True(t, reset > 3500 && reset <= 3600, reset)

	var served, limited, elsewhere atomic.Int64
	var wg sync.WaitGroup
	for i := range 90 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			switch r := h.Do("GET", "/v1/accounts", nil); r.Status {
			case 200:
				served.Add(1)
			case 429:
				limited.Add(1)
				if r.ErrorCode(t) != "rate_limit_exceeded" || r.Header.Get("Retry-After") == "" {
					t.Errorf("429 without its code or Retry-After: %s", r.Body)
				}
			default:
				t.Errorf("unexpected %d: %s", r.Status, r.Body)
			}
		}()
		go func() {
			defer wg.Done()
			d := others[i%2].Take(h.User.ID, 60)
			if d.Err != nil {
				t.Errorf("take: %v", d.Err)
			}
			if d.Allowed {
				elsewhere.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(59), served.Load()+elsewhere.Load(), "60 requests an hour over every node, one spent above (here %d, elsewhere %d)", served.Load(), elsewhere.Load())
	require.Equal(t, int64(90), served.Load()+limited.Load())
	used, left := others[0].Peek(h.User.ID)
	require.LessOrEqual(t, used, 60)
	require.Greater(t, left, 59*time.Minute)
}
