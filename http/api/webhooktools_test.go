package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// A test event reaches the receiver signed like any other; a delivery is read back with the body
// sent and the answer; redelivering it sends the same event again as a new delivery. Another
// user's subscription is refused, a turned-off one too, changing nothing.
func TestWebhookTestEventAndRedeliver(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	h := apptest.Start(t, apptest.Options{Config: apptest.WithReceivers(ca)})
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	id, secret := h.CreateWebhook(rcv.URL)

	r := h.Do("POST", "/v1/webhooks/"+id+"/test", nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	first := r.JSON(t)
	require.Equal(t, "webhook.test", first["event"])
	require.Equal(t, "pending", first["status"])
	req := rcv.Next(t)
	require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(req.Body, req.Header.Get("X-Service-Signature"), secret, 300*time.Second))
	require.Equal(t, "webhook.test", req.Header.Get("X-Service-Event"))
	require.Equal(t, first["id"], req.Header.Get("X-Service-Delivery-Id"))
	var body struct {
		ID, Type string
		Data     struct {
			WebhookID string `json:"webhook_id"`
		}
	}
	require.NoError(t, json.Unmarshal(req.Body, &body))
	require.Equal(t, first["id"], body.ID)
	require.Equal(t, id, body.Data.WebhookID)

	// The delivery with its body and answer, once the answer is recorded.
	path := "/v1/webhooks/" + id + "/deliveries/" + first["id"].(string)
	var d map[string]any
	require.Eventually(t, func() bool {
		r = h.Do("GET", path, nil)
		d = r.JSON(t)
		return r.Status == 200 && d["status"] == "succeeded"
	}, 10*time.Second, 20*time.Millisecond)
	require.InDelta(t, 200, d["last_response_code"], 0)
	sent, err := json.Marshal(d["payload"])
	require.NoError(t, err)
	require.JSONEq(t, string(req.Body), string(sent), "the payload is the body sent")

	// Redelivered: a new delivery of the same event.
	r = h.Do("POST", path+"/redeliver", nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	again := r.JSON(t)
	require.NotEqual(t, first["id"], again["id"])
	require.Equal(t, first["event_id"], again["event_id"])
	req2 := rcv.Next(t)
	require.Equal(t, again["id"], req2.Header.Get("X-Service-Delivery-Id"))
	var b1, b2 map[string]any
	require.NoError(t, json.Unmarshal(req.Body, &b1))
	require.NoError(t, json.Unmarshal(req2.Body, &b2))
	require.Equal(t, again["id"], b2["id"])
	require.Equal(t, b1["data"], b2["data"])
	require.Equal(t, b1["created_at"], b2["created_at"])
	r = h.Do("GET", "/v1/webhooks/"+id+"/deliveries", nil)
	require.Len(t, r.JSON(t)["data"], 2)

	// Refusals change nothing.
	_, otherKey := h.NewUser("other@example.com", "pro")
	for _, p := range []string{"/v1/webhooks/" + id + "/test", path + "/redeliver"} {
		r = h.DoKey(otherKey, "POST", p, nil, nil)
		require.Equal(t, 403, r.Status, p)
		require.Equal(t, "forbidden", r.ErrorCode(t))
	}
	r = h.DoKey(otherKey, "GET", path, nil, nil)
	require.Equal(t, 403, r.Status)
	for _, p := range []string{"/v1/webhooks/" + uuid.NewString() + "/test", strings.Replace(path, first["id"].(string), uuid.NewString(), 1) + "/redeliver",
		strings.Replace(path, first["id"].(string), uuid.NewString(), 1)} {
		method := "POST"
		if !strings.HasSuffix(p, "/test") && !strings.HasSuffix(p, "/redeliver") {
			method = "GET"
		}
		r = h.Do(method, p, nil)
		require.Equal(t, 404, r.Status, p)
		require.Equal(t, "not_found", r.ErrorCode(t))
	}
	r = h.Do("POST", "/v1/webhooks/"+id+"/deliveries/not-a-uuid/redeliver", nil)
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	r = h.Do("PATCH", "/v1/webhooks/"+id, map[string]any{"active": false})
	require.Equal(t, 200, r.Status)
	r = h.Do("POST", "/v1/webhooks/"+id+"/test", nil)
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	r = h.Do("GET", "/v1/webhooks/"+id+"/deliveries", nil)
	require.Len(t, r.JSON(t)["data"], 2, "nothing was added")
	require.Equal(t, 2, rcv.Count())
}

// A delivery keeps the receiver's answer: its status and the first 4 KiB of its body, as text
// (a character cut at the limit dropped, a signing secret echoed blanked) or, for bytes that are
// not text, only their count.
func TestWebhookDeliveryKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	h := apptest.Start(t, apptest.Options{Config: apptest.WithReceivers(ca)})
	var secret string
	long := strings.Repeat("a", 4095) + "é and more after the limit"
	rcv := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, _ *http.Request) int {
		switch n {
		case 1:
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Retry-After", "3600") // no second attempt during the test
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte("<b>refused</b> " + secret + " " + long))
		default:
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0})
		}
		return 0
	})
	var id string
	id, secret = h.CreateWebhook(rcv.URL)

	deliveryOf := func(want func(map[string]any) bool) map[string]any {
		t.Helper()
		r := h.Do("POST", "/v1/webhooks/"+id+"/test", nil)
		require.Equal(t, 202, r.Status, string(r.Body))
		path := "/v1/webhooks/" + id + "/deliveries/" + r.JSON(t)["id"].(string)
		var d map[string]any
		require.Eventually(t, func() bool {
			r = h.Do("GET", path, nil)
			d = r.JSON(t)
			return r.Status == 200 && want(d)
		}, 10*time.Second, 20*time.Millisecond)
		return d
	}

	d := deliveryOf(func(d map[string]any) bool { return d["attempts"] == 1.0 })
	require.InDelta(t, 422, d["last_response_code"], 0)
	body := d["response_body"].(string)
	require.True(t, strings.HasPrefix(body, "<b>refused</b> [signing secret] aaa"), body[:40])
	require.NotContains(t, body, secret)
	require.NotContains(t, body, "more after the limit")
	require.True(t, strings.HasSuffix(body, "a"), "the é cut in two by the limit is dropped")
	require.Less(t, len(body), 4096+1)
	require.InDelta(t, len("<b>refused</b> "+secret+" "+long), d["response_body_bytes"], 0)

	d = deliveryOf(func(d map[string]any) bool { return d["status"] == "succeeded" })
	require.Nil(t, d["response_body"], "bytes that are not text are not given as text")
	require.InDelta(t, 12, d["response_body_bytes"], 0)
}
