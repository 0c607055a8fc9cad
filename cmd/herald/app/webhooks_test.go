package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence"
)

// publicURL is a valid subscription URL when private targets are not allowed. Tests that use it
// never produce an event for its subscription, so Herald never connects to it.
const publicURL = "https://93.184.216.34/hooks/herald"

// withReceivers allows loopback targets and trusts the test CA, with fast retries.
func withReceivers(ca *webhooktest.CA) func(*app.Config) {
	return func(c *app.Config) {
		c.WebhookAllowPrivate = true
		c.WebhookCAFile = ca.File
		c.WebhookSchedule = []time.Duration{time.Millisecond}
	}
}

// appendEvent writes a post event to the outbox as the post lifecycle does: in a transaction of
// the store, then Notify.
func (b *testBundle) appendEvent(typ string, p *persistence.Post) *persistence.Event {
	b.t.Helper()
	targets := make([]map[string]any, 0, len(p.Targets))
	for _, t := range p.Targets {
		targets = append(targets, map[string]any{"platform": t.Platform, "status": t.Status, "connected_account_id": t.AccountID, "error": t.Error})
	}
	data, err := json.Marshal(map[string]any{"post_id": p.ID, "status": p.Status, "platforms": targets})
	require.NoError(b.t, err)
	ev := &persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: typ, UserID: p.UserID, CreatedAt: time.Now().UTC(), Data: data}
	require.NoError(b.t, b.app.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.AppendEvent(ev) }))
	b.app.Events.Notify()
	return ev
}

func (b *testBundle) createWebhook(url string, events ...string) (id, secret string) {
	b.t.Helper()
	if len(events) == 0 {
		events = persistence.WebhookEvents
	}
	r := b.do("POST", "/v1/webhooks", map[string]any{"url": url, "events": events})
	require.Equal(b.t, 201, r.status, string(r.body))
	m := r.json(b.t)
	return m["id"].(string), m["secret"].(string)
}

func (b *testBundle) webhookCount() int {
	b.t.Helper()
	n := 0
	require.NoError(b.t, b.app.Store.View(func(tx *persistence.Tx) error { n = tx.CountWebhooks(b.user.ID); return nil }))
	return n
}

func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	r := b.do("GET", "/v1/webhooks", nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, []any{}, r.json(t)["data"])

	r = b.do("POST", "/v1/webhooks", map[string]any{"url": publicURL, "events": []string{"post.published", "post.failed"}})
	require.Equal(t, 201, r.status, string(r.body))
	created := r.json(t)
	id := created["id"].(string)
	secret := created["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	require.Equal(t, publicURL, created["url"])
	require.Equal(t, true, created["active"])
	require.Equal(t, []any{"post.published", "post.failed"}, created["events"])
	require.Nil(t, created["deactivated_reason"])

	r = b.do("GET", "/v1/webhooks", nil)
	list := r.json(t)["data"].([]any)
	require.Len(t, list, 1)
	require.NotContains(t, string(r.body), secret, "the secret is shown only at creation")
	require.NotContains(t, list[0].(map[string]any), "secret")

	r = b.do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"post.deleted"}, "active": false})
	require.Equal(t, 200, r.status, string(r.body))
	m := r.json(t)
	require.Equal(t, []any{"post.deleted"}, m["events"])
	require.Equal(t, false, m["active"])
	require.NotContains(t, string(r.body), secret)
	r = b.do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": "https://93.184.216.34:443/other?x=1", "active": true})
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "https://93.184.216.34:443/other?x=1", r.json(t)["url"])
	require.Equal(t, true, r.json(t)["active"])

	r = b.do("POST", "/v1/webhooks/"+id+"/rotate-secret", nil)
	require.Equal(t, 200, r.status, string(r.body))
	rot := r.json(t)
	require.NotEqual(t, secret, rot["secret"])
	require.True(t, strings.HasPrefix(rot["secret"].(string), "whsec_"))
	until, err := time.Parse(time.RFC3339, rot["previous_secret_expires_at"].(string))
	require.NoError(t, err)
	require.InDelta(t, 24*time.Hour, time.Until(until), float64(time.Minute))

	r = b.do("GET", "/v1/webhooks/"+id+"/deliveries", nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, []any{}, r.json(t)["data"])

	// Another user's subscription is 403 on every route; an unknown one 404.
	_, otherKey := b.newUser("other@example.com", "pro")
	for _, tc := range []struct{ method, path, body string }{
		{"PATCH", "/v1/webhooks/" + id, `{"active":false}`},
		{"DELETE", "/v1/webhooks/" + id, ""},
		{"GET", "/v1/webhooks/" + id + "/deliveries", ""},
		{"POST", "/v1/webhooks/" + id + "/rotate-secret", ""},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		r := b.doKey(otherKey, tc.method, tc.path, body, nil)
		require.Equal(t, 403, r.status, tc.method+" "+tc.path)
		require.Equal(t, "forbidden", r.errorCode(t))
		r = b.do(tc.method, strings.Replace(tc.path, id, uuid.NewString(), 1), body)
		require.Equal(t, 404, r.status, tc.method+" "+tc.path)
		require.Equal(t, "not_found", r.errorCode(t))
		r = b.do(tc.method, strings.Replace(tc.path, id, "not-a-uuid", 1), body)
		require.Equal(t, 400, r.status, tc.method+" "+tc.path)
		require.Equal(t, "validation_error", r.errorCode(t))
	}
	r = b.doKey(otherKey, "GET", "/v1/webhooks", nil, nil)
	require.Equal(t, []any{}, r.json(t)["data"], "another user's list does not show it")
	r = b.do("GET", "/v1/webhooks", nil)
	require.Equal(t, true, r.json(t)["data"].([]any)[0].(map[string]any)["active"], "the refused PATCH changed nothing")

	r = b.do("DELETE", "/v1/webhooks/"+id, nil)
	require.Equal(t, 204, r.status)
	require.Empty(t, r.body)
	r = b.do("DELETE", "/v1/webhooks/"+id, nil)
	require.Equal(t, 404, r.status)
	require.Equal(t, 0, b.webhookCount())
}

