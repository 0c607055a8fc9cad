package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

func TestPublishToTheNetworks(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.LinkedIn).ID
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Launch day!", "platforms": []string{x, bsky, li}})
	require.Equal(t, 202, r.Status, string(r.Body))
	acc := r.JSON(t)
	jobID := acc["tracking_id"].(string)
	require.Equal(t, "queued", acc["status"])
	require.Equal(t, "/v1/jobs/"+jobID+"/stream", acc["stream_url"])
	require.Equal(t, "/v1/jobs/"+jobID, r.Header.Get("Location"))

	j := h.WaitJob(jobID)
	require.Equal(t, "completed", j["status"])
	require.Equal(t, 3.0, j["total"])
	require.Equal(t, 3.0, j["completed"])
	require.Equal(t, 0.0, j["failed"])
	require.NotNil(t, j["completed_at"])
	for _, s := range j["platform_statuses"].([]any) {
		require.Equal(t, "platform_success", s.(map[string]any)["phase"])
	}
	require.Eventually(t, func() bool {
		p := h.Do("GET", "/v1/posts/"+acc["post_id"].(string), nil).JSON(t)
		return p["status"] == "published"
	}, 10*time.Second, 10*time.Millisecond)
	p := h.Do("GET", "/v1/posts/"+acc["post_id"].(string), nil).JSON(t)
	require.Equal(t, jobID, p["tracking_id"])
	for _, pl := range p["platforms"].([]any) {
		require.Equal(t, "published", pl.(map[string]any)["status"])
	}
	for _, pl := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.LinkedIn} {
		recs := h.App.Sim.Publications(pl)
		require.Len(t, recs, 1, pl)
		require.Equal(t, "Launch day!", recs[0].Text)
	}
}

// A post partly refused is partial; publishing it again sends only the failed targets.
func TestPartialPostRepublishesOnlyFailedTargets(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, ig := h.Account(platforms.X).ID, h.Account(platforms.Instagram).ID
	// A photo every network takes at submission, which Instagram fails to convert when it
	// publishes (a post a network's own rules refuse is refused at submission instead).
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "a broken photo", "platforms": []string{x, ig}, "media": []string{h.UnconvertiblePhoto()}})
	require.Equal(t, 202, r.Status)
	postID := r.JSON(t)["post_id"].(string)
	j := h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, "completed", j["status"], "a job with one success is completed")
	require.Equal(t, 1.0, j["failed"])
	var failedMsg string
	for _, s := range j["platform_statuses"].([]any) {
		if s.(map[string]any)["platform"] == "instagram" {
			failedMsg = s.(map[string]any)["message"].(string)
		}
	}
	require.Contains(t, failedMsg, apptest.UnconvertibleMessage)
	require.Eventually(t, func() bool { return h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)["status"] == "partial" }, 10*time.Second, 10*time.Millisecond)
	p := h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)
	for _, pl := range p["platforms"].([]any) {
		m := pl.(map[string]any)
		if m["platform"] == "instagram" {
			require.Equal(t, "failed", m["status"])
			require.Contains(t, m["error"], apptest.UnconvertibleMessage)
		}
	}

	r = h.Do("POST", "/v1/posts/"+postID+"/publish", nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	j = h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, 1.0, j["total"], "only the failed target")
	require.Equal(t, "instagram", j["platform_statuses"].([]any)[0].(map[string]any)["platform"])
	require.Len(t, h.App.Sim.Publications(platforms.X), 1, "X is not published twice")
}

