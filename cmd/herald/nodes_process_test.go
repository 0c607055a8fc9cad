package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/cluster/clustertest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// The multi-process suite of several nodes (make test-nodes): PostgreSQL, `herald sim` in its own
// process, and three `herald serve --node-addr` over one schema, each reaching PostgreSQL through
// a proxy the test can cut. Every test checks the simulator's publication log.

// nodesLease is the lease lifetime the suite's nodes run with: short, so that a takeover happens
// within seconds.
const nodesLease = 2 * time.Second

type nodes struct {
	t     *testing.T
	pgURL string
	sim   string
	key   string
	nodes []*node
	// recs are the nodes' recorders, when their calls go through one (startRecordedNodes);
	// posted maps each accepted post's text to its id (publish), so that a text published
	// twice can be explained.
	recs   []*simRecorder
	posted sync.Map
}

type node struct {
	dir, addr string
	pg        *clustertest.Proxy
	p         *proc
}

func needNodes(t *testing.T) {
	t.Helper()
	if os.Getenv("HERALD_NODES") != "1" {
		t.Skip("the multi-process suite of several nodes runs with HERALD_NODES=1 (make test-nodes)")
	}
}

// startNodes starts PostgreSQL (a fresh schema), the simulator and n nodes; the first node makes
// the sandbox's demo user, key and accounts, the others find them in the store.
func startNodes(t *testing.T, n int, extra ...string) *nodes {
	t.Helper()
	return startNodesWith(t, n, []string{"--latency", "2ms"}, extra...)
}

// startNodesWith is startNodes with the simulator's own flags (its latency, its faults).
func startNodesWith(t *testing.T, n int, simFlags []string, extra ...string) *nodes {
	t.Helper()
	ns := &nodes{t: t, pgURL: pgtest.URL(t), sim: startSim(t, append([]string{"--limit-scale", "100"}, simFlags...)...)}
	ns.keepLogs()
	for i := range n {
		ns.add(extra...)
		if i == 0 {
			ns.key = sandboxKey(t, ns.nodes[0].dir)
		}
	}
	ns.balanced()
	return ns
}

// keepLogs arranges for the nodes' logs to be kept when the test fails (or HERALD_NODES_LOGS is
// set): each node's whole log is written to a file of its own, and the test's output names the
// files with a line per node (its last warning or error), so that the failure's own message
// stays at the end of the test's output instead of under thousands of lines of request logs.
// HERALD_NODES_LOGS=print prints the whole logs in the output instead.
func (ns *nodes) keepLogs() {
	t := ns.t
	t.Cleanup(func() {
		mode := os.Getenv("HERALD_NODES_LOGS")
		if !t.Failed() && mode == "" {
			return
		}
		if mode == "print" {
			for i, nd := range ns.nodes {
				t.Logf("node %d (%s) log:\n%s", i, nd.addr, nd.p.logText())
			}
			return
		}
		dir, err := os.MkdirTemp("", "herald-nodes-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
		if err != nil {
			t.Logf("the nodes' logs could not be kept: %v", err)
			return
		}
		for i, nd := range ns.nodes {
			text := nd.p.logText()
			path := filepath.Join(dir, fmt.Sprintf("node-%d.log", i))
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Logf("node %d's log could not be kept: %v", i, err)
				continue
			}
			last := ""
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
					last = line
				}
			}
			t.Logf("node %d (%s): %d log lines in %s; its last warning: %.300s", i, nd.addr, strings.Count(text, "\n"), path, last)
		}
	})
}

// settle waits until the live nodes hold every shard between them, each of them some, and the
// share has not changed for a second and a half: the leases moved after the last join (a sum of
// 256 alone is reached while the first node still holds every shard and hands them off one by
// one, each released a moment before its next owner takes it). A request meanwhile may be
// answered 503, to be retried.
func (ns *nodes) settle() {
	var last []float64
	var since time.Time
	require.Eventually(ns.t, func() bool {
		live := ns.live()
		held := make([]float64, len(live))
		sum := 0.0
		for i, nd := range live {
			held[i] = nd.gathered(ns.t, "herald_cluster_leases_held", `{kind="shard"}`)
			sum += held[i]
		}
		if sum != 256 || len(live) > 1 && slices.Contains(held, 0) || !slices.Equal(held, last) {
			last, since = held, time.Now()
			return false
		}
		return time.Since(since) >= 1500*time.Millisecond
	}, 60*time.Second, 100*time.Millisecond, "the live nodes hold every shard, shared out")
}