func TestWebhookBadInput(t *testing.T) { //nolint:tparallel // each case checks that no webhook was created, which a case running beside it would change
	t.Parallel()
	b := setup(t, bundleOpts{})
	all := `["post.published"]`
	long := "https://93.184.216.34/" + strings.Repeat("a", 2048)
	cases := []struct {
		name, body, contentType, message string
		status                           int
	}{
		{"not JSON", `{"url": `, "application/json", "Malformed JSON", 400},
		{"plain text", `https://example.com`, "text/plain", "Expected object, received string", 400},
		{"array", `[]`, "", "Expected object, received array", 400},
		{"empty body", ``, "", "Expected object, received nothing", 400},
		{"missing url", `{"events": ` + all + `}`, "", "url: Required", 400},
		{"url not a string", `{"url": 5, "events": ` + all + `}`, "", "url: Expected string, received number", 400},
		{"missing events", `{"url": "` + publicURL + `"}`, "", "events: Required", 400},
		{"events not an array", `{"url": "` + publicURL + `", "events": "post.published"}`, "", "events: Expected array, received string", 400},
		{"empty events", `{"url": "` + publicURL + `", "events": []}`, "", "events: must contain at least one", 400},
		{"unknown event", `{"url": "` + publicURL + `", "events": ["post.created"]}`, "", `unknown event "post.created"`, 400},
		{"event not a string", `{"url": "` + publicURL + `", "events": [7]}`, "", "events.0: Expected string, received number", 400},
		{"duplicate events", `{"url": "` + publicURL + `", "events": ["post.failed","post.failed"]}`, "", "events: duplicate event post.failed", 400},
		{"http", `{"url": "http://93.184.216.34/h", "events": ` + all + `}`, "", "url: must use https", 400},
		{"localhost", `{"url": "https://localhost/h", "events": ` + all + `}`, "", "names a local host", 400},
		{"127.0.0.1", `{"url": "https://127.0.0.1/h", "events": ` + all + `}`, "", "127.0.0.1 is loopback", 400},
		{"[::1]", `{"url": "https://[::1]/h", "events": ` + all + `}`, "", "::1 is loopback", 400},
		{"10.x", `{"url": "https://10.1.1.1/h", "events": ` + all + `}`, "", "10.1.1.1", 400},
		{"172.16.x", `{"url": "https://172.16.0.9/h", "events": ` + all + `}`, "", "172.16.0.9", 400},
		{"192.168.x", `{"url": "https://192.168.0.9/h", "events": ` + all + `}`, "", "192.168.0.9", 400},
		{"metadata", `{"url": "https://169.254.169.254/latest/meta-data/", "events": ` + all + `}`, "", "169.254.169.254", 400},
		{"CGNAT", `{"url": "https://100.100.100.200/h", "events": ` + all + `}`, "", "100.100.100.200", 400},
		{"metadata name", `{"url": "https://metadata.google.internal/h", "events": ` + all + `}`, "", "local or internal host", 400},
		{"userinfo", `{"url": "https://admin:pw@93.184.216.34/h", "events": ` + all + `}`, "", "must not contain a user name or password", 400},
		{"port", `{"url": "https://93.184.216.34:8443/h", "events": ` + all + `}`, "", "must use port 443", 400},
		{"over-long", `{"url": "` + long + `", "events": ` + all + `}`, "", "at most 2048 characters", 400},
		{"relative", `{"url": "/hook", "events": ` + all + `}`, "", "absolute https URL", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{}
			if tc.contentType != "" {
				hdr.Set("Content-Type", tc.contentType)
			}
			r := b.doKey(b.key, "POST", "/v1/webhooks", []byte(tc.body), hdr)
			require.Equal(t, tc.status, r.status, string(r.body))
			require.Equal(t, "validation_error", r.errorCode(t))
			require.Contains(t, r.errorMessage(t), tc.message)
			require.Equal(t, 0, b.webhookCount(), "a refused request changes nothing")
		})
	}

	id, _ := b.createWebhook(publicURL, "post.published")
	patches := []struct{ name, body, message string }{
		{"nothing", `{}`, "nothing to update"},
		{"url number", `{"url": 1}`, "url: Expected string, received number"},
		{"url null", `{"url": null}`, "url: Expected string, received null"},
		{"events string", `{"events": "post.failed"}`, "events: Expected array, received string"},
		{"events object", `{"events": {"a": 1}}`, "events: Expected array, received object"},
		{"events empty", `{"events": []}`, "events: must contain at least one"},
		{"unknown event", `{"events": ["post.updated"]}`, "unknown event"},
		{"active string", `{"active": "yes"}`, "active: Expected boolean, received string"},
		{"active number", `{"active": 0}`, "active: Expected boolean, received number"},
		{"private url", `{"url": "https://10.0.0.1/h"}`, "10.0.0.1"},
		{"valid events, bad url", `{"events": ["post.failed"], "url": "http://93.184.216.34/h"}`, "must use https"},
		{"plain text", `active=false`, "Expected object, received string"},
	}
	for _, tc := range patches {
		r := b.do("PATCH", "/v1/webhooks/"+id, []byte(tc.body))
		require.Equal(t, 400, r.status, tc.name)
		require.Equal(t, "validation_error", r.errorCode(t), tc.name)
		require.Contains(t, r.errorMessage(t), tc.message, tc.name)
	}
	r := b.do("GET", "/v1/webhooks", nil)
	w := r.json(t)["data"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"post.published"}, w["events"], "refused patches changed nothing")
	require.Equal(t, publicURL, w["url"])
	require.Equal(t, true, w["active"])

	for _, q := range []string{"?limit=0", "?limit=101", "?page=0", "?limit=x"} {
		r := b.do("GET", "/v1/webhooks/"+id+"/deliveries"+q, nil)
		require.Equal(t, 400, r.status, q)
		require.Equal(t, "validation_error", r.errorCode(t))
	}

	// At most 25 subscriptions per user.
	for i := 1; i < 25; i++ {
		b.createWebhook(fmt.Sprintf("%s/%d", publicURL, i))
	}
	r = b.do("POST", "/v1/webhooks", map[string]any{"url": publicURL, "events": []string{"post.failed"}})
	require.Equal(t, 400, r.status)
	require.Equal(t, "limit_exceeded", r.errorCode(t))
	require.Equal(t, 25, b.webhookCount())
}

