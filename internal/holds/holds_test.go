package holds_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/holds"
)

// A pass reads each key once, settles every stream of the keys it ends, and keeps the others; a
// removed stream is never settled.
func TestAPassSettlesTheStreamsOfEachKey(t *testing.T) {
	t.Parallel()
	var r holds.Registry[string, *int]
	ended := map[int]bool{}
	vals := []int{1, 2, 3, 4}
	a1, _, _, gone := r.Add("a", &vals[0]), r.Add("a", &vals[1]), r.Add("b", &vals[2]), r.Add("c", &vals[3])
	r.Remove(gone)
	_ = a1
	var read []string
	r.Check(func(keys []string) func(string, *int) bool {
		read = append(read, keys...)
		return func(k string, v *int) bool {
			if k == "a" {
				ended[*v] = true
				return true
			}
			return false
		}
	})
	require.ElementsMatch(t, []string{"a", "b"}, read, "each key once; a removed stream's key is not read")
	require.Equal(t, map[int]bool{1: true, 2: true}, ended)
	require.Equal(t, 1, r.Len(), "b's stream stays")
}

// Rechecks asked for while a pass runs cost one more pass, not one each; none runs while nothing
// is held.
func TestRechecksCoalesce(t *testing.T) {
	t.Parallel()
	var r holds.Registry[int, struct{}]
	var passes atomic.Int32
	pass := func([]int) func(int, struct{}) bool { passes.Add(1); return nil }
	r.Recheck(pass)
	time.Sleep(10 * time.Millisecond)
	require.Zero(t, passes.Load(), "nothing held: no pass")

	r.Add(1, struct{}{})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := func(keys []int) func(int, struct{}) bool {
		once.Do(func() { close(entered); <-release })
		return pass(keys)
	}
	r.Recheck(slow)
	<-entered
	for range 10 {
		r.Recheck(slow)
	}
	close(release)
	require.Eventually(t, func() bool { return passes.Load() == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, int32(2), passes.Load(), "the first pass and one more")
}
