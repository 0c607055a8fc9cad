package webhook

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/persistence"
)

type body struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// verify checks a delivery request as a receiver must: the signature with an independent
// verifier (stripe-go, same scheme), the headers, and the body's shape.
func verify(t *testing.T, r webhooktest.Request, secrets ...string) body {
	t.Helper()
	sig := r.Header.Get("X-Service-Signature")
	require.NotContains(t, sig, " ")
	for _, s := range secrets {
		require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(r.Body, sig, s, 300*time.Second), "signature with %s…", s[:10])
	}
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(r.Header.Get("User-Agent"), "Herald-Webhooks/"), r.Header.Get("User-Agent"))
	var b body
	require.NoError(t, json.Unmarshal(r.Body, &b))
	require.Equal(t, r.Header.Get("X-Service-Delivery-Id"), b.ID)
	require.Equal(t, r.Header.Get("X-Service-Event"), b.Type)
	_, err := uuid.Parse(b.ID)
	require.NoError(t, err)
	var keys map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &keys))
	require.Len(t, keys, 4, "body is exactly {id, type, created_at, data}")
	if b.Type == persistence.CampaignEventCompleted {
		var data struct {
			CampaignID string         `json:"campaign_id"`
			Totals     map[string]int `json:"totals"`
		}
		require.NoError(t, json.Unmarshal(b.Data, &data))
		require.NotEmpty(t, data.CampaignID)
		require.Len(t, data.Totals, len(persistence.PostStatuses))
		return b
	}
	var data struct {
		PostID    string `json:"post_id"`
		Status    string `json:"status"`
		Platforms []struct {
			Platform, Status, ConnectedAccountID string
			Error                                *string
		} `json:"platforms"`
	}
	require.NoError(t, json.Unmarshal(b.Data, &data))
	require.NotEmpty(t, data.PostID)
	require.NotEmpty(t, data.Status)
	require.Len(t, data.Platforms, 1)
	return b
}

func TestDeliversEveryEventSignedToTheSubscriptionsThatWantIt(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	rcv := webhooktest.NewReceiver(t, b.ca, webhooktest.Always(200))
	other := webhooktest.NewReceiver(t, b.ca, webhooktest.Always(204))
	user, stranger := uuid.NewString(), uuid.NewString()
	all := b.subscribe(user, rcv.URL+"?sub=all")
	onlyDeleted := b.subscribe(user, rcv.URL+"?sub=deleted", persistence.PostEventDeleted)
	strangers := b.subscribe(stranger, other.URL)
	off := b.subscribe(user, other.URL+"?sub=off")
	active := false
	_, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(off.Webhook.ID), &Update{Scope: user, Active: &active})
	require.NoError(t, err)

	events := map[string]*persistence.Event{}
	for _, typ := range persistence.WebhookEvents {
		events[typ] = b.emit(user, typ)
	}
	got := map[string]body{}
	want := len(persistence.WebhookEvents) + 1 // every event to "all", post.deleted to onlyDeleted too
	for i := 0; i < want; i++ {
		r := rcv.Next(t)
		secret := all.Secret
		if r.Query == "sub=deleted" {
			secret = onlyDeleted.Secret
			require.Equal(t, persistence.PostEventDeleted, r.Header.Get("X-Service-Event"))
		}
		bd := verify(t, r, secret)
		ev := events[bd.Type]
		require.NotNil(t, ev)
		require.True(t, ev.CreatedAt.Equal(bd.CreatedAt), "created_at is the event's")
		require.JSONEq(t, string(ev.Data), string(bd.Data), "data is the event's, unchanged")
		got[bd.ID] = bd
	}
	require.Len(t, got, want, "distinct delivery ids")

	// The stranger's subscription got none of them: its first delivery is its own event.
	mine := b.emit(stranger, persistence.PostEventPublished)
	r := other.Next(t)
	bd := verify(t, r, strangers.Secret)
	require.Equal(t, mine.ID, b.delivery(strangers.Webhook.ID, bd.ID).EventID)
	require.Len(t, b.deliveries(strangers.Webhook.ID), 1)
	require.Empty(t, b.deliveries(off.Webhook.ID), "an inactive subscription receives nothing")
	require.Len(t, b.deliveries(all.Webhook.ID), len(persistence.WebhookEvents))
	require.Len(t, b.deliveries(onlyDeleted.Webhook.ID), 1)

	// The outbox cursor moved with the fan-out; dispatching again creates nothing.
	n, err := b.svc.Dispatch(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	require.Len(t, b.deliveries(all.Webhook.ID), len(persistence.WebhookEvents))

	for i := 0; i < want+1; i++ { // and the stranger's
		b.nextDone()
	}
	for _, d := range b.deliveries(all.Webhook.ID) {
		require.Equal(t, persistence.DeliverySucceeded, d.Status)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, 200, *d.LastStatusCode)
		require.Nil(t, d.NextAttemptAt)
	}
	m := b.svc.Metrics()
	require.Equal(t, 2.0, testutil.ToFloat64(m.Attempts.WithLabelValues(persistence.PostEventPublished, outcomeSuccess)))
	require.Equal(t, 2.0, testutil.ToFloat64(m.Deliveries.WithLabelValues(persistence.PostEventDeleted, persistence.DeliverySucceeded)))
	require.Equal(t, len(persistence.WebhookEvents), testutil.CollectAndCount(m.Latency), "one latency series per event type")
}

