// Package webhook is Herald's outbound webhooks: one virtual actor per subscription, the
// dispatcher that fans outbox events out to subscriptions, and the SSRF-safe egress that delivers
// them.
//
// The flow of one event:
//
//	post lifecycle ──(same transaction as the change)──▶ outbox (persistence events)
//	      │ Notify after commit
//	      ▼
//	dispatcher: reads the outbox after its cursor; in ONE transaction writes a delivery record
//	            per (event, active subscription of that user that wants it) and advances the cursor
//	      │ Enqueue (after commit)
//	      ▼
//	subscription actor: keeps the pending deliveries in time order, starts up to MaxInFlight
//	            attempts at once on worker goroutines, schedules retries
//	      │
//	      ▼
//	worker: signs and POSTs the body, records the outcome durably, reports attemptDone
//
// Every step is durable before the next one starts, so a crash at any instant loses no event: on
// restart the dispatcher resumes at its cursor and every subscription with pending deliveries is
// woken. A delivery whose attempt was in flight at the crash is attempted again (at least once;
// the delivery id lets receivers de-duplicate).
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
)

// KindName labels the subscription actor in metrics.
const KindName = "webhook"

// RotationOverlap is how long the previous secret keeps signing after a rotation.
const RotationOverlap = 24 * time.Hour

// DefaultMaxPerUser caps a user's subscriptions.
const DefaultMaxPerUser = 25

// DefaultMaxInFlight caps the attempts in flight to one subscription.
const DefaultMaxInFlight = 32

// MaxResponseBody is how much of a receiver's answer is read; the rest is not.
const MaxResponseBody = 64 << 10

// Sealer seals signing secrets at rest; nil stores them as they are.
type Sealer interface {
	Seal(plaintext []byte) []byte
	Open(sealed []byte) ([]byte, error)
}

// UserAgent is sent with every delivery.
var UserAgent = "Herald-Webhooks/" + version()

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// deps are what subscription actors and their workers share.
type deps struct {
	store       *persistence.Store
	client      *http.Client
	sealer      Sealer
	clock       Clock
	schedule    []time.Duration
	window      time.Duration
	jitter      func() float64
	maxInFlight int
	maxPerUser  int
	idle        time.Duration
	metrics     *Metrics
	log         *slog.Logger
	workers     sync.WaitGroup
	// onDone observes every attempt's outcome once the actor handled it (tests).
	onDone func(deliveryID string, r attemptResult)
}

var generations atomic.Uint64

// Actor is one subscription.
type Actor struct {
	id   string
	d    *deps
	hook *persistence.Webhook // nil: no such subscription
	// secrets are the opened signing secrets: current, then previous (with its end).
	secret     string
	prevSecret string
	prevUntil  time.Time

	gen      uint64
	self     *actor.PID
	root     *actor.RootContext
	queue    pendingQueue
	known    map[string]bool // queued or in flight
	inflight map[string]context.CancelFunc
	timer    Timer
	timerAt  time.Time
}

// Busy keeps a subscription with attempts in flight live: their outcomes report to it.
func (a *Actor) Busy() bool { return len(a.inflight) > 0 }

// Receive handles the subscription's messages.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.gen = generations.Add(1)
		a.self, a.root = ctx.Self(), ctx.ActorSystem().Root
		a.load()
		a.pump()
	case *actor.Stopped, *actor.Restarting:
		a.halt()
	case *Create:
		a.create(ctx, m)
	case *Update:
		a.update(ctx, m)
	case *Delete:
		a.delete(ctx, m)
	case *RotateSecret:
		a.rotate(ctx, m)
	case *SendTest:
		a.sendTest(ctx, m)
	case *Redeliver:
		a.redeliver(ctx, m)
	case *Enqueue:
		if a.hook == nil || !a.hook.Active {
			return
		}
		for _, it := range m.Items {
			a.push(it)
		}
		a.pump()
	case *Wake:
		a.pump()
	case *tick:
		if m.gen == a.gen {
			a.timer, a.timerAt = nil, time.Time{}
			a.pump()
		}
	case *attemptDone:
		a.done(m)
	}
}

