package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster/clustertest"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// The links between nodes, and the quotas the nodes share, in the multi-process suite
// (nodes_process_test.go).

// startLinkedNodes starts n nodes as startNodes does, each listening for the other nodes on a
// port of its own and advertising a proxy in front of it (--node-advertise): every message
// another node sends it, and every answer to a request it forwarded, crosses that proxy, which
// the test cuts as a partition between nodes would. links[i] is node i's proxy.
func startLinkedNodes(t *testing.T, n int, extra ...string) (ns *nodes, links []*clustertest.Proxy) {
	t.Helper()
	ns = &nodes{t: t, pgURL: pgtest.URL(t), sim: startSim(t, "--limit-scale", "100", "--latency", "2ms")}
	ns.keepLogs()
	for i := range n {
		u, err := url.Parse(ns.pgURL)
		require.NoError(t, err)
		listen := freeAddr(t)
		link := clustertest.NewProxy(t, listen)
		// The node's address in the lease table is the advertised one (owner() matches on it);
		// the later --node-addr is the one it listens on.
		nd := &node{dir: t.TempDir(), addr: link.Addr(), pg: clustertest.NewProxy(t, u.Host)}
		u.Host = nd.pg.Addr()
		nd.p = startNode(t, nd, u.String(), ns.sim, append([]string{"--node-addr", listen, "--node-advertise", link.Addr()}, extra...)...)
		ns.nodes = append(ns.nodes, nd)
		links = append(links, link)
		ns.waitReady(nd)
		if i == 0 {
			ns.key = sandboxKey(t, ns.nodes[0].dir)
		}
	}
	ns.balanced()
	return ns, links
}

// answer is one HTTP answer as a client saw it.
type answer struct {
	status     int
	code       string // error.code of an error's body
	retryAfter string
	body       []byte
	header     http.Header
}

// call sends one request with the suite's key; an error is a transport failure (a client
// time-out among them).
func (ns *nodes) call(client *http.Client, nd *node, method, path, body string, header ...string) (answer, error) {
	req, err := http.NewRequest(method, nd.p.url+path, strings.NewReader(body))
	require.NoError(ns.t, err)
	req.Header.Set("Authorization", "Bearer "+ns.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: b, header: resp.Header}
	if a.status >= 400 {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		a.code = e.Error.Code
	}
	return a, nil
}

// retriable reports whether a is the 503 a client may retry: the spec's error shape with
// Retry-After.
func (a answer) retriable() bool {
	return a.status == 503 && a.retryAfter != "" && a.code == "internal_error"
}

// postsStored counts the posts in the store (every node's, read in PostgreSQL).
func (ns *nodes) postsStored() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.pgURL)
	require.NoError(ns.t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(ns.t, conn.QueryRow(ctx, `SELECT count(*) FROM kv_posts`).Scan(&n))
	return n
}