func TestPublishRefusals(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X).ID
	other, otherKey := h.NewUser("other@example.com", "pro")
	foreign := h.NewAccount(other.ID, "linkedin")

	for name, body := range map[string]string{
		"no accounts":     `{"content":"x","platforms":[]}`,
		"missing":         `{"content":"x"}`,
		"unknown account": `{"content":"x","platforms":["` + uuid.NewString() + `"]}`,
		"foreign account": `{"content":"x","platforms":["` + foreign.ID + `"]}`,
		"not json":        `publish this`,
	} {
		r := h.Do("POST", "/v1/posts/publish", body)
		require.Equal(t, 400, r.Status, name)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
	}
	require.Equal(t, 0, h.CountPosts())

	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "once", "platforms": []string{x}})
	require.Equal(t, 202, r.Status)
	postID := r.JSON(t)["post_id"].(string)
	h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Eventually(t, func() bool { return h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)["status"] == "published" }, 10*time.Second, 10*time.Millisecond)
	r = h.Do("POST", "/v1/posts/"+postID+"/publish", nil)
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "already published")
	r = h.DoKey(otherKey, "POST", "/v1/posts/"+postID+"/publish", nil, nil)
	require.Equal(t, 403, r.Status)
	r = h.Do("POST", "/v1/posts/"+uuid.NewString()+"/publish", nil)
	require.Equal(t, 404, r.Status)
	r = h.Do("POST", "/v1/posts/nope/publish", nil)
	require.Equal(t, 400, r.Status)
	require.Len(t, h.App.Sim.Publications(platforms.X), 1)
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, SimLatency: 100 * time.Millisecond})
	x := h.Account(platforms.X).ID
	body := map[string]any{"content": "idempotent", "platforms": []string{x}}
	key := http.Header{"Idempotency-Key": {"order-42"}}
	first := h.DoKey(h.Key, "POST", "/v1/posts/publish", body, key)
	require.Equal(t, 202, first.Status)
	require.Empty(t, first.Header.Get("Idempotent-Replayed"))
	again := h.DoKey(h.Key, "POST", "/v1/posts/publish", body, http.Header{"Idempotency-Key": {`"order-42"`}})
	require.Equal(t, 202, again.Status, "a quoted key is the same key")
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.JSON(t)["tracking_id"], again.JSON(t)["tracking_id"])
	require.Equal(t, first.Header.Get("Location"), again.Header.Get("Location"))

	other := h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "something else", "platforms": []string{x}}, key)
	require.Equal(t, 422, other.Status)
	require.Equal(t, "idempotency_conflict", other.ErrorCode(t))

	for name, v := range map[string]string{"empty": `""`, "blank": " ", "too long": strings.Repeat("k", 256)} {
		r := h.DoKey(h.Key, "POST", "/v1/posts/publish", body, http.Header{"Idempotency-Key": {v}})
		require.Equal(t, 400, r.Status, name)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
	}

	// Concurrent requests with one key: one is answered, the others are 409 or replays of it.
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	tracking := make([]string, 8)
	for i := range statuses {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := h.DoKey(h.Key, "POST", "/v1/posts/publish", map[string]any{"content": "concurrent", "platforms": []string{x}}, http.Header{"Idempotency-Key": {"burst"}})
			statuses[i] = r.Status
			if r.Status == 202 {
				tracking[i] = r.JSON(t)["tracking_id"].(string)
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
	h.WaitJob(first.JSON(t)["tracking_id"].(string))
	require.Eventually(t, func() bool { return len(h.App.Sim.Publications(platforms.X)) == 2 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	require.Len(t, h.App.Sim.Publications(platforms.X), 2, "idempotent and concurrent posts published once each")

	// A key is scoped to its route: the same key on the other publish route is a new request.
	postID := h.CreatePost("draft", h.Account(platforms.Bluesky))
	r := h.DoKey(h.Key, "POST", "/v1/posts/"+postID+"/publish", nil, key)
	require.Equal(t, 202, r.Status, string(r.Body))
	require.NotEqual(t, first.JSON(t)["tracking_id"], r.JSON(t)["tracking_id"])
}

// A request whose Idempotency-Key another request answered while it was on its way (the check
// before it ran found no answer: the other was still being carried out, on another node or by
// an actor after its client gave up on it) changes nothing and is answered as that one was. Here
// the other request's commit holds the store while this one is checked and queued behind it.
func TestARequestWhoseKeyWasAnsweredMeanwhileIsAnsweredAsThatOne(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X).ID
	body := []byte(`{"content":"sent through two doors","platforms":["` + x + `"]}`)
	// The key's record as publishFlow names it: the user, the operation and the key; the
	// fingerprint of the path and the body.
	scope := sha256.Sum256([]byte(h.User.ID + "\x00POST /v1/posts/publish\x00twice"))
	fp := sha256.Sum256(append([]byte("/v1/posts/publish\x00"), body...))
	first := &persistence.IdempotencyRecord{Fingerprint: fp[:], Status: 202, Location: "/v1/jobs/first-job", CreatedAt: time.Now().UTC(),
		Body: []byte(`{"post_id":"first-post","tracking_id":"first-job","status":"queued","stream_url":"/v1/jobs/first-job/stream"}`)}
	posts := func() int {
		n := 0
		require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
			var err error
			_, n, err = tx.ListPosts(persistence.PostFilter{Scope: h.User.ID, Limit: 1})
			return err
		}))
		return n
	}
	before := posts()

	inCommit, release := make(chan struct{}), make(chan struct{})
	committed := make(chan error, 1)
	go func() {
		committed <- h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
			if err := tx.ClaimIdempotency(scope[:], first); err != nil {
				return err
			}
			close(inCommit)
			<-release
			return nil
		})
	}()
	<-inCommit
	type answer struct {
		status   int
		replayed string
		body     []byte
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", h.URL+"/v1/posts/publish", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+h.Key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "twice")
		resp, err := h.Client.Do(req)
		if err != nil {
			answered <- answer{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b}
	}()
	// The request found no answer to replay and waits to commit behind the held commit.
	require.Eventually(t, func() bool { return h.App.Store.QueueDepth() > 0 }, 10*time.Second, time.Millisecond)
	close(release)
	require.NoError(t, <-committed)
	a := <-answered
	require.Equal(t, 202, a.status, string(a.body))
	require.Equal(t, "true", a.replayed)
	require.JSONEq(t, string(first.Body), string(a.body), "answered as the first request was")
	require.Equal(t, before, posts(), "no post was created")
	require.Empty(t, h.App.Sim.Publications(platforms.X))
}

