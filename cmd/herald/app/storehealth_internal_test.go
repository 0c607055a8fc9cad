package app

import (
	"context"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// With no other traffic, the readiness check's own probe write notices that the store writes
// again; the probe is rate-limited, and readiness waits for the hold after the last failure.
func TestStoreHealthProbesWhileTheStoreCannotWrite(t *testing.T) {
	t.Parallel()
	h := newStoreHealth(prometheus.NewRegistry(), slog.New(slog.DiscardHandler), "data")
	h.hold, h.probeEvery = 300*time.Millisecond, time.Hour
	faults := &persistence.Faults{}
	s, commits := observedStore(t, h, faults)
	ctx := context.Background()
	require.NoError(t, h.ready(ctx))
	require.Zero(t, commits.Load(), "a store that writes is not probed")

	faults.FailCommits(syscall.ENOSPC)
	require.ErrorIs(t, s.Probe(ctx), persistence.ErrWriteFailed)
	for range 50 {
		require.ErrorIs(t, h.ready(ctx), errStoreCannotWrite)
	}
	require.Equal(t, int64(2), commits.Load(), "the failed write, then one probe per probeEvery")

	h.probeEvery = 50 * time.Millisecond
	faults.ClearCommits()
	deadline := time.Now().Add(10 * time.Second)
	for h.ready(ctx) != nil {
		require.True(t, time.Now().Before(deadline), "the probe finds the store writing again")
		time.Sleep(10 * time.Millisecond)
	}
	require.GreaterOrEqual(t, time.Since(time.Unix(0, h.lastFailure.Load())), h.hold, "ready only after the hold")
	require.True(t, h.healthy())
}

// A read the database could not answer makes the store not ready at once, before any commit has
// failed; the readiness probe's successful commit ends it after the hold.
func TestStoreHealthAReadTheDatabaseCannotAnswerIsNotReady(t *testing.T) {
	t.Parallel()
	h := newStoreHealth(prometheus.NewRegistry(), slog.New(slog.DiscardHandler), "data")
	h.hold, h.probeEvery = 200*time.Millisecond, 20*time.Millisecond
	_, commits := observedStore(t, h, nil)
	ctx := context.Background()
	require.NoError(t, h.ready(ctx))

	h.observeRead(persistence.ErrUnavailable)
	require.False(t, h.healthy())
	require.True(t, h.down.Load(), "the episode is announced")
	deadline := time.Now().Add(10 * time.Second)
	for h.ready(ctx) != nil {
		require.True(t, time.Now().Before(deadline), "the probe's commit ends the episode")
		time.Sleep(10 * time.Millisecond)
	}
	require.Positive(t, commits.Load(), "readiness probed the store")
	require.GreaterOrEqual(t, time.Since(time.Unix(0, h.lastFailure.Load())), h.hold, "ready only after the hold")
	require.False(t, h.down.Load(), "the episode's end is logged")
}

// observedStore opens a bbolt store (with faults, when given) whose commits h observes, as the
// server wires it, and counts them; h probes it.
func observedStore(t *testing.T, h *storeHealth, faults *persistence.Faults) (*persistence.Store, *atomic.Int64) {
	t.Helper()
	commits := new(atomic.Int64)
	s, err := persistence.Open(t.TempDir(), persistence.Options{Faults: faults, OnCommit: func(_ int, _ time.Duration, err error) {
		commits.Add(1)
		h.observe(err)
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	h.store = s
	return s, commits
}
