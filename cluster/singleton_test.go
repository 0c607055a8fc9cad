package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// runs records the runs of singleton kinds over every node of a test: how many of each run now,
// the most that ever ran at once, and each run's lease.
type runs struct {
	mu      sync.Mutex
	now     map[string]int
	most    map[string]int
	started map[string]int
	// leases are the contexts of the runs in progress, by kind, for fenced writes.
	ctxs map[string][]context.Context
}

func newRuns() *runs {
	return &runs{now: map[string]int{}, most: map[string]int{}, started: map[string]int{}, ctxs: map[string][]context.Context{}}
}

// run is a singleton's run that counts itself while it works.
func (r *runs) run(kind string) func(context.Context) {
	return func(ctx context.Context) {
		r.mu.Lock()
		r.now[kind]++
		r.started[kind]++
		r.most[kind] = max(r.most[kind], r.now[kind])
		r.ctxs[kind] = append(r.ctxs[kind], ctx)
		r.mu.Unlock()
		<-ctx.Done()
		r.mu.Lock()
		r.now[kind]--
		r.mu.Unlock()
	}
}

func (r *runs) snapshot(kind string) (now, most, started int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now[kind], r.most[kind], r.started[kind]
}

// lastCtx is the context of the kind's last run started.
func (r *runs) lastCtx(kind string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.ctxs[kind]
	return c[len(c)-1]
}

var kinds = []string{"scheduler", "outbox", "sweep"}

type singleNode struct {
	*node
	s   *Singletons
	reg *prometheus.Registry
}

// startSingletons starts a member whose singleton leases run kinds through a Singletons.
func startSingletons(t *testing.T, url string, r *runs) *singleNode {
	t.Helper()
	l, err := persistence.OpenLeases(context.Background(), url, ttl)
	require.NoError(t, err)
	t.Cleanup(l.Close)
	reg := prometheus.NewRegistry()
	s := NewSingletons(reg, nil)
	for _, k := range kinds {
		s.Register(k, r.run(k))
	}
	ev := &events{}
	m := New(Config{Leases: l, Addr: "127.0.0.1:0", Shards: 1, Singletons: s.Kinds(),
		Acquired: func(tk persistence.Taken) {
			ev.mu.Lock()
			ev.acquired = append(ev.acquired, tk)
			ev.mu.Unlock()
			s.Acquired(tk)
		},
		Drain: s.Drain, Lost: s.Lost,
	})
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{Member: m, ev: ev, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(n.done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-n.done; s.Stop() })
	return &singleNode{node: n, s: s, reg: reg}
}

func (n *singleNode) holds(kind string) float64 {
	return testutil.ToFloat64(n.s.held.WithLabelValues(kind))
}

// On a single node StartAll runs every kind under no lease until Stop, which waits for them.
func TestStartAllRunsEveryKindUntilStop(t *testing.T) {
	r := newRuns()
	reg := prometheus.NewRegistry()
	s := NewSingletons(reg, nil)
	for _, k := range kinds {
		s.Register(k, r.run(k))
	}
	require.Equal(t, []string{"outbox", "scheduler", "sweep"}, s.Kinds())
	s.StartAll(context.Background())
	for _, k := range kinds {
		require.Eventually(t, func() bool { now, _, _ := r.snapshot(k); return now == 1 }, 5*time.Second, time.Millisecond)
		_, underLease := LeaseOf(r.lastCtx(k))
		require.False(t, underLease)
		require.Equal(t, 1.0, testutil.ToFloat64(s.held.WithLabelValues(k)))
	}
	s.StartAll(context.Background()) // already running: nothing more starts
	s.Stop()
	for _, k := range kinds {
		now, most, started := r.snapshot(k)
		require.Equal(t, [3]int{0, 1, 1}, [3]int{now, most, started}, k)
		require.Zero(t, testutil.ToFloat64(s.held.WithLabelValues(k)))
	}
}

