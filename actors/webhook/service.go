package webhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
)

// Consumer is the dispatcher's cursor name in the outbox.
const Consumer = "webhooks"

// Options configure webhooks.
type Options struct {
	Store *persistence.Store
	// Route makes the router through which the dispatcher and the HTTP layer reach the
	// subscriptions' actors (To): nil on a single node, where the directory is its own router.
	Route func(*actors.Directory) actors.Router
	// Events wakes the dispatcher when an event was committed to the outbox (nil: it only polls).
	Events   *actors.Notifier
	Registry prometheus.Registerer
	Log      *slog.Logger
	Egress   EgressOptions
	// Sealer seals signing secrets at rest (nil: stored as they are).
	Sealer Sealer
	// Clock is the time source (default the real clock).
	Clock Clock
	// Schedule is the wait after each failed attempt (default DefaultSchedule); Window how long a
	// delivery is retried (default RetryWindow); Jitter a factor around 1 applied to each wait
	// (default uniform in [0.8, 1.2]).
	Schedule []time.Duration
	Window   time.Duration
	Jitter   func() float64
	// MaxInFlight caps the attempts in flight to one subscription (default DefaultMaxInFlight).
	MaxInFlight int
	// MaxPerUser caps a user's subscriptions (default DefaultMaxPerUser).
	MaxPerUser int
	// IdleTimeout passivates a subscription actor with no work (default 2m).
	IdleTimeout time.Duration
	// MaxLive caps the live subscription actors (actors.Kind's MaxLive; 0: no cap).
	MaxLive int
	// PollInterval is how often the dispatcher looks at the outbox without a notification
	// (default 2s).
	PollInterval time.Duration
	// Retention is how long finished delivery records are kept (default 30 days).
	Retention time.Duration
	// Batch is the most events fanned out in one transaction (default 256).
	Batch int
}

// Service is webhooks in a running Herald: the subscription actors' directory, the URL guard and
// the dispatcher.
type Service struct {
	// Dir is this node's directory of subscription actors (its owner stops it); To reaches a
	// subscription's actor on whichever node it lives.
	Dir   *actors.Directory
	To    actors.Router
	Guard *Guard
	d     *deps
	opts  Options

	cancel context.CancelFunc
	done   chan struct{}
	// near is the event id this dispatcher last advanced the outbox cursor to: where its next
	// fan-out expects to start reading (persistence.Tx.EventsWantedNear); scopes are the
	// workspaces of that fan-out's events, whose subscriptions the next one reads ahead.
	near   atomic.Pointer[string]
	scopes atomic.Pointer[[]string]
}