// Failed attempts are retried with the same delivery id and body until one gets a 2xx; a 3xx is
// a failure and its Location is not followed.
func TestRetriesKeepTheDeliveryID(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	rcv := webhooktest.NewReceiver(t, b.ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		switch n {
		case 1:
			return 500
		case 2:
			w.Header().Set("Location", "/hook-elsewhere")
			return 302
		case 3:
			return 404
		}
		return 200
	})
	user := uuid.NewString()
	sub := b.subscribe(user, rcv.URL)
	b.emit(user, persistence.PostEventPublished)
	var ids []string
	var bodies []string
	for i := 0; i < 4; i++ {
		r := rcv.Next(t)
		verify(t, r, sub.Secret)
		require.Equal(t, "/hook", r.Path, "the redirect was not followed")
		ids = append(ids, r.Header.Get("X-Service-Delivery-Id"))
		bodies = append(bodies, string(r.Body))
	}
	for i := 1; i < 4; i++ {
		require.Equal(t, ids[0], ids[i], "same delivery id on every attempt")
		require.Equal(t, bodies[0], bodies[i], "same body on every attempt")
	}
	var last outcome
	for i := 0; i < 4; i++ {
		last = b.nextDone()
	}
	require.True(t, last.res.final)
	d := b.delivery(sub.Webhook.ID, ids[0])
	require.Equal(t, persistence.DeliverySucceeded, d.Status)
	require.Equal(t, 4, d.Attempts)
	require.Equal(t, 200, *d.LastStatusCode)
	require.Equal(t, 4, rcv.Count())
	m := b.svc.Metrics()
	require.Equal(t, 3.0, testutil.ToFloat64(m.Retries.WithLabelValues(persistence.PostEventPublished)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Attempts.WithLabelValues(persistence.PostEventPublished, outcomeHTTP3xx)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Attempts.WithLabelValues(persistence.PostEventPublished, outcomeHTTP5xx)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Attempts.WithLabelValues(persistence.PostEventPublished, outcomeHTTP4xx)))
}

// The log records each failure with its code and error.
func TestFailedAttemptIsLogged(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, bundleOpts{clock: clock, schedule: DefaultSchedule})
	rcv := webhooktest.NewReceiver(t, b.ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		w.Header().Set("Location", "https://169.254.169.254/")
		return 307
	})
	user := uuid.NewString()
	sub := b.subscribe(user, rcv.URL)
	b.emit(user, persistence.PostEventFailed)
	o := b.nextDone()
	d := b.delivery(sub.Webhook.ID, o.id)
	require.Equal(t, persistence.DeliveryPending, d.Status)
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, 307, *d.LastStatusCode)
	require.Contains(t, *d.LastError, "redirects are not followed")
	require.Equal(t, 10*time.Second, d.NextAttemptAt.Sub(*d.LastAttemptAt), "the first wait of the schedule")
}