// Every event reaches a real HTTPS receiver on loopback, signed so that an independent verifier
// accepts it, also during a secret rotation; the delivery log and the metrics show it.
func TestWebhookDeliveryEndToEnd(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	b := setup(t, bundleOpts{config: withReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	id, secret := b.createWebhook(rcv.URL)
	other, _ := b.createWebhook(rcv.URL+"?only=published", "post.published")

	// post.deleted comes from the API.
	postID := b.createPost("to be deleted", b.accounts[0], b.accounts[1])
	var deleted *persistence.Post
	require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
		var err error
		deleted, err = tx.Post(postID)
		return err
	}))
	r := b.do("DELETE", "/v1/posts/"+postID, nil)
	require.Equal(t, 204, r.status)
	req := rcv.Next(t)
	require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(req.Body, req.Header.Get("X-Service-Signature"), secret, 300*time.Second))
	require.Equal(t, "post.deleted", req.Header.Get("X-Service-Event"))
	var body struct {
		ID        string
		Type      string
		CreatedAt time.Time `json:"created_at"`
		Data      struct {
			PostID    string `json:"post_id"`
			Status    string
			Platforms []struct {
				Platform           string
				Status             string
				ConnectedAccountID string `json:"connected_account_id"`
				Error              *string
			}
		}
	}
	require.NoError(t, json.Unmarshal(req.Body, &body))
	require.Equal(t, req.Header.Get("X-Service-Delivery-Id"), body.ID)
	require.Equal(t, "post.deleted", body.Type)
	require.Equal(t, postID, body.Data.PostID)
	require.Equal(t, "draft", body.Data.Status, "the status the post had when it was deleted")
	require.Len(t, body.Data.Platforms, 2)
	require.Equal(t, b.accounts[0].ID, body.Data.Platforms[0].ConnectedAccountID)
	require.Equal(t, "linkedin", body.Data.Platforms[0].Platform)
	require.Equal(t, "pending", body.Data.Platforms[0].Status)
	require.Nil(t, body.Data.Platforms[0].Error)
	require.WithinDuration(t, time.Now(), body.CreatedAt, time.Minute)

	// The three others come from the publishing runtime; appended here as it appends them.
	deleted.Status = "published"
	b.appendEvent("post.published", deleted)
	deleted.Status = "failed"
	b.appendEvent("post.failed", deleted)
	deleted.Status = "scheduled"
	b.appendEvent("post.scheduled", deleted)
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		req := rcv.Next(t)
		s := secret
		if req.Query == "only=published" {
			s = ""
		}
		if s != "" {
			require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(req.Body, req.Header.Get("X-Service-Signature"), s, 300*time.Second))
		}
		seen[req.Header.Get("X-Service-Event")+"?"+req.Query]++
	}
	require.Equal(t, map[string]int{"post.published?": 1, "post.failed?": 1, "post.scheduled?": 1, "post.published?only=published": 1}, seen)

	// During a rotation both secrets verify every delivery.
	r = b.do("POST", "/v1/webhooks/"+id+"/rotate-secret", nil)
	require.Equal(t, 200, r.status)
	newSecret := r.json(t)["secret"].(string)
	for _, typ := range []string{persistence.PostEventPublished, persistence.PostEventFailed, persistence.PostEventScheduled, persistence.PostEventDeleted} {
		deleted.Status = "published"
		b.appendEvent(typ, deleted)
	}
	for i := 0; i < 5; i++ { // four to the first subscription, one to the second
		req := rcv.Next(t)
		if req.Query != "" {
			continue
		}
		sig := req.Header.Get("X-Service-Signature")
		require.Equal(t, 2, strings.Count(sig, ",v1="), sig)
		require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(req.Body, sig, newSecret, 300*time.Second))
		require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(req.Body, sig, secret, 300*time.Second))
	}

	// The log: newest first, each delivered once with a 200, paginated.
	var log []map[string]any
	require.Eventually(t, func() bool {
		r := b.do("GET", "/v1/webhooks/"+id+"/deliveries?limit=100", nil)
		log = nil
		for _, d := range r.json(t)["data"].([]any) {
			log = append(log, d.(map[string]any))
		}
		for _, d := range log {
			if d["status"] != "succeeded" {
				return false
			}
		}
		return len(log) == 8
	}, 10*time.Second, 10*time.Millisecond, "every delivery recorded as succeeded")
	require.Equal(t, "post.deleted", log[len(log)-1]["event"], "oldest last")
	for _, d := range log {
		require.Equal(t, 1.0, d["attempts"])
		require.Equal(t, 200.0, d["last_response_code"])
		require.Nil(t, d["last_error"])
		require.Nil(t, d["next_attempt_at"])
		require.NotNil(t, d["completed_at"])
	}
	r = b.do("GET", "/v1/webhooks/"+id+"/deliveries?limit=3&page=3", nil)
	require.Equal(t, 200, r.status)
	page := r.json(t)
	require.Len(t, page["data"], 2)
	require.Equal(t, map[string]any{"page": 3.0, "limit": 3.0, "total": 8.0}, page["pagination"])
	require.Equal(t, log[6]["id"], page["data"].([]any)[0].(map[string]any)["id"])

	text := scrape(t, b.app.MetricsURL())
	require.Contains(t, text, `herald_webhook_deliveries_total{event="post.deleted",outcome="succeeded"} 2`)
	require.Contains(t, text, `herald_webhook_attempts_total{event="post.published",outcome="success"}`)
	require.Contains(t, text, `herald_webhook_outbox_depth 0`)
	require.Contains(t, text, `herald_webhook_delivery_latency_seconds_bucket{event="post.failed"`)
	require.Contains(t, text, `herald_actors_live{actor_kind="webhook"}`)
	require.NotContains(t, text, id, "no ids in labels")
	require.NotContains(t, text, other)
	require.NotContains(t, text, "127.0.0.1:", "no URLs in labels")
}

