package actors_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
				require.NoError(t, err)
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
	require.True(t, errors.Is(err, actors.ErrActorFailed), "%v", err)
	n, err = actors.Ask[int](context.Background(), d.To("x"), &incr{panicFirst: true})
	require.NoError(t, err)
	require.Equal(t, 2, n, "restarted from the persisted count")
	require.Equal(t, 1.0, testutil.ToFloat64(sys.Metrics.Restarts.WithLabelValues("counter")))
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
