package actors_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
)

// counter is a test actor whose state survives passivation and restarts in a shared "store".
type counter struct {
	id      string
	store   *sync.Map
	running *atomic.Int32 // incarnations alive, all ids together
	perID   *sync.Map     // id → *atomic.Int32: incarnations of that id
	n       int
}

func (c *counter) mine() *atomic.Int32 {
	v, _ := c.perID.LoadOrStore(c.id, &atomic.Int32{})
	return v.(*atomic.Int32)
}

type incr struct{ panicFirst bool }
type get struct{}

var panicked sync.Map

func (c *counter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.running.Add(1)
		if c.mine().Add(1) > 1 {
			panic("two incarnations at once")
		}
		if v, ok := c.store.Load(c.id); ok {
			c.n = v.(int)
		}
	case *actor.Stopped, *actor.Restarting:
		c.running.Add(-1)
		c.mine().Add(-1)
	case *incr:
		if m.panicFirst {
			if _, done := panicked.LoadOrStore(c.id, true); !done {
				panic("boom")
			}
		}
		c.n++
		c.store.Store(c.id, c.n)
		actors.Reply(ctx, c.n)
	case *get:
		actors.Reply(ctx, c.n)
	}
}

func newCounterDir(t *testing.T, idle time.Duration) (*actors.Directory, *actors.System, *atomic.Int32) {
	reg := prometheus.NewRegistry()
	sys := actors.NewSystem(reg, nil)
	t.Cleanup(sys.Shutdown)
	store := &sync.Map{}
	running := &atomic.Int32{}
	perID := &sync.Map{}
	d := actors.NewDirectory(sys, actors.Kind{Name: "counter", IdleTimeout: idle, New: func(id string) actor.Actor {
		return &counter{id: id, store: store, running: running, perID: perID}
	}})
	return d, sys, running
}

// Messages sent while actors passivate are never lost, and one incarnation runs at a time.
func TestNoMessageLostAcrossPassivation(t *testing.T) {
	t.Parallel()
	d, sys, running := newCounterDir(t, 2*time.Millisecond)
	const ids, perID = 20, 200
	var wg sync.WaitGroup
	for i := 0; i < ids; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := string(rune('a' + i))
			for j := 0; j < perID; j++ {
				_, err := actors.Ask[int](context.Background(), d.To(id), &incr{})
				assert.NoError(t, err)
				if j%7 == 0 {
					time.Sleep(3 * time.Millisecond) // let it passivate now and then
				}
			}
		}(i)
	}
	wg.Wait()
	for i := 0; i < ids; i++ {
		n, err := actors.Ask[int](context.Background(), d.To(string(rune('a'+i))), &get{})
		require.NoError(t, err)
		require.Equal(t, perID, n)
	}
	require.Greater(t, testutil.ToFloat64(sys.Metrics.Passivations.WithLabelValues("counter")), 10.0)
	require.Eventually(t, func() bool { return d.Live() == 0 && running.Load() == 0 }, 5*time.Second, 5*time.Millisecond)
}

