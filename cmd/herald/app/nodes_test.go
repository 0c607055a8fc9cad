package app_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// A node address needs a store that several processes share: with bbolt, or with an address
// that is not HOST:PORT, Herald refuses to start and says why.
func TestNodeAddrIsRefusedWithoutPostgres(t *testing.T) {
	t.Parallel()
	_, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true, NodeAddr: "127.0.0.1:7001"})
	require.ErrorContains(t, err, "--node-addr")
	require.ErrorContains(t, err, "PostgreSQL")
	_, err = app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true, NodeAddr: "nohost",
		Store: "postgres://127.0.0.1:1/x"})
	require.ErrorContains(t, err, "HOST:PORT")
}

// Two nodes over one PostgreSQL store both start (no store-wide lock), are ready once joined,
// and share the 256 shards; when one shuts down it hands its shards to the other, which takes
// them as hand-offs, never as takeovers.
func TestTwoNodesShareTheShardsAndHandThemOff(t *testing.T) {
	url := pgtest.URL(t)
	start := func(addr string) *app.App {
		a, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true,
			Store: url, NodeAddr: addr, LeaseTTL: time.Second, MetricsPublic: true})
		require.NoError(t, err)
		require.NoError(t, a.Start(context.Background()))
		return a
	}
	ready := func(a *app.App) bool {
		resp, err := http.Get(a.URL() + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	}
	shards := func(a *app.App) float64 {
		return testkit.Gathered(t, a.Registry, "herald_cluster_leases_held", "kind", "shard")
	}
	a := start("127.0.0.1:7101")
	b := start("127.0.0.1:7102")
	stoppedA := false
	t.Cleanup(func() {
		if !stoppedA {
			_ = a.Shutdown()
		}
		_ = b.Shutdown()
	})
	require.Eventually(t, func() bool { return ready(a) && ready(b) }, 20*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		na, nb := shards(a), shards(b)
		return na+nb == app.Shards && na > 0 && nb > 0
	}, 20*time.Second, 20*time.Millisecond, "the shards are shared out")

	require.NoError(t, a.Shutdown())
	stoppedA = true
	require.Eventually(t, func() bool { return shards(b) == app.Shards }, 20*time.Second, 20*time.Millisecond)
	require.InDelta(t, 0, testkit.Gathered(t, b.Registry, "herald_cluster_epochs_bumped_total", "how", "takeover"), 0,
		"every shard of the stopped node was handed off")
	require.True(t, ready(b))
}
