package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// waitJob polls a job until it is completed or failed.
func (b *testBundle) waitJob(id string) map[string]any {
	b.t.Helper()
	h := *b.h
	h.T = b.t
	return h.WaitJob(id)
}

func (b *testBundle) publishNew(body map[string]any, hdr http.Header) *response {
	return b.doKey(b.key, "POST", "/v1/posts/publish", body, hdr)
}

func ids(accts ...string) []string { return accts }

func TestPublishToTheNetworks(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x, bsky, li := b.account(platforms.X).ID, b.account(platforms.Bluesky).ID, b.account(platforms.LinkedIn).ID
	r := b.publishNew(map[string]any{"content": "Launch day!", "platforms": ids(x, bsky, li)}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	acc := r.json(t)
	jobID := acc["tracking_id"].(string)
	require.Equal(t, "queued", acc["status"])
	require.Equal(t, "/v1/jobs/"+jobID+"/stream", acc["stream_url"])
	require.Equal(t, "/v1/jobs/"+jobID, r.header.Get("Location"))

	j := b.waitJob(jobID)
	require.Equal(t, "completed", j["status"])
	require.Equal(t, 3.0, j["total"])
	require.Equal(t, 3.0, j["completed"])
	require.Equal(t, 0.0, j["failed"])
	require.NotNil(t, j["completed_at"])
	for _, s := range j["platform_statuses"].([]any) {
		require.Equal(t, "platform_success", s.(map[string]any)["phase"])
	}
	require.Eventually(t, func() bool {
		p := b.do("GET", "/v1/posts/"+acc["post_id"].(string), nil).json(t)
		return p["status"] == "published"
	}, 10*time.Second, 10*time.Millisecond)
	p := b.do("GET", "/v1/posts/"+acc["post_id"].(string), nil).json(t)
	require.Equal(t, jobID, p["tracking_id"])
	for _, pl := range p["platforms"].([]any) {
		require.Equal(t, "published", pl.(map[string]any)["status"])
	}
	for _, pl := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.LinkedIn} {
		recs := b.app.Sim.Publications(pl)
		require.Len(t, recs, 1, pl)
		require.Equal(t, "Launch day!", recs[0].Text)
	}
}

// A post partly refused is partial; publishing it again sends only the failed targets.
func TestPartialPostRepublishesOnlyFailedTargets(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x, ig := b.account(platforms.X).ID, b.account(platforms.Instagram).ID
	// A photo every network takes at submission, which Instagram fails to convert when it
	// publishes (a post a network's own rules refuse is refused at submission instead).
	r := b.publishNew(map[string]any{"content": "a broken photo", "platforms": ids(x, ig), "media": []string{b.unconvertiblePhoto()}}, nil)
	require.Equal(t, 202, r.status)
	postID := r.json(t)["post_id"].(string)
	j := b.waitJob(r.json(t)["tracking_id"].(string))
	require.Equal(t, "completed", j["status"], "a job with one success is completed")
	require.Equal(t, 1.0, j["failed"])
	var failedMsg string
	for _, s := range j["platform_statuses"].([]any) {
		if s.(map[string]any)["platform"] == "instagram" {
			failedMsg = s.(map[string]any)["message"].(string)
		}
	}
	require.Contains(t, failedMsg, unconvertibleMessage)
	require.Eventually(t, func() bool { return b.do("GET", "/v1/posts/"+postID, nil).json(t)["status"] == "partial" }, 10*time.Second, 10*time.Millisecond)
	p := b.do("GET", "/v1/posts/"+postID, nil).json(t)
	for _, pl := range p["platforms"].([]any) {
		m := pl.(map[string]any)
		if m["platform"] == "instagram" {
			require.Equal(t, "failed", m["status"])
			require.Contains(t, m["error"], unconvertibleMessage)
		}
	}

	r = b.do("POST", "/v1/posts/"+postID+"/publish", nil)
	require.Equal(t, 202, r.status, string(r.body))
	j = b.waitJob(r.json(t)["tracking_id"].(string))
	require.Equal(t, 1.0, j["total"], "only the failed target")
	require.Equal(t, "instagram", j["platform_statuses"].([]any)[0].(map[string]any)["platform"])
	require.Len(t, b.app.Sim.Publications(platforms.X), 1, "X is not published twice")
}

func TestPublishRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x := b.account(platforms.X).ID
	other, otherKey := b.newUser("other@example.com", "pro")
	foreign := b.newAccount(other.ID, "linkedin")

	for name, body := range map[string]string{
		"no accounts":     `{"content":"x","platforms":[]}`,
		"missing":         `{"content":"x"}`,
		"unknown account": `{"content":"x","platforms":["` + uuid.NewString() + `"]}`,
		"foreign account": `{"content":"x","platforms":["` + foreign.ID + `"]}`,
		"not json":        `publish this`,
	} {
		r := b.do("POST", "/v1/posts/publish", body)
		require.Equal(t, 400, r.status, name)
		require.Equal(t, "validation_error", r.errorCode(t), name)
	}
	require.Equal(t, 0, b.countPosts())

	r := b.publishNew(map[string]any{"content": "once", "platforms": ids(x)}, nil)
	require.Equal(t, 202, r.status)
	postID := r.json(t)["post_id"].(string)
	b.waitJob(r.json(t)["tracking_id"].(string))
	require.Eventually(t, func() bool { return b.do("GET", "/v1/posts/"+postID, nil).json(t)["status"] == "published" }, 10*time.Second, 10*time.Millisecond)
	r = b.do("POST", "/v1/posts/"+postID+"/publish", nil)
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "already published")
	r = b.doKey(otherKey, "POST", "/v1/posts/"+postID+"/publish", nil, nil)
	require.Equal(t, 403, r.status)
	r = b.do("POST", "/v1/posts/"+uuid.NewString()+"/publish", nil)
	require.Equal(t, 404, r.status)
	r = b.do("POST", "/v1/posts/nope/publish", nil)
	require.Equal(t, 400, r.status)
	require.Len(t, b.app.Sim.Publications(platforms.X), 1)
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: 100 * time.Millisecond})
	x := b.account(platforms.X).ID
	body := map[string]any{"content": "idempotent", "platforms": ids(x)}
	key := http.Header{"Idempotency-Key": {"order-42"}}
	first := b.publishNew(body, key)
	require.Equal(t, 202, first.status)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))
	again := b.publishNew(body, http.Header{"Idempotency-Key": {`"order-42"`}})
	require.Equal(t, 202, again.status, "a quoted key is the same key")
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.json(t)["tracking_id"], again.json(t)["tracking_id"])
	require.Equal(t, first.header.Get("Location"), again.header.Get("Location"))

	other := b.publishNew(map[string]any{"content": "something else", "platforms": ids(x)}, key)
	require.Equal(t, 422, other.status)
	require.Equal(t, "idempotency_conflict", other.errorCode(t))

	for name, v := range map[string]string{"empty": `""`, "blank": " ", "too long": strings.Repeat("k", 256)} {
		r := b.publishNew(body, http.Header{"Idempotency-Key": {v}})
		require.Equal(t, 400, r.status, name)
		require.Equal(t, "validation_error", r.errorCode(t), name)
	}

	// Concurrent requests with one key: one is answered, the others are 409 or replays of it.
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	tracking := make([]string, 8)
	for i := range statuses {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := b.publishNew(map[string]any{"content": "concurrent", "platforms": ids(x)}, http.Header{"Idempotency-Key": {"burst"}})
			statuses[i] = r.status
			if r.status == 202 {
				tracking[i] = r.json(t)["tracking_id"].(string)
			}
		}(i)
	}
	wg.Wait()
	distinct := map[string]bool{}
	for i, s := range statuses {
		require.Contains(t, []int{202, 409}, s)
		if s == 202 {
			distinct[tracking[i]] = true
		}
	}
	require.Len(t, distinct, 1, "one job for one key")
	b.waitJob(first.json(t)["tracking_id"].(string))
	require.Eventually(t, func() bool { return len(b.app.Sim.Publications(platforms.X)) == 2 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	require.Len(t, b.app.Sim.Publications(platforms.X), 2, "idempotent and concurrent posts published once each")

	// A key is scoped to its route: the same key on the other publish route is a new request.
	postID := b.createPost("draft", b.account(platforms.Bluesky))
	r := b.doKey(b.key, "POST", "/v1/posts/"+postID+"/publish", nil, key)
	require.Equal(t, 202, r.status, string(r.body))
	require.NotEqual(t, first.json(t)["tracking_id"], r.json(t)["tracking_id"])
}

type sseEvent struct {
	Type, ID string
	Data     map[string]any
}

func (b *testBundle) stream(ctx context.Context, jobID string) ([]sseEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/jobs/"+jobID+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	return readStream(&http.Client{}, req)
}

// readStream follows an SSE stream with a real SSE client until the server ends it.
func readStream(hc *http.Client, req *http.Request) ([]sseEvent, error) {
	return readStreamUntil(hc, req, nil)
}

// readStreamUntil is readStream with a callback after each event (which may end the request's
// context to drop the stream).
func readStreamUntil(hc *http.Client, req *http.Request, after func(sseEvent)) ([]sseEvent, error) {
	client := &sse.Client{HTTPClient: hc, Backoff: sse.Backoff{MaxRetries: -1}}
	conn := client.NewConnection(req)
	var mu sync.Mutex
	var events []sseEvent
	conn.SubscribeToAll(func(e sse.Event) {
		var data map[string]any
		_ = json.Unmarshal([]byte(e.Data), &data)
		mu.Lock()
		ev := sseEvent{Type: e.Type, ID: e.LastEventID, Data: data}
		events = append(events, ev)
		mu.Unlock()
		if after != nil {
			after(ev)
		}
	})
	err := conn.Connect()
	mu.Lock()
	defer mu.Unlock()
	return events, err
}

// A real SSE client gets progress and done for a live job, and a late client exactly one done.
func TestJobStream(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: 150 * time.Millisecond})
	r := b.publishNew(map[string]any{"content": "streamed", "platforms": ids(b.account(platforms.X).ID, b.account(platforms.Bluesky).ID)}, nil)
	require.Equal(t, 202, r.status)
	jobID := r.json(t)["tracking_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := b.stream(ctx, jobID)
	require.GreaterOrEqual(t, len(events), 3, "%v", events)
	last := events[len(events)-1]
	require.Equal(t, "done", last.Type)
	require.Equal(t, "completed", last.Data["status"])
	require.Equal(t, 2.0, last.Data["completed"])
	require.Len(t, last.Data["platform_statuses"], 2)
	progress := 0
	for _, e := range events[:len(events)-1] {
		require.Equal(t, "progress", e.Type)
		require.NotEmpty(t, e.ID)
		for _, k := range []string{"status", "phase", "platform", "message", "completed", "failed", "total"} {
			require.Contains(t, e.Data, k)
		}
		progress++
	}
	require.GreaterOrEqual(t, progress, 2)
	require.Equal(t, "platform_success", events[len(events)-2].Data["phase"])

	late, _ := b.stream(ctx, jobID)
	require.Len(t, late, 1, "a late client gets a single done")
	require.Equal(t, "done", late[0].Type)

	// Unknown and foreign jobs are refused before any event.
	resp := b.doKey(b.key, "GET", "/v1/jobs/"+uuid.NewString()+"/stream", nil, nil)
	require.Equal(t, 404, resp.status)
	require.Equal(t, "application/json", resp.header.Get("Content-Type"))
	_, otherKey := b.newUser("peeker@example.com", "pro")
	resp = b.doKey(otherKey, "GET", "/v1/jobs/"+jobID+"/stream", nil, nil)
	require.Equal(t, 403, resp.status)
	resp = b.doKey(otherKey, "GET", "/v1/jobs/"+jobID, nil, nil)
	require.Equal(t, 403, resp.status)
}

