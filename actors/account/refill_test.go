package account

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The next batch is prepared once the lane holds less than half of one while taking and
// recording a batch is quick beside the calls; when it is slow (PostgreSQL's commits under load),
// once the lane holds less than twice that time's calls, and never more than a batch ahead.
func TestTheNextBatchIsPreparedEarlierWhenPreparingItIsSlow(t *testing.T) {
	a := &Actor{deps: Deps{Concurrency: 1}}
	require.Equal(t, 32, a.refillBelow(64), "no time measured yet: half a batch")

	a.callTime = 500 * time.Microsecond
	a.observePrepTime(5 * time.Millisecond) // bbolt: 10 calls' time
	require.Equal(t, 32, a.refillBelow(64), "a quick preparation keeps half a batch")

	a.prepTime = 0
	a.observePrepTime(12 * time.Millisecond) // 24 calls' time: 48 ahead
	require.Equal(t, 48, a.refillBelow(64))
	a.observePrepTime(28 * time.Millisecond) // the average moves an eighth of the way: 14 ms
	require.Equal(t, 56, a.refillBelow(64))
	for range 50 {
		a.observePrepTime(28 * time.Millisecond)
	}
	require.Equal(t, maxBatch, a.refillBelow(64), "one batch ahead at most")

	a.callTime = 100 * time.Millisecond // slow calls: small batches, the preparation hidden already
	require.Equal(t, 1, a.refillBelow(1))
}