// Failures are retried with the same delivery id; a 410 turns the subscription off.
func TestWebhookRetriesAndGone(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	b := setup(t, bundleOpts{config: withReceivers(ca)})
	flaky := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		if n < 3 {
			return 500
		}
		return 200
	})
	gone := webhooktest.NewReceiver(t, ca, webhooktest.Always(410))
	id, _ := b.createWebhook(flaky.URL)
	goneID, _ := b.createWebhook(gone.URL)

	postID := b.createPost("x", b.accounts[0])
	require.Equal(t, 204, b.do("DELETE", "/v1/posts/"+postID, nil).status)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, flaky.Next(t).Header.Get("X-Service-Delivery-Id"))
	}
	require.Equal(t, ids[0], ids[1])
	require.Equal(t, ids[0], ids[2])
	gone.Next(t)

	require.Eventually(t, func() bool {
		r := b.do("GET", "/v1/webhooks/"+id+"/deliveries", nil)
		d := r.json(t)["data"].([]any)[0].(map[string]any)
		return d["status"] == "succeeded" && d["attempts"] == 3.0 && d["id"] == ids[0]
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		r := b.do("GET", "/v1/webhooks", nil)
		for _, w := range r.json(t)["data"].([]any) {
			w := w.(map[string]any)
			if w["id"] == goneID {
				return w["active"] == false && strings.Contains(fmt.Sprint(w["deactivated_reason"]), "410")
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	r := b.do("GET", "/v1/webhooks/"+goneID+"/deliveries", nil)
	d := r.json(t)["data"].([]any)[0].(map[string]any)
	require.Equal(t, "failed", d["status"])
	require.Equal(t, 410.0, d["last_response_code"])
	require.Equal(t, 1, gone.Count(), "no retry after 410")
}

// Every schedule through the API is a post.scheduled, rescheduling a scheduled post included
// (the spec's event table: "a post is scheduled via the API").
func TestReschedulingEmitsPostScheduledAgain(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	b := setup(t, bundleOpts{config: withReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	_, secret := b.createWebhook(rcv.URL, "post.scheduled")

	type scheduled struct {
		ID   string
		Type string
		Data struct {
			PostID      string    `json:"post_id"`
			Status      string    `json:"status"`
			ScheduledAt time.Time `json:"scheduled_at"`
		}
	}
	next := func() scheduled {
		t.Helper()
		req := rcv.Next(t)
		require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(req.Body, req.Header.Get("X-Service-Signature"), secret, 300*time.Second))
		require.Equal(t, "post.scheduled", req.Header.Get("X-Service-Event"))
		var ev scheduled
		require.NoError(t, json.Unmarshal(req.Body, &ev))
		return ev
	}

	postID := b.createPost("moved twice", b.accounts[0])
	first := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	r := b.do("POST", "/v1/posts/"+postID+"/schedule", map[string]any{"scheduledAt": first.Format(time.RFC3339)})
	require.Equal(t, 200, r.status, string(r.body))
	ev1 := next()
	require.Equal(t, postID, ev1.Data.PostID)
	require.Equal(t, "scheduled", ev1.Data.Status)
	require.True(t, first.Equal(ev1.Data.ScheduledAt))

	second := first.Add(24 * time.Hour)
	r = b.do("POST", "/v1/posts/"+postID+"/schedule", map[string]any{"scheduledAt": second.Format(time.RFC3339)})
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "scheduled", r.json(t)["status"])
	ev2 := next()
	require.Equal(t, postID, ev2.Data.PostID)
	require.True(t, second.Equal(ev2.Data.ScheduledAt), "the event carries the new time")
	require.NotEqual(t, ev1.ID, ev2.ID, "a new delivery, not a retry")

	// The outbox holds both.
	n := 0
	require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
		evs, err := tx.EventsAfter("test-reader", 100) // a reader with no cursor reads from the start
		for _, ev := range evs {
			if ev.Type == "post.scheduled" && strings.Contains(string(ev.Data), postID) {
				n++
			}
		}
		return err
	}))
	require.Equal(t, 2, n)
}

