package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/platforms"
)

// exchange is one request of a flood and its answer, validated afterwards on the test's goroutine.
type exchange struct {
	req  *http.Request
	resp *response
	err  error
}

// send sends one request with the bundle's key on client, without failing the test (it may run
// on another goroutine).
func (b *testBundle) send(client *http.Client, method, path string, body any) exchange {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req, err := http.NewRequest(method, b.url+path, bytes.NewReader(raw))
	if err != nil {
		return exchange{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return exchange{req: req, err: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return exchange{req: req, resp: &response{status: resp.StatusCode, header: resp.Header, body: out}, err: err}
}

// gathered sums the samples of a metric family whose labels include the given pairs.
func gathered(t *testing.T, a *app.App, name string, labelPairs ...string) float64 {
	t.Helper()
	return testkit.Gathered(t, a.Registry, name, labelPairs...)
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A server with one write slot, flooded by concurrent writers (drafts and publishes), answers a
// mix of 2xx and 503: every 503 has Retry-After and left nothing behind (the user has exactly the
// posts answered 2xx), every 2xx post exists and every accepted publish completes, reads are never
// refused meanwhile, every refusal is counted by route, and once the flood is over the process's
// goroutines and heap come back to where they were before it.
//
// Not parallel: it compares the process's goroutines and heap before and after, which other tests
// running at the same time would move.
func TestOverloadRefusesWritesBeforeWritingAnything(t *testing.T) {
	// Drafts read back at the end passivate soon after, like settled posts.
	b := setup(t, bundleOpts{demo: true, postIdle: 100 * time.Millisecond, config: func(c *app.Config) {
		c.Overload = server.Overload{MaxInflightWrites: 1, AdmissionWait: time.Millisecond}
	}})
	x := b.account(platforms.X).ID
	warm := b.publishNew(map[string]any{"content": "warm-up", "platforms": ids(x)}, nil)
	require.Equal(t, 202, warm.status, string(warm.body))
	b.waitJob(warm.json(t)["tracking_id"].(string))
	warmPost := warm.json(t)["post_id"].(string)
	require.Eventually(t, func() bool {
		return gathered(t, b.app, "herald_actors_live", "actor_kind", "post")+gathered(t, b.app, "herald_actors_live", "actor_kind", "job") == 0
	}, 30*time.Second, 5*time.Millisecond)
	flood := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	goroutines, heap := runtime.NumGoroutine(), heapAlloc()

	var mu sync.Mutex
	var writes, reads []exchange
	accepted, refused := 0, 0
	for round := 0; round < 20 && (accepted == 0 || refused == 0); round++ {
		var wg sync.WaitGroup
		for w := 0; w < 24; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				var ex exchange
				for i := 0; i < 4; i++ {
					content := fmt.Sprintf("flood %d-%d-%d", round, w, i)
					if (w+i)%2 == 0 {
						ex = b.send(flood, "POST", "/v1/posts", map[string]any{"content": content, "platforms": ids(x)})
					} else {
						ex = b.send(flood, "POST", "/v1/posts/publish", map[string]any{"content": content, "platforms": ids(x)})
					}
					mu.Lock()
					writes = append(writes, ex)
					mu.Unlock()
				}
				if w%4 == 0 { // reads while the writes are refused
					for _, path := range []string{"/v1/posts/" + warmPost, "/v1/posts?limit=5"} {
						ex = b.send(flood, "GET", path, nil)
						mu.Lock()
						reads = append(reads, ex)
						mu.Unlock()
					}
				}
			}(w)
		}
		wg.Wait()
		accepted, refused = 0, 0
		for _, ex := range writes {
			require.NoError(t, ex.err)
			switch ex.resp.status {
			case 201, 202:
				accepted++
			case 503:
				refused++
			}
		}
	}
	t.Logf("%d writes accepted, %d refused; %d reads", accepted, refused, len(reads))
	require.NotZero(t, accepted, "no write was accepted")
	require.NotZero(t, refused, "no write was refused with one write slot for 24 writers")

	var posts, published []string
	for _, ex := range writes {
		b.validate(ex.req, ex.resp)
		switch ex.resp.status {
		case 201:
			posts = append(posts, ex.resp.json(t)["id"].(string))
		case 202:
			id := ex.resp.json(t)["post_id"].(string)
			posts, published = append(posts, id), append(published, id)
		case 503:
			require.Equal(t, "1", ex.resp.header.Get("Retry-After"), "%s", ex.resp.body)
			require.Equal(t, "internal_error", ex.resp.errorCode(t))
		default:
			t.Fatalf("%s %s → %d %s", ex.req.Method, ex.req.URL.Path, ex.resp.status, ex.resp.body)
		}
	}
	for _, ex := range reads {
		require.NoError(t, ex.err)
		b.validate(ex.req, ex.resp)
		require.Equal(t, 200, ex.resp.status, "a read was refused: %s", ex.resp.body)
	}
	require.Equal(t, float64(refused), gathered(t, b.app, "herald_http_overload_refused_total", "reason", server.OverloadAdmission))
	require.Equal(t, float64(refused), gathered(t, b.app, "herald_http_overload_refused_total"), "every refusal is an admission's")
	require.NotZero(t, gathered(t, b.app, "herald_http_overload_refused_total", "route", "/v1/posts/publish"))

	// Nothing accepted then lost; nothing refused then written.
	require.Eventually(t, func() bool {
		return gathered(t, b.app, "herald_jobs_finished_total") == float64(len(published)+1)
	}, 60*time.Second, 10*time.Millisecond, "every accepted publish completes")
	for _, id := range posts {
		r := b.do("GET", "/v1/posts/"+id, nil)
		require.Equal(t, 200, r.status, "an accepted post is missing: %s", r.body)
	}
	for _, id := range published {
		require.Equal(t, "published", b.do("GET", "/v1/posts/"+id, nil).json(t)["status"])
	}
	require.Equal(t, 1+len(posts), b.countPosts(), "the user has exactly the posts answered 2xx")

	// Back to where it was: no request, slot, actor or goroutine left, and the heap as before.
	flood.CloseIdleConnections()
	require.Eventually(t, func() bool {
		return gathered(t, b.app, "herald_actors_live", "actor_kind", "post")+gathered(t, b.app, "herald_actors_live", "actor_kind", "job") == 0 &&
			gathered(t, b.app, "herald_http_writes_in_flight")+gathered(t, b.app, "herald_http_writes_waiting") == 0 &&
			gathered(t, b.app, "herald_jobs_in_hand") == 0 && gathered(t, b.app, "herald_bbolt_commit_queue_depth") == 0
	}, 30*time.Second, 5*time.Millisecond)
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(30 * time.Second); n > goroutines && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if n > goroutines {
		all := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before the flood, %d after:\n%s", goroutines, n, all[:runtime.Stack(all, true)])
	}
	after := heapAlloc()
	t.Logf("heap: %d bytes before the flood, %d after", heap, after)
	require.Less(t, after, heap+8<<20)
}

// While as many publish jobs are in hand as --max-job-backlog allows, new publishes (of a new post
// or of a draft) are refused with 503 and Retry-After before anything is written, while drafts,
// reads and the replay of an answered Idempotency-Key are still served.
func TestPublishesWaitForTheJobBacklog(t *testing.T) {
	t.Parallel()
	// The networks take an hour to answer: jobs stay in hand for the whole test.
	b := setup(t, bundleOpts{demo: true, simLatency: time.Hour, config: func(c *app.Config) { c.MaxJobBacklog = 2 }})
	x := b.account(platforms.X).ID
	key := http.Header{"Idempotency-Key": {"first"}}
	first := b.publishNew(map[string]any{"content": "one", "platforms": ids(x)}, key)
	require.Equal(t, 202, first.status, string(first.body))
	second := b.publishNew(map[string]any{"content": "two", "platforms": ids(x)}, nil)
	require.Equal(t, 202, second.status, string(second.body))
	require.Eventually(t, func() bool { return b.app.JobBacklog.Len() == 2 }, 30*time.Second, time.Millisecond)
	require.Equal(t, 2.0, gathered(t, b.app, "herald_jobs_in_hand"))

	third := b.publishNew(map[string]any{"content": "three", "platforms": ids(x)}, nil)
	require.Equal(t, 503, third.status, string(third.body))
	require.Equal(t, "internal_error", third.errorCode(t))
	require.Equal(t, "1", third.header.Get("Retry-After"))
	require.Contains(t, third.errorMessage(t), "2 publish jobs in hand")
	// A refusal for overload does not count against the plan's hourly quota.
	left, err := strconv.Atoi(second.header.Get("Ratelimit-Remaining"))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(left), third.header.Get("Ratelimit-Remaining"))
	require.Equal(t, strconv.Itoa(left-1), b.do("GET", "/v1/me", nil).header.Get("Ratelimit-Remaining"))

	draft := b.createPost("a draft waits", b.account(platforms.X))
	r := b.do("POST", "/v1/posts/"+draft+"/publish", nil)
	require.Equal(t, 503, r.status, string(r.body))
	require.Equal(t, "draft", b.do("GET", "/v1/posts/"+draft, nil).json(t)["status"], "the refused publish changed nothing")

	replay := b.publishNew(map[string]any{"content": "one", "platforms": ids(x)}, key)
	require.Equal(t, 202, replay.status, string(replay.body))
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.json(t)["tracking_id"], replay.json(t)["tracking_id"])
	job := b.do("GET", "/v1/jobs/"+first.json(t)["tracking_id"].(string), nil)
	require.Equal(t, 200, job.status, string(job.body))

	require.Equal(t, 3, b.countPosts(), "two publishes and a draft; the refused publish left no post")
	require.Equal(t, 1.0, gathered(t, b.app, "herald_http_overload_refused_total", "route", "/v1/posts/publish", "reason", server.OverloadJobBacklog))
	require.Equal(t, 1.0, gathered(t, b.app, "herald_http_overload_refused_total", "route", "/v1/posts/:id/publish", "reason", server.OverloadJobBacklog))
}

