package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
)

// A SIGKILL between the state change (a deleted draft: post.deleted) and its delivery loses
// nothing: after the restart the event is delivered, exactly once with a 2xx, with the same
// delivery id on every attempt, including those answered 500 before the kill. The kill comes
// either while the first attempt's outcome is not yet recorded, or after it is.
func TestWebhookDeliveredAfterSIGKILL(t *testing.T) {
	for _, recorded := range []bool{false, true} {
		t.Run(fmt.Sprintf("failure recorded before the kill: %v", recorded), func(t *testing.T) {
			webhookSIGKILL(t, recorded)
		})
	}
}

func webhookSIGKILL(t *testing.T, recorded bool) {
	ca := webhooktest.NewCA(t)
	var mu sync.Mutex
	accept := false
	rcv := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		if accept {
			return 200
		}
		w.Header().Set("Retry-After", "1")
		return 500
	})
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox", "--webhook-ca-file", ca.File)
	key := sandboxKey(t, dir)
	acct := firstAccount(t, p, key)

	status, body := p.request(key, "POST", "/v1/webhooks", fmt.Sprintf(`{"url":%q,"events":["post.deleted"]}`, rcv.URL))
	require.Equal(t, 201, status, string(body))
	var hook struct{ ID, Secret string }
	require.NoError(t, json.Unmarshal(body, &hook))

	status, body = p.request(key, "POST", "/v1/posts", fmt.Sprintf(`{"content":"draft","platforms":[%q]}`, acct))
	require.Equal(t, 201, status, string(body))
	var post struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &post))
	status, body = p.request(key, "DELETE", "/v1/posts/"+post.ID, "")
	require.Equal(t, 204, status, string(body))

	// The first attempt reached the receiver and was answered 500: kill now, before any success.
	first := rcv.Next(t)
	require.Equal(t, 500, first.Status)
	if recorded {
		deadline := time.Now().Add(30 * time.Second)
		for {
			status, body := p.request(key, "GET", "/v1/webhooks/"+hook.ID+"/deliveries", "")
			require.Equal(t, 200, status, string(body))
			if strings.Contains(string(body), `"last_response_code":500`) {
				require.Contains(t, string(body), `"status":"pending"`)
				break
			}
			require.True(t, time.Now().Before(deadline), "the failed attempt was not recorded: %s", body)
			time.Sleep(5 * time.Millisecond)
		}
	}
	p.kill9()
	mu.Lock()
	accept = true
	mu.Unlock()

	p2 := startServer(t, dir, "--sandbox", "--webhook-ca-file", ca.File)
	for {
		r := rcv.Next(t)
		if r.Status == 200 {
			break
		}
	}
	// Wait until the success is recorded, then stop gracefully: nothing can arrive after that.
	deadline := time.Now().Add(30 * time.Second)
	var log struct {
		Data []struct {
			ID, Status, Event string
			Attempts          int
		}
	}
	for {
		status, body := p2.request(key, "GET", "/v1/webhooks/"+hook.ID+"/deliveries", "")
		require.Equal(t, 200, status, string(body))
		require.NoError(t, json.Unmarshal(body, &log))
		if len(log.Data) == 1 && log.Data[0].Status == "succeeded" {
			break
		}
		require.True(t, time.Now().Before(deadline), "the delivery was not recorded as succeeded: %s", body)
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, p2.cmd.Process.Signal(syscall.SIGTERM))
	<-p2.done

	reqs := rcv.Requests()
	ok := 0
	for _, r := range reqs {
		require.Equal(t, first.Header.Get("X-Service-Delivery-Id"), r.Header.Get("X-Service-Delivery-Id"), "the same delivery id on every attempt")
		require.Equal(t, string(first.Body), string(r.Body))
		require.Equal(t, "post.deleted", r.Header.Get("X-Service-Event"))
		require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(r.Body, r.Header.Get("X-Service-Signature"), hook.Secret, 300*time.Second))
		if r.Status == 200 {
			ok++
		}
	}
	require.Equal(t, 1, ok, "exactly one 2xx delivery")
	require.GreaterOrEqual(t, len(reqs), 2)
	require.Equal(t, first.Header.Get("X-Service-Delivery-Id"), log.Data[0].ID)
	require.LessOrEqual(t, log.Data[0].Attempts, len(reqs), "every recorded attempt reached the receiver")
	if recorded {
		require.GreaterOrEqual(t, log.Data[0].Attempts, 2, "the attempt before the kill is in the log")
	}
	t.Logf("%d requests, %d recorded attempts", len(reqs), log.Data[0].Attempts)
}

// Without --sandbox and without --webhook-allow-private, a loopback receiver is refused at
// registration; --webhook-allow-private accepts it.
func TestWebhookAllowPrivateFlag(t *testing.T) {
	dir := t.TempDir()
	out, err := herald(t, "users", "create", "--data", dir, "--email", "ops@example.com", "--plan", "pro")
	require.NoError(t, err, out)
	out, err = herald(t, "keys", "create", "--data", dir, "--email", "ops@example.com", "--name", "ci")
	require.NoError(t, err, out)
	var k struct{ Key string }
	require.NoError(t, json.Unmarshal([]byte(out), &k))

	p := startServer(t, dir)
	status, body := p.request(k.Key, "POST", "/v1/webhooks", `{"url":"https://127.0.0.1/hook","events":["post.deleted"]}`)
	require.Equal(t, 400, status, string(body))
	require.Contains(t, string(body), "127.0.0.1 is loopback")
	status, body = p.request(k.Key, "POST", "/v1/webhooks", `{"url":"https://127.0.0.1:9443/hook","events":["post.deleted"]}`)
	require.Equal(t, 400, status, string(body))
	require.Contains(t, string(body), "port 443")
	p.kill9()

	p = startServer(t, dir, "--webhook-allow-private")
	status, body = p.request(k.Key, "POST", "/v1/webhooks", `{"url":"https://127.0.0.1:9443/hook","events":["post.deleted"]}`)
	require.Equal(t, 201, status, string(body))
	p.kill9()

	p = startServer(t, dir, "--sandbox", "--webhook-allow-private=false")
	status, body = p.request(k.Key, "POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9443/hook","events":["post.deleted"]}`)
	require.Equal(t, 400, status, string(body))
	p.kill9()

	out, err = herald(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--webhook-ca-file", dir+"/missing.pem")
	require.Error(t, err)
	require.Contains(t, out, "webhook CA file")
}