// A panic answers the requester with ErrActorFailed and restarts the actor from its state.
func TestPanicRestartsFromState(t *testing.T) {
	t.Parallel()
	d, sys, _ := newCounterDir(t, time.Minute)
	panicked.Delete("x")
	n, err := actors.Ask[int](context.Background(), d.To("x"), &incr{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = actors.Ask[int](context.Background(), d.To("x"), &incr{panicFirst: true})
	require.ErrorIs(t, err, actors.ErrActorFailed)
	n, err = actors.Ask[int](context.Background(), d.To("x"), &incr{panicFirst: true})
	require.NoError(t, err)
	require.Equal(t, 2, n, "restarted from the persisted count")
	require.InDelta(t, 1.0, testutil.ToFloat64(sys.Metrics.Restarts.WithLabelValues("counter")), 0)
}

func TestAskHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	d, _, _ := newCounterDir(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	type silent struct{}
	start := time.Now()
	_, err := actors.Ask[int](ctx, d.To("quiet"), &silent{})
	require.ErrorIs(t, err, actors.ErrTimeout)
	require.Less(t, time.Since(start), 2*time.Second)
}

func TestStopDrainsEveryActor(t *testing.T) {
	t.Parallel()
	d, _, running := newCounterDir(t, time.Minute)
	for i := 0; i < 50; i++ {
		d.Send(string(rune('A'+i)), &incr{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, d.Stop(ctx))
	require.Equal(t, int32(0), running.Load())
	require.Equal(t, 0, d.Live())
}

type create struct {
	start int
	panic bool
}

// counterCreator creates counters straight in the store, each after release is closed.
type counterCreator struct {
	store   *sync.Map
	release chan struct{}
}

func (counterCreator) Creates(msg any) bool {
	_, ok := msg.(*create)
	return ok
}

func (c counterCreator) Create(id string, msg any) any {
	<-c.release
	m := msg.(*create)
	if m.panic {
		panic("boom while creating")
	}
	c.store.Store(id, m.start)
	return m.start
}

// A kind's Creator creates actors without activating them; what reaches an id while it is being
// created waits, and is handled by an incarnation that starts from the created state.
func TestCreatorCreatesWithoutActivating(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	sys := actors.NewSystem(reg, nil)
	t.Cleanup(sys.Shutdown)
	store, running, perID := &sync.Map{}, &atomic.Int32{}, &sync.Map{}
	release := make(chan struct{})
	d := actors.NewDirectory(sys, actors.Kind{Name: "counter", IdleTimeout: time.Minute,
		New: func(id string) actor.Actor {
			return &counter{id: id, store: store, running: running, perID: perID}
		},
		Creator: counterCreator{store: store, release: release},
	})
	ctx := context.Background()
	activations := func() float64 { return testutil.ToFloat64(sys.Metrics.Activations.WithLabelValues("counter")) }

	created := make(chan int, 1)
	go func() {
		n, err := actors.Ask[int](ctx, d.To("a"), &create{start: 40})
		assert.NoError(t, err)
		created <- n
	}()
	require.Eventually(t, func() bool { return d.Live() == 1 }, 5*time.Second, time.Millisecond)
	// Sent while "a" is being created: held, then handled from the created state.
	incremented := make(chan int, 2)
	for i := 0; i < 2; i++ {
		go func() {
			n, err := actors.Ask[int](ctx, d.To("a"), &incr{})
			assert.NoError(t, err)
			incremented <- n
		}()
	}
	time.Sleep(20 * time.Millisecond)
	require.Zero(t, activations(), "nothing activated while creating")
	require.Empty(t, incremented, "held until the creation returns")
	close(release)
	require.Equal(t, 40, <-created)
	got := []int{<-incremented, <-incremented}
	require.ElementsMatch(t, []int{41, 42}, got)
	require.InDelta(t, 1.0, activations(), 0, "the held messages activated one incarnation")

	// A creation with nothing after it activates nothing and leaves nothing live.
	n, err := actors.Ask[int](ctx, d.To("b"), &create{start: 7})
	require.NoError(t, err)
	require.Equal(t, 7, n)
	require.InDelta(t, 1.0, activations(), 0)
	n, err = actors.Ask[int](ctx, d.To("b"), &get{})
	require.NoError(t, err)
	require.Equal(t, 7, n, "activated later from the created state")
	require.InDelta(t, 2.0, activations(), 0)

	// A creating message to a live incarnation is the incarnation's to handle.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = actors.Ask[int](short, d.To("b"), &create{start: 99})
	require.ErrorIs(t, err, actors.ErrTimeout, "the counter does not answer creates")
	v, _ := store.Load("b")
	require.Equal(t, 7, v, "the Creator did not run for a live id")

	// A panic while creating fails that request only.
	_, err = actors.Ask[int](ctx, d.To("c"), &create{panic: true})
	require.ErrorIs(t, err, actors.ErrActorFailed)
	n, err = actors.Ask[int](ctx, d.To("c"), &incr{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 4.0, testutil.ToFloat64(sys.Metrics.Messages.WithLabelValues("counter", "actors_test.create")), "every create counted, by the Creator or the incarnation")
}

// Stop waits for creations under way.
func TestStopWaitsForCreations(t *testing.T) {
	t.Parallel()
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	store, release := &sync.Map{}, make(chan struct{})
	d := actors.NewDirectory(sys, actors.Kind{Name: "counter", New: func(id string) actor.Actor {
		return &counter{id: id, store: store, running: &atomic.Int32{}, perID: &sync.Map{}}
	}, Creator: counterCreator{store: store, release: release}})
	d.Send("a", &create{start: 3})
	require.Eventually(t, func() bool { return d.Live() == 1 }, 5*time.Second, time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- d.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a creation ran", err)
	case <-time.After(30 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-stopped)
	v, ok := store.Load("a")
	require.True(t, ok)
	require.Equal(t, 3, v)
	require.Equal(t, 0, d.Live())
}
