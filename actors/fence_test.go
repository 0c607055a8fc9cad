package actors_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
)

// leases is a node's leases of one shard as a test moves them: held or not, at an epoch, trusted.
type leases struct {
	mu      sync.Mutex
	held    bool
	epoch   int64
	trusted bool
	fenced  atomic.Int64
}

func (l *leases) set(held bool, epoch int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.epoch, l.trusted = held, epoch, held
}

func (l *leases) Lease(string) (persistence.Lease, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return persistence.Lease{Name: "shard/0", Epoch: l.epoch, Owner: "node"}, l.held
}

func (l *leases) Trusted(string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && l.trusted
}

func (l *leases) Finishing(string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && l.trusted
}

func (l *leases) NotBefore(string) time.Time { return time.Time{} }
func (l *leases) Fenced()                    { l.fenced.Add(1) }

// An incarnation's pinned fence is the lease its shard had when it activated: its writes fence on
// that lease, it is trusted only while the node still holds that very lease, and it is stale
// once the node holds another, even a later epoch of its own.
func TestAPinHoldsAnIncarnationToTheLeaseItActivatedUnder(t *testing.T) {
	t.Parallel()
	require.Nil(t, actors.Pin(nil, "a"), "a single process has no fence and pays nothing")

	l := &leases{}
	l.set(true, 1)
	f := actors.Pin(l, "a")
	le, ok := f.Lease("a")
	require.True(t, ok)
	require.EqualValues(t, 1, le.Epoch)
	require.True(t, f.Trusted("a"))
	require.False(t, actors.StaleFence(f))

	l.mu.Lock()
	l.trusted = false
	l.mu.Unlock()
	require.False(t, f.Trusted("a"), "an untrusted lease is not trusted, pinned or not")
	require.False(t, actors.StaleFence(f), "the same lease, late in its renewal, is not stale")

	l.set(false, 1)
	require.False(t, f.Trusted("a"))
	require.False(t, actors.StaleFence(f), "lost and not taken again: nothing fresher to activate under")
	l.set(true, 2)
	le, ok = f.Lease("a")
	require.True(t, ok)
	require.EqualValues(t, 1, le.Epoch, "writes fence on the pinned epoch")
	require.False(t, f.Trusted("a"), "the node trusts a later epoch, not the pinned one")
	require.True(t, actors.StaleFence(f))
	le, _ = f.Lease("b")
	require.EqualValues(t, 2, le.Epoch, "another id's lease is the node's current one")

	again := actors.Pin(f, "a")
	le, _ = again.Lease("a")
	require.EqualValues(t, 2, le.Epoch, "an incarnation activated again pins the current lease")
	require.True(t, again.Trusted("a"))

	l.set(false, 2)
	none := actors.Pin(l, "a")
	_, ok = none.Lease("a")
	require.False(t, ok, "activated while the shard is not held: every write is fenced")
	require.False(t, none.Trusted("a"))
	require.False(t, actors.StaleFence(none), "and it stays, rather than activating again and again")
	l.set(true, 3)
	require.False(t, none.Trusted("a"), "nothing pinned is ever trusted")
	require.True(t, actors.StaleFence(none), "once the node takes the shard, a fresh incarnation pins it")
}

// pinnedActor records which incarnation handled each message and under which epoch.
type pinnedActor struct {
	id     string
	deps   actors.Fence
	fence  actors.Fence
	serial *atomic.Int32
	live   *atomic.Int32
	me     int32
	log    chan<- handled
}

type handled struct {
	n           int
	incarnation int32
	epoch       int64
	own         bool
}

// Note is a message from outside; Hold blocks the incarnation until its channel closes, then has
// it send itself an own message (an unexported type).
type Note struct{ N int }
type Hold struct{ Holding, Release chan struct{} }
type own struct{}

func (p *pinnedActor) Stale() bool { return actors.StaleFence(p.fence) }

func (p *pinnedActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if p.live.Add(1) > 1 {
			panic("two incarnations at once")
		}
		p.fence = actors.Pin(p.deps, p.id)
		p.me = p.serial.Add(1)
	case *actor.Stopped:
		p.live.Add(-1)
	case *Note:
		le, _ := p.fence.Lease(p.id)
		p.log <- handled{n: m.N, incarnation: p.me, epoch: le.Epoch}
	case *Hold:
		close(m.Holding)
		<-m.Release
		ctx.Send(ctx.Self(), &own{})
	case *own:
		p.log <- handled{incarnation: p.me, own: true}
	}
}

