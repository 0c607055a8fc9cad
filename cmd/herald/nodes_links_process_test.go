package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
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
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("HERALD_NODES_LOGS") != "" {
			for i, nd := range ns.nodes {
				t.Logf("node %d (%s) log:\n%s", i, nd.addr, nd.p.logText())
			}
		}
	})
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
	ns.settle()
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

// One user's hourly quota hammered by clients through all three nodes while one of them is
// SIGKILLed: the requests granted never pass the limit (the 202s and the posts in the store
// counted), every other publish is refused 429 rate_limit_exceeded with Retry-After, and the
// surviving nodes go on granting what is left, up to the limit less what the dead node held.
func TestNodesOneUsersHourlyQuotaHeldAcrossNodesWhileOneIsKilled(t *testing.T) {
	needNodes(t)
	const limit = 150
	ns := startNodes(t, 3, "--plan-limits", "pro="+strconv.Itoa(limit))
	targets := quotedIDs(accountsByPlatform(t, ns.nodes[0].p, ns.key), "bluesky")
	require.Len(t, targets, 1)
	const setup = 1 // the request above, counted in the user's quota
	before := ns.postsStored()
	victim := ns.nodes[2]

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