// add starts one more node, with a data directory and a PostgreSQL proxy of its own.
func (ns *nodes) add(extra ...string) *node {
	t := ns.t
	t.Helper()
	u, err := url.Parse(ns.pgURL)
	require.NoError(t, err)
	nd := &node{dir: t.TempDir(), addr: freeAddr(t), pg: clustertest.NewProxy(t, u.Host)}
	u.Host = nd.pg.Addr()
	nd.p = startNode(t, nd, u.String(), ns.sim, extra...)
	ns.nodes = append(ns.nodes, nd)
	ns.waitReady(nd)
	return nd
}

// nodesSecret is the secret key every node of the suite shares (HERALD_SECRET_KEY).
const nodesSecret = "5e1f0c2a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"

func startNode(t *testing.T, nd *node, store, sim string, extra ...string) *proc {
	args := append([]string{"--store", store, "--node-addr", nd.addr, "--lease-ttl", nodesLease.String(),
		"--sandbox", "--sim-url", sim, "--budget-scale", "100", "--plan-limits", "pro=1000000",
		"--log-level", "debug"}, extra...) // debug: the accounts trace their targets (a failure names the path)
	cmd := exec.Command(heraldBin, serveArgs(nd.dir, args...)...)
	cmd.Env = append(os.Environ(), "HERALD_SECRET_KEY="+nodesSecret)
	return startCommand(t, cmd)
}

