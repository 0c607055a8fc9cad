package app_test

import (
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Herald with a failing store (persistence.Faults at the store's commit boundary): every write
// whose commit fails is answered 503 internal_error with Retry-After and acknowledges nothing,
// the actors keep the state they had, reads are served, /readyz says the store cannot write, and
// once the store writes again everything goes on without a restart.

func withFaults(f *persistence.Faults, more ...func(*app.Config)) func(*app.Config) {
	return func(c *app.Config) {
		c.StoreFaults = f
		for _, m := range more {
			m(c)
		}
	}
}

// metricValue reads one unlabelled gauge or counter from the app's registry.
func (b *testBundle) metricValue(name string) float64 {
	b.t.Helper()
	fams, err := b.app.Registry.Gather()
	require.NoError(b.t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		m := f.GetMetric()[0]
		if g := m.GetGauge(); g != nil {
			return g.GetValue()
		}
		return m.GetCounter().GetValue()
	}
	b.t.Fatalf("no metric %s", name)
	return 0
}

// requireStoreFailure checks the answer to a write whose commit failed.
func requireStoreFailure(t *testing.T, what string, r *response) {
	t.Helper()
	require.Equal(t, 503, r.status, "%s: %s", what, r.body)
	require.Equal(t, "internal_error", r.errorCode(t), what)
	require.Equal(t, "1", r.header.Get("Retry-After"), what)
	require.Contains(t, r.errorMessage(t), "nothing was saved", what)
}

// waitUntil polls cond until it holds (or fails the test after 30 s).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "waited 30s for %s", what)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStoreFaultRefusesWritesServesReadsAndRecovers(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	b := setup(t, bundleOpts{demo: true, config: withFaults(faults)})
	bsky := b.account(platforms.Bluesky)
	draft := b.createPost("edited, then deleted", bsky)
	toPublish := b.createPost("published later", bsky)
	br := b.signedIn()
	media := b.presign(b.key, "photo.jpg", "image/jpeg", len(jpegFile))
	require.Equal(t, 200, b.rawPut(media.UploadURL, "image/jpeg", jpegFile, int64(len(jpegFile)), nil).status)
	keysBefore := len(br.send("GET", "/api/keys", nil, nil).json(t)["data"].([]any))
	postsBefore := b.countPosts()
	draftBefore := b.do("GET", "/v1/posts/"+draft, nil).json(t)
	require.Equal(t, 1.0, b.metricValue("herald_store_writable"))
	require.Equal(t, 200, b.do("GET", "/readyz", nil).status)

	newPost := map[string]any{"content": "new", "platforms": []string{bsky.ID}}
	scheduled := map[string]any{"content": "later", "platforms": []string{bsky.ID}, "scheduledAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	idem := http.Header{"Idempotency-Key": {"launch-1"}}
	type write struct {
		name string
		do   func() *response
		ok   int // the status once the store writes again
	}
	writes := []write{
		{"create a post", func() *response { return b.do("POST", "/v1/posts", newPost) }, 201},
		{"edit a post", func() *response { return b.do("PATCH", "/v1/posts/"+draft, map[string]any{"content": "changed"}) }, 200},
		{"publish a new post", func() *response { return b.publishNew(newPost, idem) }, 202},
		{"publish a draft", func() *response { return b.do("POST", "/v1/posts/"+toPublish+"/publish", nil) }, 202},
		{"schedule a new post", func() *response { return b.do("POST", "/v1/posts/schedule", scheduled) }, 201},
		{"create an API key", func() *response {
			return br.send("POST", "/api/keys", map[string]any{"name": "during the fault"}, br.csrfHeader())
		}, 201},
		{"register a webhook", func() *response {
			return b.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/hooks", "events": []string{"post.published"}})
		}, 201},
		{"presign a media upload", func() *response {
			return b.do("POST", "/v1/media/presign", map[string]any{"filename": "b.jpg", "content_type": "image/jpeg", "size_bytes": 10})
		}, 200},
		{"confirm a media upload", func() *response { return b.confirm(b.key, media, "image/jpeg", len(jpegFile)) }, 201},
		{"delete a post", func() *response { return b.do("DELETE", "/v1/posts/"+draft, nil) }, 204},
	}

	faults.FailCommits(syscall.EIO)
	for _, w := range writes {
		requireStoreFailure(t, w.name, w.do())
	}

	// Nothing was acknowledged, and the actors kept their state: the post actors answer the
	// reads below from memory.
	require.Equal(t, postsBefore, b.countPosts())
	require.Equal(t, draftBefore, b.do("GET", "/v1/posts/"+draft, nil).json(t), "the edit and the deletion changed nothing")
	require.Equal(t, "draft", b.do("GET", "/v1/posts/"+toPublish, nil).json(t)["status"])
	require.Len(t, br.send("GET", "/api/keys", nil, nil).json(t)["data"].([]any), keysBefore)
	require.Zero(t, b.webhookCount())
	require.False(t, b.mediaRecord(media.Key).Confirmed())
	// Reads are served, through both doors.
	for _, path := range []string{"/v1/me", "/v1/accounts", "/v1/posts?limit=5", "/v1/webhooks"} {
		require.Equal(t, 200, b.do("GET", path, nil).status, path)
	}
	require.Equal(t, 200, br.send("GET", "/api/posts?limit=5", nil, nil).status)
	require.Equal(t, 200, b.do("GET", "/healthz", nil).status)
	// Readiness and metrics say the store cannot write.
	r := b.do("GET", "/readyz", nil)
	require.Equal(t, 503, r.status)
	require.Equal(t, "1", r.header.Get("Retry-After"))
	require.Contains(t, r.errorMessage(t), "the store cannot write")
	require.Equal(t, 0.0, b.metricValue("herald_store_writable"))
	require.GreaterOrEqual(t, b.metricValue("herald_bbolt_commit_errors_total"), float64(len(writes)))

	// The store writes again: readiness comes back by itself (its probe write), and the same
	// requests succeed, with no restart.
	faults.ClearCommits()
	waitUntil(t, "/readyz to be ready", func() bool { return b.do("GET", "/readyz", nil).status == 200 })
	require.Equal(t, 1.0, b.metricValue("herald_store_writable"))
	for _, w := range writes {
		r := w.do()
		require.Equal(t, w.ok, r.status, "%s: %s", w.name, r.body)
		require.Empty(t, r.header.Get("Idempotent-Replayed"), "%s: a refused request left no answer to replay", w.name)
	}
	r = b.publishNew(newPost, idem)
	require.Equal(t, 202, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"), "the key's first stored answer")
	require.Equal(t, 404, b.do("GET", "/v1/posts/"+draft, nil).status)
}

// A publish whose network call happened while the store stopped writing: the job's record of
// the outcome is retried until the store takes it, the job completes once the store writes again,
// the post is published exactly once, and its webhook event is delivered.
func TestStoreFaultKeepsAJobsOutcomeUntilItIsStored(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	ca := webhooktest.NewCA(t)
	b := setup(t, bundleOpts{demo: true, simLatency: 400 * time.Millisecond, config: withFaults(faults, withReceivers(ca))})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	b.createWebhook(rcv.URL, "post.published")
	bsky := b.account(platforms.Bluesky)
	r := b.publishNew(map[string]any{"content": "outcome kept through a store fault", "platforms": []string{bsky.ID}}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	jobID, postID := r.json(t)["tracking_id"].(string), r.json(t)["post_id"].(string)

	// The attempt is recorded and the call is on its way (the simulator takes 400 ms): the store
	// fails from now on.
	attempt := func() bool {
		var a *persistence.Attempt
		_ = b.app.Store.View(func(tx *persistence.Tx) error { a, _ = tx.Attempt(jobID, 0); return nil })
		return a != nil
	}
	waitUntil(t, "the attempt record", attempt)
	faults.FailCommits(syscall.ENOSPC)
	published := func() int {
		n := 0
		for _, p := range b.app.Sim.Publications(platforms.Bluesky) {
			if p.Text == "outcome kept through a store fault" {
				n++
			}
		}
		return n
	}
	waitUntil(t, "the network call", func() bool { return published() == 1 })
	after := faults.Injected()
	waitUntil(t, "the job to retry its outcome", func() bool { return faults.Injected() >= after+3 })
	j := b.do("GET", "/v1/jobs/"+jobID, nil).json(t)
	require.NotContains(t, []any{"completed", "failed"}, j["status"], "the outcome is not stored yet")
	require.Equal(t, 503, b.do("GET", "/readyz", nil).status)
	require.True(t, attempt(), "the attempt stays recorded until its outcome is")

	faults.ClearCommits()
	j = b.waitJob(jobID)
	require.Equal(t, "completed", j["status"])
	p := b.do("GET", "/v1/posts/"+postID, nil).json(t)
	require.Equal(t, "published", p["status"])
	require.Equal(t, 1, published(), "published once")
	require.False(t, attempt())
	req := rcv.Next(t)
	require.Equal(t, "post.published", req.Header.Get("X-Service-Event"))
	require.Contains(t, string(req.Body), postID)
	waitUntil(t, "/readyz to be ready", func() bool { return b.do("GET", "/readyz", nil).status == 200 })
}

// A scheduled post that comes due while the store cannot write stays scheduled, and fires once
// when it writes again; a webhook delivery whose outcome could not be recorded is sent again,
// with its delivery id, and recorded.
func TestStoreFaultDelaysScheduledPostsAndDeliveries(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	ca := webhooktest.NewCA(t)
	b := setup(t, bundleOpts{demo: true, config: withFaults(faults, withReceivers(ca))})
	var once sync.Once
	entered, release := make(chan struct{}), make(chan struct{})
	rcv := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		if n == 1 {
			once.Do(func() { close(entered) })
			<-release
		}
		return 200
	})
	hook, _ := b.createWebhook(rcv.URL, "post.deleted")
	bsky := b.account(platforms.Bluesky)

	// The delivery's first attempt is answered while the store cannot record it.
	draft := b.createPost("deleted", bsky)
	require.Equal(t, 204, b.do("DELETE", "/v1/posts/"+draft, nil).status)
	<-entered
	due := time.Now().Add(1500 * time.Millisecond)
	r := b.do("POST", "/v1/posts/schedule", map[string]any{"content": "due during the fault", "platforms": []string{bsky.ID},
		"scheduledAt": due.UTC().Format(time.RFC3339Nano)})
	require.Equal(t, 201, r.status, string(r.body))
	scheduled := r.json(t)["id"].(string)
	faults.FailCommits(syscall.EIO)
	close(release)

	waitUntil(t, "the post to come due", func() bool { return time.Now().After(due.Add(time.Second)) })
	before := faults.Injected()
	waitUntil(t, "fires to be tried", func() bool { return faults.Injected() >= before+2 })
	require.Equal(t, "scheduled", b.do("GET", "/v1/posts/"+scheduled, nil).json(t)["status"], "not fired while the store cannot write")
	require.Equal(t, 1, rcv.Count())

	faults.ClearCommits()
	waitUntil(t, "the scheduled post to be published", func() bool {
		return b.do("GET", "/v1/posts/"+scheduled, nil).json(t)["status"] == "published"
	})
	n := 0
	for _, p := range b.app.Sim.Publications(platforms.Bluesky) {
		if p.Text == "due during the fault" {
			n++
		}
	}
	require.Equal(t, 1, n, "fired once")

	first, again := rcv.Next(t), rcv.Next(t)
	id := first.Header.Get("X-Service-Delivery-Id")
	require.Equal(t, id, again.Header.Get("X-Service-Delivery-Id"), "the same delivery, sent again")
	waitUntil(t, "the delivery to be recorded", func() bool {
		d := b.do("GET", "/v1/webhooks/"+hook+"/deliveries", nil).json(t)["data"].([]any)
		return len(d) == 1 && d[0].(map[string]any)["status"] == "succeeded"
	})
}