// The job backlog counts the targets waiting in the store for their account's turn, not only
// those the account has taken: publishes to one account whose calls take an hour fill it and the
// next is refused. Targets whose account the network's budget holds back leave the count, so a
// burst the budget paces is accepted whatever its size.
func TestTheJobBacklogCountsWhatWaitsForItsTurn(t *testing.T) {
	t.Parallel()
	t.Run("turn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bundleOpts{demo: true, simLatency: time.Hour, config: func(c *app.Config) { c.MaxJobBacklog = 4 }})
		x := b.account(platforms.X).ID
		for i := range 4 {
			r := b.publishNew(map[string]any{"content": fmt.Sprintf("turn %d", i), "platforms": ids(x)}, nil)
			require.Equal(t, 202, r.status, string(r.body))
		}
		// One call in flight, the others in hand or waiting in the store. (The store's part is
		// counted as accounts read it: a publish written while its account reads may be counted
		// twice until the account's next read, never missed.)
		require.GreaterOrEqual(t, b.app.JobBacklog.Len(), 4)
		r := b.publishNew(map[string]any{"content": "one too many", "platforms": ids(x)}, nil)
		require.Equal(t, 503, r.status, string(r.body))
		require.Equal(t, "1", r.header.Get("Retry-After"))
	})
	t.Run("budget", func(t *testing.T) {
		t.Parallel()
		rules, err := account.OverrideRules(account.DefaultRules, "twitter_x:tweets=2/1h")
		require.NoError(t, err)
		b := setup(t, bundleOpts{demo: true, budgets: rules, config: func(c *app.Config) { c.MaxJobBacklog = 4 }})
		x := b.account(platforms.X).ID
		for i := range 3 {
			r := b.publishNew(map[string]any{"content": fmt.Sprintf("paced %02d", i), "platforms": ids(x)}, nil)
			require.Equal(t, 202, r.status, string(r.body))
		}
		require.Eventually(t, func() bool {
			return len(b.app.Sim.Publications(platforms.X)) == 2 && b.app.JobBacklog.Len() == 0
		}, 20*time.Second, 5*time.Millisecond, "the third waits for the budget, out of the count")
		for i := 3; i < 40; i++ {
			r := b.publishNew(map[string]any{"content": fmt.Sprintf("paced %02d", i), "platforms": ids(x)}, nil)
			require.Equal(t, 202, r.status, "publish %d: %s", i, r.body)
		}
		require.Zero(t, b.app.JobBacklog.Len())
		require.Len(t, b.app.Sim.Publications(platforms.X), 2)
	})
}

