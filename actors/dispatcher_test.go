package actors

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sequence records the numbers it receives; a *hold message blocks it until released.
type sequence struct {
	mu  *sync.Mutex
	got map[string][]int
	id  string
}

type seqMsg struct{ n int }

type hold struct {
	entered chan<- struct{}
	release <-chan struct{}
}

func (s *sequence) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *seqMsg:
		s.mu.Lock()
		s.got[s.id] = append(s.got[s.id], m.n)
		s.mu.Unlock()
		if ctx.Sender() != nil {
			Reply(ctx, m.n)
		}
	case *hold:
		m.entered <- struct{}{}
		<-m.release
	}
}

func newSequenceDir(t *testing.T) (*Directory, *System, func() map[string][]int) {
	t.Helper()
	sys := NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	var mu sync.Mutex
	got := map[string][]int{}
	d := NewDirectory(sys, Kind{Name: "sequence", IdleTimeout: time.Minute, MailboxLimit: -1, New: func(id string) actor.Actor {
		return &sequence{mu: &mu, got: got, id: id}
	}})
	return d, sys, func() map[string][]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string][]int, len(got))
		for k, v := range got {
			out[k] = append([]int(nil), v...)
		}
		return out
	}
}

// The actors' mailboxes run on the system's pooled workers, and every actor still receives its
// messages in the order they were sent while many senders and actors run at once.
func TestDispatcherKeepsOrderPerActor(t *testing.T) {
	t.Parallel()
	d, sys, got := newSequenceDir(t)
	const actors, perActor = 40, 300
	var wg sync.WaitGroup
	for a := range actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("a%d", a)
			for n := range perActor {
				d.Send(id, &seqMsg{n: n})
				if n%50 == 0 {
					runtime.Gosched() // let the mailbox go idle now and then, so passes start anew
				}
			}
			// The last one is a request: once answered, everything before it was received.
			_, err := Ask[int](context.Background(), d.To(id), &seqMsg{n: perActor})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	all := got()
	require.Len(t, all, actors)
	for id, seq := range all {
		require.Len(t, seq, perActor+1, id)
		for i, n := range seq {
			require.Equal(t, i, n, "actor %s received %d in place %d", id, n, i)
		}
	}
	require.Positive(t, sys.workers.live(), "the mailboxes ran on the pool's workers")
	require.LessOrEqual(t, sys.workers.live(), actors+4, "at most one worker per actor that ran at once")
}

// An actor blocked in its handler (as one waiting for a store commit is) keeps its worker, and
// the others still run: with every worker blocked, the next message gets a new one.
func TestDispatcherNeverStallsWhenEveryWorkerIsBlocked(t *testing.T) {
	t.Parallel()
	d, sys, _ := newSequenceDir(t)
	// Warm the pool up with a few workers, all idle.
	for i := range 4 {
		_, err := Ask[int](context.Background(), d.To(fmt.Sprintf("warm%d", i)), &seqMsg{n: 0})
		require.NoError(t, err)
	}
	const blocked = 32
	entered := make(chan struct{}, blocked)
	release := make(chan struct{})
	defer close(release)
	for i := range blocked {
		d.Send(fmt.Sprintf("blocked%d", i), &hold{entered: entered, release: release})
	}
	for range blocked {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the blocked actors did not all start: the pool ran out of workers")
		}
	}
	require.GreaterOrEqual(t, sys.workers.live(), blocked)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := Ask[int](ctx, d.To("free"), &seqMsg{n: 7})
	require.NoError(t, err, "an actor waited for the blocked ones")
	require.Equal(t, 7, n)
}

