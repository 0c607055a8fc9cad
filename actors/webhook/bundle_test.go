package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
)

// manualClock is a Clock that moves only when the test advances it.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c       *manualClock
	at      time.Time
	f       func()
	stopped bool
}

func newManualClock() *manualClock { return &manualClock{now: time.Now().Truncate(time.Second)} }

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		t.stopped = true
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock and runs the timers that fall due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t.f)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// fakeResolver maps names to addresses; other names do not exist.
type fakeResolver struct {
	mu sync.Mutex
	m  map[string][]netip.Addr
}

func newResolver(pairs ...string) *fakeResolver {
	r := &fakeResolver{m: map[string][]netip.Addr{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		r.set(pairs[i], pairs[i+1])
	}
	return r
}

func (r *fakeResolver) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[host] = nil
	for _, a := range addrs {
		r.m[host] = append(r.m[host], netip.MustParseAddr(a))
	}
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

type outcome struct {
	id  string
	res attemptResult
}

// bundle is a webhook service on a real bbolt file and a real actor system.
type bundle struct {
	t      *testing.T
	dir    string
	store  *persistence.Store
	sys    *actors.System
	svc    *Service
	events *actors.Notifier
	reg    *prometheus.Registry
	ca     *webhooktest.CA
	o      bundleOpts
	done   chan outcome
}

type bundleOpts struct {
	clock       Clock
	schedule    []time.Duration
	timeout     time.Duration
	denyPrivate bool
	resolver    Resolver
	maxInFlight int
	ca          *webhooktest.CA
	dir         string
}

func setup(t *testing.T, o bundleOpts) *bundle {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.ca == nil {
		o.ca = webhooktest.NewCA(t)
	}
	if o.schedule == nil {
		o.schedule = []time.Duration{time.Millisecond}
	}
	store, err := storetest.Open(t, o.dir, persistence.Options{})
	require.NoError(t, err)
	b := &bundle{t: t, dir: o.dir, store: store, ca: o.ca, o: o, events: actors.NewNotifier(), reg: prometheus.NewRegistry(), done: make(chan outcome, 10000)}
	b.start()
	t.Cleanup(func() {
		b.stop()
		_ = store.Close()
	})
	return b
}

func (b *bundle) start() {
	b.reg = prometheus.NewRegistry()
	b.sys = actors.NewSystem(nil, nil)
	b.svc = New(b.sys, Options{
		Store: b.store, Events: b.events, Registry: b.reg, Clock: b.o.clock, Schedule: b.o.schedule,
		MaxInFlight: b.o.maxInFlight, Jitter: func() float64 { return 1 },
		Egress: EgressOptions{AllowPrivate: !b.o.denyPrivate, RootCAs: b.ca.Pool, AttemptTimeout: b.o.timeout, Resolver: b.o.resolver},
	})
	ch := b.done
	b.svc.d.onDone = func(id string, r attemptResult) { ch <- outcome{id, r} }
	require.NoError(b.t, b.svc.Start())
}

func (b *bundle) stop() {
	if b.svc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(b.t, b.svc.Stop(ctx))
	b.sys.Shutdown()
	b.svc = nil
}

// restart stops the service and starts a new one on the same store (a new actor system).
func (b *bundle) restart() {
	b.stop()
	b.start()
}

// subscribe creates a subscription through its actor, without the URL check.
func (b *bundle) subscribe(user, url string, events ...string) *Reply {
	b.t.Helper()
	if len(events) == 0 {
		events = persistence.WebhookEvents
	}
	r, err := actors.Ask[*Reply](context.Background(), b.svc.Dir.To(uuid.Must(uuid.NewV7()).String()), &Create{UserID: user, URL: url, Events: events})
	require.NoError(b.t, err)
	return r
}

// emit appends a post event to the outbox as the post lifecycle does (in a transaction of the
// store, then Notify) and returns it.
func (b *bundle) emit(user, typ string) *persistence.Event {
	b.t.Helper()
	ev := b.emitQuiet(user, typ)
	b.events.Notify()
	return ev
}

// emitQuiet appends the event without notifying the dispatcher.
func (b *bundle) emitQuiet(user, typ string) *persistence.Event {
	b.t.Helper()
	ev := newEvent(user, typ, b.now())
	require.NoError(b.t, b.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.AppendEvent(ev) }))
	return ev
}

