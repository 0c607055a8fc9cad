package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
)

// echoer answers *burst by sending itself n ticks from another goroutine (the way account actors
// receive the results of their network calls) and replies once it has processed them all; *hold
// blocks until its channel closes.
type echoer struct {
	ticks   int
	pings   int
	want    int
	replyTo *actor.PID
}

type burst struct{ n int }
type tick struct{}
type hold struct {
	entered chan struct{}
	release chan struct{}
}
type ping struct{}

// self asks the echoer for a copy of itself.
type self struct{}

func (e *echoer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *burst:
		e.ticks, e.want, e.replyTo = 0, m.n, ctx.Sender()
		self, root := ctx.Self(), ctx.ActorSystem().Root
		go func() {
			for i := 0; i < m.n; i++ {
				root.Send(self, &tick{})
			}
		}()
	case *tick:
		e.ticks++
		if e.ticks == e.want && e.replyTo != nil {
			ctx.Send(e.replyTo, e.ticks)
		}
	case *self:
		c := *e
		actors.Reply(ctx, &c)
	case *hold:
		close(m.entered)
		<-m.release
	case *ping:
		e.pings++
		actors.Reply(ctx, 1)
	}
}

func newEchoDir(t *testing.T) (*actors.Directory, *actors.System) {
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	d := actors.NewDirectory(sys, actors.Kind{Name: "echo", IdleTimeout: time.Minute, New: func(string) actor.Actor { return &echoer{} }})
	return d, sys
}

// Messages an actor sends itself count in the mailbox depth like any other, so the gauge returns
// to zero (not below) once they are processed.
func TestMailboxDepthCountsSelfSends(t *testing.T) {
	t.Parallel()
	d, sys := newEchoDir(t)
	depth := sys.Metrics.MailboxDepth.WithLabelValues("echo")
	n, err := actors.Ask[int](context.Background(), d.To("a"), &burst{n: 200})
	require.NoError(t, err)
	require.Equal(t, 200, n)
	// A message leaves the gauge once its handler returned, just after it replied.
	settles(t, depth)
}

// While an actor is busy, what queues behind it shows in the gauge.
func TestMailboxDepthShowsQueuedMessages(t *testing.T) {
	t.Parallel()
	d, sys := newEchoDir(t)
	depth := sys.Metrics.MailboxDepth.WithLabelValues("echo")
	h := &hold{entered: make(chan struct{}), release: make(chan struct{})}
	d.Send("b", h)
	<-h.entered
	for i := 0; i < 5; i++ {
		d.Send("b", &tick{})
	}
	// One message in processing, five behind it.
	require.Equal(t, 6.0, testutil.ToFloat64(depth))
	close(h.release)
	_, err := actors.Ask[int](context.Background(), d.To("b"), &ping{})
	require.NoError(t, err)
	settles(t, depth)
}

// settles waits for the gauge to come back to zero: a message leaves it once its handler has
// returned, a moment after the handler replied.
func settles(t *testing.T, g prometheus.Gauge) {
	t.Helper()
	require.Eventually(t, func() bool { return testutil.ToFloat64(g) == 0 }, 5*time.Second, time.Millisecond,
		"mailbox depth stays at %v", testutil.ToFloat64(g))
}

// An actor stopped with messages still queued takes them off the gauge.
func TestMailboxDepthAfterStop(t *testing.T) {
	t.Parallel()
	d, sys := newEchoDir(t)
	depth := sys.Metrics.MailboxDepth.WithLabelValues("echo")
	h := &hold{entered: make(chan struct{}), release: make(chan struct{})}
	d.Send("c", h)
	<-h.entered
	for i := 0; i < 3; i++ {
		d.Send("c", &tick{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- d.Stop(ctx) }()
	close(h.release)
	require.NoError(t, <-stopped)
	require.Equal(t, 0, d.Live())
	require.Equal(t, 0.0, testutil.ToFloat64(depth))
}

// A request that finds MailboxLimit messages ahead of it is answered at once with ErrBusy and
// never delivered; messages without a reply address are delivered whatever the depth, and once
// the actor has caught up, requests go through again.
func TestMailboxLimitRefusesRequests(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	sys := actors.NewSystem(reg, nil)
	t.Cleanup(sys.Shutdown)
	d := actors.NewDirectory(sys, actors.Kind{Name: "bounded", IdleTimeout: time.Minute, MailboxLimit: 3,
		New: func(string) actor.Actor { return &echoer{} }})
	h := &hold{entered: make(chan struct{}), release: make(chan struct{})}
	d.Send("a", h)
	<-h.entered
	for i := 0; i < 5; i++ {
		d.Send("a", &tick{}) // accepted work: delivered beyond the limit
	}
	_, err := actors.Ask[int](context.Background(), d.To("a"), &ping{})
	require.ErrorIs(t, err, actors.ErrBusy)
	require.Equal(t, 1.0, testutil.ToFloat64(sys.Metrics.Refused.WithLabelValues("bounded")))
	// Another actor of the kind is not affected.
	n, err := actors.Ask[int](context.Background(), d.To("b"), &ping{})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	close(h.release)
	answered := 0
	require.Eventually(t, func() bool {
		_, err := actors.Ask[int](context.Background(), d.To("a"), &ping{})
		if err == nil {
			answered++
		}
		return err == nil
	}, 10*time.Second, time.Millisecond)
	// Every tick sent while the actor was full was processed; the refused pings never reached it.
	got, err := actors.Ask[*echoer](context.Background(), d.To("a"), &self{})
	require.NoError(t, err)
	require.Equal(t, 5, got.ticks)
	require.Equal(t, answered, got.pings)
}
