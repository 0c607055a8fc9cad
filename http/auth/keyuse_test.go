package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func lastUsed(t *testing.T, s *persistence.Store, id string) *time.Time {
	t.Helper()
	var k *persistence.APIKey
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		var err error
		k, err = tx.APIKey(id)
		return err
	}))
	return k.LastUsedAt
}

// Uses are noted in memory and written by a flush, the latest one per key; a flush with nothing
// noted writes nothing, and last_used_at never moves back.
func TestKeyUseIsCoalesced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := &testClock{now: start}
	_, err = CreateUser(ctx, s, NewUser{Email: "user@example.com"}, start)
	require.NoError(t, err)
	k, err := CreateKey(ctx, s, "user@example.com", "ci", 0, start)
	require.NoError(t, err)
	a := NewAuthenticator(s, clock.Now)

	for range 5 {
		clock.Add(time.Second)
		_, err := a.Authenticate("Bearer " + k.Key)
		require.NoError(t, err)
	}
	require.Nil(t, lastUsed(t, s, k.ID), "no write per request")
	listed := a.WithUse([]KeyInfo{{ID: k.ID}})
	require.Equal(t, start.Add(5*time.Second), *listed[0].LastUsedAt, "listings see the noted use")

	require.NoError(t, a.FlushUse(ctx))
	require.Equal(t, start.Add(5*time.Second), *lastUsed(t, s, k.ID))
	require.Empty(t, a.use.take(), "the flush took the notes")
	require.NoError(t, a.FlushUse(ctx), "nothing to write")

	a.use.note(k.ID, start) // an older use, noted late
	require.NoError(t, a.FlushUse(ctx))
	require.Equal(t, start.Add(5*time.Second), *lastUsed(t, s, k.ID), "last_used_at never moves back")

	// The shutdown flush: the flusher writes what is noted when it stops.
	clock.Add(time.Minute)
	_, err = a.Authenticate("Bearer " + k.Key)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.RunUseFlusher(runCtx, time.Hour, t.Errorf)
	}()
	stop()
	<-done
	require.Equal(t, start.Add(time.Minute+5*time.Second), *lastUsed(t, s, k.ID))
}
