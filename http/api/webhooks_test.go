package api_test

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
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// publicURL is a valid subscription URL when private targets are not allowed. Tests that use it
// never produce an event for its subscription, so Herald never connects to it.
const publicURL = "https://93.184.216.34/hooks/herald"

// appendEvent writes a post event to the outbox as the post lifecycle does: in a transaction of
// the store, then Notify.
func appendEvent(h *apptest.Herald, typ string, p *persistence.Post) *persistence.Event {
	h.T.Helper()
	targets := make([]map[string]any, 0, len(p.Targets))
	for _, t := range p.Targets {
		targets = append(targets, map[string]any{"platform": t.Platform, "status": t.Status, "connected_account_id": t.AccountID, "error": t.Error})
	}
	data, err := json.Marshal(map[string]any{"post_id": p.ID, "status": p.Status, "platforms": targets})
	require.NoError(h.T, err)
	ev := &persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: typ, UserID: p.UserID, CreatedAt: time.Now().UTC(), Data: data}
	require.NoError(h.T, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.AppendEvent(ev) }))
	h.App.Events.Notify()
	return ev
}

func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	r := h.Do("GET", "/v1/webhooks", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, []any{}, r.JSON(t)["data"])

	r = h.Do("POST", "/v1/webhooks", map[string]any{"url": publicURL, "events": []string{"post.published", "post.failed"}})
	require.Equal(t, 201, r.Status, string(r.Body))
	created := r.JSON(t)
	id := created["id"].(string)
	secret := created["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	require.Equal(t, publicURL, created["url"])
	require.Equal(t, true, created["active"])
	require.Equal(t, []any{"post.published", "post.failed"}, created["events"])
	require.Nil(t, created["deactivated_reason"])

	r = h.Do("GET", "/v1/webhooks", nil)
	list := r.JSON(t)["data"].([]any)
	require.Len(t, list, 1)
	require.NotContains(t, string(r.Body), secret, "the secret is shown only at creation")
	require.NotContains(t, list[0].(map[string]any), "secret")

	r = h.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"post.deleted"}, "active": false})
	require.Equal(t, 200, r.Status, string(r.Body))
	m := r.JSON(t)
	require.Equal(t, []any{"post.deleted"}, m["events"])
	require.Equal(t, false, m["active"])
	require.NotContains(t, string(r.Body), secret)
	r = h.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": "https://93.184.216.34:443/other?x=1", "active": true})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "https://93.184.216.34:443/other?x=1", r.JSON(t)["url"])
	require.Equal(t, true, r.JSON(t)["active"])

	r = h.Do("POST", "/v1/webhooks/"+id+"/rotate-secret", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	rot := r.JSON(t)
	require.NotEqual(t, secret, rot["secret"])
	require.True(t, strings.HasPrefix(rot["secret"].(string), "whsec_"))
	until, err := time.Parse(time.RFC3339, rot["previous_secret_expires_at"].(string))
	require.NoError(t, err)
	require.InDelta(t, 24*time.Hour, time.Until(until), float64(time.Minute))

	r = h.Do("GET", "/v1/webhooks/"+id+"/deliveries", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, []any{}, r.JSON(t)["data"])

	// Another user's subscription is 403 on every route; an unknown one 404.
	_, otherKey := h.NewUser("other@example.com", "pro")
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
		r := h.DoKey(otherKey, tc.method, tc.path, body, nil)
		require.Equal(t, 403, r.Status, tc.method+" "+tc.path)
		require.Equal(t, "forbidden", r.ErrorCode(t))
		r = h.Do(tc.method, strings.Replace(tc.path, id, uuid.NewString(), 1), body)
		require.Equal(t, 404, r.Status, tc.method+" "+tc.path)
		require.Equal(t, "not_found", r.ErrorCode(t))
		r = h.Do(tc.method, strings.Replace(tc.path, id, "not-a-uuid", 1), body)
		require.Equal(t, 400, r.Status, tc.method+" "+tc.path)
		require.Equal(t, "validation_error", r.ErrorCode(t))
	}
	r = h.DoKey(otherKey, "GET", "/v1/webhooks", nil, nil)
	require.Equal(t, []any{}, r.JSON(t)["data"], "another user's list does not show it")
	r = h.Do("GET", "/v1/webhooks", nil)
	require.Equal(t, true, r.JSON(t)["data"].([]any)[0].(map[string]any)["active"], "the refused PATCH changed nothing")

	r = h.Do("DELETE", "/v1/webhooks/"+id, nil)
	require.Equal(t, 204, r.Status)
	require.Empty(t, r.Body)
	r = h.Do("DELETE", "/v1/webhooks/"+id, nil)
	require.Equal(t, 404, r.Status)
	require.Equal(t, 0, h.WebhookCount())
}