func TestScheduling(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X).ID
	at := time.Now().Add(1500 * time.Millisecond).UTC()
	r := h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "on time", "platforms": []string{x}, "scheduledAt": at.Format(time.RFC3339Nano)})
	require.Equal(t, 201, r.Status, string(r.Body))
	p := r.JSON(t)
	require.Equal(t, "scheduled", p["status"])
	postID := p["id"].(string)
	var jobID string
	require.Eventually(t, func() bool {
		p := h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)
		if s, ok := p["tracking_id"].(string); ok {
			jobID = s
			return true
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	j := h.WaitJob(jobID)
	created, err := time.Parse(time.RFC3339Nano, j["created_at"].(string))
	require.NoError(t, err)
	require.Less(t, created.Sub(at), time.Second, "fired within one second of its time")
	require.False(t, created.Before(at), "not before its time")

	// A draft scheduled, rescheduled, then deleted never fires.
	draft := h.CreatePost("never", h.Account(platforms.Bluesky))
	r = h.Do("POST", "/v1/posts/"+draft+"/schedule", map[string]any{"scheduledAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 200, r.Status, string(r.Body))
	// Moved to a few seconds ahead: time for the PATCH and the DELETE on a busy machine (a post
	// that has fired is publishing and cannot be deleted), then a wait past that time.
	moved := time.Now().Add(4 * time.Second).UTC()
	r = h.Do("POST", "/v1/posts/"+draft+"/schedule", map[string]any{"scheduledAt": moved.Format(time.RFC3339Nano)})
	require.Equal(t, 200, r.Status, string(r.Body))
	at, err = time.Parse(time.RFC3339Nano, r.JSON(t)["scheduled_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, moved, at, time.Millisecond, "rescheduling moves the time")
	r = h.Do("PATCH", "/v1/posts/"+draft, map[string]any{"content": "never, edited"})
	require.Equal(t, "scheduled", r.JSON(t)["status"], "PATCH keeps the status")
	r = h.Do("DELETE", "/v1/posts/"+draft, nil)
	require.Equal(t, 204, r.Status, "%s (%s left before the post's time)", r.Body, time.Until(moved))
	time.Sleep(time.Until(moved) + 1500*time.Millisecond)
	require.Empty(t, h.App.Sim.Publications(platforms.Bluesky), "deleting cancels")
}

func TestScheduleBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X).ID
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
		body := map[string]any{"content": "x", "platforms": []string{x}, "scheduledAt": tc.at}
		if tc.tz != "" {
			body["timezone"] = tc.tz
		}
		r := h.Do("POST", "/v1/posts/schedule", body)
		require.Equal(t, 400, r.Status, name)
		require.Contains(t, r.ErrorMessage(t), tc.msg, name)
	}
	r := h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "x", "platforms": []string{x}})
	require.Contains(t, r.ErrorMessage(t), "scheduledAt: Required")
	require.Equal(t, 0, h.CountPosts())

	// Naive + IANA zone, and +default in the user's zone, resolve to the right instant.
	r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "tz", "platforms": []string{x}, "scheduledAt": future.Format("2006-01-02") + "T09:00:00", "timezone": "Asia/Tokyo"})
	require.Equal(t, 201, r.Status, string(r.Body))
	require.Equal(t, future.Format("2006-01-02")+"T00:00:00Z", r.JSON(t)["scheduled_at"])
	r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "tz", "platforms": []string{x}, "scheduledAt": future.Format("2006-01-02") + "T09:00:00+default"})
	require.Equal(t, future.Format("2006-01-02")+"T09:00:00Z", r.JSON(t)["scheduled_at"], "the demo user's zone is UTC")
	// ISO 8601 as clients send it: minutes without seconds, lower-case t and z, basic offsets.
	for at, want := range map[string]string{
		future.Format("2006-01-02") + "t09:30z":                 "T09:30:00Z",
		future.Format("2006-01-02") + "T09:30+0530":             "T04:00:00Z",
		future.Format("2006-01-02") + "T09:30:00.1234567891+05": "T04:30:00.123456789Z",
		future.Format("2006-01-02") + "T09:30:00,5-00:00":       "T09:30:00.5Z",
	} {
		r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "iso", "platforms": []string{x}, "scheduledAt": at})
		require.Equal(t, 201, r.Status, at+": "+string(r.Body))
		require.Equal(t, future.Format("2006-01-02")+want, r.JSON(t)["scheduled_at"], at)
	}
	r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "iso", "platforms": []string{x}, "scheduledAt": future.Format("2006-01-02") + "T09Z"})
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "the time of day needs minutes (hh:mm)")

	published := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "gone", "platforms": []string{x}}).JSON(t)["post_id"].(string)
	require.Eventually(t, func() bool { return h.Do("GET", "/v1/posts/"+published, nil).JSON(t)["status"] == "published" }, 10*time.Second, 10*time.Millisecond)
	r = h.Do("POST", "/v1/posts/"+published+"/schedule", map[string]any{"scheduledAt": future.Format(time.RFC3339)})
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "cannot be scheduled")
}