// 410 Gone stops retries and turns the subscription off; its other pending deliveries are
// cancelled and new events no longer reach it.
func TestGoneTurnsTheSubscriptionOff(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, bundleOpts{clock: clock, maxInFlight: 1})
	rcv := webhooktest.NewReceiver(t, b.ca, webhooktest.Always(http.StatusGone))
	user := uuid.NewString()
	sub := b.subscribe(user, rcv.URL)
	// Both events are fanned out in one transaction; one attempt at a time, so the second is
	// still queued when the first answer turns the subscription off.
	b.emitTogether(user, persistence.PostEventPublished, persistence.PostEventScheduled)
	o := b.nextDone()
	require.True(t, o.res.gone)
	w := b.webhook(sub.Webhook.ID)
	require.False(t, w.Active)
	require.Contains(t, w.DeactivatedReason, "410")
	ds := b.deliveries(sub.Webhook.ID)
	require.Len(t, ds, 2)
	statuses := map[string]string{}
	for _, d := range ds {
		statuses[d.ID] = d.Status
	}
	require.Equal(t, persistence.DeliveryFailed, statuses[o.id])
	for id, s := range statuses {
		if id != o.id {
			require.Equal(t, persistence.DeliveryCancelled, s)
		}
	}
	b.emit(user, persistence.PostEventDeleted)
	_, err := b.svc.Dispatch(context.Background())
	require.NoError(t, err)
	require.Len(t, b.deliveries(sub.Webhook.ID), 2, "no delivery for an inactive subscription")
	clock.Advance(48 * time.Hour)
	b.quiesce(sub.Webhook.ID)
	require.Equal(t, 1, rcv.Count(), "nothing more was sent")
}

// Retry-After replaces the schedule's wait.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, bundleOpts{clock: clock, schedule: DefaultSchedule})
	rcv := webhooktest.NewReceiver(t, b.ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		if n == 1 {
			w.Header().Set("Retry-After", "120")
			return http.StatusServiceUnavailable
		}
		if n == 2 {
			w.Header().Set("Retry-After", clock.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			return http.StatusTooManyRequests
		}
		return 200
	})
	user := uuid.NewString()
	sub := b.subscribe(user, rcv.URL)
	b.emit(user, persistence.PostEventPublished)
	o := b.nextDone()
	d := b.delivery(sub.Webhook.ID, o.id)
	require.Equal(t, 120*time.Second, d.NextAttemptAt.Sub(*d.LastAttemptAt))
	require.Equal(t, 503, *d.LastStatusCode)

	clock.Advance(119 * time.Second)
	b.quiesce(sub.Webhook.ID)
	require.Equal(t, 1, rcv.Count(), "not before Retry-After")
	clock.Advance(time.Second)
	o = b.nextDone()
	d = b.delivery(sub.Webhook.ID, o.id)
	require.Equal(t, 2, d.Attempts)
	require.Equal(t, time.Hour, d.NextAttemptAt.Sub(*d.LastAttemptAt), "an HTTP-date Retry-After")
	clock.Advance(time.Hour)
	o = b.nextDone()
	require.Equal(t, persistence.DeliverySucceeded, b.delivery(sub.Webhook.ID, o.id).Status)
}

