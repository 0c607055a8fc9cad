package cluster

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// A member's placement says which shards are here and where the others are, as its last step
// read the lease table: every shard is here on exactly one node, and each node names that node's
// address for it. A shard being drained is no longer here, though its writes still fence on it.
func TestPlacementFollowsTheLeases(t *testing.T) {
	url := pgtest.URL(t)
	a := startAt(t, url, 16, "10.0.0.1:7000")
	select {
	case <-a.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the member never became ready")
	}
	b := startAt(t, url, 16, "10.0.0.2:7000")
	settled(t, a, b)
	addr := map[string]string{a.Node(): "10.0.0.1:7000", b.Node(): "10.0.0.2:7000"}
	require.Eventually(t, func() bool {
		for i := range 16 {
			owner := Owner(ShardName(i), []string{a.Node(), b.Node()})
			if a.Where(i) != addr[owner] || b.Where(i) != addr[owner] {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	for i := range 16 {
		require.NotEqual(t, a.Here(i), b.Here(i), "shard %d is here on exactly one node", i)
	}
	require.Empty(t, a.Where(99), "an unknown shard is nowhere")

	// While a drains a shard it gives up, the shard is no longer here, yet held for fencing.
	held := a.Held()
	require.NotEmpty(t, held)
	name := held[0].Name
	a.mu.Lock()
	a.draining[name] = true
	a.mu.Unlock()
	_, trusted := a.Trusted(name)
	require.False(t, trusted)
	le, ok := a.Lease(name)
	require.True(t, ok)
	require.Equal(t, held[0], le)
	a.mu.Lock()
	delete(a.draining, name)
	a.mu.Unlock()
}

// Metrics count the epochs a node bumped by how it took them and the leases it holds by kind.
func TestMetricsCountTakesAndHandOffs(t *testing.T) {
	url := pgtest.URL(t)
	l, err := persistence.OpenLeases(context.Background(), url, ttl)
	require.NoError(t, err)
	t.Cleanup(l.Close)
	mt := NewMetrics(nil)
	m := New(Config{Leases: l, Addr: "x:1", Shards: 4, Singletons: []string{"scheduler"}, Metrics: mt})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	<-m.Ready()
	require.Len(t, m.Held(), 5)
	cancel()
	<-done
	require.InDelta(t, 5, counterValue(t, mt.Epochs.WithLabelValues("handoff")), 0)
	require.InDelta(t, 0, counterValue(t, mt.Epochs.WithLabelValues("takeover")), 0)
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
