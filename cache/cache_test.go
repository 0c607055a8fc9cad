package cache_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cache"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type testBundle struct {
	cache   *cache.Cache[int]
	clock   *clock
	metrics *cache.Metrics
	fills   atomic.Int64
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{clock: &clock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}, metrics: cache.NewMetrics(prometheus.NewRegistry())}
	c, err := cache.New(cache.Options[int]{Name: "test", Now: b.clock.Now, Metrics: b.metrics, MaxAge: 10 * time.Minute})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	b.cache = c
	return b
}

// fill returns a fill that counts its calls and answers n.
func (b *testBundle) fill(n int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		b.fills.Add(1)
		return n, nil
	}
}

func (b *testBundle) count(result string) float64 {
	return testutil.ToFloat64(b.metrics.Requests.WithLabelValues("test", result))
}

func TestFloorAndFresh(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	key := cache.Key("user-1", "overview?range=7d")

	first, err := b.cache.Get(ctx, key, false, b.fill(1))
	require.NoError(t, err)
	require.Equal(t, 1, first.Value)
	require.Equal(t, b.clock.Now(), first.FetchedAt)

	// Within the floor, fresh or not, the entry is served.
	b.clock.Add(cache.Floor - time.Second)
	for _, fresh := range []bool{false, true} {
		e, err := b.cache.Get(ctx, key, fresh, b.fill(2))
		require.NoError(t, err)
		require.Equal(t, first, e)
	}
	require.EqualValues(t, 1, b.fills.Load())

	// Past the floor, a plain request is still served from the cache; fresh fetches again.
	b.clock.Add(2 * time.Second)
	e, err := b.cache.Get(ctx, key, false, b.fill(3))
	require.NoError(t, err)
	require.Equal(t, first, e)
	e, err = b.cache.Get(ctx, key, true, b.fill(4))
	require.NoError(t, err)
	require.Equal(t, 4, e.Value)
	require.True(t, e.FetchedAt.After(first.FetchedAt))
	require.EqualValues(t, 2, b.fills.Load())

	// After MaxAge the entry is gone for everyone.
	b.clock.Add(10 * time.Minute)
	e, err = b.cache.Get(ctx, key, false, b.fill(5))
	require.NoError(t, err)
	require.Equal(t, 5, e.Value)
	require.EqualValues(t, 3, b.fills.Load())
	require.EqualValues(t, 3, b.count("hit"))
	require.EqualValues(t, 3, b.count("miss"))
}

func TestKeysArePerUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.cache.Get(ctx, cache.Key("user-1", "q"), false, b.fill(1))
	require.NoError(t, err)
	e, err := b.cache.Get(ctx, cache.Key("user-2", "q"), false, b.fill(2))
	require.NoError(t, err)
	require.Equal(t, 2, e.Value)
	require.EqualValues(t, 2, b.fills.Load())
}

func TestErrorsAreNotCached(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	boom := errors.New("boom")
	_, err := b.cache.Get(ctx, "k", false, func(context.Context) (int, error) { return 0, boom })
	require.ErrorIs(t, err, boom)
	e, err := b.cache.Get(ctx, "k", false, b.fill(7))
	require.NoError(t, err)
	require.Equal(t, 7, e.Value)
}

func TestConcurrentMissesMakeOneFill(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setup(t)
		defer b.cache.Close()
		release := make(chan struct{})
		var fills atomic.Int64
		fill := func(context.Context) (int, error) {
			fills.Add(1)
			<-release
			return 42, nil
		}
		const callers = 100
		var wg sync.WaitGroup
		results := make(chan cache.Entry[int], callers)
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, err := b.cache.Get(context.Background(), "k", false, fill)
				assert.NoError(t, err)
				results <- e
			}()
		}
		// Every caller is now waiting: one in the fill, the others on its flight.
		synctest.Wait()
		require.EqualValues(t, 1, fills.Load())
		close(release)
		wg.Wait()
		close(results)
		var first *cache.Entry[int]
		for e := range results {
			if first == nil {
				first = &e
			}
			require.Equal(t, *first, e)
		}
		require.EqualValues(t, 1, fills.Load(), "100 concurrent identical requests make one fill")
		require.EqualValues(t, 1, b.count("miss"))
		require.EqualValues(t, callers-1, b.count("coalesced"))
	})
}

func TestOneCallerGivingUpDoesNotFailTheOthers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	started := make(chan struct{})
	var fillCtxErr atomic.Value
	fill := func(ctx context.Context) (int, error) {
		close(started)
		<-release
		fillCtxErr.Store(ctx.Err() == nil)
		return 9, nil
	}
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := b.cache.Get(leaderCtx, "k", false, fill)
		leaderErr <- err
	}()
	<-started
	other := make(chan cache.Entry[int], 1)
	go func() {
		e, err := b.cache.Get(context.Background(), "k", false, fill)
		assert.NoError(t, err)
		other <- e
	}()
	// The leader gives up: it gets its own error at once, the fill goes on.
	cancelLeader()
	require.ErrorIs(t, <-leaderErr, context.Canceled)
	require.True(t, cache.IsCanceled(context.Canceled))
	close(release)
	e := <-other
	require.Equal(t, 9, e.Value)
	require.Equal(t, true, fillCtxErr.Load(), "the fill's context is not the leader's")
	// And the result was cached for the next caller.
	got, ok := b.cache.Lookup("k", false)
	require.True(t, ok)
	require.Equal(t, e, got)
}

func TestForget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.cache.Get(context.Background(), "k", false, b.fill(1))
	require.NoError(t, err)
	b.cache.Forget("k")
	_, ok := b.cache.Lookup("k", false)
	require.False(t, ok)
}
