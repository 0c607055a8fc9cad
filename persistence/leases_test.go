package persistence_test

import (
	"context"
	"sync/atomic"
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

// A renewal that PostgreSQL ends as a deadlock's victim (its lease rows locked in one order,
// a fenced transaction's in the other) is run again, and the node keeps its leases.
func TestARenewalEndedByADeadlockIsRunAgain(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	l, err := persistence.OpenLeases(ctx, url, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(l.Close)
	_, err = l.Join(ctx, "a:1")
	require.NoError(t, err)
	names := []string{"shard/1", "shard/2"}
	for _, name := range names {
		_, ok, err := l.Acquire(ctx, name)
		require.NoError(t, err)
		require.True(t, ok)
	}
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	// The renewal's backend checks for a deadlock after the server's deadlock_timeout (1 s by
	// default), this one much later: the renewal is the victim.
	_, err = conn.Exec(ctx, "SET deadlock_timeout = '20s'")
	require.NoError(t, err)
	// Whichever row the renewal's update locks first, one of the two orders deadlocks.
	for _, first := range []int{0, 1} {
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		lock := func(name string) error {
			_, err := tx.Exec(ctx, "SELECT 1 FROM cluster_leases WHERE name = $1 FOR SHARE", name)
			return err
		}
		require.NoError(t, lock(names[first]))
		type result struct {
			leases []persistence.Lease
			err    error
		}
		renewed := make(chan result, 1)
		go func() {
			ls, err := l.Renew(ctx)
			renewed <- result{ls, err}
		}()
		time.Sleep(300 * time.Millisecond) // the renewal waits on the row locked
		locked := make(chan error, 1)
		go func() { locked <- lock(names[1-first]) }()
		select {
		case err := <-locked:
			// The lock came: the renewal had not locked that row, or it was the deadlock's
			// victim.
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Fatal("the second lock never came")
		}
		time.Sleep(100 * time.Millisecond)
		_ = tx.Rollback(ctx)
		r := <-renewed
		require.NoError(t, r.err, "the renewal is run again after a deadlock")
		require.Len(t, r.leases, 2)
	}
}

// A store opened with IdleInTransaction has PostgreSQL end a session left idle inside a
// transaction, as a process paused in the middle of a commit leaves it: the lease row its fenced
// write read FOR SHARE is free again for a take within that time, not when the process wakes,
// and the paused write fails rather than being stored under a lease that may have moved.
func TestAPausedCommitReleasesItsLeaseRowsAfterIdleInTransaction(t *testing.T) {
	for _, idle := range []time.Duration{0, 200 * time.Millisecond} {
		url := pgtest.URL(t)
		ctx := context.Background()
		store, err := persistence.OpenPostgres(ctx, url, persistence.Options{Shared: true, IdleInTransaction: idle})
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		a, err := persistence.OpenLeases(ctx, url, 10*time.Second)
		require.NoError(t, err)
		t.Cleanup(a.Close)
		_, err = a.Join(ctx, "a:1")
		require.NoError(t, err)
		taken, ok, err := a.Acquire(ctx, "shard/0")
		require.NoError(t, err)
		require.True(t, ok)

		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close(ctx) })
		fenced := make(chan struct{})
		var runs atomic.Int64 // the first run pauses
		done := make(chan error, 1)
		go func() {
			done <- store.Update(ctx, func(tx *persistence.Tx) error {
				if err := tx.Fence(taken.Lease); err != nil {
					return err
				}
				if runs.Add(1) == 1 {
					close(fenced)
					time.Sleep(time.Second) // paused in the middle of the commit
				}
				return nil
			})
		}()
		<-fenced
		start := time.Now()
		_, err = conn.Exec(ctx, "BEGIN")
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "SELECT 1 FROM cluster_leases WHERE name = 'shard/0' FOR UPDATE")
		require.NoError(t, err)
		waited := time.Since(start)
		_, err = conn.Exec(ctx, "ROLLBACK")
		require.NoError(t, err)
		err = <-done
		if idle == 0 {
			require.NoError(t, err)
			require.Greater(t, waited, 700*time.Millisecond, "without it the row waits for the paused commit")
			continue
		}
		require.Less(t, waited, 700*time.Millisecond, "the row is free once the session was idle %v", idle)
		require.Error(t, err, "the paused commit was not stored: its session ended")
	}
}

// A takeover's doubt is kept in the lease until it passed: the node that takes the lease over
// from a silent owner gets the whole doubt, and a node it hands the lease to before the doubt
// passed gets what is left of it, not nothing; once it passed, a take has none. A free lease and
// a taker that set no doubt have none either.
func TestATakeoversDoubtIsHandedOnWithTheLease(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	const ttl, doubt = 200 * time.Millisecond, 1500 * time.Millisecond
	open := func(addr string, doubt time.Duration) *persistence.Leases {
		l, err := persistence.OpenLeases(ctx, url, ttl)
		require.NoError(t, err)
		t.Cleanup(l.Close)
		l.SetDoubt(doubt)
		_, err = l.Join(ctx, addr)
		require.NoError(t, err)
		return l
	}
	a, b, c := open("a:1", doubt), open("b:1", doubt), open("c:1", 0)

	first, ok, err := a.Acquire(ctx, "shard/7")
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, first.InDoubt, "a new lease has nothing in doubt")
	// a goes silent; b takes the lease over once it expired.
	var over persistence.Taken
	require.Eventually(t, func() bool {
		over, ok, err = b.Acquire(ctx, "shard/7")
		require.NoError(t, err)
		return ok
	}, 5*time.Second, 20*time.Millisecond)
	tookOver := time.Now()
	require.False(t, over.Released)
	require.InDelta(t, doubt.Seconds(), over.InDoubt.Seconds(), 0.1, "a takeover starts the doubt")

	// b hands the lease off at once; c takes it with the rest of the doubt.
	require.NoError(t, b.Release(ctx, over.Lease))
	handed, ok, err := c.Acquire(ctx, "shard/7")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, handed.Released)
	require.Positive(t, handed.InDoubt, "the doubt is handed on with the lease")
	require.LessOrEqual(t, handed.InDoubt, doubt-time.Since(tookOver)+100*time.Millisecond, "what is left of it, not more")

	// Once the doubt passed, a take (here a hand-off back to b) has none.
	time.Sleep(time.Until(tookOver.Add(doubt + 100*time.Millisecond)))
	require.NoError(t, c.Release(ctx, handed.Lease))
	later, ok, err := b.Acquire(ctx, "shard/7")
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, later.InDoubt)
}