// A campaign that publishes now is held to the job backlog as a whole: with a limit of 4, three
// posts to two accounts each (6 targets) could never fit and are refused with 400
// limit_exceeded, dry run included; two posts of one target each fit beside one publish in hand
// and are accepted; another two no longer fit beside those three and are refused with 503 and
// Retry-After. A refused campaign writes nothing: no campaign, no post, no job.
func TestCampaignsWaitForTheJobBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: time.Hour, config: func(c *app.Config) { c.MaxJobBacklog = 4 }})
	x, li := b.account(platforms.X), b.account(platforms.LinkedIn)
	six := map[string]any{"publish": "now", "posts": []any{
		campaignPost("a", x, li), campaignPost("b", x, li), campaignPost("c", x, li)}}
	for _, dry := range []bool{true, false} {
		six["dry_run"] = dry
		r := b.createCampaign(six, nil)
		require.Equal(t, 400, r.status, string(r.body))
		require.Equal(t, "limit_exceeded", r.errorCode(t))
		require.Contains(t, r.errorMessage(t), "6 targets")
	}
	require.Zero(t, b.countPosts(), "nothing of the refused campaign was written")
	require.Empty(t, b.do("GET", "/v1/campaigns", nil).json(t)["data"])

	one := b.publishNew(map[string]any{"content": "in hand", "platforms": ids(x.ID)}, nil)
	require.Equal(t, 202, one.status, string(one.body))
	require.Eventually(t, func() bool { return b.app.JobBacklog.Len() >= 1 }, 30*time.Second, time.Millisecond)
	two := map[string]any{"publish": "now", "posts": []any{campaignPost("d", x), campaignPost("e", li)}}
	r := b.createCampaign(two, nil)
	require.Equal(t, 202, r.status, string(r.body))
	require.Eventually(t, func() bool { return b.app.JobBacklog.Len() >= 3 }, 30*time.Second, time.Millisecond)

	r = b.createCampaign(map[string]any{"publish": "now", "posts": []any{campaignPost("f", x), campaignPost("g", li)}}, nil)
	require.Equal(t, 503, r.status, string(r.body))
	require.Equal(t, "internal_error", r.errorCode(t))
	require.Equal(t, "1", r.header.Get("Retry-After"))
	require.Contains(t, r.errorMessage(t), "nothing was created")
	require.Equal(t, 3, b.countPosts(), "the publish and the accepted campaign's two posts")
	require.Len(t, b.do("GET", "/v1/campaigns", nil).json(t)["data"], 1)
	require.Equal(t, 1.0, gathered(t, b.app, "herald_http_overload_refused_total", "route", "/v1/campaigns", "reason", server.OverloadJobBacklog))

	// A draft campaign writes no job: the backlog does not hold it.
	r = b.createCampaign(map[string]any{"publish": "draft", "posts": six["posts"]}, nil)
	require.Equal(t, 202, r.status, string(r.body))
}