// Idle workers are reused, the most recently idle first, so a light load runs on one worker; the
// workers a burst started expire once idle, so that at rest the pool holds no goroutine.
func TestWorkerPoolReusesAndExpiresWorkers(t *testing.T) {
	t.Parallel()
	p := newWorkerPool(dispatcherThroughput, 500*time.Millisecond)
	defer p.Close()
	idle := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.idle)
	}
	done := make(chan int)
	for i := range 100 {
		p.Schedule(func() { done <- p.live() })
		require.Equal(t, 1, <-done, "pass %d ran beside another worker: one pass after another runs on one worker", i)
		// The pass has ended, but its worker parks itself just after: the next pass is
		// scheduled once it has, as passes that follow one another after a moment are.
		require.Eventually(t, func() bool { return idle() == 1 }, 5*time.Second, 10*time.Microsecond)
	}

	// A burst of passes that all block at once: one worker each.
	const burst = 64
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(burst)
	for range burst {
		p.Schedule(func() { started.Done(); <-release })
	}
	started.Wait()
	require.Equal(t, burst, p.live())
	close(release)
	require.Eventually(t, func() bool { return p.live() == 0 }, 5*time.Second, 5*time.Millisecond,
		"idle workers expire")

	// And the pool works again afterwards.
	p.Schedule(func() { done <- p.live() })
	require.Equal(t, 1, <-done)
}

// Close retires the idle workers; a pass scheduled afterwards still runs.
func TestWorkerPoolClose(t *testing.T) {
	t.Parallel()
	p := newWorkerPool(dispatcherThroughput, time.Hour)
	done := make(chan struct{})
	for range 8 {
		p.Schedule(func() { done <- struct{}{} })
	}
	for range 8 {
		<-done
	}
	require.Positive(t, p.live())
	p.Close()
	require.Eventually(t, func() bool { return p.live() == 0 }, 5*time.Second, time.Millisecond)
	p.Schedule(func() { done <- struct{}{} })
	<-done
	require.Zero(t, p.live(), "after Close a pass runs on a goroutine of its own")
}

// At rest, the system's goroutines do not grow with the messages it has processed.
func TestDispatcherGoroutinesBoundedAtRest(t *testing.T) {
	sys := NewSystem(prometheus.NewRegistry(), nil)
	sys.workers.Close()
	sys.workers = newWorkerPool(dispatcherThroughput, 20*time.Millisecond)
	t.Cleanup(sys.Shutdown)
	d := NewDirectory(sys, Kind{Name: "sequence", IdleTimeout: time.Minute, MailboxLimit: -1, New: func(id string) actor.Actor {
		return &sequence{mu: &sync.Mutex{}, got: map[string][]int{}, id: id}
	}})
	_, err := Ask[int](context.Background(), d.To("first"), &seqMsg{n: 0})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sys.workers.live() == 0 }, 5*time.Second, time.Millisecond)
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 20 {
				_, err := Ask[int](context.Background(), d.To(fmt.Sprintf("rest%d", i%50)), &seqMsg{n: n})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	rest := func() bool { return sys.workers.live() == 0 && runtime.NumGoroutine() <= before }
	for deadline := time.Now().Add(10 * time.Second); !rest() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if !rest() {
		all := make([]byte, 1<<20)
		t.Fatalf("workers left at rest: %d, goroutines %d before, %d after:\n%s", sys.workers.live(), before, runtime.NumGoroutine(), all[:runtime.Stack(all, true)])
	}
}

// deep uses about n kB of stack, as an actor's pass into JSON, the store or the network client
// does.
//
//go:noinline
func deep(n int) byte {
	var buf [1024]byte
	buf[n%len(buf)] = byte(n)
	if n == 0 {
		return buf[0]
	}
	return deep(n-1) + buf[n%len(buf)]
}

// A pass that wakes an idle mailbox, on a pooled worker against a new goroutine (Proto.Actor's
// default dispatcher): 64 passes in flight at a time, each using 16 kB of stack.
func BenchmarkDispatcher(b *testing.B) {
	for _, c := range []struct {
		name string
		d    actor.Dispatcher
	}{
		{"pool", newWorkerPool(dispatcherThroughput, workerIdleTimeout)},
		{"goroutine", actor.NewDefaultDispatcher(dispatcherThroughput)},
	} {
		b.Run(c.name, func(b *testing.B) {
			var wg sync.WaitGroup
			sem := make(chan struct{}, 64)
			pass := func() {
				deep(16)
				<-sem
				wg.Done()
			}
			b.ReportAllocs()
			for b.Loop() {
				sem <- struct{}{}
				wg.Add(1)
				c.d.Schedule(pass)
			}
			wg.Wait()
		})
	}
}