// A receiver that is too slow, that accepts the connection and never answers, or that sends a
// huge body does not hold a delivery: the attempt ends at the timeout or after the capped read.
func TestSlowSilentAndHugeReceivers(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, bundleOpts{clock: clock, timeout: 300 * time.Millisecond, schedule: DefaultSchedule})
	user := uuid.NewString()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	slow := webhooktest.NewReceiver(t, b.ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		<-release
		return 200
	})
	// Accepts TCP connections and never says a word (no TLS handshake, no answer).
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	t.Cleanup(func() { _ = silent.Close(); conns.Wait() })
	conns.Add(1)
	go func() {
		defer conns.Done()
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	writeErr := make(chan error, 2)
	huge := webhooktest.NewReceiver(t, b.ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		status := 200
		if r.URL.Query().Get("s") == "500" {
			status = 500
		}
		w.WriteHeader(status)
		chunk := make([]byte, 1<<20)
		var err error
		for i := 0; i < 256 && err == nil; i++ { // 256 MiB unless the client stops reading
			_, err = w.Write(chunk)
		}
		writeErr <- err
		return 0
	})

	for _, tc := range []struct {
		name, url, status, errPart string
	}{
		{"slow", slow.URL, persistence.DeliveryPending, "timed out"},
		{"silent", "https://" + silent.Addr().String() + "/hook", persistence.DeliveryPending, "timed out"},
		{"huge 200", huge.URL, persistence.DeliverySucceeded, ""},
		{"huge 500", huge.URL + "?s=500", persistence.DeliveryPending, "HTTP 500"},
	} {
		sub := b.subscribe(user, tc.url)
		ev := b.emit(user, persistence.PostEventDeleted)
		_ = ev
		o := b.nextDone()
		d := b.delivery(sub.Webhook.ID, o.id)
		require.Equal(t, tc.status, d.Status, tc.name)
		require.Equal(t, 1, d.Attempts, tc.name)
		if tc.errPart != "" {
			require.Contains(t, *d.LastError, tc.errPart, tc.name)
			require.NotNil(t, d.NextAttemptAt, tc.name)
		}
		// Delete it so that the next event reaches only the next receiver.
		_, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(sub.Webhook.ID), &Delete{Scope: user})
		require.NoError(t, err)
	}
	for i := 0; i < 2; i++ {
		require.Error(t, <-writeErr, "the huge body was not read to its end")
	}
	m := b.svc.Metrics()
	require.Equal(t, 2.0, testutil.ToFloat64(m.Attempts.WithLabelValues(persistence.PostEventDeleted, outcomeTimeout)))
}

// After a rotation every delivery carries two v1 signatures, one per secret, for 24 hours; then
// only the new one.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, bundleOpts{clock: clock})
	rcv := webhooktest.NewReceiver(t, b.ca, webhooktest.Always(200))
	user := uuid.NewString()
	sub := b.subscribe(user, rcv.URL)
	old := sub.Secret

	_, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(sub.Webhook.ID), &RotateSecret{Scope: uuid.NewString()})
	require.ErrorIs(t, err, ErrForbidden)
	r, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(sub.Webhook.ID), &RotateSecret{Scope: user})
	require.NoError(t, err)
	require.NotEqual(t, old, r.Secret)
	require.True(t, strings.HasPrefix(r.Secret, "whsec_"))
	require.True(t, r.Webhook.PreviousSecretUntil.Equal(clock.Now().Add(24*time.Hour)))

	for _, typ := range persistence.WebhookEvents {
		b.emit(user, typ)
		req := rcv.Next(t)
		require.Equal(t, 2, strings.Count(req.Header.Get("X-Service-Signature"), "v1="))
		verify(t, req, r.Secret, old)
	}
	clock.Advance(24*time.Hour + time.Second)
	b.emit(user, persistence.PostEventPublished)
	req := rcv.Next(t)
	require.Equal(t, 1, strings.Count(req.Header.Get("X-Service-Signature"), "v1="))
	verify(t, req, r.Secret)
	require.Error(t, stripewebhook.ValidatePayloadIgnoringTolerance(req.Body, req.Header.Get("X-Service-Signature"), old))

	// A restarted actor signs the same way (the secrets are persisted, sealed or not).
	b.restart()
	b.emit(user, persistence.PostEventFailed)
	verify(t, rcv.Next(t), r.Secret)
}