// emitTogether appends events in one transaction, then notifies.
func (b *bundle) emitTogether(user string, types ...string) {
	b.t.Helper()
	require.NoError(b.t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		for _, typ := range types {
			if err := tx.AppendEvent(newEvent(user, typ, b.now())); err != nil {
				return err
			}
		}
		return nil
	}))
	b.events.Notify()
}

// newEvent builds a post event the way the post lifecycle does.
func newEvent(user, typ string, at time.Time) *persistence.Event {
	if typ == persistence.CampaignEventCompleted {
		data := fmt.Sprintf(`{"campaign_id":%q,"name":"launch","posts":2,"totals":{"draft":0,"scheduled":0,"publishing":0,"published":1,"partial":0,"failed":1,"pending_approval":0}}`, uuid.NewString())
		return &persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: typ, UserID: user, CreatedAt: at.UTC(), Data: json.RawMessage(data)}
	}
	status := map[string]string{
		persistence.PostEventPublished: "published", persistence.PostEventFailed: "failed",
		persistence.PostEventScheduled: "scheduled", persistence.PostEventDeleted: "draft",
		persistence.PostEventApprovalRequested: "pending_approval", persistence.PostEventApproved: "draft", persistence.PostEventRejected: "draft",
	}[typ]
	platformStatus := map[string]string{"published": "published", "failed": "failed"}[status]
	if platformStatus == "" {
		platformStatus = "pending"
	}
	errText := "null"
	if status == "failed" {
		errText = `"the network refused the post"`
	}
	acct := uuid.NewString()
	postID := uuid.NewString()
	data := fmt.Sprintf(`{"post_id":%q,"status":%q,"platforms":[{"platform":"bluesky","status":%q,"connected_account_id":%q,"error":%s}]}`,
		postID, status, platformStatus, acct, errText)
	return &persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: typ, UserID: user, CreatedAt: at.UTC(), Data: json.RawMessage(data)}
}

// now is the bundle's clock time.
func (b *bundle) now() time.Time {
	if b.o.clock != nil {
		return b.o.clock.Now()
	}
	return time.Now()
}

// nextDone waits for the next recorded attempt outcome.
func (b *bundle) nextDone() outcome {
	b.t.Helper()
	select {
	case o := <-b.done:
		return o
	case <-time.After(30 * time.Second):
		b.t.Fatal("no attempt finished within 30s")
		return outcome{}
	}
}

func (b *bundle) delivery(webhookID, id string) *persistence.Delivery {
	b.t.Helper()
	var d *persistence.Delivery
	require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
		var err error
		d, err = tx.Delivery(webhookID, id)
		return err
	}))
	return d
}

func (b *bundle) deliveries(webhookID string) []*persistence.Delivery {
	b.t.Helper()
	var out []*persistence.Delivery
	require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
		var err error
		out, _, err = tx.ListDeliveries(webhookID, 0, 1000)
		return err
	}))
	return out
}

func (b *bundle) webhook(id string) *persistence.Webhook {
	b.t.Helper()
	var w *persistence.Webhook
	require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
		var err error
		w, err = tx.Webhook(id)
		return err
	}))
	return w
}

// quiesce waits until the actor of id has handled every message sent to it so far and no
// attempt runs.
func (b *bundle) quiesce(id string) {
	b.t.Helper()
	_, _ = actors.Ask[*Reply](context.Background(), b.svc.Dir.To(id), &RotateSecret{Scope: "barrier-not-an-owner"})
	b.svc.d.workers.Wait()
}