func TestWebhookBadInput(t *testing.T) { //nolint:tparallel // each case checks that no webhook was created, which a case running beside it would change
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
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
			r := h.DoKey(h.Key, "POST", "/v1/webhooks", []byte(tc.body), hdr)
			require.Equal(t, tc.status, r.Status, string(r.Body))
			require.Equal(t, "validation_error", r.ErrorCode(t))
			require.Contains(t, r.ErrorMessage(t), tc.message)
			require.Equal(t, 0, h.WebhookCount(), "a refused request changes nothing")
		})
	}

	id, _ := h.CreateWebhook(publicURL, "post.published")
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
		r := h.Do("PATCH", "/v1/webhooks/"+id, []byte(tc.body))
		require.Equal(t, 400, r.Status, tc.name)
		require.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
		require.Contains(t, r.ErrorMessage(t), tc.message, tc.name)
	}
	r := h.Do("GET", "/v1/webhooks", nil)
	w := r.JSON(t)["data"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"post.published"}, w["events"], "refused patches changed nothing")
	require.Equal(t, publicURL, w["url"])
	require.Equal(t, true, w["active"])

	for _, q := range []string{"?limit=0", "?limit=101", "?page=0", "?limit=x"} {
		r := h.Do("GET", "/v1/webhooks/"+id+"/deliveries"+q, nil)
		require.Equal(t, 400, r.Status, q)
		require.Equal(t, "validation_error", r.ErrorCode(t))
	}

	// At most 25 subscriptions per user.
	for i := 1; i < 25; i++ {
		h.CreateWebhook(fmt.Sprintf("%s/%d", publicURL, i))
	}
	r = h.Do("POST", "/v1/webhooks", map[string]any{"url": publicURL, "events": []string{"post.failed"}})
	require.Equal(t, 400, r.Status)
	require.Equal(t, "limit_exceeded", r.ErrorCode(t))
	require.Equal(t, 25, h.WebhookCount())
}

