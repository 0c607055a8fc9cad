package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/cmd/herald/app"
)

// balanced waits until the cluster is at rest: every lease (the shards and the singletons) is
// held, unexpired, by the live node that rendezvous hashing names for it among the live nodes,
// and the live nodes hold every shard by their own count. No hand-off is left to make, so no
// shard moves until a node joins, leaves or dies. (settle's sum of the shards held is reached
// before that: a node that should give a shard to a newcomer still holds it.)
func (ns *nodes) balanced() {
	t := ns.t
	t.Helper()
	ns.settle()
	var why string
	if !assert.Eventually(t, func() bool {
		why = ns.unbalanced()
		return why == ""
	}, 30*time.Second, 50*time.Millisecond) {
		require.FailNow(t, "the leases do not rest with the nodes rendezvous hashing names", why)
	}
}

// unbalanced says why the cluster is not at rest ("" when it is).
func (ns *nodes) unbalanced() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.pgURL)
	require.NoError(ns.t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT id::text FROM cluster_nodes WHERE heartbeat_at > now() - make_interval(secs => $1)`, nodesLease.Seconds())
	require.NoError(ns.t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(ns.t, err)
	if len(ids) != len(ns.live()) {
		return fmt.Sprintf("%d live nodes in the table, %d processes", len(ids), len(ns.live()))
	}
	rows, err = conn.Query(ctx, `SELECT name, coalesce(owner::text, ''), expires_at > now() FROM cluster_leases`)
	require.NoError(ns.t, err)
	shards := 0
	for rows.Next() {
		var name, owner string
		var unexpired bool
		require.NoError(ns.t, rows.Scan(&name, &owner, &unexpired))
		if want := cluster.Owner(name, ids); owner != want || !unexpired {
			rows.Close()
			return fmt.Sprintf("%s is held by %q (unexpired %v), not by %s", name, owner, unexpired, want)
		}
		if strings.HasPrefix(name, "shard/") {
			shards++
		}
	}
	require.NoError(ns.t, rows.Err())
	if shards != 256 {
		return fmt.Sprintf("%d shard leases", shards)
	}
	return ""
}

// Posts scheduled through every node fire once each while the node that runs the scheduler is
// killed as they fall due: another node takes the scheduler's lease over and fires what is left.
// Every schedule is answered 201 on a cluster at rest, wherever the post's shard is.
func TestNodesAScheduledPostFiresOnceAcrossASchedulerTakeover(t *testing.T) {
	needNodes(t)
	ns := startNodes(t, 3)
	ns.balanced()
	sched := ns.owner(cluster.SingletonName("scheduler"))
	require.NotNil(t, sched, "a node runs the scheduler")
	// Accounts whose shards the scheduler's node does not hold: the kill moves the scheduler and
	// a third of the posts and jobs, not the calls. (An account of the killed node would hold its
	// queue behind the look-up of the call it left in doubt, which waits out the call time-out,
	// ten minutes by default: the SIGKILL test's case.)
	var targets, platforms []string
	for pl, id := range accountsByPlatform(t, ns.nodes[0].p, ns.key) {
		if (pl == "bluesky" || pl == "twitter_x" || pl == "linkedin" || pl == "threads" || pl == "facebook") && ns.owner(shardLease(id)) != sched {
			targets, platforms = append(targets, `"`+id+`"`), append(platforms, pl)
		}
	}
	require.NotEmpty(t, targets, "an account lives on another node than the scheduler")
	t.Logf("targets %v", platforms)
	due := time.Now().Add(4 * time.Second).UTC()
	posts := map[string]string{}
	var texts []string
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 60 {
		text := fmt.Sprintf("nodes scheduled %03d", i)
		at := due.Add(time.Duration(i) * 50 * time.Millisecond).Format(time.RFC3339Nano)
		nd := ns.nodes[i%len(ns.nodes)]
		req, _ := http.NewRequest("POST", nd.p.url+"/v1/posts/schedule", strings.NewReader(`{"content":"`+text+`","platforms":[`+strings.Join(targets, ",")+`],"scheduledAt":"`+at+`"}`))
		req.Header.Set("Authorization", "Bearer "+ns.key)
		resp, err := client.Do(req)
		require.NoError(t, err)
		var p struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
		resp.Body.Close()
		require.Equal(t, 201, resp.StatusCode, "a schedule on a cluster at rest, through node %s", nd.addr)
		require.Equal(t, "scheduled", p.Status)
		posts[p.ID] = text
		texts = append(texts, text)
	}
	require.Less(t, time.Now(), due, "every post was created before the first fell due")
	t.Cleanup(func() {
		if t.Failed() {
			ns.explain(posts)
		}
	})
	time.Sleep(time.Until(due.Add(1500 * time.Millisecond)))
	sched.p.kill9()
	ns.waitFinal(posts, 60*time.Second)
	ns.noneTwice(texts, platforms...)
	after := ns.owner(cluster.SingletonName("scheduler"))
	require.NotNil(t, after)
	require.NotEqual(t, sched.addr, after.addr, "another node took the scheduler over")
	require.Positive(t, after.gathered(t, "herald_cluster_epochs_bumped_total", `{how="takeover"}`))
}

// explain logs, for a failed test, every post of posts that is not final with its job as each
// live node answers them, the simulator's publications of its text, and every node's log lines
// that name the post or its job.
func (ns *nodes) explain(posts map[string]string) {
	live := ns.live()
	if len(live) == 0 {
		return
	}
	pubs := simPublications(ns.t, ns.sim)
	ns.t.Logf("%d publications in the simulator", len(pubs))
	for id, text := range posts {
		status, body := live[0].p.request(ns.key, "GET", "/v1/posts/"+id, "")
		var post struct {
			Status     string `json:"status"`
			TrackingID string `json:"tracking_id"`
		}
		_ = json.Unmarshal(body, &post)
		if status == 200 && (post.Status == "published" || post.Status == "partial" || post.Status == "failed") {
			continue
		}
		ns.explainPost(live, pubs, id, text, post.TrackingID)
	}
}

// explainTwice logs what explains a text published more than once: every node's calls that
// sent it (when the nodes' calls are recorded) and what explainPost says of its post.
func (ns *nodes) explainTwice(text string) {
	live := ns.live()
	ns.t.Logf("%q was published more than once", text)
	for i, rec := range ns.recs {
		for _, call := range rec.sent(text) {
			ns.t.Logf("  sent by node %d: %s", i, call)
		}
	}
	v, ok := ns.posted.Load(text)
	if !ok || len(live) == 0 {
		return
	}
	id := v.(string)
	_, body := live[0].p.request(ns.key, "GET", "/v1/posts/"+id, "")
	var post struct {
		TrackingID string `json:"tracking_id"`
	}
	_ = json.Unmarshal(body, &post)
	ns.explainPost(live, simPublications(ns.t, ns.sim), id, text, post.TrackingID)
}

// explainPost logs what every live node answers for a post and its job, what the store holds of
// the job, the simulator's publications of its text, and every node's log lines that name the
// post or the job.
func (ns *nodes) explainPost(live []*node, pubs []simRecord, id, text, jobID string) {
	ns.t.Logf("%s (%q, shard %d, job %s in shard %d)", id, text, cluster.ShardOf(id, app.Shards), jobID, cluster.ShardOf(jobID, app.Shards))
	for _, nd := range live {
		status, body := nd.p.request(ns.key, "GET", "/v1/posts/"+id, "")
		ns.t.Logf("  post through %s: %d %s", nd.addr, status, body)
		if jobID != "" {
			status, body = nd.p.request(ns.key, "GET", "/v1/jobs/"+jobID, "")
			ns.t.Logf("  job through %s: %d %s", nd.addr, status, body)
		}
	}
	if jobID != "" {
		ns.explainStore(jobID)
	}
	for _, r := range pubs {
		if r.Text == text {
			ns.t.Logf("  published: %s by %s (%s)", r.Platform, r.Account, r.ID)
		}
	}
	for i, nd := range ns.nodes {
		for _, line := range strings.Split(nd.p.logText(), "\n") {
			if strings.Contains(line, id) || jobID != "" && strings.Contains(line, jobID) {
				ns.t.Logf("  node %d (%s): %s", i, nd.addr, line)
			}
		}
	}
}

// explainStore logs what PostgreSQL holds of a job's progress: its targets still waiting for
// their accounts (jobs_waiting), its attempts, its active flag, and the leases of the shards of
// the job and of those accounts.
func (ns *nodes) explainStore(jobID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.pgURL)
	if err != nil {
		ns.t.Logf("  store: %v", err)
		return
	}
	defer conn.Close(context.Background())
	id := uuid.MustParse(jobID)
	shards := []string{shardLease(jobID)}
	rows, _ := conn.Query(ctx, `SELECT k FROM kv_jobs_waiting WHERE substring(k from 17 for 16) = $1`, id[:])
	keys, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	ns.t.Logf("  store: %d targets waiting (%v)", len(keys), err)
	for _, k := range keys {
		acc := uuid.UUID(k[:16]).String()
		shards = append(shards, shardLease(acc))
		ns.t.Logf("  store: waiting for account %s (shard %d), target %d", acc, cluster.ShardOf(acc, app.Shards), int(k[32])<<8|int(k[33]))
	}
	var attempts int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM kv_attempts WHERE substring(k from 1 for 16) = $1`, id[:]).Scan(&attempts)
	ns.t.Logf("  store: %d attempts (%v)", attempts, err)
	var active []byte
	err = conn.QueryRow(ctx, `SELECT v FROM kv_jobs_active WHERE k = $1`, id[:]).Scan(&active)
	ns.t.Logf("  store: jobs_active %x (%v)", active, err)
	rows, _ = conn.Query(ctx, `SELECT l.name, coalesce(n.addr, l.owner::text, ''), l.epoch, l.expires_at > now() FROM cluster_leases l
		LEFT JOIN cluster_nodes n ON n.id = l.owner WHERE l.name = ANY($1) ORDER BY l.name`, shards)
	for rows.Next() {
		var name, owner string
		var epoch int64
		var live bool
		if rows.Scan(&name, &owner, &epoch, &live) == nil {
			ns.t.Logf("  store: lease %s owner %s epoch %d unexpired %v", name, owner, epoch, live)
		}
	}
	rows.Close()
}