func TestFreePlanQuota(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{FreeQuota: 2})
	u, key := h.NewUser("free@example.com", "free")
	acct := h.NewAccount(u.ID, "linkedin")
	body := func(i int) map[string]any {
		return map[string]any{"content": fmt.Sprintf("free %d", i), "platforms": []string{acct.ID}}
	}
	r := h.DoKey(key, "POST", "/v1/posts/publish", body(1), nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	sched := body(2)
	sched["scheduledAt"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r = h.DoKey(key, "POST", "/v1/posts/schedule", sched, nil)
	require.Equal(t, 201, r.Status, string(r.Body))
	r = h.DoKey(key, "POST", "/v1/posts/publish", body(3), nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, "limit_exceeded", r.ErrorCode(t))
	d := r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)
	require.Equal(t, 2.0, d["limit"])
	require.Equal(t, 2.0, d["used"])
	require.Equal(t, time.Now().UTC().Format("2006-01"), d["period"])
	// A draft is not a publish: creating drafts stays free.
	r = h.DoKey(key, "POST", "/v1/posts", body(4), nil)
	require.Equal(t, 201, r.Status)
}

// The post's commit of a job's outcome settles the job: it is no longer resumed at start-up, and
// its actor, read again after passivating, passivates again (it does not wait for a sync that
// already happened).
func TestFinishedJobIsSettledByItsPost(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, PostIdle: 50 * time.Millisecond})
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "settled", "platforms": []string{h.Account(platforms.X).ID}})
	require.Equal(t, 202, r.Status, string(r.Body))
	jobID := r.JSON(t)["tracking_id"].(string)
	require.Equal(t, "completed", h.WaitJob(jobID)["status"])
	active := func() []string {
		var ids []string
		require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error { ids = tx.ActiveJobs(); return nil }))
		return ids
	}
	require.Eventually(t, func() bool { return len(active()) == 0 }, 10*time.Second, 10*time.Millisecond, "no job left to resume")
	require.Eventually(t, func() bool { return h.App.Jobs.Live() == 0 }, 10*time.Second, 10*time.Millisecond, "the finished job passivates")
	j := h.Do("GET", "/v1/jobs/"+jobID, nil)
	require.Equal(t, 200, j.Status)
	require.Equal(t, "completed", j.JSON(t)["status"])
	require.Eventually(t, func() bool { return h.App.Jobs.Live() == 0 }, 10*time.Second, 10*time.Millisecond, "read again, it passivates again")
}