// load reads the committed subscription and its pending deliveries; it runs on activation and
// again after a restart.
func (a *Actor) load() {
	a.hook = nil
	a.queue = nil
	a.known = map[string]bool{}
	a.inflight = map[string]context.CancelFunc{}
	var pending []persistence.PendingDelivery
	err := a.d.store.View(func(tx *persistence.Tx) error {
		w, err := tx.Webhook(a.id)
		if errors.Is(err, persistence.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		a.hook = w
		pending = tx.PendingDeliveries(a.id)
		return nil
	})
	if err != nil {
		a.d.log.Error("webhook: load subscription", "webhook_id", a.id, "error", err)
		a.hook = nil
		return
	}
	if a.hook == nil {
		return
	}
	if err := a.openSecrets(a.hook); err != nil {
		a.d.log.Error("webhook: cannot open the signing secret; deliveries wait", "webhook_id", a.id, "error", err)
		a.hook = nil
		return
	}
	if a.hook.Active {
		for _, p := range pending {
			a.push(p)
		}
	}
}

func (a *Actor) openSecrets(w *persistence.Webhook) error {
	cur, err := a.open(w.Secret)
	if err != nil {
		return err
	}
	a.secret, a.prevSecret, a.prevUntil = cur, "", time.Time{}
	if len(w.PreviousSecret) > 0 && w.PreviousSecretUntil != nil {
		prev, err := a.open(w.PreviousSecret)
		if err != nil {
			return err
		}
		a.prevSecret, a.prevUntil = prev, *w.PreviousSecretUntil
	}
	return nil
}

func (a *Actor) open(b []byte) (string, error) {
	if a.d.sealer == nil {
		return string(b), nil
	}
	p, err := a.d.sealer.Open(b)
	return string(p), err
}

func (a *Actor) seal(s string) []byte {
	if a.d.sealer == nil {
		return []byte(s)
	}
	return a.d.sealer.Seal([]byte(s))
}

func (a *Actor) owned(scope string) (*persistence.Webhook, error) {
	if a.hook == nil {
		return nil, ErrNotFound
	}
	if a.hook.Scope() != scope {
		return nil, ErrForbidden
	}
	return a.hook, nil
}

func (a *Actor) create(ctx actor.Context, m *Create) {
	if a.hook != nil {
		actors.ReplyError(ctx, ErrExists)
		return
	}
	now := a.d.clock.Now().UTC()
	secret := NewSecret()
	next := &persistence.Webhook{
		ID: a.id, UserID: m.UserID, WorkspaceID: m.WorkspaceID, URL: m.URL, Events: append([]string(nil), m.Events...), Active: true,
		CreatedAt: now, UpdatedAt: now, Secret: a.seal(secret), Version: 1,
	}
	max := a.d.maxPerUser
	if err := a.d.store.Update(context.Background(), func(tx *persistence.Tx) error {
		if tx.CountWebhooks(persistence.Scope(m.UserID, m.WorkspaceID)) >= max {
			return &LimitError{Max: max}
		}
		return tx.PutWebhook(next)
	}); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.hook = next
	a.secret, a.prevSecret, a.prevUntil = secret, "", time.Time{}
	actors.Reply(ctx, &Reply{Webhook: next.Clone(), Secret: secret})
}

func (a *Actor) update(ctx actor.Context, m *Update) {
	cur, err := a.owned(m.Scope)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	now := a.d.clock.Now().UTC()
	next := cur.Clone()
	if m.URL != nil {
		next.URL = *m.URL
	}
	if m.Events != nil {
		next.Events = append([]string(nil), m.Events...)
	}
	if m.Active != nil {
		next.Active = *m.Active
		if next.Active {
			next.DeactivatedReason = ""
		}
	}
	next.UpdatedAt = now
	next.Version++
	turnedOff := cur.Active && !next.Active
	var cancelled map[string]int
	if err := a.d.store.Update(context.Background(), func(tx *persistence.Tx) error {
		cancelled = nil
		if err := tx.PutWebhook(next); err != nil {
			return err
		}
		if turnedOff {
			var err error
			cancelled, err = tx.CancelPendingDeliveries(a.id, "cancelled: the subscription was turned off", now)
			return err
		}
		return nil
	}); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.hook = next
	if turnedOff {
		a.dropWork(cancelled)
	}
	actors.Reply(ctx, &Reply{Webhook: next.Clone()})
	a.pump()
}

func (a *Actor) delete(ctx actor.Context, m *Delete) {
	cur, err := a.owned(m.Scope)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	var cancelled map[string]int
	now := a.d.clock.Now()
	if err := a.d.store.Update(context.Background(), func(tx *persistence.Tx) error {
		var err error
		if cancelled, err = tx.CancelPendingDeliveries(a.id, "cancelled: the subscription was deleted", now); err != nil {
			return err
		}
		return tx.DeleteWebhook(cur)
	}); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.hook = nil
	a.dropWork(cancelled)
	actors.Reply(ctx, &Reply{Webhook: cur.Clone()})
}

func (a *Actor) rotate(ctx actor.Context, m *RotateSecret) {
	cur, err := a.owned(m.Scope)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	now := a.d.clock.Now().UTC()
	secret := NewSecret()
	until := now.Add(RotationOverlap)
	next := cur.Clone()
	next.PreviousSecret = cur.Secret
	next.PreviousSecretUntil = &until
	next.Secret = a.seal(secret)
	next.UpdatedAt = now
	next.Version++
	if err := a.d.store.Update(context.Background(), func(tx *persistence.Tx) error {
		return tx.PutWebhook(next)
	}); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.hook = next
	a.prevSecret, a.prevUntil = a.secret, until
	a.secret = secret
	actors.Reply(ctx, &Reply{Webhook: next.Clone(), Secret: secret})
}

// sendTest writes a pending delivery of a test event and starts it.
func (a *Actor) sendTest(ctx actor.Context, m *SendTest) {
	cur, err := a.owned(m.Scope)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	data, err := json.Marshal(map[string]any{"webhook_id": cur.ID, "message": "A test event sent from Herald: no post changed."})
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	now := a.d.clock.Now().UTC()
	a.deliverNew(ctx, cur, TestEventType, "", now, data)
}

// redeliver writes a new pending delivery of a past delivery's event and starts it.
func (a *Actor) redeliver(ctx actor.Context, m *Redeliver) {
	cur, err := a.owned(m.Scope)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	var old *persistence.Delivery
	if err := a.d.store.View(func(tx *persistence.Tx) error {
		old, err = tx.Delivery(cur.ID, m.DeliveryID)
		return err
	}); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			err = ErrDeliveryNotFound
		}
		actors.ReplyError(ctx, err)
		return
	}
	var env envelope
	if err := json.Unmarshal(old.Body, &env); err != nil || len(env.Data) == 0 {
		env.Data = json.RawMessage("null")
	}
	a.deliverNew(ctx, cur, old.Type, old.EventID, old.EventCreatedAt, env.Data)
}

