package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A metric family's samples are read by their labels, and the forwards of a phase give the share
// of its requests whose post was on another node and the messages forwarded per request.
func TestForwardsOfAPhase(t *testing.T) {
	exposition := `# HELP herald_cluster_forwards_total Messages this node forwarded.
# TYPE herald_cluster_forwards_total counter
herald_cluster_forwards_total{kind="post",outcome="answered"} 60
herald_cluster_forwards_total{kind="post",outcome="unavailable"} 5
herald_cluster_forwards_total{kind="account",outcome="sent"} 120
herald_cluster_forwards_total_other 7
herald_cluster_forwards_received_total{kind="job",outcome="delivered"} 40
herald_cluster_forwards_received_total{kind="job",outcome="refused"} 2
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, exposition)
	}))
	defer srv.Close()
	e := &Env{MetricsURL: srv.URL, Client: srv.Client()}
	s, err := e.samples("herald_cluster_forwards_total")
	require.NoError(t, err)
	require.Equal(t, map[string]float64{
		`{kind="post",outcome="answered"}`:    60,
		`{kind="post",outcome="unavailable"}`: 5,
		`{kind="account",outcome="sent"}`:     120,
	}, s, "another family that shares the prefix is not read")
	require.Equal(t, "post", labelValue(`{kind="post",outcome="answered"}`, "kind"))
	require.Equal(t, "answered", labelValue(`{kind="post",outcome="answered"}`, "outcome"))
	require.Empty(t, labelValue(`{kind="post"}`, "outcome"))

	before := map[string]float64{"post/answered": 10, "account/sent": 20}
	after := map[string]float64{"post/answered": 60, "post/unavailable": 5, "account/sent": 120, "received:job/delivered": 40, "received:job/refused": 2}
	f := forwardDelta(before, after, 100)
	require.InDelta(t, 0.55, f.requests, 1e-9, "50 answered and 5 unavailable post requests of 100")
	require.InDelta(t, 1.0, f.perKind["account"], 1e-9)
	require.InDelta(t, 0.55, f.perKind["post"], 1e-9)
	require.Equal(t, map[string]float64{"unavailable": 5, "received refused": 2}, f.failed)
	require.Equal(t, "55% of the requests forwarded to their post's node, 1.55 messages forwarded between nodes per request (account 1.00, post 0.55) (forwards failed: received refused 2, unavailable 5)", f.String())
	require.Equal(t, "0% of the requests forwarded to their post's node", forwardDelta(nil, nil, 100).String(), "a single node forwards nothing")
}

// The nodes scenario runs end to end in its quick form: a single server and one, two and three
// nodes over PostgreSQL, each measured, then two SIGKILLs of a shard's owner, each followed by a
// publication on the moved account, and nothing published twice. It runs with the multi-process
// suite (HERALD_NODES=1) on PostgreSQL (persistence/pgtest), about two minutes.
func TestNodesScenarioQuick(t *testing.T) {
	if os.Getenv("HERALD_NODES") != "1" {
		t.Skip("the nodes scenario's processes run with HERALD_NODES=1 (as make test-nodes)")
	}
	pg := pgtest.URL(t)
	bin := filepath.Join(t.TempDir(), "herald")
	build := exec.Command("go", "build", "-o", bin, "../cmd/herald")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	selfBin, storeBase = bin, pg
	t.Cleanup(func() { selfBin, storeBase = "", "" })

	var log strings.Builder
	base := &Env{log: &log, Quick: true, Duration: time.Second, Connections: 8}
	r, err := nodesScenario(base)
	require.NoError(t, err, "log:\n%s", log.String())
	require.Len(t, r.Rows, 9)
	for i, row := range r.Rows[:8] {
		require.Equal(t, []string{"create", "publish"}[i%2]+", "+[]string{"single node", "1 node", "2 nodes", "3 nodes"}[i/2], row.Scenario)
		require.Positive(t, row.Ops, "%s: %s", row.Scenario, row.Notes)
		require.Contains(t, row.Notes, "of the requests forwarded")
	}
	require.Zero(t, r.Rows[0].Errors, r.Rows[0].Notes)
	require.Zero(t, r.Rows[1].Errors, r.Rows[1].Notes)
	require.Contains(t, r.Rows[1].Notes, "duplicated 0")
	require.InDelta(t, 1, r.Rows[1].Ratio, 1e-9, "the single node is its own limit")
	require.Contains(t, r.Rows[7].Notes, "of the requests forwarded to their post's node, ")

	fo := r.Rows[8]
	require.Equal(t, "failover, 3 nodes", fo.Scenario)
	require.Equal(t, 2, fo.Ops, "two kills measured")
	require.Greater(t, fo.P50ms, 0.0)
	require.GreaterOrEqual(t, fo.P95ms, fo.P50ms)
	require.Contains(t, fo.Notes, "duplicated 0", "no (post, target) published twice")
}