// One user's hourly quota hammered by clients through all three nodes while one of them, the
// owner of the account published to, is SIGKILLed: the requests granted never pass the limit (the
// 202s and the posts in the store counted), every other publish is refused 429
// rate_limit_exceeded with Retry-After, the surviving nodes go on granting what is left, up to
// the limit less what the dead node held, and every post accepted is published once.
func TestNodesOneUsersHourlyQuotaHeldAcrossNodesWhileOneIsKilled(t *testing.T) {
	needNodes(t)
	const limit = 150
	// The call time-out bounds the doubt a takeover waits out before it looks up the calls the
	// killed node left recorded and unanswered (the default, 10 minutes, would outlast the test).
	ns := startNodes(t, 3, "--plan-limits", "pro="+strconv.Itoa(limit), "--call-timeout", nodesCallTimeout.String())
	ids := accountsByPlatform(t, ns.nodes[0].p, ns.key)
	targets := quotedIDs(ids, "bluesky")
	require.Len(t, targets, 1)
	const setup = 1 // the request above, counted in the user's quota
	before := ns.postsStored()
	// The victim owns the Bluesky account's shard: the account moves with the kill, and the
	// attempts it had recorded ahead of its calls are taken over in doubt.
	victim := ns.owner(shardLease(ids["bluesky"]))
	require.NotNil(t, victim, "the Bluesky account's shard has an owner")

	const workers = 9
	var (
		mu                   sync.Mutex
		accepted, afterKill  int
		refused, unavailable int
		victimErrors, others int
		killedAt             atomic.Bool
		n                    atomic.Int64
		wg                   sync.WaitGroup
		killed               = make(chan struct{})
		once                 sync.Once
		texts                []string
	)
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streak := 0 // refusals in a row, over the live nodes in turn
			for i := 0; streak < 12 && time.Now().Before(deadline); i++ {
				live := ns.live()
				nd := live[(w+i)%len(live)]
				text := fmt.Sprintf("nodes quota %d-%d", w, i)
				a, err := ns.call(client, nd, "POST", "/v1/posts/publish", `{"content":"`+text+`","platforms":[`+strings.Join(targets, ",")+`]}`,
					"Idempotency-Key", text)
				mu.Lock()
				switch {
				case err != nil:
					// Only the node killed under the request may fail to answer.
					if nd == victim && killedAt.Load() {
						victimErrors++
					} else {
						others++
						assert.NoError(t, err, "publish through %s", nd.addr)
					}
				case a.status == 202:
					accepted++
					texts = append(texts, text)
					if killedAt.Load() {
						afterKill++
					}
					streak = 0
				case a.status == 429:
					refused++
					streak++
					assert.Equal(t, "rate_limit_exceeded", a.code, "%s", a.body)
					assert.NotEmpty(t, a.retryAfter, "a 429 carries Retry-After")
				case a.retriable():
					// The post's node could not be reached (a shard moving, the killed node's
					// before the others took them over): a request counted in the quota, as
					// the RateLimit headers say. One whose quota could not be counted (the
					// database not reached) carries none.
					if a.header.Get("RateLimit-Limit") != "" {
						unavailable++
					}
				default:
					others++
					assert.Fail(t, "unexpected answer", "%d %s", a.status, a.body)
				}
				mu.Unlock()
				if a.status == 202 && n.Add(1) == limit/3 {
					once.Do(func() { close(killed) })
				}
			}
		}()
	}
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("a third of the quota was never granted")
	}
	killedAt.Store(true)
	victim.p.kill9()
	wg.Wait()
	stored := ns.postsStored() - before
	t.Logf("limit %d: %d accepted (%d after the kill), %d refused, %d retriable 503s counted, %d requests lost with the killed node; %d posts stored",
		limit, accepted, afterKill, refused, unavailable, victimErrors, stored)
	require.Zero(t, others, "no other answer")

	// Never above the limit: what the clients were granted, and what the store holds (a post
	// whose node was killed before it answered may be stored unanswered).
	require.LessOrEqual(t, accepted+unavailable+setup, limit)
	require.GreaterOrEqual(t, stored, accepted)
	require.LessOrEqual(t, stored+setup, limit)
	// The survivors granted what was left: the database says the window's units were all
	// granted, and those lost are at most what the dead node held (its last chunk: a quarter of
	// what was left divided among the three nodes) and the requests it took as it died.
	require.Positive(t, afterKill, "the surviving nodes grant after the kill")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ns.pgURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var granted int
	require.NoError(t, conn.QueryRow(ctx, `SELECT granted FROM cluster_quotas WHERE name LIKE 'api/%'`).Scan(&granted))
	require.Equal(t, limit, granted, "every unit of the window was granted to a node")
	lost := limit - setup - accepted - unavailable
	require.LessOrEqual(t, lost, limit/(4*3)+victimErrors, "units lost with the killed node")

	// Every post accepted is published, once (read in the simulator's log: the user's requests
	// are spent).
	ns.waitPublished(texts, "bluesky", 60*time.Second)
	ns.noneTwice(texts, "bluesky")
}