// Pending deliveries survive a restart and are delivered with the same id; an event appended
// while nothing dispatched is fanned out at the next start.
func TestPendingDeliveriesResumeAfterRestart(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{schedule: []time.Duration{time.Hour}})
	var mu sync.Mutex
	status := 500
	rcv := webhooktest.NewReceiver(t, b.ca, func(int, http.ResponseWriter, *http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		return status
	})
	user := uuid.NewString()
	sub := b.subscribe(user, rcv.URL)
	b.emit(user, persistence.PostEventPublished)
	first := rcv.Next(t)
	o := b.nextDone()
	require.Equal(t, persistence.DeliveryPending, b.delivery(sub.Webhook.ID, o.id).Status)

	b.stop()
	// Written while no dispatcher runs (as if Herald died right after the state change).
	late := b.emitQuiet(user, persistence.PostEventDeleted)
	mu.Lock()
	status = 200
	mu.Unlock()
	// The retry is an hour away; a restart an hour later resumes it.
	b.o.schedule = []time.Duration{time.Millisecond}
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		d, err := tx.Delivery(sub.Webhook.ID, o.id)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		d.NextAttemptAt = &now
		return tx.PutDelivery(d)
	}))
	b.start()
	got := map[string]webhooktest.Request{}
	for i := 0; i < 2; i++ {
		r := rcv.Next(t)
		verify(t, r, sub.Secret)
		got[r.Header.Get("X-Service-Event")] = r
	}
	require.Equal(t, first.Header.Get("X-Service-Delivery-Id"), got[persistence.PostEventPublished].Header.Get("X-Service-Delivery-Id"))
	require.Equal(t, string(first.Body), string(got[persistence.PostEventPublished].Body))
	for i := 0; i < 2; i++ {
		b.nextDone()
	}
	for _, d := range b.deliveries(sub.Webhook.ID) {
		require.Equal(t, persistence.DeliverySucceeded, d.Status)
	}
	var lateDelivery *persistence.Delivery
	for _, d := range b.deliveries(sub.Webhook.ID) {
		if d.EventID == late.ID {
			lateDelivery = d
		}
	}
	require.NotNil(t, lateDelivery)
	require.Equal(t, 3, rcv.Count())
}

// Deleting a subscription stops its pending deliveries; turning one off cancels them.
func TestDeleteAndDeactivateStopPendingDeliveries(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, bundleOpts{clock: clock, schedule: DefaultSchedule})
	rcv := webhooktest.NewReceiver(t, b.ca, webhooktest.Always(500))
	user := uuid.NewString()

	del := b.subscribe(user, rcv.URL+"?sub=del")
	b.emit(user, persistence.PostEventPublished)
	b.nextDone()
	_, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(del.Webhook.ID), &Delete{Scope: uuid.NewString()})
	require.ErrorIs(t, err, ErrForbidden)
	_, err = actors.Ask[*Reply](context.Background(), b.svc.Dir.To(del.Webhook.ID), &Delete{Scope: user})
	require.NoError(t, err)
	require.Empty(t, b.deliveries(del.Webhook.ID), "the log goes with the subscription")
	var pending []string
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error { pending = tx.WebhooksWithPending(); return nil }))
	require.NotContains(t, pending, del.Webhook.ID)
	clock.Advance(48 * time.Hour)
	b.quiesce(del.Webhook.ID)
	require.Equal(t, 1, rcv.Count(), "no attempt after the deletion")
	_, err = actors.Ask[*Reply](context.Background(), b.svc.Dir.To(del.Webhook.ID), &Delete{Scope: user})
	require.ErrorIs(t, err, ErrNotFound)

	off := b.subscribe(user, rcv.URL+"?sub=off")
	b.emit(user, persistence.PostEventPublished)
	o := b.nextDone()
	active := false
	r, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(off.Webhook.ID), &Update{Scope: user, Active: &active})
	require.NoError(t, err)
	require.False(t, r.Webhook.Active)
	d := b.delivery(off.Webhook.ID, o.id)
	require.Equal(t, persistence.DeliveryCancelled, d.Status)
	require.Contains(t, *d.LastError, "turned off")
	clock.Advance(48 * time.Hour)
	b.quiesce(off.Webhook.ID)
	require.Equal(t, 2, rcv.Count())
	require.Equal(t, 2.0, testutil.ToFloat64(b.svc.Metrics().Deliveries.WithLabelValues(persistence.PostEventPublished, persistence.DeliveryCancelled)),
		"the deleted subscription's delivery and the turned-off one's")

	// Turned on again, it receives new events (not the cancelled ones).
	active = true
	_, err = actors.Ask[*Reply](context.Background(), b.svc.Dir.To(off.Webhook.ID), &Update{Scope: user, Active: &active})
	require.NoError(t, err)
	rcv.SetAnswer(webhooktest.Always(200))
	b.emit(user, persistence.PostEventScheduled)
	o = b.nextDone()
	d = b.delivery(off.Webhook.ID, o.id)
	require.Equal(t, persistence.DeliverySucceeded, d.Status)
	require.Equal(t, persistence.PostEventScheduled, d.Type)
	require.Len(t, b.deliveries(off.Webhook.ID), 2)
}

