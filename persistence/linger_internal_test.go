package persistence

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gatedCommitter is a commit boundary whose commits wait for the test: each update announces
// itself on entered and commits when the test sends on proceed.
type gatedCommitter struct {
	entered chan int // the number of the commit that started
	proceed chan struct{}
	mu      sync.Mutex
	n       int
}

func newGated() *gatedCommitter {
	return &gatedCommitter{entered: make(chan int, 64), proceed: make(chan struct{})}
}

func (g *gatedCommitter) update(fn func(*Tx) error) error {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	g.entered <- n
	<-g.proceed
	return fn(&Tx{})
}

func (g *gatedCommitter) view(fn func(*Tx) error) error { return fn(&Tx{}) }

func noop(*Tx) error { return nil }

// lingerStore is a store over a gated committer that records the writes of each commit.
func lingerStore(t *testing.T, lp lingers) (*Store, *gatedCommitter, func() []int) {
	t.Helper()
	g := newGated()
	var mu sync.Mutex
	var sizes []int
	s := newStoreLinger(g, Options{OnCommit: func(writes int, _ time.Duration, _ error) {
		mu.Lock()
		sizes = append(sizes, writes)
		mu.Unlock()
	}}, lp)
	t.Cleanup(func() {
		stop := make(chan struct{})
		go func() { // let any commit still gated through
			for {
				select {
				case g.proceed <- struct{}{}:
				case <-stop:
					return
				}
			}
		}()
		require.NoError(t, s.Close())
		close(stop)
	})
	return s, g, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), sizes...)
	}
}

// update queues a write and returns the channel its outcome arrives on.
func update(s *Store) chan error {
	out := make(chan error, 1)
	go func() { out <- s.Update(context.Background(), noop) }()
	return out
}

// tryUpdate queues a write a request waits on and returns the channel its outcome arrives on.
func tryUpdate(s *Store) chan error {
	out := make(chan error, 1)
	go func() { out <- s.TryUpdate(noop) }()
	return out
}

func within(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		require.NoError(t, err, what)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no answer (the committer is lingering)", what)
	}
}

func enter(t *testing.T, g *gatedCommitter) int {
	t.Helper()
	select {
	case n := <-g.entered:
		return n
	case <-time.After(20 * time.Second):
		t.Fatal("no commit started (the committer is lingering)")
		return 0
	}
}

// A write that finds the committer idle is committed at once, however long a linger may be:
// writes one after another never wait for a linger.
func TestLingerNeverDelaysAWriteOnAnIdleStore(t *testing.T) {
	t.Parallel()
	s, g, sizes := lingerStore(t, lingers{request: lingerParams{writes: 64, max: time.Hour}, accepted: lingerParams{writes: 64, max: time.Hour}})
	for i := range 5 {
		done := update(s)
		require.Equal(t, i+1, enter(t, g))
		g.proceed <- struct{}{}
		within(t, done, "a lone write")
	}
	require.Equal(t, []int{1, 1, 1, 1, 1}, sizes())
}

// When a commit ends with writes waiting (commits back to back), the next batch, if small, waits
// for more writes before it commits: here up to the batch size of the linger, since its only
// time bound is an hour.
func TestLingerFillsBackToBackCommits(t *testing.T) {
	t.Parallel()
	s, g, sizes := lingerStore(t, lingers{accepted: lingerParams{writes: 8, max: time.Hour}})
	second := backToBack(t, s, g, update, update)

	// The second commit waits for 7 more writes, which come one at a time.
	var rest []chan error
	for range 7 {
		select {
		case n := <-g.entered:
			t.Fatalf("commit %d started with a small batch while the commits ran back to back", n)
		default:
		}
		rest = append(rest, update(s))
	}
	require.Equal(t, 2, enter(t, g))
	g.proceed <- struct{}{}
	within(t, second, "the second write")
	for _, ch := range rest {
		within(t, ch, "a write of the lingering batch")
	}
	require.Equal(t, []int{1, 8}, sizes())
}

// A linger ends when its time is up, with the writes it has; and Close ends one at once.
func TestLingerEndsOnItsTimeAndOnClose(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		max   time.Duration
		close bool
	}{{"time", 5 * time.Millisecond, false}, {"close", time.Hour, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, g, sizes := lingerStore(t, lingers{accepted: lingerParams{writes: 1000, max: c.max}})
			second := backToBack(t, s, g, update, update)
			if c.close {
				closed := make(chan error, 1)
				go func() { closed <- s.Close() }()
				require.Equal(t, 2, enter(t, g))
				g.proceed <- struct{}{}
				within(t, closed, "Close")
			} else {
				require.Equal(t, 2, enter(t, g))
				g.proceed <- struct{}{}
			}
			within(t, second, "the lingering write")
			require.Equal(t, []int{1, 1}, sizes())
		})
	}
}

// backToBack makes the store's next commit one that follows a commit that ended with writes
// waiting: it commits a first write (firstWrite), queues the second (returned) while the first
// is gated, and lets the first through.
func backToBack(t *testing.T, s *Store, g *gatedCommitter, firstWrite, second func(*Store) chan error) chan error {
	t.Helper()
	first := firstWrite(s)
	require.Equal(t, 1, enter(t, g))
	ch := second(s)
	require.Eventually(t, func() bool { return s.QueueDepth() == 1 }, 20*time.Second, time.Millisecond)
	g.proceed <- struct{}{}
	within(t, first, "the first write")
	return ch
}

// requestsUnlingered commits a batch near a request's write at once, and has accepted work alone
// wait an hour for 1,000 writes: which of the two a batch got shows in the commits' sizes.
var requestsUnlingered = lingers{
	request:  lingerParams{writes: 1000, max: 0},
	accepted: lingerParams{writes: 1000, max: time.Hour},
}

// A batch lingers by the request's bound, however long the linger of accepted work is, when it
// holds a write a request waits on, or when the batch before it did (while requests keep coming,
// accepted work keeps the request's linger). Here that bound is none at all, so the batch commits
// alone although accepted work would wait an hour for 1,000 writes.
func TestLingerNearARequestsWriteIsTheRequestsBound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		first, second func(*Store) chan error
	}{{"the batch holds a request's write", update, tryUpdate}, {"the batch before held one", tryUpdate, update}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, g, sizes := lingerStore(t, requestsUnlingered)
			second := backToBack(t, s, g, c.first, c.second)
			require.Equal(t, 2, enter(t, g))
			g.proceed <- struct{}{}
			within(t, second, "the second write")
			require.Equal(t, []int{1, 1}, sizes())
		})
	}
}

// A request's write that arrives while a batch of accepted work lingers ends the linger by the
// request's bound: the batch commits with it instead of waiting its hour.
func TestARequestsWriteShortensALingerOfAcceptedWork(t *testing.T) {
	t.Parallel()
	s, g, sizes := lingerStore(t, requestsUnlingered)
	second := backToBack(t, s, g, update, update)
	// The second commit lingers for accepted work: more of it joins, nothing commits.
	more := update(s)
	select {
	case n := <-g.entered:
		t.Fatalf("commit %d started while a batch of accepted work lingered", n)
	case <-time.After(50 * time.Millisecond):
	}
	req := tryUpdate(s)
	require.Equal(t, 2, enter(t, g))
	g.proceed <- struct{}{}
	for _, ch := range []chan error{second, more, req} {
		within(t, ch, "a write of the batch")
	}
	require.Equal(t, []int{1, 3}, sizes())
}