// waitPublished waits until each of texts was published on platform, by the simulator's log.
func (ns *nodes) waitPublished(texts []string, platform string, within time.Duration) {
	deadline := time.Now().Add(within)
	for {
		seen := map[string]bool{}
		for _, r := range simPublications(ns.t, ns.sim) {
			if r.Platform == platform {
				seen[r.Text] = true
			}
		}
		var missing []string
		for _, text := range texts {
			if !seen[text] {
				missing = append(missing, text)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			ns.t.Fatalf("%d accepted posts not published on %s: %v", len(missing), platform, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// linkLoad is what the clients of TestNodesCutOffFromEachOtherClientsSeeOnlyRetriable503s did and
// saw.
type linkLoad struct {
	mu sync.Mutex
	// drafts and jobs are the posts created and the publishes accepted so far (id → content,
	// tracking id → post id), read back during and after the cuts.
	drafts map[string]string
	jobs   map[string]string
	// accepted are the published posts (id → text); pending the publishes answered 503, to be
	// sent again with their Idempotency-Key once the links are mended.
	accepted map[string]string
	pending  []string
	// answers counts the answers by operation and status.
	answers map[string]int
}

// TestNodesCutOffFromEachOtherClientsSeeOnlyRetriable503s cuts the links between nodes (each
// node advertises a proxy in front of its remote: --node-advertise), first one node's, then all
// of them, while clients create, publish and read posts and jobs through every node for posts
// on every node's shards. Each node still reaches PostgreSQL, so no lease moves: a request for
// an actor on another node cannot be answered. Every answer must be right or a retriable 503
// with Retry-After: never a wrong answer, a 500, a 404 for a post that exists, or no answer
// within the client's time-out. Once mended, every request is answered again, and every
// accepted post is published, each target once.
func TestNodesCutOffFromEachOtherClientsSeeOnlyRetriable503s(t *testing.T) {
	needNodes(t)
	ns, links := startLinkedNodes(t, 3)
	targets := quotedIDs(accountsByPlatform(t, ns.nodes[0].p, ns.key), "twitter_x", "bluesky", "linkedin")
	require.Len(t, targets, 3)
	platforms := `"platforms":[` + strings.Join(targets, ",") + `]`
	// The client's time-out: above the forward time-out (cluster.DefaultForwardTimeout, 5 s),
	// which bounds a request whose owner does not answer.
	client := &http.Client{Timeout: 10 * time.Second}
	ld := &linkLoad{drafts: map[string]string{}, jobs: map[string]string{}, accepted: map[string]string{}, answers: map[string]int{}}

	// Before the cut: drafts and published posts on every node's shards.
	owners := map[*node]int{}
	for i := 0; i < 30 || len(owners) < len(ns.nodes); i++ {
		require.Less(t, i, 300, "posts on every node's shards")
		nd := ns.nodes[i%len(ns.nodes)]
		if i%2 == 0 {
			id, _ := ld.create(ns, client, nd, fmt.Sprintf("nodes links before %03d", i), platforms, true)
			owners[ns.owner(shardLease(id))]++
		} else {
			id := ld.publish(ns, client, nd, fmt.Sprintf("nodes links before %03d", i), platforms, true)
			owners[ns.owner(shardLease(id))]++
		}
	}
	delete(owners, nil)
	t.Logf("posts before the cut by owner: %v", owners)

	// The cuts: one node's link, then every link, each under the clients' load.
	victim := 1
	for _, cut := range []struct {
		name  string
		links []*clustertest.Proxy
	}{
		{"one node's link", links[victim : victim+1]},
		{"every link", links},
	} {
		ld.mu.Lock()
		clear(ld.answers)
		ld.mu.Unlock()
		for _, l := range cut.links {
			l.Cut()
		}
		ld.run(ns, client, platforms, cut.name, 4*time.Second)
		for _, l := range cut.links {
			l.Mend()
		}
		t.Logf("%s cut, answers: %v", cut.name, ld.answers)
		require.False(t, t.Failed(), "during the cut of %s", cut.name)
		// Mended: every request is answered again, on every node.
		mended := time.Now()
		require.Eventually(t, func() bool { return ld.allAnswer(ns, client) }, 20*time.Second, 200*time.Millisecond,
			"every post and job is read through every node once the links are mended")
		t.Logf("%s mended: every post and job read through every node after %v", cut.name, time.Since(mended).Round(time.Millisecond))
	}
	for _, text := range ld.takePending() {
		id := ld.publish(ns, client, ns.nodes[0], text, platforms, true)
		require.NotEmpty(t, id)
	}
	for i, nd := range ns.nodes {
		id, _ := ld.create(ns, client, nd, fmt.Sprintf("nodes links draft after %d", i), platforms, true)
		require.NotEmpty(t, id)
		require.NotEmpty(t, ld.publish(ns, client, nd, fmt.Sprintf("nodes links after %d", i), platforms, true))
	}
	ns.waitFinal(ld.accepted, 60*time.Second)
	var texts []string
	for _, text := range ld.accepted {
		texts = append(texts, text)
	}
	ns.noneTwice(texts, "twitter_x", "bluesky", "linkedin")
}

// count notes one answer.
func (ld *linkLoad) count(op string, status int) {
	ld.mu.Lock()
	ld.answers[fmt.Sprintf("%s %d", op, status)]++
	ld.mu.Unlock()
}

// decoded decodes a JSON body into v, failing the test (from any goroutine) when it cannot.
func decoded(t *testing.T, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		assert.Fail(t, "an answer that is not its JSON", "%v: %s", err, body)
		return false
	}
	return true
}

// check fails the test unless a is want or a retriable 503; it reports whether a is want.
func (ld *linkLoad) check(t *testing.T, op string, nd *node, a answer, err error, want int) bool {
	if err != nil {
		// assert, not require: the clients run in goroutines of their own.
		assert.Fail(t, "no answer within the client's time-out", "%s through %s: %v", op, nd.addr, err)
		return false
	}
	ld.count(op, a.status)
	if a.status == want {
		return true
	}
	assert.True(t, a.retriable(), "%s through %s: %d %s (retry-after %q)", op, nd.addr, a.status, a.body, a.retryAfter)
	return false
}

// create makes a draft; must says it is before or after the cuts, when only success will do.
func (ld *linkLoad) create(ns *nodes, client *http.Client, nd *node, text, platforms string, must bool) (string, string) {
	t := ns.t
	for try := 0; ; try++ {
		a, err := ns.call(client, nd, "POST", "/v1/posts", `{"content":"`+text+`",`+platforms+`}`)
		if ld.check(t, "create", nd, a, err, 201) {
			var p struct{ ID string }
			if !decoded(t, a.body, &p) || !assert.NotEmpty(t, p.ID) {
				return "", ""
			}
			ld.mu.Lock()
			ld.drafts[p.ID] = text
			ld.mu.Unlock()
			return p.ID, text
		}
		if !must || try == 20 {
			require.False(t, must, "create through %s: %d %s", nd.addr, a.status, a.body)
			return "", ""
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// publish publishes text with its Idempotency-Key; one answered 503 during a cut is sent again
// after (as a careful client does).
func (ld *linkLoad) publish(ns *nodes, client *http.Client, nd *node, text, platforms string, must bool) string {
	t := ns.t
	for try := 0; ; try++ {
		a, err := ns.call(client, nd, "POST", "/v1/posts/publish", `{"content":"`+text+`",`+platforms+`}`, "Idempotency-Key", "nodes-"+text)
		if ld.check(t, "publish", nd, a, err, 202) {
			var r struct {
				PostID     string `json:"post_id"`
				TrackingID string `json:"tracking_id"`
			}
			if !decoded(t, a.body, &r) || !assert.NotEmpty(t, r.PostID) || !assert.NotEmpty(t, r.TrackingID) {
				return ""
			}
			ld.mu.Lock()
			ld.accepted[r.PostID] = text
			ld.jobs[r.TrackingID] = r.PostID
			ld.mu.Unlock()
			return r.PostID
		}
		if !must || try == 20 {
			require.False(t, must, "publish through %s: %d %s", nd.addr, a.status, a.body)
			if err == nil && a.status == 503 {
				ld.mu.Lock()
				ld.pending = append(ld.pending, text)
				ld.mu.Unlock()
			}
			return ""
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (ld *linkLoad) takePending() []string {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	p := ld.pending
	ld.pending = nil
	return p
}

// readPost reads a post known to exist: right (its id and content) or a retriable 503.
func (ld *linkLoad) readPost(ns *nodes, client *http.Client, nd *node, id, text string) bool {
	a, err := ns.call(client, nd, "GET", "/v1/posts/"+id, "")
	if !ld.check(ns.t, "read post", nd, a, err, 200) {
		return false
	}
	var p struct{ ID, Content string }
	decoded(ns.t, a.body, &p)
	assert.Equal(ns.t, id, p.ID, "read through %s", nd.addr)
	assert.Equal(ns.t, text, p.Content, "read through %s", nd.addr)
	return true
}

// readJob reads a job known to exist: right (its tracking and post ids) or a retriable 503.
func (ld *linkLoad) readJob(ns *nodes, client *http.Client, nd *node, tracking, post string) bool {
	a, err := ns.call(client, nd, "GET", "/v1/jobs/"+tracking, "")
	if !ld.check(ns.t, "read job", nd, a, err, 200) {
		return false
	}
	var j struct {
		TrackingID string `json:"tracking_id"`
		PostID     string `json:"post_id"`
	}
	decoded(ns.t, a.body, &j)
	assert.Equal(ns.t, tracking, j.TrackingID, "read through %s", nd.addr)
	assert.Equal(ns.t, post, j.PostID, "read through %s", nd.addr)
	return true
}

// some picks up to n entries of m.
func (ld *linkLoad) some(m map[string]string, n int) [][2]string {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	out := make([][2]string, 0, n)
	for k, v := range m {
		if len(out) == n {
			break
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

// run sends creates, publishes and reads of posts and jobs through every node for d: two
// clients a node.
func (ld *linkLoad) run(ns *nodes, client *http.Client, platforms, name string, d time.Duration) {
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	var seq atomic.Int64
	for w := range 2 * len(ns.nodes) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd := ns.nodes[w%len(ns.nodes)]
			for i := 0; time.Now().Before(end) && !ns.t.Failed(); i++ {
				n := seq.Add(1)
				switch (i + w) % 4 { // each client starts at another operation
				case 0:
					ld.create(ns, client, nd, fmt.Sprintf("nodes links %s draft %04d", name, n), platforms, false)
				case 1:
					ld.publish(ns, client, nd, fmt.Sprintf("nodes links %s publish %04d", name, n), platforms, false)
				case 2:
					for _, p := range ld.some(ld.drafts, 3) {
						ld.readPost(ns, client, nd, p[0], p[1])
					}
				case 3:
					for _, j := range ld.some(ld.jobs, 3) {
						ld.readJob(ns, client, nd, j[0], j[1])
					}
				}
			}
		}()
	}
	wg.Wait()
}

// allAnswer reads every post and job known through every node; it reports whether all were
// answered (a wrong answer fails the test).
func (ld *linkLoad) allAnswer(ns *nodes, client *http.Client) bool {
	ok := true
	for _, nd := range ns.nodes {
		for _, p := range ld.some(ld.drafts, 1<<20) {
			ok = ld.readPost(ns, client, nd, p[0], p[1]) && ok
		}
		for _, j := range ld.some(ld.jobs, 1<<20) {
			ok = ld.readJob(ns, client, nd, j[0], j[1]) && ok
		}
	}
	return ok
}