// deliverNew commits a pending delivery of an event to the active subscription, replies it, and
// queues it.
func (a *Actor) deliverNew(ctx actor.Context, cur *persistence.Webhook, typ, eventID string, eventAt time.Time, data json.RawMessage) {
	if !cur.Active {
		actors.ReplyError(ctx, ErrInactive)
		return
	}
	did, err := uuid.NewV7()
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if eventID == "" {
		eventID = did.String()
	}
	now := a.d.clock.Now().UTC()
	body, err := json.Marshal(envelope{ID: did.String(), Type: typ, CreatedAt: eventAt.UTC(), Data: data})
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	d := &persistence.Delivery{ID: did.String(), WebhookID: cur.ID, EventID: eventID, Type: typ, EventCreatedAt: eventAt,
		CreatedAt: now, Body: body, Status: persistence.DeliveryPending, NextAttemptAt: &now}
	if err := a.d.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutDelivery(d) }); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	cp := *d
	actors.Reply(ctx, &DeliveryReply{Delivery: &cp})
	a.push(persistence.PendingDelivery{ID: d.ID, Next: now})
	a.pump()
}

// deactivate turns the subscription off after a 410 Gone and cancels its pending deliveries.
func (a *Actor) deactivate(reason string) {
	if a.hook == nil || !a.hook.Active {
		return
	}
	now := a.d.clock.Now().UTC()
	next := a.hook.Clone()
	next.Active = false
	next.DeactivatedReason = reason
	next.UpdatedAt = now
	next.Version++
	var cancelled map[string]int
	if err := a.d.store.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.PutWebhook(next); err != nil {
			return err
		}
		var err error
		cancelled, err = tx.CancelPendingDeliveries(a.id, "cancelled: "+reason, now)
		return err
	}); err != nil {
		// The subscription stays on; the next 410 tries again.
		a.d.log.Error("webhook: deactivate after 410", "webhook_id", a.id, "error", err)
		return
	}
	a.hook = next
	a.dropWork(cancelled)
	a.d.log.Info("webhook subscription turned off: its endpoint answered 410 Gone", "webhook_id", a.id)
}