func (ns *nodes) waitReady(nd *node) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(nd.p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			ns.t.Fatalf("node %s is not ready: %s", nd.addr, nd.p.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shardLease is the lease name of the shard an object's id falls in (a post's, a job's, an
// account's): the node that holds it runs the object's actor.
func shardLease(id string) string { return cluster.ShardName(cluster.ShardOf(id, app.Shards)) }

// owner is the node that holds a lease now, by the lease table (nil when none holds it).
func (ns *nodes) owner(lease string) *node {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.pgURL)
	require.NoError(ns.t, err)
	defer conn.Close(context.Background())
	var addr string
	err = conn.QueryRow(ctx, `SELECT n.addr FROM cluster_leases l JOIN cluster_nodes n ON n.id = l.owner
		WHERE l.name = $1 AND l.expires_at > now()`, lease).Scan(&addr)
	if err == pgx.ErrNoRows {
		var n, live int
		var nodes string
		_ = conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE expires_at > now()) FROM cluster_leases`).Scan(&n, &live)
		_ = conn.QueryRow(ctx, `SELECT string_agg(id::text || '@' || addr || ' ' || (now() - heartbeat_at)::text, ', ') FROM cluster_nodes`).Scan(&nodes)
		var row string
		_ = conn.QueryRow(ctx, `SELECT coalesce(owner::text, '-') || ' ' || epoch || ' ' || (expires_at - now())::text FROM cluster_leases WHERE name = $1`, lease).Scan(&row)
		ns.t.Logf("no owner of %s (%s): %d leases, %d unexpired; nodes %s", lease, row, n, live, nodes)
		return nil
	}
	require.NoError(ns.t, err)
	for _, nd := range ns.nodes {
		if nd.addr == addr {
			return nd
		}
	}
	return nil
}

// live are the nodes whose process runs.
func (ns *nodes) live() []*node {
	var out []*node
	for _, nd := range ns.nodes {
		select {
		case <-nd.p.done:
		default:
			out = append(out, nd)
		}
	}
	return out
}

// publish asks node nd to publish text to targets; the post's id when accepted.
func (ns *nodes) publish(client *http.Client, nd *node, text string, targets []string, extra string) (string, int, error) {
	var resp *http.Response
	for try := 0; ; try++ {
		req, _ := http.NewRequest("POST", nd.p.url+"/v1/posts/publish", strings.NewReader(`{"content":"`+text+`","platforms":[`+strings.Join(targets, ",")+`]`+extra+`}`))
		req.Header.Set("Authorization", "Bearer "+ns.key)
		req.Header.Set("Idempotency-Key", "nodes-"+text)
		var err error
		if resp, err = client.Do(req); err != nil {
			return "", 0, err
		}
		if resp.StatusCode != 503 || try == 20 {
			break
		}
		// Retry-After: the post's shard is moving between nodes, as a careful client retries.
		resp.Body.Close()
		time.Sleep(250 * time.Millisecond)
	}
	defer resp.Body.Close()
	var r struct {
		PostID     string `json:"post_id"`
		TrackingID string `json:"tracking_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&r)
	if r.PostID != "" {
		ns.posted.Store(text, r.PostID)
	}
	return r.PostID, resp.StatusCode, nil
}

// waitFinal waits until every post is final, asking any live node; it fails the test on a post
// lost or still open after the deadline.
func (ns *nodes) waitFinal(posts map[string]string, within time.Duration) {
	deadline := time.Now().Add(within)
	for id := range posts {
		for {
			live := ns.live()
			require.NotEmpty(ns.t, live)
			status, body := live[0].p.request(ns.key, "GET", "/v1/posts/"+id, "")
			if status == 200 {
				var post struct{ Status string }
				require.NoError(ns.t, json.Unmarshal(body, &post))
				if post.Status == "published" || post.Status == "partial" || post.Status == "failed" {
					break
				}
			} else {
				require.Contains(ns.t, []int{503}, status, "post %s: %s", id, body)
			}
			if time.Now().After(deadline) {
				ns.explain(posts)
				ns.t.Fatalf("post %s is not final: %d %s", id, status, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// noneTwice checks that no text was published twice on one network, and that each of texts was
// published once on each of platforms.
func (ns *nodes) noneTwice(texts []string, platforms ...string) {
	seen := map[string]int{}
	for _, r := range simPublications(ns.t, ns.sim) {
		seen[r.Platform+"|"+r.Text]++
	}
	for k, c := range seen {
		if c > 1 {
			_, text, _ := strings.Cut(k, "|")
			ns.explainTwice(text)
		}
		require.LessOrEqual(ns.t, c, 1, "%s published %d times", k, c)
	}
	for _, text := range texts {
		for _, pl := range platforms {
			require.Equal(ns.t, 1, seen[pl+"|"+text], "%s on %s", text, pl)
		}
	}
}

// A key revoked through one node is refused by the others within a second.
func TestNodesARevokedKeyIsRefusedEverywhere(t *testing.T) {
	needNodes(t)
	ns := startNodes(t, 3)
	out, err := herald(t, "keys", "create", "--data", ns.nodes[0].dir, "--email", "demo@herald.local", "--name", "short-lived")
	require.NoError(t, err, out)
	var k struct{ ID, Key string }
	require.NoError(t, json.Unmarshal([]byte(out), &k), out)
	for _, nd := range ns.nodes {
		status, body := nd.p.request(k.Key, "GET", "/v1/accounts", "")
		require.Equal(t, 200, status, "%s: %s", nd.addr, body)
	}
	out, err = herald(t, "keys", "revoke", "--data", ns.nodes[0].dir, k.ID)
	require.NoError(t, err, out)
	revoked := time.Now()
	for _, nd := range ns.nodes {
		for {
			status, _ := nd.p.request(k.Key, "GET", "/v1/accounts", "")
			if status == 401 {
				break
			}
			require.Equal(t, 200, status)
			require.Less(t, time.Since(revoked), time.Second, "node %s still takes the revoked key", nd.addr)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// gathered reads one sample of a metric from a node's metrics listener (0 when absent).
func (nd *node) gathered(t *testing.T, name, labels string) float64 {
	resp, err := http.Get(nd.p.metricsURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name+labels+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			require.NoError(t, err, line)
			return v
		}
	}
	return 0
}

// Two nodes share the 256 shards; the one stopped with SIGTERM hands its shards to the other,
// which takes them as hand-offs, never as takeovers, and publishes through all of them.
func TestNodesShareTheShardsAndHandThemOff(t *testing.T) {
	needNodes(t)
	ns := startNodes(t, 2)
	a, b := ns.nodes[0], ns.nodes[1]
	held := func(nd *node) float64 { return nd.gathered(t, "herald_cluster_leases_held", `{kind="shard"}`) }
	require.Eventually(t, func() bool {
		ha, hb := held(a), held(b)
		return ha+hb == 256 && ha > 0 && hb > 0
	}, 30*time.Second, 50*time.Millisecond, "the shards are shared out")

	a.p.stop()
	require.Eventually(t, func() bool { return held(b) == 256 }, 30*time.Second, 50*time.Millisecond)
	require.Zero(t, b.gathered(t, "herald_cluster_epochs_bumped_total", `{how="takeover"}`), "every shard of the stopped node was handed off")

	targets := quotedIDs(accountsByPlatform(t, b.p, ns.key), "twitter_x", "bluesky", "linkedin")
	id, status, err := ns.publish(&http.Client{Timeout: 10 * time.Second}, b, "after the hand-off", targets, "")
	require.NoError(t, err)
	require.Equal(t, 202, status)
	ns.waitFinal(map[string]string{id: "after the hand-off"}, 30*time.Second)
	ns.noneTwice([]string{"after the hand-off"}, "twitter_x", "bluesky", "linkedin")
}