// summed is the sum of a metric's samples on a node whose labels contain every one of labels.
func (nd *node) summed(t *testing.T, name string, labels ...string) float64 {
	resp, err := http.Get(nd.p.metricsURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	sum := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(rest, l)
		}
		if !all {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[strings.LastIndexByte(rest, ' '):]), 64)
		require.NoError(t, err, line)
		sum += v
	}
	return sum
}

// Each of three nodes in turn is stopped with SIGTERM and started again (a new process: a new
// node id, and a new data directory) under a steady publish load sent to every live node, then a
// fourth node joins. Every hand-off drains its shards before it releases them, so nothing is
// ever taken over (no node logs a takeover), no attempt is left in doubt (no node looks a call up
// on a network), every accepted post is final, none is published twice, and the four nodes share
// the shards at the end.
func TestNodesRollingRestartsUnderLoadThenANodeAdded(t *testing.T) {
	needNodes(t)
	ns := startNodes(t, 3)
	ns.balanced()
	platforms := []string{"twitter_x", "bluesky", "linkedin"}
	targets := quotedIDs(accountsByPlatform(t, ns.nodes[0].p, ns.key), platforms...)
	require.Len(t, targets, 3)

	// The clients: each publishes a post at a time through the live nodes in turn. A 503 or a
	// connection refused (a node draining or gone) is sent again to the next node with the same
	// Idempotency-Key, as a careful client does, so an answer lost after its commit is answered
	// again from the key.
	var mu sync.Mutex
	accepted := map[string]string{}
	var refused atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	body := func(text string) string {
		return `{"content":"` + text + `","platforms":[` + strings.Join(targets, ",") + `]}`
	}
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(150 * time.Millisecond):
				}
				text := fmt.Sprintf("nodes roll %d-%04d", w, i)
				for try := 0; ; try++ {
					live := ns.live()
					if len(live) == 0 {
						return // the test ended, its nodes stopped
					}
					nd := live[(i+try)%len(live)]
					req, _ := http.NewRequest("POST", nd.p.url+"/v1/posts/publish", strings.NewReader(body(text)))
					req.Header.Set("Authorization", "Bearer "+ns.key)
					req.Header.Set("Idempotency-Key", "nodes-"+text)
					resp, err := client.Do(req)
					if err == nil {
						var r struct {
							PostID string `json:"post_id"`
						}
						_ = json.NewDecoder(resp.Body).Decode(&r)
						resp.Body.Close()
						if resp.StatusCode == 202 {
							mu.Lock()
							accepted[r.PostID] = text
							mu.Unlock()
							break
						}
						if !assert.Equal(t, 503, resp.StatusCode, "publish %s through %s", text, nd.addr) {
							return
						}
						assert.NotEmpty(t, resp.Header.Get("Retry-After"))
					}
					refused.Add(1)
					if !assert.Less(t, try, 100, "publish %s was never accepted", text) {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}

	// No node may look a call up on a network: that happens only to an attempt in doubt.
	lookups := func(nd *node) float64 {
		return nd.summed(t, "herald_network_calls_total", `endpoint="lookup"`)
	}
	start := time.Now()
	for i := range 3 {
		time.Sleep(2 * time.Second)
		old := ns.nodes[i]
		require.Zero(t, lookups(old), "node %s looked calls up", old.addr)
		old.p.stop()
		ns.settle()
		ns.add()
		ns.balanced()
		t.Logf("node %d restarted: %d posts accepted after %v", i, len(accepted), time.Since(start).Round(time.Millisecond))
	}
	time.Sleep(2 * time.Second)
	ns.add()
	ns.balanced()
	close(stop)
	wg.Wait()
	t.Logf("a fourth node joined: %d posts accepted, %d answers retried, after %v", len(accepted), refused.Load(), time.Since(start).Round(time.Millisecond))
	require.NotEmpty(t, accepted)

	ns.waitFinal(accepted, 60*time.Second)
	var texts []string
	for _, text := range accepted {
		texts = append(texts, text)
	}
	ns.noneTwice(texts, platforms...)
	live := ns.live()
	require.Len(t, live, 4)
	for _, nd := range live {
		require.Zero(t, nd.gathered(t, "herald_cluster_epochs_bumped_total", `{how="takeover"}`), "node %s took a shard over", nd.addr)
		require.Zero(t, lookups(nd), "node %s looked calls up", nd.addr)
		require.Positive(t, nd.gathered(t, "herald_cluster_leases_held", `{kind="shard"}`), "node %s holds shards", nd.addr)
	}
	for _, nd := range ns.nodes {
		require.NotContains(t, nd.p.logText(), `"takeover":true`, "node %s took a lease over", nd.addr)
	}
}