// A real SSE client gets progress and done for a live job, and a late client exactly one done.
func TestJobStream(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, SimLatency: 150 * time.Millisecond})
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "streamed", "platforms": []string{h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID}})
	require.Equal(t, 202, r.Status)
	jobID := r.JSON(t)["tracking_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := h.JobStream(ctx, jobID)
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

	late, _ := h.JobStream(ctx, jobID)
	require.Len(t, late, 1, "a late client gets a single done")
	require.Equal(t, "done", late[0].Type)

	// Unknown and foreign jobs are refused before any event.
	resp := h.DoKey(h.Key, "GET", "/v1/jobs/"+uuid.NewString()+"/stream", nil, nil)
	require.Equal(t, 404, resp.Status)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	_, otherKey := h.NewUser("peeker@example.com", "pro")
	resp = h.DoKey(otherKey, "GET", "/v1/jobs/"+jobID+"/stream", nil, nil)
	require.Equal(t, 403, resp.Status)
	resp = h.DoKey(otherKey, "GET", "/v1/jobs/"+jobID, nil, nil)
	require.Equal(t, 403, resp.Status)
}

// A client that opens 100 streams and drops them mid-way frees everything. (One user may open
// that many here: the cap per user is TestStreamsPerUserAreCapped's.)
func TestDroppedStreamsAreFreed(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, Config: func(c *app.Config) { c.MaxStreamsPerUser = -1 },
		Budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := h.Account(platforms.X).ID
	h.WaitJob(h.Do("POST", "/v1/posts/publish", map[string]any{"content": "spends the budget", "platforms": []string{x}}).JSON(t)["tracking_id"].(string))
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "waits an hour", "platforms": []string{x}})
	jobID := r.JSON(t)["tracking_id"].(string)
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The client drops the stream as soon as its first event arrives.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/v1/jobs/"+jobID+"/stream", nil)
			assert.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+h.Key)
			events, _ := apptest.ReadStream(&http.Client{}, req, func(apptest.SSEEvent) { cancel() })
			if len(events) == 0 || events[0].Type != "progress" {
				t.Errorf("a running job's stream starts with its state: %v", events)
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		return strings.Contains(apptest.Scrape(t, h.App.MetricsURL()), "herald_sse_subscribers 0")
	}, 10*time.Second, 20*time.Millisecond, "every stream was freed")
	j := h.Do("GET", "/v1/jobs/"+jobID, nil).JSON(t)
	require.Equal(t, "processing", j["status"])
	require.Contains(t, j["platform_statuses"].([]any)[0].(map[string]any)["message"], "waiting for rate budget until ")
}
