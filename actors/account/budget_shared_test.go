package account

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/platforms"
)

// sharedBudgets makes n nodes' budgets over one PostgreSQL database, each sharing its
// app-wide rules through its own connections.
func sharedBudgets(t *testing.T, url string, rules map[platforms.Platform][]Rule, n int) []*Budgets {
	t.Helper()
	ctx := context.Background()
	out := make([]*Budgets, n)
	for i := range out {
		l, err := persistence.OpenLeases(ctx, url, time.Minute)
		require.NoError(t, err)
		t.Cleanup(l.Close)
		_, err = l.Join(ctx, "127.0.0.1:0")
		require.NoError(t, err)
		q, err := persistence.OpenQuotas(ctx, url, time.Minute)
		require.NoError(t, err)
		t.Cleanup(q.Close)
		out[i] = NewBudgets(rules)
		out[i].Share(cluster.NewQuotas(q))
	}
	return out
}

// Three nodes publishing at once through many accounts never spend more than an app-wide daily
// limit together: X's app limit (with each account's own 15-minute limit kept by its node) and
// YouTube's units, shared by the publishes and the live calls that spend them; a refund gives the
// units back for the others.
func TestSharedBudgetsNeverExceedAnAppWideLimitAcrossNodes(t *testing.T) {
	rules := map[platforms.Platform][]Rule{
		platforms.X:       {{Name: "tweets", Limit: 5, Window: 15 * time.Minute, Cost: 1}, {Name: "tweets_app", Limit: 120, Window: 24 * time.Hour, Cost: 1, PerPlatform: true}},
		platforms.YouTube: {{Name: "units", Limit: 10000, Window: 24 * time.Hour, Cost: 1600, PerPlatform: true}},
	}
	url := pgtest.URL(t)
	nodes := sharedBudgets(t, url, rules, 3)
	now := time.Now()
	var tweets, videos, comments atomic.Int64
	var wg sync.WaitGroup
	for i, b := range nodes {
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range 60 {
					// Each node has its own accounts (an account's actor runs on one node).
					acct := fmt.Sprintf("n%d-g%d-a%d", i, g, k%10)
					if ok, _ := b.Reserve(platforms.X, acct, now); ok {
						tweets.Add(1)
					}
					if ok, _ := b.Reserve(platforms.YouTube, acct, now); ok {
						videos.Add(1)
					}
					// A comment's reply spends 50 units of the same daily quota.
					if ok, _ := b.reserveOp(platforms.YouTube, acct, OpReply, DefaultReadRules[platforms.YouTube][OpReply], 1, now); ok {
						comments.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	require.Equal(t, int64(120), tweets.Load(), "X's app limit, over every node")
	units := videos.Load()*1600 + comments.Load()*50
	require.LessOrEqual(t, units, int64(10000), "YouTube's units, over every node: %d videos, %d comments", videos.Load(), comments.Load())
	require.Greater(t, units, int64(10000-1600), "the units are spent, not lost")

	// The window is full for every node; a refund of one node gives room to another.
	for _, b := range nodes {
		ok, retry := b.Reserve(platforms.X, "late", now)
		require.False(t, ok)
		require.WithinDuration(t, time.Now().Add(24*time.Hour), retry, time.Minute)
		require.Zero(t, b.Remaining(platforms.X, "late", now))
	}
	// A call refunded on a node that then stops goes back to the database, for a node that
	// has not seen the window full.
	nodes[0].Refund(platforms.X, "n0-g0-a0")
	require.NoError(t, nodes[0].shared.Close(context.Background()))
	fresh := sharedBudgets(t, url, rules, 1)[0]
	ok, _ := fresh.Reserve(platforms.X, "late", now)
	require.True(t, ok, "the refunded call")
	ok, _ = fresh.Reserve(platforms.X, "late", now)
	require.False(t, ok)
}