// A client that opens 100 streams and drops them mid-way frees everything. (One user may open
// that many here: the cap per user is TestStreamsPerUserAreCapped's.)
func TestDroppedStreamsAreFreed(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, config: func(c *app.Config) { c.MaxStreamsPerUser = -1 },
		budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := b.account(platforms.X).ID
	b.waitJob(b.publishNew(map[string]any{"content": "spends the budget", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string))
	r := b.publishNew(map[string]any{"content": "waits an hour", "platforms": ids(x)}, nil)
	jobID := r.json(t)["tracking_id"].(string)
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The client drops the stream as soon as its first event arrives.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/jobs/"+jobID+"/stream", nil)
			assert.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+b.key)
			events, _ := readStreamUntil(&http.Client{}, req, func(sseEvent) { cancel() })
			if len(events) == 0 || events[0].Type != "progress" {
				t.Errorf("a running job's stream starts with its state: %v", events)
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, b.app.MetricsURL()), "herald_sse_subscribers 0")
	}, 10*time.Second, 20*time.Millisecond, "every stream was freed")
	j := b.do("GET", "/v1/jobs/"+jobID, nil).json(t)
	require.Equal(t, "processing", j["status"])
	require.Contains(t, j["platform_statuses"].([]any)[0].(map[string]any)["message"], "waiting for rate budget until ")
}

