package cluster

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/persistence"
)

// LostWait bounds how long Lost waits for a singleton's run to return after cancelling it: the
// lease may be another node's already, so the run must stop at once, but the member's loop,
// which calls Lost, must not stall behind a run slow to notice.
const LostWait = time.Second

// Singletons runs the work of which one instance runs across all nodes at a time: the
// scheduler's firing loop, the webhook outbox dispatcher, the purges and sweeps. Each kind is a
// run function that works until its context ends and keeps everything it does in the store, so
// that it may stop at any point and start again on another node.
//
// Over several nodes each kind runs under the lease SingletonName(kind): the member calls
// Acquired when the node takes it (the run starts with a fresh context that carries the lease,
// LeaseOf), Drain before it gives it up (the run is cancelled and waited for), Lost when it lost
// it (the run is cancelled at once). A run writes what a double run could harm under Fence, so
// that a run that outlived its lease on a paused node writes nothing. On a single node StartAll
// runs every kind, without a lease, as Herald always did.
type Singletons struct {
	log   *slog.Logger
	held  *prometheus.GaugeVec
	mu    sync.Mutex
	kinds map[string]*singleton
	// lostWait is LostWait (tests shorten it).
	lostWait time.Duration
}

type singleton struct {
	run func(context.Context)
	// cancel ends the current run, done closes when it returned (nil: none started); lease is
	// the lease it runs under (nil: StartAll's).
	cancel context.CancelFunc
	done   chan struct{}
	lease  *persistence.Lease
}

// NewSingletons makes an empty registry; reg (may be nil) gets herald_cluster_singletons_held.
func NewSingletons(reg prometheus.Registerer, log *slog.Logger) *Singletons {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Singletons{log: log, kinds: map[string]*singleton{}, lostWait: LostWait,
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_cluster_singletons_held",
			Help: "Whether this node runs the singleton of each kind (1) or not (0): the scheduler, the outbox dispatcher, the purges and sweeps.",
		}, []string{"kind"})}
	if reg != nil {
		reg.MustRegister(s.held)
	}
	return s
}

// Register adds a kind; call it before StartAll or before the member starts. A kind registered
// twice keeps its first run.
func (s *Singletons) Register(kind string, run func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.kinds[kind]; ok {
		return
	}
	s.kinds[kind] = &singleton{run: run}
	s.held.WithLabelValues(kind).Set(0)
}

// Kinds lists the registered kinds, sorted: the member's Config.Singletons.
func (s *Singletons) Kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.kinds))
	for k := range s.kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// StartAll runs every kind that is not running, without a lease, until ctx ends or Stop: a
// single node is every singleton's only node.
func (s *Singletons) StartAll(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for kind, k := range s.kinds {
		if k.cancel == nil {
			s.start(ctx, kind, k, nil)
		}
	}
}

// Stop cancels every run and waits for them to return (a shutdown).
func (s *Singletons) Stop() {
	s.mu.Lock()
	var waits []chan struct{}
	for kind, k := range s.kinds {
		if k.cancel != nil {
			waits = append(waits, s.stop(kind, k))
		}
	}
	s.mu.Unlock()
	for _, w := range waits {
		<-w
	}
}

// kindOf is the registered kind a lease name (singleton/KIND) names.
func (s *Singletons) kindOf(name string) (string, *singleton) {
	kind, ok := strings.CutPrefix(name, SingletonName(""))
	if !ok {
		return "", nil
	}
	return kind, s.kinds[kind]
}

// Acquired starts the lease's kind under it with a fresh context (Config.Acquired for the
// "singleton/…" leases). A run of the kind that was cancelled but has not returned yet (a lost
// lease's) returns before the new one starts, so that a node never runs a kind twice at once.
func (s *Singletons) Acquired(t persistence.Taken) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kind, k := s.kindOf(t.Name)
	if k == nil {
		s.log.Warn("cluster: a lease of an unknown singleton was taken", "lease", t.Name)
		return
	}
	if k.cancel != nil {
		s.stop(kind, k)
	}
	le := t.Lease
	s.start(context.Background(), kind, k, &le)
}

// Drain cancels the lease's run and waits for it to return (Config.Drain): the next owner
// starts it after this one stopped.
func (s *Singletons) Drain(l persistence.Lease) {
	if done := s.cancel(l); done != nil {
		<-done
	}
}

// Lost cancels the lease's run at once (Config.Lost): another node may run it already. It waits
// for the run to return for LostWait at most; a run that outlives it can write nothing that
// fences on the lease.
func (s *Singletons) Lost(l persistence.Lease) {
	done := s.cancel(l)
	if done == nil {
		return
	}
	t := time.NewTimer(s.lostWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("cluster: a singleton is slow to stop after its lease was lost", "lease", l.Name)
	}
}

// cancel cancels the run of the lease at its epoch and returns its done channel (nil: none).
func (s *Singletons) cancel(l persistence.Lease) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	kind, k := s.kindOf(l.Name)
	if k == nil || k.cancel == nil || k.lease == nil || k.lease.Epoch != l.Epoch {
		return nil
	}
	return s.stop(kind, k)
}

// start runs k under ctx (and the lease when given) once its previous run returned; s.mu held.
func (s *Singletons) start(ctx context.Context, kind string, k *singleton, le *persistence.Lease) {
	prev := k.done
	if le != nil {
		ctx = context.WithValue(ctx, leaseKey{}, *le)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	k.cancel, k.done, k.lease = cancel, done, le
	s.held.WithLabelValues(kind).Set(1)
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		if ctx.Err() == nil {
			k.run(ctx)
		}
	}()
}

// stop cancels k's run and returns its done channel; s.mu held.
func (s *Singletons) stop(kind string, k *singleton) chan struct{} {
	k.cancel()
	k.cancel, k.lease = nil, nil
	s.held.WithLabelValues(kind).Set(0)
	return k.done
}

type leaseKey struct{}

// LeaseOf is the lease a singleton's run works under (false: it runs on a single node, under
// no lease).
func LeaseOf(ctx context.Context) (persistence.Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(persistence.Lease)
	return l, ok
}

// FenceRun fences tx on the lease ctx's run works under (persistence.Tx.Fence), and does nothing
// for a run under no lease: a singleton calls it in the writes that a second run of its kind,
// on a node that lost the lease, could harm.
func FenceRun(ctx context.Context, tx *persistence.Tx) error {
	if l, ok := LeaseOf(ctx); ok {
		return tx.Fence(l)
	}
	return nil
}
