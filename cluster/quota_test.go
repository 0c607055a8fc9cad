package cluster

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// quotaNodes opens n quota clients on url, each with its own connections, as n nodes would, and
// joins each as a live node.
func quotaNodes(t *testing.T, url string, n int) []*Quotas {
	t.Helper()
	ctx := context.Background()
	out := make([]*Quotas, n)
	for i := range out {
		l, err := persistence.OpenLeases(ctx, url, time.Minute)
		require.NoError(t, err)
		t.Cleanup(l.Close)
		_, err = l.Join(ctx, "127.0.0.1:0")
		require.NoError(t, err)
		s, err := persistence.OpenQuotas(ctx, url, time.Minute)
		require.NoError(t, err)
		t.Cleanup(s.Close)
		out[i] = NewQuotas(s)
	}
	return out
}

// hammer spends one unit at a time of the quota from every client at once, with several
// goroutines each, until each has been refused a few times in a row, and returns what each
// client was granted.
func hammer(t *testing.T, nodes []*Quotas, name string, limit int, window time.Duration) []int64 {
	t.Helper()
	granted := make([]int64, len(nodes))
	var total atomic.Int64
	var wg sync.WaitGroup
	for i, q := range nodes {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				refused := 0
				// (Past twice the limit the quota is broken: stop, and let the caller fail.)
				for refused < 5 && total.Load() <= int64(2*limit) {
					g, err := q.Take(context.Background(), name, limit, window, 1)
					if err != nil {
						t.Errorf("take: %v", err)
						return
					}
					if !g.OK {
						refused++
						continue
					}
					refused = 0
					atomic.AddInt64(&granted[i], 1)
					total.Add(1)
					if g.Remaining < 0 {
						t.Errorf("remaining %d", g.Remaining)
					}
				}
			}()
		}
	}
	wg.Wait()
	return granted
}

// Three nodes hammering one user's hourly quota at once are granted exactly the limit
// together, and nothing more in the window.
func TestThreeNodesNeverGrantMoreThanAQuotasLimit(t *testing.T) {
	url := pgtest.URL(t)
	nodes := quotaNodes(t, url, 3)
	const limit = 300
	granted := hammer(t, nodes, "api/user-1", limit, time.Hour)
	total := granted[0] + granted[1] + granted[2]
	require.Equal(t, int64(limit), total, "per node: %v", granted)
	t.Logf("granted per node: %v", granted)
	// The window is full for everyone, the other quotas untouched.
	for _, q := range nodes {
		g, err := q.Take(context.Background(), "api/user-1", limit, time.Hour, 1)
		require.NoError(t, err)
		require.False(t, g.OK)
		require.Zero(t, g.Remaining)
		require.WithinDuration(t, time.Now().Add(time.Hour), g.End, time.Minute)
		g, err = q.Take(context.Background(), "api/user-2", limit, time.Hour, 1)
		require.NoError(t, err)
		require.True(t, g.OK)
	}
}

// A node that dies with units in hand loses them (the others are never granted more than the
// limit less those), a node that stops gives them back, and a closed window opens anew in full.
func TestQuotaUnitsOfADeadNodeAreLostAndAStoppedNodesGivenBack(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	nodes := quotaNodes(t, url, 3)
	const limit = 120
	window := 3 * time.Second
	// The dead node takes one unit and holds the rest of its chunk: 120/(4·3) = 10.
	g, err := nodes[0].Take(ctx, "app/x", limit, window, 1)
	require.NoError(t, err)
	require.True(t, g.OK)
	require.Equal(t, limit-10+9, g.Remaining)
	granted := hammer(t, nodes[1:], "app/x", limit, window)
	require.Equal(t, int64(limit-10), granted[0]+granted[1], "the dead node's chunk is not granted again")

	// A node that stops gives its units in hand back: the next window, nodes[1] holds some
	// and stops, and the others get them.
	require.Eventually(t, func() bool {
		g, err := nodes[1].Take(ctx, "app/x", limit, window, 1)
		require.NoError(t, err)
		return g.OK && g.Remaining == limit-1
	}, 5*time.Second, 20*time.Millisecond, "a new window opens in full")
	used, _ := nodes[1].Peek("app/x")
	require.Equal(t, 1, used, "a chunk of 10 taken, 9 of them in hand")
	require.NoError(t, nodes[1].Close(ctx))
	granted = hammer(t, []*Quotas{nodes[2]}, "app/x", limit, window)
	require.Equal(t, int64(limit-1), granted[0], "everything but the unit spent")
}

// Sent moves a window's end once, over every node, to a window after the first call.
func TestQuotaWindowFollowsTheFirstCallSent(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	nodes := quotaNodes(t, url, 2)
	window := 2 * time.Second
	g, err := nodes[0].Take(ctx, "app/yt", 100, window, 10)
	require.NoError(t, err)
	require.True(t, g.OK)
	time.Sleep(500 * time.Millisecond) // the first call reaches the network late
	require.NoError(t, nodes[0].Sent(ctx, "app/yt", window))
	g2, err := nodes[1].Take(ctx, "app/yt", 100, window, 10)
	require.NoError(t, err)
	require.True(t, g2.OK)
	require.Greater(t, g2.End.Sub(g.End), 300*time.Millisecond, "the window ends a window after the first call, not after the first take")
	end := g2.End
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, nodes[1].Sent(ctx, "app/yt", window)) // not the first call of the window
	g3, err := nodes[1].Take(ctx, "app/yt", 100, window, 90)
	require.NoError(t, err)
	require.False(t, g3.OK, "77 left")
	require.WithinDuration(t, end, g3.End, 100*time.Millisecond)
}

// A node forgets the quotas whose window closed once it holds many (one per user seen), and
// keeps those still open.
func TestQuotasForgetClosedWindows(t *testing.T) {
	q := NewQuotas(nil)
	now := time.Now()
	for i := range pruneAbove {
		q.held[strconv.Itoa(i)] = &held{start: now.Add(-2 * time.Hour), end: now.Add(-time.Hour)}
	}
	q.held["open"] = &held{start: now, end: now.Add(time.Hour), units: 3}
	q.of("new")
	require.Len(t, q.held, 2)
	require.Equal(t, 3, q.held["open"].units)
}
