package actors_test

import (
	"context"
	"fmt"
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

// capped is a test actor for the cap of live actors: its count survives passivation in a shared
// store, it tracks the incarnations alive per id, and it reports work in flight while told so.
type capped struct {
	id    string
	b     *capBundle
	n     int
	works bool
}

type work struct{ on bool }

func (c *capped) Busy() bool { return c.works }

func (c *capped) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if c.b.alive(c.id).Add(1) > 1 {
			panic("two incarnations at once")
		}
		c.b.running.Add(1)
		if v, ok := c.b.store.Load(c.id); ok {
			c.n = v.(int)
		}
	case *actor.Stopped:
		c.b.alive(c.id).Add(-1)
		c.b.running.Add(-1)
	case *incr:
		c.n++
		c.b.store.Store(c.id, c.n)
		actors.Reply(ctx, c.n)
	case *get:
		actors.Reply(ctx, c.n)
	case *work:
		c.works = m.on
		actors.Reply(ctx, c.n)
	}
}

type capBundle struct {
	dir     *actors.Directory
	sys     *actors.System
	store   sync.Map
	perID   sync.Map
	running atomic.Int32
}

func (b *capBundle) alive(id string) *atomic.Int32 {
	v, _ := b.perID.LoadOrStore(id, &atomic.Int32{})
	return v.(*atomic.Int32)
}

func newCapped(t *testing.T, k actors.Kind) *capBundle {
	t.Helper()
	b := &capBundle{sys: actors.NewSystem(prometheus.NewRegistry(), nil)}
	t.Cleanup(b.sys.Shutdown)
	k.Name = "capped"
	k.New = func(id string) actor.Actor { return &capped{id: id, b: b} }
	b.dir = actors.NewDirectory(b.sys, k)
	return b
}

func (b *capBundle) ask(t *testing.T, id string, msg any) int {
	t.Helper()
	n, err := actors.Ask[int](context.Background(), b.dir.To(id), msg)
	require.NoError(t, err)
	return n
}

// Idle actors beyond the cap are passivated, and their state comes back from the store at their
// next message: the live actors follow the cap, not the number of ids touched.
func TestLiveActorsFollowTheCap(t *testing.T) {
	t.Parallel()
	const limit, ids, rounds = 8, 200, 3
	b := newCapped(t, actors.Kind{MaxLive: limit, IdleTimeout: time.Hour})
	for r := 1; r <= rounds; r++ {
		for i := 0; i < ids; i++ {
			require.Equal(t, r, b.ask(t, fmt.Sprint("id-", i), &incr{}))
		}
		// An incarnation that has just answered may still be finishing the message: the
		// directory passivates it as soon as it reports idle.
		require.Eventually(t, func() bool { return b.dir.Live() <= limit && b.running.Load() <= limit }, 5*time.Second, time.Millisecond)
	}
	require.Greater(t, testutil.ToFloat64(b.sys.Metrics.Capped.WithLabelValues("capped")), float64(ids))
	require.InDelta(t, float64(limit), testutil.ToFloat64(b.sys.Metrics.MaxLive.WithLabelValues("capped")), 0)
}

// The least recently used idle actor goes first; one touched again stays.
func TestTheLeastRecentlyUsedIdleActorGoesFirst(t *testing.T) {
	t.Parallel()
	b := newCapped(t, actors.Kind{MaxLive: 3, Shards: 1, IdleTimeout: time.Hour})
	for _, id := range []string{"a", "b", "c"} {
		b.ask(t, id, &incr{})
	}
	b.ask(t, "a", &incr{}) // b is now the least recently used
	require.Eventually(t, func() bool { return b.dir.Live() == 3 }, 5*time.Second, time.Millisecond)
	b.ask(t, "d", &incr{})
	require.Eventually(t, func() bool { return b.alive("b").Load() == 0 }, 5*time.Second, time.Millisecond)
	for _, id := range []string{"a", "c", "d"} {
		require.Equal(t, int32(1), b.alive(id).Load(), id)
	}
	require.Equal(t, 1, b.ask(t, "b", &get{}), "b's state came back from the store")
	require.Equal(t, 2, b.ask(t, "a", &get{}))
}