// Over two nodes each kind runs on exactly one node: a node that joins is handed its share
// (drained on the other first, never two runs at once), and a node that stops hands its share
// back. Each run carries its lease, and its fenced writes pass.
func TestSingletonsRunOnceAcrossNodesAndMoveOnHandOff(t *testing.T) {
	url := pgtest.URL(t)
	store, err := persistence.OpenPostgres(context.Background(), url, persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	r := newRuns()
	a := startSingletons(t, url, r)
	settled(t, a.node)
	for _, k := range kinds {
		require.Eventually(t, func() bool { now, _, _ := r.snapshot(k); return now == 1 }, 10*time.Second, time.Millisecond)
		require.Equal(t, 1.0, a.holds(k))
	}
	b := startSingletons(t, url, r)
	settled(t, a.node, b.node)
	for _, k := range kinds {
		require.Eventually(t, func() bool {
			now, _, _ := r.snapshot(k)
			return now == 1 && a.holds(k)+b.holds(k) == 1
		}, 10*time.Second, time.Millisecond)
		_, _, started := r.snapshot(k)
		if b.holds(k) == 1 {
			require.Equal(t, 2, started, "%s was drained on a and started on b", k)
		}
		le, ok := LeaseOf(r.lastCtx(k))
		require.True(t, ok)
		require.Equal(t, SingletonName(k), le.Name)
		require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return FenceRun(r.lastCtx(k), tx) }))
	}

	// a stops: it drains what it runs and b is handed every kind.
	a.cancel()
	<-a.done
	settled(t, b.node)
	for _, k := range kinds {
		require.Eventually(t, func() bool { now, _, _ := r.snapshot(k); return now == 1 && b.holds(k) == 1 }, 10*time.Second, time.Millisecond)
		_, most, started := r.snapshot(k)
		require.Equal(t, 1, most, "%s never ran twice at once", k)
		require.Equal(t, 2, started, "%s ran on a, then on b", k)
		require.Zero(t, a.holds(k))
		require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return FenceRun(r.lastCtx(k), tx) }))
	}
}

// A node paused past its lease (SIGSTOP) keeps its runs going while it sleeps: the other node
// takes the kinds over, and from then on the sleeper's writes under its lease are fenced while
// the new runs' pass. When it wakes it learns the leases are lost and cancels its runs at once.
func TestAPausedNodesSingletonsAreFencedAndCancelledOnWaking(t *testing.T) {
	url := pgtest.URL(t)
	store, err := persistence.OpenPostgres(context.Background(), url, persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	r := newRuns()
	a := startSingletons(t, url, r)
	settled(t, a.node)
	for _, k := range kinds {
		require.Eventually(t, func() bool { now, _, _ := r.snapshot(k); return now == 1 }, 10*time.Second, time.Millisecond)
	}
	old := map[string]context.Context{}
	for _, k := range kinds {
		old[k] = r.lastCtx(k)
	}
	b := startSingletons(t, url, r)
	a.pauseNow(t)
	for _, k := range kinds {
		require.Eventually(t, func() bool { return b.holds(k) == 1 }, 20*time.Second, 5*time.Millisecond)
		// a's run still works (its member sleeps), but it can no longer write under its lease.
		if l, _ := LeaseOf(old[k]); b.holds(k) == 1 && old[k].Err() == nil {
			require.ErrorIs(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return FenceRun(old[k], tx) }), persistence.ErrFenced, l.Name)
		}
		require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return FenceRun(r.lastCtx(k), tx) }))
	}
	a.resume()
	for _, k := range kinds {
		require.Eventually(t, func() bool { return old[k].Err() != nil }, 20*time.Second, 5*time.Millisecond, "%s cancelled on waking", k)
		require.Eventually(t, func() bool { now, _, _ := r.snapshot(k); return now == 1 }, 10*time.Second, time.Millisecond)
	}
	settled(t, a.node, b.node)
}

// Lost does not wait for a run that is slow to stop longer than its bound, and a new lease of
// the kind starts its run only once the old one returned.
func TestLostIsBoundedAndARunNeverOverlapsItself(t *testing.T) {
	s := NewSingletons(nil, nil)
	s.lostWait = 20 * time.Millisecond
	release := make(chan struct{})
	var mu sync.Mutex
	running, most := 0, 0
	s.Register("slow", func(ctx context.Context) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		<-ctx.Done()
		<-release // slow to stop
		mu.Lock()
		running--
		mu.Unlock()
	})
	first := persistence.Taken{Lease: persistence.Lease{Name: SingletonName("slow"), Epoch: 1, Owner: "n"}}
	s.Acquired(first)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return running == 1 }, 5*time.Second, time.Millisecond)
	start := time.Now()
	s.Lost(first.Lease)
	require.Less(t, time.Since(start), 2*time.Second)
	s.Acquired(persistence.Taken{Lease: persistence.Lease{Name: SingletonName("slow"), Epoch: 2, Owner: "n"}})
	s.Lost(first.Lease) // an old epoch's loss does not stop the new run
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	require.Equal(t, 1, running, "the new run waits for the old one to return")
	mu.Unlock()
	close(release)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return running == 1 && most == 1 }, 5*time.Second, time.Millisecond)
	s.Acquired(persistence.Taken{Lease: persistence.Lease{Name: SingletonName("unknown"), Epoch: 1}}) // ignored
	s.Stop()
	mu.Lock()
	require.Zero(t, running)
	require.Equal(t, 1, most)
	mu.Unlock()
}