// New builds the service; Start runs it.
func New(sys *actors.System, o Options) *Service {
	if o.Log == nil {
		o.Log = sys.Log
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if len(o.Schedule) == 0 {
		o.Schedule = DefaultSchedule
	}
	if o.Window <= 0 {
		o.Window = RetryWindow
	}
	if o.Jitter == nil {
		o.Jitter = func() float64 { return 0.8 + 0.4*rand.Float64() }
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.MaxPerUser <= 0 {
		o.MaxPerUser = DefaultMaxPerUser
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.Retention <= 0 {
		o.Retention = 30 * 24 * time.Hour
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.Egress.MaxConnsPerHost <= 0 {
		o.Egress.MaxConnsPerHost = o.MaxInFlight
	}
	g := NewGuard(o.Egress)
	d := &deps{
		store: o.Store, client: g.Client(), sealer: o.Sealer, clock: o.Clock, schedule: o.Schedule,
		window: o.Window, jitter: o.Jitter, maxInFlight: o.MaxInFlight, maxPerUser: o.MaxPerUser,
		idle: o.IdleTimeout, metrics: newMetrics(o.Registry, o.Store), log: o.Log,
	}
	s := &Service{Guard: g, d: d, opts: o}
	s.Dir = actors.NewDirectory(sys, actors.Kind{
		Name:        KindName,
		IdleTimeout: o.IdleTimeout,
		MaxLive:     o.MaxLive,
		New:         func(id string) actor.Actor { return &Actor{id: id, d: d} },
	})
	s.To = s.Dir
	if o.Route != nil {
		s.To = o.Route(s.Dir)
	}
	return s
}

// Metrics are the service's metrics.
func (s *Service) Metrics() *Metrics { return s.d.metrics }

// DispatcherKind is the dispatcher's kind among the loops that run once across nodes
// (cluster.Singletons).
const DispatcherKind = "webhook-dispatcher"

// Start wakes every subscription that has pending deliveries (Resume) and starts the
// dispatcher (Run) on this process alone; Herald's server runs the dispatcher under
// cluster.Singletons instead.
func (s *Service) Start() error {
	if err := s.Resume(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.Run(ctx)
	}()
	return nil
}

// Resume wakes every subscription that has pending deliveries: they resume after a restart.
func (s *Service) Resume() error {
	var ids []string
	if err := s.opts.Store.View(func(tx *persistence.Tx) error {
		ids = tx.WebhooksWithPending()
		return nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		s.To.Send(id, &Wake{})
	}
	return nil
}

// Stop stops the dispatcher, then the subscription actors (attempts in flight are cancelled and
// stay pending, to be made again after the next start), and waits for their workers.
func (s *Service) Stop(ctx context.Context) error {
	if s.cancel != nil {
		s.cancel()
		select {
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := s.Dir.Stop(ctx); err != nil {
		return err
	}
	wait := make(chan struct{})
	go func() { s.d.workers.Wait(); close(wait) }()
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run is the dispatcher loop until ctx ends: it drains the outbox whenever it is notified, every
// PollInterval in case a notification was missed, and prunes old delivery records every hour.
// Everything it does is in the store (each fan-out advances the outbox cursor in the transaction
// that writes its deliveries, so that two dispatchers never fan an event out twice: on
// PostgreSQL one of the two transactions fails to serialize and reads the cursor again), so it
// may stop at any point and run again on another node.
func (s *Service) Run(ctx context.Context) {
	var wakeUp <-chan struct{}
	if s.opts.Events != nil {
		wakeUp = s.opts.Events.C()
	}
	poll := time.NewTicker(s.opts.PollInterval)
	defer poll.Stop()
	prune := time.NewTicker(time.Hour)
	defer prune.Stop()
	s.prune(ctx)
	for {
		n, err := s.Dispatch(ctx)
		if err != nil && ctx.Err() == nil {
			s.d.log.Error("webhook dispatcher: fan-out failed; retrying", "error", err)
		}
		if err == nil && n == s.opts.Batch {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-wakeUp:
		case <-poll.C:
		case <-prune.C:
			s.prune(ctx)
		}
	}
}

// envelope is the body of a delivery, as the spec gives it.
type envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// maxScopesAhead bounds the scopes whose subscriptions a fan-out reads ahead.
const maxScopesAhead = 16

// Dispatch fans out the outbox events after the dispatcher's cursor (up to one batch): in one
// transaction it writes one pending delivery per event and active subscription of the event's
// user that wants its type, and advances the cursor; after the commit it hands the deliveries to
// their subscriptions' actors. It returns how many events it read.
func (s *Service) Dispatch(ctx context.Context) (int, error) {
	var out map[string][]persistence.PendingDelivery
	n, last := 0, ""
	near, seen := "", []string(nil)
	if p := s.near.Load(); p != nil {
		near = *p
	}
	if p := s.scopes.Load(); p != nil {
		seen = *p
	}
	var scopes []string
	now := s.d.clock.Now().UTC()
	// Read ahead on PostgreSQL (persistence.Store.UpdateAhead): out and n are set afresh by each run.
	err := s.opts.Store.UpdateAhead(ctx, func(tx *persistence.Tx) error {
		out, n, last, scopes = map[string][]persistence.PendingDelivery{}, 0, "", nil
		// A dispatcher that lost its lease fans out nothing more (it runs as a singleton).
		if err := cluster.FenceRun(ctx, tx); err != nil {
			return err
		}
		// The subscriptions are looked up first, so that only the events someone listens to
		// are decoded (most have no subscriber); subsOf[i] are the subscribers of evs[i].
		// On PostgreSQL the subscriptions of the scopes of the last fan-out are read with the
		// outbox, before its events name the scopes to look up.
		tx.ReadSubscriptionsAhead(seen)
		var subsOf [][]string
		evs, read, upTo, err := tx.EventsWantedNear(Consumer, near, s.opts.Batch, func(scope, typ string) bool {
			if len(scopes) < maxScopesAhead && !slices.Contains(scopes, scope) {
				scopes = append(scopes, scope)
			}
			subs := tx.SubscribersOf(scope, typ)
			if len(subs) > 0 {
				subsOf = append(subsOf, subs)
			}
			return len(subs) > 0
		})
		if err != nil {
			return err
		}
		n = read
		for i, ev := range evs {
			subs := subsOf[i]
			data := ev.Data
			if !json.Valid(data) {
				data = json.RawMessage("null")
			}
			for _, wid := range subs {
				did, err := uuid.NewV7()
				if err != nil {
					return err
				}
				body, err := json.Marshal(envelope{ID: did.String(), Type: ev.Type, CreatedAt: ev.CreatedAt.UTC(), Data: data})
				if err != nil {
					return err
				}
				d := &persistence.Delivery{
					ID: did.String(), WebhookID: wid, EventID: ev.ID, Type: ev.Type, EventCreatedAt: ev.CreatedAt,
					CreatedAt: now, Body: body, Status: persistence.DeliveryPending, NextAttemptAt: &now,
				}
				if err := tx.PutDelivery(d); err != nil {
					return err
				}
				out[wid] = append(out[wid], persistence.PendingDelivery{ID: d.ID, Next: now})
			}
		}
		if n > 0 {
			last = upTo
			return tx.AdvanceEvents(Consumer, upTo)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if last != "" {
		s.near.Store(&last)
		s.scopes.Store(&scopes)
	}
	s.d.metrics.Fanout.Add(float64(n))
	for wid, items := range out {
		s.To.Send(wid, &Enqueue{Items: items})
	}
	return n, nil
}

// prune deletes finished delivery records older than the retention, a thousand per transaction.
func (s *Service) prune(ctx context.Context) {
	cutoff := s.d.clock.Now().Add(-s.opts.Retention)
	for ctx.Err() == nil {
		more := false
		err := s.opts.Store.Update(ctx, func(tx *persistence.Tx) error {
			var err error
			_, more, err = tx.PruneDeliveries(cutoff, 1000)
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				s.d.log.Error("webhook: prune delivery records", "error", err)
			}
			return
		}
		if !more {
			return
		}
	}
}