// An actor with work in flight is never passivated for the cap: the cap is exceeded while every
// live actor is busy (an idle one is passivated even when it was the last used), and met again
// once they are idle.
func TestBusyActorsAreNeverPassivatedForTheCap(t *testing.T) {
	t.Parallel()
	b := newCapped(t, actors.Kind{MaxLive: 2, Shards: 1, IdleTimeout: time.Hour})
	b.ask(t, "a", &work{on: true})
	b.ask(t, "b", &work{on: true})
	b.ask(t, "c", &incr{})
	b.ask(t, "d", &incr{})
	// c is passivated for d, and d once it is idle: a and b stay though the shard is over its
	// cap.
	require.Eventually(t, func() bool { return b.alive("c").Load() == 0 && b.alive("d").Load() == 0 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int32(1), b.alive("a").Load())
	require.Equal(t, int32(1), b.alive("b").Load())
	require.Equal(t, 2, b.dir.Live())
	b.ask(t, "c", &incr{})
	require.Equal(t, int32(1), b.alive("a").Load(), "busy, never passivated for the cap")
	require.Equal(t, int32(1), b.alive("b").Load())
	b.ask(t, "a", &work{on: false})
	b.ask(t, "b", &work{on: false})
	require.Eventually(t, func() bool { return b.dir.Live() == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int32(1), b.alive("b").Load(), "the most recently used stays")
}

// Under concurrent load over many ids, no message is lost and no id ever has two incarnations
// (the actor panics if it does), whatever the passivations for the cap.
func TestNoMessageLostUnderTheCap(t *testing.T) {
	t.Parallel()
	b := newCapped(t, actors.Kind{MaxLive: 16, IdleTimeout: time.Hour})
	const ids, perID = 64, 50
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for j := 0; j < perID; j++ {
				for i := w; i < ids; i += 8 {
					_, err := actors.Ask[int](context.Background(), b.dir.To(fmt.Sprint(i)), &incr{})
					assert.NoError(t, err)
				}
			}
		}(w)
	}
	wg.Wait()
	for i := 0; i < ids; i++ {
		require.Equal(t, perID, b.ask(t, fmt.Sprint(i), &get{}))
	}
	require.Greater(t, testutil.ToFloat64(b.sys.Metrics.Capped.WithLabelValues("capped")), 0.0)
	require.Eventually(t, func() bool { return b.dir.Live() <= 16 }, 5*time.Second, time.Millisecond)
}

// settling is a test actor that is settled after a settle message, and has work in flight (a
// self-sent reply to come) after a work message.
type settling struct {
	settled, working bool
	done             chan struct{}
}

type (
	settle    struct{ gate chan struct{} }
	startWork struct{}
	workDone  struct{}
)

func (s *settling) Settled() bool { return s.settled && !s.working }
func (s *settling) Busy() bool    { return s.working }

func (s *settling) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *settle:
		<-m.gate // the test delivers the next message meanwhile
		s.settled = true
	case *startWork:
		s.working = true
		actors.SendSelfAfter(ctx, 10*time.Millisecond, &workDone{})
	case *workDone:
		s.working = false
		close(s.done)
	}
}

// An actor that is settled after a message, with another message already behind it in its
// mailbox, is not passivated then: that message may start work whose replies would find it
// stopped.
func TestASettledActorStaysForTheMessageBehind(t *testing.T) {
	t.Parallel()
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	done := make(chan struct{})
	d := actors.NewDirectory(sys, actors.Kind{Name: "settling", IdleTimeout: time.Hour, New: func(string) actor.Actor { return &settling{done: done} }})
	gate := make(chan struct{})
	d.Send("a", &settle{gate: gate})
	d.Send("a", &startWork{})
	close(gate)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the work's reply was lost: the actor was passivated with work in flight")
	}
	require.Eventually(t, func() bool { return d.Live() == 0 }, 5*time.Second, time.Millisecond, "settled once the work is done")
}
