package webhook_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
)

// This file holds the receiver's verifier of docs/webhooks.md, word for word, and proves it.

// Tolerance is how far a signature's timestamp may be from the receiver's clock, either way.
const Tolerance = 300 * time.Second

// Verify checks an X-Service-Signature header ("t=<unix>,v1=<hex>[,v1=<hex>]") against the raw
// request body: one v1 must be the hex HMAC-SHA256 of "<t>.<body>" keyed with the whole secret
// (whsec_ prefix included), and t must be within Tolerance of now, in the past or the future.
func Verify(secret string, body []byte, header string, now time.Time) error {
	var ts int64
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return errors.New("malformed signature header")
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return errors.New("malformed timestamp")
			}
			ts = n
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	if ts == 0 || len(sigs) == 0 {
		return errors.New("no timestamp or no v1 signature")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return errors.New("timestamp outside the tolerance")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range sigs {
		if hmac.Equal(want, s) {
			return nil
		}
	}
	return errors.New("no signature matches the secret")
}

// Handler is a receiver: it verifies before anything else, answers at once, and de-duplicates on
// the delivery id (seen stands for the receiver's own store).
func Handler(secret string, seen func(deliveryID string) bool, process func(body []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := Verify(secret, body, r.Header.Get("X-Service-Signature"), time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if !seen(r.Header.Get("X-Service-Delivery-Id")) {
			go process(body) // answer quickly; a slow answer is retried
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func TestReceiverVerifier(t *testing.T) {
	t.Parallel()
	secret, other := webhook.NewSecret(), webhook.NewSecret()
	body := []byte(`{"id":"0195f3c0-0000-7000-8000-000000000000","type":"post.published","created_at":"2026-01-01T00:00:00Z","data":{}}`)
	now := time.Now()
	h := webhook.SignatureHeader(now, body, secret)
	require.NoError(t, Verify(secret, body, h, now))
	require.NoError(t, Verify(secret, body, h, now.Add(299*time.Second)))
	require.NoError(t, Verify(secret, body, h, now.Add(-299*time.Second)))
	require.Error(t, Verify(secret, body, h, now.Add(301*time.Second)), "too old")
	require.Error(t, Verify(secret, body, h, now.Add(-301*time.Second)), "from the future")
	require.Error(t, Verify(other, body, h, now), "another secret")
	require.Error(t, Verify(secret, append(body, '\n'), h, now), "another body")
	require.Error(t, Verify(secret, body, "", now))
	require.Error(t, Verify(secret, body, "t=x,v1=00", now))
	require.Error(t, Verify(secret, body, strings.Replace(h, "v1=", "v0=", 1), now))
	// During a rotation either secret verifies.
	h = webhook.SignatureHeader(now, body, other, secret)
	require.NoError(t, Verify(secret, body, h, now))
	require.NoError(t, Verify(other, body, h, now))

	processed := make(chan []byte, 1)
	seen := map[string]bool{}
	srv := httptest.NewServer(Handler(secret, func(id string) bool { s := seen[id]; seen[id] = true; return s }, func(b []byte) { processed <- b }))
	defer srv.Close()
	post := func(header string) int {
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(body))
		req.Header.Set("X-Service-Signature", header)
		req.Header.Set("X-Service-Delivery-Id", "0195f3c0-0000-7000-8000-000000000000")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 401, post(webhook.SignatureHeader(now, body, other)))
	require.Equal(t, 204, post(webhook.SignatureHeader(time.Now(), body, secret)))
	require.Equal(t, body, <-processed)
	require.Equal(t, 204, post(webhook.SignatureHeader(time.Now(), body, secret)), "a duplicate is acknowledged, not processed")
}