// An incarnation found stale stops, and the messages sent to it from outside, those already in
// its mailbox included, go in their order to a fresh incarnation, which pins the current lease;
// the stale one still handles its own messages (a call's outcome comes back to it).
func TestAStaleIncarnationHandsItsMessagesToAFreshOne(t *testing.T) {
	t.Parallel()
	l := &leases{}
	l.set(true, 1)
	log := make(chan handled, 100)
	serial, live := &atomic.Int32{}, &atomic.Int32{}
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	d := actors.NewDirectory(sys, actors.Kind{Name: "pinned", IdleTimeout: time.Minute, New: func(id string) actor.Actor {
		return &pinnedActor{id: id, deps: l, serial: serial, live: live, log: log}
	}})

	d.Send("a", &Note{N: 0})
	require.Equal(t, handled{n: 0, incarnation: 1, epoch: 1}, <-log)

	holding, release := make(chan struct{}), make(chan struct{})
	d.Send("a", &Hold{Holding: holding, Release: release})
	<-holding
	for i := 1; i <= 3; i++ {
		d.Send("a", &Note{N: i}) // in the first incarnation's mailbox, behind the hold
	}
	l.set(false, 1)
	l.set(true, 2) // lost and taken again, by this node, under a later epoch
	close(release)
	// The hold's own message reaches the stale incarnation after the notes in its mailbox: it
	// stops at the first of them and hands them back; its own message is still its own.
	for i := 4; i <= 5; i++ {
		d.Send("a", &Note{N: i})
	}
	var got []handled
	for len(got) < 6 {
		select {
		case h := <-log:
			got = append(got, h)
		case <-time.After(5 * time.Second):
			t.Fatalf("only %+v handled", got)
		}
	}
	var notes []handled
	for _, h := range got {
		if h.own {
			require.EqualValues(t, 1, h.incarnation, "its own message is handled by the stale incarnation")
			continue
		}
		notes = append(notes, h)
	}
	require.Len(t, notes, 5)
	for i, h := range notes {
		require.Equal(t, handled{n: i + 1, incarnation: 2, epoch: 2}, h, "in order, by a fresh incarnation under the current lease")
	}
	require.Zero(t, l.fenced.Load())
}

// endingActor ends its incarnation itself when told to (as an actor whose write was fenced
// does), by reporting Stale from then on; it answers each Ping with the incarnation that took it.
type endingActor struct {
	serial  *atomic.Int32
	stopped chan<- int32
	me      int32
	ended   bool
}

// End blocks the incarnation until Release closes, then has it end itself; Ping asks which
// incarnation answers.
type End struct{ Holding, Release chan struct{} }
type Ping struct{}
type Pong struct{ Incarnation int32 }

func (e *endingActor) Stale() bool { return e.ended }

func (e *endingActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		e.me = e.serial.Add(1)
	case *actor.Stopped:
		e.stopped <- e.me
	case *End:
		close(m.Holding)
		<-m.Release
		e.ended = true
	case *Ping:
		actors.Reply(ctx, &Pong{Incarnation: e.me})
	}
}

// An actor that ends its incarnation while requests wait in its mailbox has them answered by a
// fresh incarnation (a self-stop would drop them, and each asker would wait out its time-out),
// and one that ends with nothing waiting stops without another message.
func TestAnIncarnationThatEndsItselfHasTheRequestsInItsMailboxAnswered(t *testing.T) {
	t.Parallel()
	serial := &atomic.Int32{}
	stopped := make(chan int32, 10)
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	d := actors.NewDirectory(sys, actors.Kind{Name: "ending", IdleTimeout: time.Minute, New: func(string) actor.Actor {
		return &endingActor{serial: serial, stopped: stopped}
	}})
	ask := func() <-chan int32 {
		got := make(chan int32, 1)
		go func() {
			p, err := actors.AskWithin[*Pong](t.Context(), 5*time.Second, d.To("a"), &Ping{})
			if err != nil {
				got <- -1
				return
			}
			got <- p.Incarnation
		}()
		return got
	}
	p, err := actors.AskWithin[*Pong](t.Context(), 5*time.Second, d.To("a"), &Ping{})
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Incarnation)

	holding, release := make(chan struct{}), make(chan struct{})
	d.Send("a", &End{Holding: holding, Release: release})
	<-holding
	var waiting []<-chan int32
	for range 3 {
		waiting = append(waiting, ask())
	}
	require.Eventually(t, func() bool { return d.Live() == 1 && serial.Load() == 1 }, time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the asks are in the first incarnation's mailbox
	close(release)
	for i, w := range waiting {
		require.EqualValues(t, 2, <-w, "ask %d is answered by a fresh incarnation", i)
	}
	require.EqualValues(t, 1, <-stopped)

	holding, release = make(chan struct{}), make(chan struct{})
	d.Send("a", &End{Holding: holding, Release: release})
	<-holding
	close(release)
	select {
	case n := <-stopped:
		require.EqualValues(t, 2, n, "the incarnation that ended itself stops")
	case <-time.After(5 * time.Second):
		t.Fatal("an incarnation that ended itself with nothing in its mailbox did not stop")
	}
	require.Eventually(t, func() bool { return d.Live() == 0 }, 5*time.Second, time.Millisecond)
}