// dropWork forgets the queue and cancels the attempts in flight (their outcome is not recorded).
func (a *Actor) dropWork(cancelled map[string]int) {
	for _, cancel := range a.inflight {
		cancel()
	}
	a.inflight = map[string]context.CancelFunc{}
	a.queue = nil
	a.known = map[string]bool{}
	a.stopTimer()
	for typ, n := range cancelled {
		a.d.metrics.Deliveries.WithLabelValues(typ, persistence.DeliveryCancelled).Add(float64(n))
	}
}

// halt stops timers and cancels attempts in flight; the incarnation is stopping.
func (a *Actor) halt() {
	a.stopTimer()
	for _, cancel := range a.inflight {
		cancel()
	}
	a.inflight = map[string]context.CancelFunc{}
	a.gen = 0
}

func (a *Actor) push(it persistence.PendingDelivery) {
	if a.known[it.ID] {
		return
	}
	a.known[it.ID] = true
	a.queue.push(it)
}

// pump starts every due attempt the in-flight cap allows and arms the timer for the next one. While
// work is pending the timer also fires at least every half idle timeout, so that the actor is
// never passivated with work in hand.
func (a *Actor) pump() {
	if a.hook == nil || !a.hook.Active {
		a.stopTimer()
		return
	}
	now := a.d.clock.Now()
	for len(a.inflight) < a.d.maxInFlight && a.queue.Len() > 0 && !a.queue.peek().Next.After(now) {
		a.start(a.queue.pop(), now)
	}
	var at time.Time
	switch {
	case a.queue.Len() > 0 && len(a.inflight) < a.d.maxInFlight:
		at = a.queue.peek().Next
	case len(a.inflight) > 0 || a.queue.Len() > 0:
		at = now.Add(a.d.idle / 2)
	default:
		a.stopTimer()
		return
	}
	if keep := now.Add(a.d.idle / 2); at.After(keep) {
		at = keep
	}
	if a.timer != nil && a.timerAt.Equal(at) {
		return
	}
	a.stopTimer()
	gen, self, root := a.gen, a.self, a.root
	a.timerAt = at
	a.timer = a.d.clock.AfterFunc(at.Sub(now), func() { root.Send(self, &tick{gen: gen}) })
}

func (a *Actor) stopTimer() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer, a.timerAt = nil, time.Time{}
	}
}