// With private targets not allowed, a delivery to a name that now resolves to a private address
// is refused at dial and logged; it is retried like any failure.
func TestBlockedAtDialIsLogged(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	r := newResolver("hooks.example.com", "10.20.30.40")
	b := setup(t, bundleOpts{clock: clock, denyPrivate: true, resolver: r, schedule: DefaultSchedule})
	user := uuid.NewString()
	sub := b.subscribe(user, "https://hooks.example.com/hook")
	b.emit(user, persistence.PostEventPublished)
	o := b.nextDone()
	d := b.delivery(sub.Webhook.ID, o.id)
	require.Equal(t, persistence.DeliveryPending, d.Status)
	require.Nil(t, d.LastStatusCode)
	require.Equal(t, "address not allowed: hooks.example.com is, or resolves to, a loopback, private or reserved address", *d.LastError)
	require.NotContains(t, *d.LastError, "10.20.30.40", "last_error names no address Herald resolved")
	require.Equal(t, 1.0, testutil.ToFloat64(b.svc.Metrics().Attempts.WithLabelValues(persistence.PostEventPublished, outcomeBlocked)))
}

// A user has at most MaxPerUser subscriptions, counted in the same transaction as the creation.
func TestSubscriptionLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	user := uuid.NewString()
	var wg sync.WaitGroup
	errs := make(chan error, DefaultMaxPerUser+5)
	for i := 0; i < DefaultMaxPerUser+5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(uuid.Must(uuid.NewV7()).String()), &Create{UserID: user, URL: "https://hooks.example.com/h", Events: persistence.WebhookEvents})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok, refused := 0, 0
	for err := range errs {
		var le *LimitError
		if err == nil {
			ok++
		} else {
			require.ErrorAs(t, err, &le)
			refused++
		}
	}
	require.Equal(t, DefaultMaxPerUser, ok)
	require.Equal(t, 5, refused)
}

// dnsDown is a resolver that fails as an internal one does, naming itself.
type dnsDown struct{}

func (dnsDown) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "read udp 10.0.0.9:41234->10.0.0.2:53: i/o timeout", Name: host, Server: "10.0.0.2:53"}
}

// A delivery whose host cannot be resolved records that in words that name the host, not the
// resolver Herald asked nor its own address.
func TestLastErrorNamesNoResolver(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	b := setup(t, bundleOpts{clock: clock, resolver: dnsDown{}, schedule: DefaultSchedule})
	user := uuid.NewString()
	sub := b.subscribe(user, "https://hooks.example.com/hook")
	b.emit(user, persistence.PostEventPublished)
	o := b.nextDone()
	d := b.delivery(sub.Webhook.ID, o.id)
	require.Equal(t, persistence.DeliveryPending, d.Status)
	require.Equal(t, "could not resolve host hooks.example.com", *d.LastError)
	require.NotContains(t, *d.LastError, "10.0.0")
}