func TestScheduling(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x := b.account(platforms.X).ID
	at := time.Now().Add(1500 * time.Millisecond).UTC()
	r := b.do("POST", "/v1/posts/schedule", map[string]any{"content": "on time", "platforms": ids(x), "scheduledAt": at.Format(time.RFC3339Nano)})
	require.Equal(t, 201, r.status, string(r.body))
	p := r.json(t)
	require.Equal(t, "scheduled", p["status"])
	postID := p["id"].(string)
	var jobID string
	require.Eventually(t, func() bool {
		p := b.do("GET", "/v1/posts/"+postID, nil).json(t)
		if s, ok := p["tracking_id"].(string); ok {
			jobID = s
			return true
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	j := b.waitJob(jobID)
	created, err := time.Parse(time.RFC3339Nano, j["created_at"].(string))
	require.NoError(t, err)
	require.Less(t, created.Sub(at), time.Second, "fired within one second of its time")
	require.False(t, created.Before(at), "not before its time")

	// A draft scheduled, rescheduled, then deleted never fires.
	draft := b.createPost("never", b.account(platforms.Bluesky))
	r = b.do("POST", "/v1/posts/"+draft+"/schedule", map[string]any{"scheduledAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 200, r.status, string(r.body))
	r = b.do("POST", "/v1/posts/"+draft+"/schedule", map[string]any{"scheduledAt": time.Now().Add(800 * time.Millisecond).UTC().Format(time.RFC3339Nano)})
	require.Equal(t, 200, r.status, "rescheduling moves the time")
	r = b.do("PATCH", "/v1/posts/"+draft, map[string]any{"content": "never, edited"})
	require.Equal(t, "scheduled", r.json(t)["status"], "PATCH keeps the status")
	require.Equal(t, 204, b.do("DELETE", "/v1/posts/"+draft, nil).status)
	time.Sleep(1500 * time.Millisecond)
	require.Empty(t, b.app.Sim.Publications(platforms.Bluesky), "deleting cancels")
}

func TestScheduleBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x := b.account(platforms.X).ID
	future := time.Now().Add(48 * time.Hour).UTC()
	for name, tc := range map[string]struct{ at, tz, msg string }{
		"no date":             {"10:30:00Z", "", "not an ISO 8601"},
		"bad offset":          {future.Format("2006-01-02T15:04:05") + "+99:00", "", "not an ISO 8601"},
		"unknown zone":        {future.Format("2006-01-02T15:04:05"), "Moon/Base", "not an IANA time zone"},
		"+default and offset": {future.Format("2006-01-02T15:04:05") + "+02:00+default", "", "both an offset and +default"},
		"past":                {time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339), "", "in the past"},
		"over a year":         {time.Now().AddDate(1, 0, 2).UTC().Format(time.RFC3339), "", "more than one year ahead"},
		"naive without zone":  {future.Format("2006-01-02T15:04:05"), "", "has no offset"},
	} {
		body := map[string]any{"content": "x", "platforms": ids(x), "scheduledAt": tc.at}
		if tc.tz != "" {
			body["timezone"] = tc.tz
		}
		r := b.do("POST", "/v1/posts/schedule", body)
		require.Equal(t, 400, r.status, name)
		require.Contains(t, r.errorMessage(t), tc.msg, name)
	}
	r := b.do("POST", "/v1/posts/schedule", map[string]any{"content": "x", "platforms": ids(x)})
	require.Contains(t, r.errorMessage(t), "scheduledAt: Required")
	require.Equal(t, 0, b.countPosts())

	// Naive + IANA zone, and +default in the user's zone, resolve to the right instant.
	r = b.do("POST", "/v1/posts/schedule", map[string]any{"content": "tz", "platforms": ids(x), "scheduledAt": future.Format("2006-01-02") + "T09:00:00", "timezone": "Asia/Tokyo"})
	require.Equal(t, 201, r.status, string(r.body))
	require.Equal(t, future.Format("2006-01-02")+"T00:00:00Z", r.json(t)["scheduled_at"])
	r = b.do("POST", "/v1/posts/schedule", map[string]any{"content": "tz", "platforms": ids(x), "scheduledAt": future.Format("2006-01-02") + "T09:00:00+default"})
	require.Equal(t, future.Format("2006-01-02")+"T09:00:00Z", r.json(t)["scheduled_at"], "the demo user's zone is UTC")
	// ISO 8601 as clients send it: minutes without seconds, lower-case t and z, basic offsets.
	for at, want := range map[string]string{
		future.Format("2006-01-02") + "t09:30z":                 "T09:30:00Z",
		future.Format("2006-01-02") + "T09:30+0530":             "T04:00:00Z",
		future.Format("2006-01-02") + "T09:30:00.1234567891+05": "T04:30:00.123456789Z",
		future.Format("2006-01-02") + "T09:30:00,5-00:00":       "T09:30:00.5Z",
	} {
		r = b.do("POST", "/v1/posts/schedule", map[string]any{"content": "iso", "platforms": ids(x), "scheduledAt": at})
		require.Equal(t, 201, r.status, at+": "+string(r.body))
		require.Equal(t, future.Format("2006-01-02")+want, r.json(t)["scheduled_at"], at)
	}
	r = b.do("POST", "/v1/posts/schedule", map[string]any{"content": "iso", "platforms": ids(x), "scheduledAt": future.Format("2006-01-02") + "T09Z"})
	require.Equal(t, 400, r.status)
	require.Equal(t, "validation_error", r.errorCode(t))
	require.Contains(t, r.errorMessage(t), "the time of day needs minutes (hh:mm)")

	published := b.publishNew(map[string]any{"content": "gone", "platforms": ids(x)}, nil).json(t)["post_id"].(string)
	require.Eventually(t, func() bool { return b.do("GET", "/v1/posts/"+published, nil).json(t)["status"] == "published" }, 10*time.Second, 10*time.Millisecond)
	r = b.do("POST", "/v1/posts/"+published+"/schedule", map[string]any{"scheduledAt": future.Format(time.RFC3339)})
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "cannot be scheduled")
}

func TestFreePlanQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{freeQuota: 2})
	u, key := b.newUser("free@example.com", "free")
	acct := b.newAccount(u.ID, "linkedin")
	body := func(i int) map[string]any {
		return map[string]any{"content": fmt.Sprintf("free %d", i), "platforms": ids(acct.ID)}
	}
	r := b.doKey(key, "POST", "/v1/posts/publish", body(1), nil)
	require.Equal(t, 202, r.status, string(r.body))
	sched := body(2)
	sched["scheduledAt"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r = b.doKey(key, "POST", "/v1/posts/schedule", sched, nil)
	require.Equal(t, 201, r.status, string(r.body))
	r = b.doKey(key, "POST", "/v1/posts/publish", body(3), nil)
	require.Equal(t, 403, r.status, string(r.body))
	require.Equal(t, "limit_exceeded", r.errorCode(t))
	d := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	require.Equal(t, 2.0, d["limit"])
	require.Equal(t, 2.0, d["used"])
	require.Equal(t, time.Now().UTC().Format("2006-01"), d["period"])
	// A draft is not a publish: creating drafts stays free.
	r = b.doKey(key, "POST", "/v1/posts", body(4), nil)
	require.Equal(t, 201, r.status)
}

// The post's commit of a job's outcome settles the job: it is no longer resumed at start-up, and
// its actor, read again after passivating, passivates again (it does not wait for a sync that
// already happened).
func TestFinishedJobIsSettledByItsPost(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, postIdle: 50 * time.Millisecond})
	r := b.publishNew(map[string]any{"content": "settled", "platforms": ids(b.account(platforms.X).ID)}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	jobID := r.json(t)["tracking_id"].(string)
	require.Equal(t, "completed", b.waitJob(jobID)["status"])
	active := func() []string {
		var ids []string
		require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error { ids = tx.ActiveJobs(); return nil }))
		return ids
	}
	require.Eventually(t, func() bool { return len(active()) == 0 }, 10*time.Second, 10*time.Millisecond, "no job left to resume")
	require.Eventually(t, func() bool { return b.app.Jobs.Live() == 0 }, 10*time.Second, 10*time.Millisecond, "the finished job passivates")
	j := b.do("GET", "/v1/jobs/"+jobID, nil)
	require.Equal(t, 200, j.status)
	require.Equal(t, "completed", j.json(t)["status"])
	require.Eventually(t, func() bool { return b.app.Jobs.Live() == 0 }, 10*time.Second, 10*time.Millisecond, "read again, it passivates again")
}