// start runs one attempt on a worker goroutine.
func (a *Actor) start(it persistence.PendingDelivery, now time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	a.inflight[it.ID] = cancel
	secrets := []string{a.secret}
	if a.prevSecret != "" && now.Before(a.prevUntil) {
		secrets = append(secrets, a.prevSecret)
	}
	w := worker{d: a.d, webhookID: a.id, deliveryID: it.ID, url: a.hook.URL, secrets: secrets}
	gen, self, root := a.gen, a.self, a.root
	a.d.workers.Add(1)
	go func() {
		defer a.d.workers.Done()
		defer cancel()
		res := w.run(ctx)
		root.Send(self, &attemptDone{gen: gen, id: it.ID, res: res})
	}()
}

func (a *Actor) done(m *attemptDone) {
	if m.gen != a.gen {
		return // from a previous incarnation
	}
	if _, ok := a.inflight[m.id]; !ok {
		return // dropped meanwhile (turned off, deleted)
	}
	delete(a.inflight, m.id)
	r := m.res
	switch {
	case r.aborted, r.skipped, r.final:
		delete(a.known, m.id)
	default:
		a.queue.push(persistence.PendingDelivery{ID: m.id, Next: r.next})
	}
	if r.gone {
		a.deactivate("the endpoint answered 410 Gone")
	}
	a.pump()
	if a.d.onDone != nil {
		a.d.onDone(m.id, r)
	}
}

// worker is one attempt of one delivery.
type worker struct {
	d          *deps
	webhookID  string
	deliveryID string
	url        string
	secrets    []string
}

// storeRetry is the wait before a delivery whose outcome could not be recorded is tried again.
const storeRetry = 5 * time.Second

