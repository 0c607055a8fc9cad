package app_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// awayPlacement holds every shard here until away is set; then none, and no owner is known
// (the shards are moving).
type awayPlacement struct{ away atomic.Bool }

func (p *awayPlacement) Here(int) bool    { return !p.away.Load() }
func (p *awayPlacement) Where(int) string { return "" }

// Run as one node of several (--node-addr), Herald serves what its shards hold as a single node
// does, and answers a request for an actor whose shard no node can be reached for with 503,
// Retry-After and the spec's error shape.
func TestNodeAnswers503WhenNoOwnerCanBeReached(t *testing.T) {
	url := pgtest.URL(t)
	place := &awayPlacement{}
	h := apptest.Start(t, apptest.Options{Config: func(c *app.Config) {
		c.Store, c.NodeAddr, c.Placement = url, "127.0.0.1:0", place
		c.SecretKey = strings.Repeat("5e", 32) // the key every node shares
	}})
	require.NotNil(t, h.App.Remote)
	// The node's writes fence on the leases it holds: it serves once it took every shard.
	require.Eventually(t, func() bool {
		return testkit.Gathered(t, h.App.Registry, "herald_cluster_leases_held", "kind", "shard") == app.Shards
	}, 20*time.Second, 20*time.Millisecond)
	body := map[string]any{"content": "on a node", "platforms": []string{h.Accounts[0].ID}}
	created := h.Do(http.MethodPost, "/v1/posts", body)
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Body)
	id := created.JSON(t)["id"].(string)

	place.away.Store(true)
	for _, r := range []*apptest.Response{
		h.Do(http.MethodPost, "/v1/posts", body),
		h.Do(http.MethodGet, "/v1/posts/"+id, nil),
	} {
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
		require.NotEmpty(t, r.Header.Get("Retry-After"))
		e := r.JSON(t)["error"].(map[string]any)
		require.Equal(t, "internal_error", e["code"])
		require.Contains(t, e["message"], "another Herald node")
	}

	place.away.Store(false)
	got := h.Do(http.MethodGet, "/v1/posts/"+id, nil)
	require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
}