// Registration reads a URL's host as resolvers do: every spelling of loopback, private or
// metadata addresses is refused on create and on update with 400 validation_error naming the
// address, and nothing is stored; public addresses in other spellings are stored canonical.
func TestWebhookHostSpellingsAreRefusedAtRegistration(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	id, _ := b.createWebhook(publicURL, "post.published")
	for _, tc := range []struct{ url, message string }{
		{"https://127.1/h", "127.1 (127.0.0.1) is loopback"},
		{"https://0x7f.1/h", "0x7f.1 (127.0.0.1) is loopback"},
		{"https://0177.0.0.1/h", "0177.0.0.1 (127.0.0.1) is loopback"},
		{"https://2130706433/h", "2130706433 (127.0.0.1) is loopback"},
		{"https://１２７.０.０.１/h", "(127.0.0.1) is loopback"},
		{"https://127。0。0。1/h", "(127.0.0.1) is loopback"},
		{"https://localhost./h", "localhost names a local host"},
		{"https://127.0.0.1./h", "127.0.0.1. (127.0.0.1) is loopback"},
		{"https://hooks.localhost/h", "names a local or internal host"},
		{"https://[::1]/h", "::1 is loopback"},
		{"https://[::ffff:127.0.0.1]/h", "::ffff:127.0.0.1 is loopback"},
		{"https://[0:0:0:0:0:0:0:1]/h", "(::1) is loopback"},
		{"https://0xa9fea9fe/latest/meta-data", "(169.254.169.254) is loopback"},
		{"https://1.2.3.4.5/h", `invalid host "1.2.3.4.5"`},
	} {
		r := b.do("POST", "/v1/webhooks", map[string]any{"url": tc.url, "events": []string{"post.failed"}})
		require.Equal(t, 400, r.status, tc.url)
		require.Equal(t, "validation_error", r.errorCode(t), tc.url)
		require.Contains(t, r.errorMessage(t), "url: ", tc.url)
		require.Contains(t, r.errorMessage(t), tc.message, tc.url)
		r = b.do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": tc.url})
		require.Equal(t, 400, r.status, tc.url)
		require.Equal(t, "validation_error", r.errorCode(t), tc.url)
		require.Contains(t, r.errorMessage(t), tc.message, tc.url)
	}
	require.Equal(t, 1, b.webhookCount())
	r := b.do("GET", "/v1/webhooks", nil)
	require.Equal(t, publicURL, r.json(t)["data"].([]any)[0].(map[string]any)["url"], "refused updates changed nothing")

	// A public address in another spelling, or with a trailing dot, is stored in canonical form.
	r = b.do("POST", "/v1/webhooks", map[string]any{"url": "https://1572395042./hooks", "events": []string{"post.failed"}})
	require.Equal(t, 201, r.status, string(r.body))
	require.Equal(t, "https://93.184.216.34/hooks", r.json(t)["url"])
	r = b.do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": "https://９３.１８４.２１６.３４/h"})
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "https://93.184.216.34/h", r.json(t)["url"])
}

// With private targets allowed (sandbox, --webhook-allow-private), other spellings of loopback
// are accepted, stored as the address they name.
func TestWebhookHostSpellingsWithPrivateTargetsAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{config: func(c *app.Config) { c.WebhookAllowPrivate = true }})
	r := b.do("POST", "/v1/webhooks", map[string]any{"url": "http://127.1:8080/h", "events": []string{"post.failed"}})
	require.Equal(t, 201, r.status, string(r.body))
	require.Equal(t, "http://127.0.0.1:8080/h", r.json(t)["url"])
}