func (w worker) run(ctx context.Context) attemptResult {
	var del *persistence.Delivery
	err := w.d.store.View(func(tx *persistence.Tx) error {
		d, err := tx.Delivery(w.webhookID, w.deliveryID)
		del = d
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && del.Status != persistence.DeliveryPending) {
		return attemptResult{skipped: true}
	}
	if err != nil {
		w.d.log.Error("webhook: read delivery", "webhook_id", w.webhookID, "delivery_id", w.deliveryID, "error", err)
		return attemptResult{next: w.d.clock.Now().Add(storeRetry)}
	}
	sentAt := w.d.clock.Now()
	started := time.Now()
	o := w.post(ctx, del.Type, del.Body, sentAt)
	if o.aborted || ctx.Err() != nil {
		return attemptResult{aborted: true}
	}
	elapsed := time.Since(started)
	m := w.d.metrics
	m.Attempts.WithLabelValues(del.Type, o.outcome).Inc()
	m.AttemptDuration.WithLabelValues(o.outcome).Observe(elapsed.Seconds())
	if del.Attempts > 0 {
		m.Retries.WithLabelValues(del.Type).Inc()
	}
	now := w.d.clock.Now()
	res := attemptResult{}
	var next time.Time
	retry := false
	switch {
	case o.outcome == outcomeSuccess:
		res.final = true
	case o.outcome == outcomeGone:
		res.final, res.gone = true, true
	default:
		next, retry = nextAttempt(w.d.schedule, del.Attempts+1, del.EventCreatedAt, now, o.retryAfter, w.d.window, w.d.jitter)
		res.final = !retry
	}
	final := ""
	err = w.d.store.Update(context.Background(), func(tx *persistence.Tx) error {
		final = ""
		res.skipped = false
		cur, err := tx.Delivery(w.webhookID, w.deliveryID)
		if errors.Is(err, persistence.ErrNotFound) {
			res.skipped = true
			return nil
		}
		if err != nil {
			return err
		}
		if cur.Status != persistence.DeliveryPending {
			res.skipped = true
			return nil
		}
		at := now.UTC()
		cur.Attempts++
		cur.LastAttemptAt = &at
		cur.LastStatusCode = o.status
		cur.LastResponseBody, cur.LastResponseSize = o.body, o.size
		cur.LastError = o.errMsg
		cur.NextAttemptAt = nil
		switch {
		case o.outcome == outcomeSuccess:
			cur.Status = persistence.DeliverySucceeded
			cur.CompletedAt = &at
		case retry:
			n := next.UTC()
			cur.NextAttemptAt = &n
		default:
			cur.Status = persistence.DeliveryFailed
			cur.CompletedAt = &at
			if !res.gone {
				msg := "gave up: no 2xx answer within the retry window"
				if o.errMsg != nil {
					msg += "; last error: " + *o.errMsg
				}
				cur.LastError = &msg
			}
		}
		final = cur.Status
		return tx.PutDelivery(cur)
	})
	if err != nil {
		w.d.log.Error("webhook: record attempt", "webhook_id", w.webhookID, "delivery_id", w.deliveryID, "error", err)
		return attemptResult{next: w.d.clock.Now().Add(storeRetry)}
	}
	if res.skipped {
		return res
	}
	switch final {
	case persistence.DeliverySucceeded:
		m.Deliveries.WithLabelValues(del.Type, final).Inc()
		m.Latency.WithLabelValues(del.Type).Observe(now.Sub(del.EventCreatedAt).Seconds())
	case persistence.DeliveryFailed:
		m.Deliveries.WithLabelValues(del.Type, final).Inc()
	}
	res.next = next
	return res
}

// postOutcome is what one HTTP attempt gave.
type postOutcome struct {
	outcome string
	status  *int
	// body is the answer's first persistence.KeptResponseBody bytes, size how many were read.
	body       []byte
	size       int64
	errMsg     *string
	retryAfter time.Duration
	aborted    bool
}

// keptAnswer is what a delivery keeps of a receiver's answer: its first
// persistence.KeptResponseBody bytes, with any signing secret of the subscription a receiver
// echoed blanked first (in the whole answer read, so that none is cut in two at the limit and
// half kept). nil for an empty answer.
func keptAnswer(answer []byte, secrets []string) []byte {
	if len(answer) == 0 {
		return nil
	}
	for _, s := range secrets {
		if s != "" {
			answer = bytes.ReplaceAll(answer, []byte(s), []byte("[signing secret]"))
		}
	}
	if len(answer) > persistence.KeptResponseBody {
		answer = answer[:persistence.KeptResponseBody]
	}
	return bytes.Clone(answer)
}

func (w worker) post(ctx context.Context, typ string, body []byte, at time.Time) postOutcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		msg := "invalid URL"
		return postOutcome{outcome: outcomeConnection, errMsg: &msg}
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", UserAgent)
	h.Set("X-Service-Event", typ)
	h.Set("X-Service-Delivery-Id", w.deliveryID)
	h.Set("X-Service-Signature", SignatureHeader(at, body, w.secrets...))
	resp, err := w.d.client.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return postOutcome{aborted: true}
		}
		return classifyError(err, req.URL.Hostname())
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	_ = resp.Body.Close()
	code := resp.StatusCode
	o := postOutcome{status: &code, size: int64(len(answer))}
	o.body = keptAnswer(answer, w.secrets)
	switch {
	case code >= 200 && code < 300:
		o.outcome = outcomeSuccess
		return o
	case code == http.StatusGone:
		o.outcome = outcomeGone
		msg := "HTTP 410 Gone: the subscription was turned off"
		o.errMsg = &msg
		return o
	case code >= 300 && code < 400:
		o.outcome = outcomeHTTP3xx
		msg := "HTTP " + itoa(code) + ": redirects are not followed"
		o.errMsg = &msg
	case code >= 400 && code < 500:
		o.outcome = outcomeHTTP4xx
	case code >= 500 && code < 600:
		o.outcome = outcomeHTTP5xx
	default:
		o.outcome = outcomeHTTPOther
	}
	if o.errMsg == nil {
		msg := "HTTP " + itoa(code)
		o.errMsg = &msg
	}
	o.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), w.d.clock.Now())
	return o
}
