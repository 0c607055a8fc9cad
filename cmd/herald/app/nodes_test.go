package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/platforms"
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

// A node in sandbox mode joins before it seeds the demo user: its demo accounts are connected
// under the shards' leases, and a publish goes through to the simulator.
func TestASandboxNodeSeedsAndPublishes(t *testing.T) {
	a, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true,
		Store: pgtest.URL(t), NodeAddr: "127.0.0.1:7103", LeaseTTL: time.Second,
		Sandbox: true, SimAddr: "127.0.0.1:0", PasswordParams: cheapPasswords})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	t.Cleanup(func() { _ = a.Shutdown() })
	call := func(method, path, body string) (int, []byte) {
		req, err := http.NewRequest(method, a.URL()+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+a.SandboxKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	code, body := call("GET", "/v1/accounts", "")
	require.Equal(t, http.StatusOK, code, string(body))
	var accts struct {
		Data []struct{ ID, Platform string }
	}
	require.NoError(t, json.Unmarshal(body, &accts))
	require.Len(t, accts.Data, len(platforms.All))
	var bsky string
	for _, acc := range accts.Data {
		if acc.Platform == string(platforms.Bluesky) {
			bsky = acc.ID
		}
	}
	code, body = call("POST", "/v1/posts/publish", `{"content":"through a node","platforms":["`+bsky+`"]}`)
	require.Equal(t, http.StatusAccepted, code, string(body))
	require.Eventually(t, func() bool { return len(a.Sim.Publications(platforms.Bluesky)) == 1 }, 20*time.Second, 20*time.Millisecond)
}