// Every event reaches a real HTTPS receiver on loopback, signed so that an independent verifier
// accepts it, also during a secret rotation; the delivery log and the metrics show it.
func TestWebhookDeliveryEndToEnd(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	h := apptest.Start(t, apptest.Options{Config: apptest.WithReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	id, secret := h.CreateWebhook(rcv.URL)
	other, _ := h.CreateWebhook(rcv.URL+"?only=published", "post.published")

	// post.deleted comes from the API.
	postID := h.CreatePost("to be deleted", h.Accounts[0], h.Accounts[1])
	var deleted *persistence.Post
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		var err error
		deleted, err = tx.Post(postID)
		return err
	}))
	r := h.Do("DELETE", "/v1/posts/"+postID, nil)
	require.Equal(t, 204, r.Status)
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
	require.Equal(t, h.Accounts[0].ID, body.Data.Platforms[0].ConnectedAccountID)
	require.Equal(t, "linkedin", body.Data.Platforms[0].Platform)
	require.Equal(t, "pending", body.Data.Platforms[0].Status)
	require.Nil(t, body.Data.Platforms[0].Error)
	require.WithinDuration(t, time.Now(), body.CreatedAt, time.Minute)

	// The three others come from the publishing runtime; appended here as it appends them.
	deleted.Status = "published"
	appendEvent(h, "post.published", deleted)
	deleted.Status = "failed"
	appendEvent(h, "post.failed", deleted)
	deleted.Status = "scheduled"
	appendEvent(h, "post.scheduled", deleted)
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
	r = h.Do("POST", "/v1/webhooks/"+id+"/rotate-secret", nil)
	require.Equal(t, 200, r.Status)
	newSecret := r.JSON(t)["secret"].(string)
	for _, typ := range []string{persistence.PostEventPublished, persistence.PostEventFailed, persistence.PostEventScheduled, persistence.PostEventDeleted} {
		deleted.Status = "published"
		appendEvent(h, typ, deleted)
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
		r := h.Do("GET", "/v1/webhooks/"+id+"/deliveries?limit=100", nil)
		log = nil
		for _, d := range r.JSON(t)["data"].([]any) {
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
	r = h.Do("GET", "/v1/webhooks/"+id+"/deliveries?limit=3&page=3", nil)
	require.Equal(t, 200, r.Status)
	page := r.JSON(t)
	require.Len(t, page["data"], 2)
	require.Equal(t, map[string]any{"page": 3.0, "limit": 3.0, "total": 8.0}, page["pagination"])
	require.Equal(t, log[6]["id"], page["data"].([]any)[0].(map[string]any)["id"])

	// A delivery is counted once its actor hears its record committed, a moment after the record
	// can be read.
	var text string
	require.Eventually(t, func() bool {
		text = apptest.Scrape(t, h.App.MetricsURL())
		return strings.Contains(text, `herald_webhook_deliveries_total{event="post.deleted",outcome="succeeded"} 2`)
	}, 10*time.Second, 20*time.Millisecond)
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
	h := apptest.Start(t, apptest.Options{Config: apptest.WithReceivers(ca)})
	flaky := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		if n < 3 {
			return 500
		}
		return 200
	})
	gone := webhooktest.NewReceiver(t, ca, webhooktest.Always(410))
	id, _ := h.CreateWebhook(flaky.URL)
	goneID, _ := h.CreateWebhook(gone.URL)

	postID := h.CreatePost("x", h.Accounts[0])
	require.Equal(t, 204, h.Do("DELETE", "/v1/posts/"+postID, nil).Status)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, flaky.Next(t).Header.Get("X-Service-Delivery-Id"))
	}
	require.Equal(t, ids[0], ids[1])
	require.Equal(t, ids[0], ids[2])
	gone.Next(t)

	require.Eventually(t, func() bool {
		r := h.Do("GET", "/v1/webhooks/"+id+"/deliveries", nil)
		d := r.JSON(t)["data"].([]any)[0].(map[string]any)
		return d["status"] == "succeeded" && d["attempts"] == 3.0 && d["id"] == ids[0]
	}, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		r := h.Do("GET", "/v1/webhooks", nil)
		for _, w := range r.JSON(t)["data"].([]any) {
			w := w.(map[string]any)
			if w["id"] == goneID {
				return w["active"] == false && strings.Contains(fmt.Sprint(w["deactivated_reason"]), "410")
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	r := h.Do("GET", "/v1/webhooks/"+goneID+"/deliveries", nil)
	d := r.JSON(t)["data"].([]any)[0].(map[string]any)
	require.Equal(t, "failed", d["status"])
	require.Equal(t, 410.0, d["last_response_code"])
	require.Equal(t, 1, gone.Count(), "no retry after 410")
}

// Every schedule through the API is a post.scheduled, rescheduling a scheduled post included
// (the spec's event table: "a post is scheduled via the API").
func TestReschedulingEmitsPostScheduledAgain(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	h := apptest.Start(t, apptest.Options{Config: apptest.WithReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	_, secret := h.CreateWebhook(rcv.URL, "post.scheduled")

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

	postID := h.CreatePost("moved twice", h.Accounts[0])
	first := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	r := h.Do("POST", "/v1/posts/"+postID+"/schedule", map[string]any{"scheduledAt": first.Format(time.RFC3339)})
	require.Equal(t, 200, r.Status, string(r.Body))
	ev1 := next()
	require.Equal(t, postID, ev1.Data.PostID)
	require.Equal(t, "scheduled", ev1.Data.Status)
	require.True(t, first.Equal(ev1.Data.ScheduledAt))

	second := first.Add(24 * time.Hour)
	r = h.Do("POST", "/v1/posts/"+postID+"/schedule", map[string]any{"scheduledAt": second.Format(time.RFC3339)})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "scheduled", r.JSON(t)["status"])
	ev2 := next()
	require.Equal(t, postID, ev2.Data.PostID)
	require.True(t, second.Equal(ev2.Data.ScheduledAt), "the event carries the new time")
	require.NotEqual(t, ev1.ID, ev2.ID, "a new delivery, not a retry")

	// The outbox holds both.
	n := 0
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
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
	h := apptest.Start(t, apptest.Options{})
	id, _ := h.CreateWebhook(publicURL, "post.published")
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
		r := h.Do("POST", "/v1/webhooks", map[string]any{"url": tc.url, "events": []string{"post.failed"}})
		require.Equal(t, 400, r.Status, tc.url)
		require.Equal(t, "validation_error", r.ErrorCode(t), tc.url)
		require.Contains(t, r.ErrorMessage(t), "url: ", tc.url)
		require.Contains(t, r.ErrorMessage(t), tc.message, tc.url)
		r = h.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": tc.url})
		require.Equal(t, 400, r.Status, tc.url)
		require.Equal(t, "validation_error", r.ErrorCode(t), tc.url)
		require.Contains(t, r.ErrorMessage(t), tc.message, tc.url)
	}
	require.Equal(t, 1, h.WebhookCount())
	r := h.Do("GET", "/v1/webhooks", nil)
	require.Equal(t, publicURL, r.JSON(t)["data"].([]any)[0].(map[string]any)["url"], "refused updates changed nothing")

	// A public address in another spelling, or with a trailing dot, is stored in canonical form.
	r = h.Do("POST", "/v1/webhooks", map[string]any{"url": "https://1572395042./hooks", "events": []string{"post.failed"}})
	require.Equal(t, 201, r.Status, string(r.Body))
	require.Equal(t, "https://93.184.216.34/hooks", r.JSON(t)["url"])
	r = h.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"url": "https://９３.１８４.２１６.３４/h"})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "https://93.184.216.34/h", r.JSON(t)["url"])
}

// With private targets allowed (sandbox, --webhook-allow-private), other spellings of loopback
// are accepted, stored as the address they name.
func TestWebhookHostSpellingsWithPrivateTargetsAllowed(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Config: func(c *app.Config) { c.WebhookAllowPrivate = true }})
	r := h.Do("POST", "/v1/webhooks", map[string]any{"url": "http://127.1:8080/h", "events": []string{"post.failed"}})
	require.Equal(t, 201, r.Status, string(r.Body))
	require.Equal(t, "http://127.0.0.1:8080/h", r.JSON(t)["url"])
}
