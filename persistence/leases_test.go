package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// A write fenced under a lease and a take of that lease never interleave: the take is refused
// while the write's transaction is open (it never waits, so that it holds up no renewal), and
// once the take committed the old owner's writes are refused. The owner's renewals of its other
// leases go on while its writes under them are open.
func TestFencedWritesAndTakeoversDoNotInterleave(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	store, err := persistence.OpenPostgres(ctx, url, persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	a, err := persistence.OpenLeases(ctx, url, 200*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	b, err := persistence.OpenLeases(ctx, url, 200*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	_, err = a.Join(ctx, "a:1")
	require.NoError(t, err)
	_, err = b.Join(ctx, "b:1")
	require.NoError(t, err)

	taken, ok, err := a.Acquire(ctx, "shard/0")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, taken.Released, "a new lease is free")
	require.Equal(t, int64(1), taken.Epoch)
	_, ok, err = b.Acquire(ctx, "shard/0")
	require.NoError(t, err)
	require.False(t, ok, "a held lease is not taken")

	// A renewal of a lease is not held up by a write fenced under it.
	other, ok, err := a.Acquire(ctx, "shard/1")
	require.NoError(t, err)
	require.True(t, ok)
	var held []persistence.Lease
	var renewErr error
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.Fence(other.Lease); err != nil {
			return err
		}
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		held, renewErr = a.Renew(c)
		return nil
	}))
	require.NoError(t, renewErr, "the renewal waited for the fenced write")
	require.Contains(t, held, other.Lease)

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	// Let the lease expire by the database's clock, without anyone taking it.
	require.Eventually(t, func() bool {
		var expired bool
		return conn.QueryRow(ctx, "SELECT expires_at <= now() FROM cluster_leases WHERE name = 'shard/0'").Scan(&expired) == nil && expired
	}, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.Fence(taken.Lease); err != nil {
			return err // an expired lease nobody took still fences nothing
		}
		// The take is refused at once while this transaction holds the lease row.
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, ok, err = b.Acquire(c, "shard/0")
		return nil
	}))
	require.NoError(t, err, "the take waited for the fenced write")
	require.False(t, ok, "taken while a fenced write was open")
	type result struct {
		t   persistence.Taken
		ok  bool
		err error
	}
	var r result
	r.t, r.ok, r.err = b.Acquire(ctx, "shard/0")
	require.NoError(t, r.err)
	require.True(t, r.ok)
	require.False(t, r.t.Released, "taken over from an expired owner")
	require.Equal(t, int64(2), r.t.Epoch)
	require.False(t, r.t.PrevExpiry.IsZero())

	err = store.Update(ctx, func(tx *persistence.Tx) error { return tx.Fence(taken.Lease) })
	require.ErrorIs(t, err, persistence.ErrFenced)
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error { return tx.Fence(r.t.Lease) }))

	// a went silent longer than a lifetime: its renewal says so, and it joins again under a new
	// id; b's renewal keeps the lease it took. A released lease is then taken as released.
	_, err = a.Renew(ctx)
	require.ErrorIs(t, err, persistence.ErrStale)
	oldID := a.NodeID()
	_, err = a.Join(ctx, "a:1")
	require.NoError(t, err)
	require.NotEqual(t, oldID, a.NodeID())
	held, err = a.Renew(ctx)
	require.NoError(t, err)
	require.Empty(t, held)
	held, err = b.Renew(ctx)
	if err == nil {
		require.Equal(t, []persistence.Lease{r.t.Lease}, held)
	} else {
		require.ErrorIs(t, err, persistence.ErrStale, "b too was silent for a lifetime on a slow machine")
	}
	require.NoError(t, b.Release(ctx, r.t.Lease))
	again, ok, err := a.Acquire(ctx, "shard/0")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, again.Released)
	require.Equal(t, int64(3), again.Epoch)
}

// Leases need PostgreSQL; on bbolt a fence checks nothing.
func TestFenceOnBboltChecksNothing(t *testing.T) {
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error {
		return tx.Fence(persistence.Lease{Name: "shard/0", Epoch: 7, Owner: "x"})
	}))
}
