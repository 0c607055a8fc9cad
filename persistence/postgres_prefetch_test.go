package persistence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// pgTrips counts the round trips a store's connections make: every query and every batch (a
// pipeline with one Sync) is one.
type pgTrips struct{ n atomic.Int64 }

func (c *pgTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *pgTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *pgTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *pgTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *pgTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// openTracedPostgres opens a PostgreSQL store whose connections count their round trips.
func openTracedPostgres(t *testing.T) (*Store, *pgTrips) {
	t.Helper()
	trips := &pgTrips{}
	return openPostgresTracing(t, trips), trips
}

// openPostgresTracing opens a PostgreSQL store whose connections report their queries to tracer.
func openPostgresTracing(t *testing.T, tracer pgx.QueryTracer) *Store {
	t.Helper()
	s, err := openPostgres(context.Background(), pgtest.URL(t), Options{}, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tracer })
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// commitBatch runs fns as one batch of the group committer, each written with UpdateAhead when
// ahead is set, and returns each write's error.
func commitBatch(s *Store, ahead bool, fns []func(*Tx) error) []error {
	batch := make([]*write, len(fns))
	for i, fn := range fns {
		batch[i] = &write{fn: fn, ahead: ahead, ok: make(chan struct{})}
	}
	s.commit(batch)
	errs := make([]error, len(batch))
	for i, w := range batch {
		<-w.ok
		errs[i] = w.err
	}
	return errs
}

// A batch of UpdateAhead writes on PostgreSQL reads ahead: sixteen writes that each read a row through an
// index (two reads, the second found by the first) and a cursor's page, then write, commit in
// a handful of round trips (BEGIN with the first reads, the reads that depend on them, the
// writes with COMMIT) instead of one per read; and what they read and wrote is what running
// them one by one gives, each seeing the writes before it.
func TestPostgresBatchReadsAheadInFewRoundTrips(t *testing.T) {
	t.Parallel()
	s, trips := openTracedPostgres(t)
	const n = 16
	idx := func(i int) []byte { return []byte(fmt.Sprintf("idx%02d", i)) }
	rec := func(i int) []byte { return []byte(fmt.Sprintf("rec%02d", i)) }
	seed := func(s *Store) {
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for i := range n {
				if err := b.Put(idx(i), rec(i)); err != nil {
					return err
				}
				if err := b.Put(rec(i), []byte{byte(i)}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	seed(s)
	// Each write: follow idx(i) to its record, add the record's value and the count of "out"
	// keys so far (a cursor walk that sees the earlier writes of the batch), write out(i).
	run := func(s *Store) []error {
		fns := make([]func(*Tx) error, n)
		for i := range n {
			fns[i] = func(tx *Tx) error {
				b := tx.kv.Bucket(bKVTest)
				r := b.Get(idx(i))
				if r == nil {
					return errors.New("no index row")
				}
				v := b.Get(r)
				if len(v) != 1 {
					return errors.New("no record")
				}
				seen := 0
				c := b.Cursor()
				for k, _ := c.Seek([]byte("out")); k != nil && string(k[:3]) == "out"; k, _ = c.Next() {
					seen++
				}
				return b.Put([]byte(fmt.Sprintf("out%02d", i)), []byte{v[0], byte(seen)})
			}
		}
		return commitBatch(s, true, fns)
	}
	// The first run prepares the statements on the connection; the second is counted.
	for _, err := range run(s) {
		require.NoError(t, err)
	}
	before := trips.n.Load()
	for _, err := range run(s) {
		require.NoError(t, err)
	}
	got := trips.n.Load() - before
	// BEGIN and the index rows and cursor pages; the records; the writes and COMMIT. A few more
	// are allowed for the pool's own checks, not one per row read (32, and the cursor's page).
	require.LessOrEqual(t, got, int64(6), "round trips of a batch of %d writes", n)

	kvView(t, s, func(b kvBucket) {
		for i := range n {
			// The second run saw all n "out" keys of the first.
			require.Equal(t, []byte{byte(i), n}, b.Get([]byte(fmt.Sprintf("out%02d", i))), "out%02d", i)
		}
	})
	// The first run's writes saw the earlier writes of their batch: out(i) counted i.
	s2, _ := openTracedPostgres(t)
	seed(s2)
	for _, err := range run(s2) {
		require.NoError(t, err)
	}
	kvView(t, s2, func(b kvBucket) {
		for i := range n {
			require.Equal(t, []byte{byte(i), byte(i)}, b.Get([]byte(fmt.Sprintf("out%02d", i))), "out%02d", i)
		}
	})
}

// A probe takes a row it has no answer for as missing; a function that cannot run on that (it
// indexes the row's value) panics in its probe, which ends only the probe: the batch then runs
// for real with the row read, and commits.
func TestPostgresProbePanicEndsOnlyTheProbe(t *testing.T) {
	t.Parallel()
	s, _ := openTracedPostgres(t)
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("n"), []byte{41}) }))
	fns := make([]func(*Tx) error, 2)
	for i := range fns {
		fns[i] = func(tx *Tx) error {
			b := tx.kv.Bucket(bKVTest)
			v := b.Get([]byte("n"))
			return b.Put([]byte("n"), []byte{v[0] + 1})
		}
	}
	for _, err := range commitBatch(s, true, fns) {
		require.NoError(t, err)
	}
	kvView(t, s, func(b kvBucket) { require.Equal(t, []byte{43}, b.Get([]byte("n"))) })
}

// The committer keeps its own connection: with every other connection of the pool taken (reads
// in flight), a write still commits at once instead of waiting for one to come back.
func TestPostgresCommitsDoNotWaitForThePool(t *testing.T) {
	t.Parallel()
	s, _ := openTracedPostgres(t)
	ctx := context.Background()
	require.NoError(t, s.Probe(ctx))
	var held []*pgxpool.Conn
	for s.pg.pool.Stat().AcquiredConns() < s.pg.pool.Config().MaxConns {
		c, err := s.pg.pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- s.Probe(ctx) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("a commit waited for a pooled connection")
	}
}

// Only the writes that allow it are probed. A write that sets a variable of its caller on the
// branch a probe takes (the row missing) and not on the one the real run takes (the row found)
// ends, written with Update in a batch, with the real run's value: its function ran once. The
// same write of a batch marked ahead runs more than once, and reads its row before it runs.
func TestPostgresProbesOnlyWritesMarkedAhead(t *testing.T) {
	t.Parallel()
	s, trips := openTracedPostgres(t)
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("x"), []byte{1}) }))
	var created bool
	runs := 0
	createIfAbsent := func(tx *Tx) error {
		runs++
		b := tx.kv.Bucket(bKVTest)
		if b.Get([]byte("x")) != nil {
			return nil
		}
		created = true
		return b.Put([]byte("x"), []byte{2})
	}
	other := func(tx *Tx) error { return tx.kv.Bucket(bKVTest).Put([]byte("y"), []byte{3}) }
	for _, err := range commitBatch(s, false, []func(*Tx) error{createIfAbsent, other}) {
		require.NoError(t, err)
	}
	require.False(t, created, "the real run found x: nothing was created")
	require.Equal(t, 1, runs, "a write not marked ahead runs once")
	kvView(t, s, func(b kvBucket) {
		require.Equal(t, []byte{1}, b.Get([]byte("x")))
		require.Equal(t, []byte{3}, b.Get([]byte("y")))
	})

	// Marked ahead, the same function is probed (so it must not be written this way: that is
	// the promise UpdateAhead asks of it), and its read goes ahead with the BEGIN.
	runs = 0
	before := trips.n.Load()
	for _, err := range commitBatch(s, true, []func(*Tx) error{createIfAbsent, other}) {
		require.NoError(t, err)
	}
	require.Greater(t, runs, 1, "a write marked ahead is probed before it runs")
	require.LessOrEqual(t, trips.n.Load()-before, int64(3), "BEGIN with the read; the writes with COMMIT")
}

// A read transaction marked ahead (ViewAhead) that walks an index and reads the record each entry
// names reads the walk's page and then every record together, not one record per round trip; a
// View of the same function reads as it goes. Both read the same.
func TestPostgresViewAheadReadsAWalksRecordsTogether(t *testing.T) {
	t.Parallel()
	s, trips := openTracedPostgres(t)
	const n = 12
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
		for i := range n {
			if err := b.Put([]byte(fmt.Sprintf("idx%02d", i)), []byte(fmt.Sprintf("rec%02d", i))); err != nil {
				return err
			}
			if err := b.Put([]byte(fmt.Sprintf("rec%02d", i)), []byte{byte(i)}); err != nil {
				return err
			}
		}
		return nil
	}))
	var got []byte
	walk := func(tx *Tx) error {
		got = got[:0]
		b := tx.kv.Bucket(bKVTest)
		c := b.Cursor()
		var err error
		for k, v := c.Seek([]byte("idx")); k != nil && string(k[:3]) == "idx"; k, v = c.Next() {
			// A record missing is an error once the walk is done, so that a probe, which takes
			// every record it has not read as missing, notes them all in one run.
			if r := b.Get(v); len(r) == 1 {
				got = append(got, r[0])
			} else {
				err = errors.New("no record")
			}
		}
		return err
	}
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i)
	}
	// The first views prepare the statements on the connections.
	for range 2 {
		require.NoError(t, s.View(walk))
		require.NoError(t, s.ViewAhead(walk))
	}
	before := trips.n.Load()
	require.NoError(t, s.View(walk))
	plain := trips.n.Load() - before
	require.Equal(t, want, got)

	before = trips.n.Load()
	require.NoError(t, s.ViewAhead(walk))
	ahead := trips.n.Load() - before
	require.Equal(t, want, got)
	t.Logf("round trips of a walk of %d entries and their records: View %d, ViewAhead %d", n, plain, ahead)
	require.GreaterOrEqual(t, plain, int64(n), "View reads each record in a round trip of its own")
	// The page of the walk (with the BEGIN), the records, the page's end, the ROLLBACK.
	require.LessOrEqual(t, ahead, int64(5), "ViewAhead reads the records together")
}

// A read transaction ends with the next one on its connection: a View of one row is one round
// trip (the previous transaction's ROLLBACK, BEGIN and the read in one pipeline), not a second
// for its own ROLLBACK. A connection left unused inside its transaction is rolled back and goes
// back to the pool within about two pgViewIdle, and reads go on after it.
func TestPostgresViewEndsWithTheNextOne(t *testing.T) {
	t.Parallel()
	s, trips := openTracedPostgres(t)
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("k"), []byte{7}) }))
	read := func() {
		kvView(t, s, func(b kvBucket) { require.Equal(t, []byte{7}, b.Get([]byte("k"))) })
	}
	for range 3 {
		read()
	}
	before := trips.n.Load()
	for range 4 {
		read()
	}
	require.Equal(t, int64(4), trips.n.Load()-before, "one round trip per read transaction")
	// The reaper takes the connection from the idle ones first and frees its slot after it gave
	// the connection back: both are waited for.
	require.Eventually(t, func() bool { return len(s.pg.views.idle) == 0 && len(s.pg.views.slots) == 0 }, 5*pgViewIdle, 50*time.Millisecond,
		"an idle connection goes back to the pool")
	read()
}

// pgStatements keeps the SQL of every statement a store's connections send.
type pgStatements struct {
	mu  sync.Mutex
	sql []string
}

func (c *pgStatements) add(sql string) {
	c.mu.Lock()
	c.sql = append(c.sql, sql)
	c.mu.Unlock()
}

// take returns the statements sent since the last take, and forgets them.
func (c *pgStatements) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sql
	c.sql = nil
	return out
}

func (c *pgStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.add(d.SQL)
	return ctx
}

func (c *pgStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *pgStatements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *pgStatements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.add(d.SQL)
}

func (c *pgStatements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// A consumer that reads the outbox from its cursor in a batch that reads ahead reads the events
// after its cursor, and never the outbox from its first event: a probe that has no answer yet for
// the cursor does not take the consumer for a new one.
func TestPostgresReadingAheadFromACursorDoesNotReadTheOutboxFromItsStart(t *testing.T) {
	t.Parallel()
	stmts := &pgStatements{}
	s := openPostgresTracing(t, stmts)
	ctx := context.Background()
	var ids []string
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		for i := range 20 {
			e := &Event{Type: "post.published", UserID: "u", CreatedAt: time.Now().UTC(), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}
			if err := tx.AppendEvent(e); err != nil {
				return err
			}
			ids = append(ids, e.ID)
		}
		return tx.AdvanceEvents("reader", ids[9])
	}))
	first := "SELECT k, v FROM " + pgx.Identifier{"kv_events"}.Sanitize() + " ORDER BY k LIMIT $1"
	stmts.take()
	got := make([][]string, 2)
	fns := make([]func(*Tx) error, 2)
	for i := range fns {
		fns[i] = func(tx *Tx) error {
			evs, _, _, err := tx.EventsWantedNear("reader", ids[9], 5, func(string, string) bool { return true })
			got[i] = nil
			for _, e := range evs {
				got[i] = append(got[i], e.ID)
			}
			return err
		}
	}
	for _, err := range commitBatch(s, true, fns) {
		require.NoError(t, err)
	}
	for i := range got {
		require.Equal(t, ids[10:15], got[i], "the events after the cursor")
	}
	sent := stmts.take()
	require.NotEmpty(t, sent)
	for _, q := range sent {
		require.NotEqual(t, first, q, "the outbox read from its first event")
	}
}

// An account's walk of its waiting entries past those it holds reads them in one page when it
// says how many it passes (WaitingFor's past): one round trip where pages growing from eight
// rows took three, and the same entries listed.
func TestPostgresAWaitingWalkPastHeldEntriesReadsOnePage(t *testing.T) {
	t.Parallel()
	s, trips := openTracedPostgres(t)
	account := newV7()
	var keys []string
	for range 180 {
		j := waitingJob(account)
		keys = append(keys, string(waitingKey(account, j.TrackingID, 0)))
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.PutJob(j) }))
	}
	held := map[string]bool{}
	for _, k := range keys[:150] {
		held[k] = true
	}
	walk := func(past int) (got []Waiting, n int64) {
		// The first views prepare the statements on the connections; the third is counted.
		for range 3 {
			before := trips.n.Load()
			require.NoError(t, s.ViewAhead(func(tx *Tx) error {
				got, _ = tx.WaitingFor(account, 20, past, func(k string) bool { return held[k] })
				return nil
			}))
			n = trips.n.Load() - before
		}
		return got, n
	}
	grown, pages := walk(0)
	one, page := walk(len(held))
	t.Logf("round trips of a walk past %d held entries: %d, told how many it passes %d", len(held), pages, page)
	require.Len(t, one, 20)
	require.Equal(t, grown, one)
	require.Equal(t, waitingOf([]byte(keys[150]), nil).JobID, one[0].JobID)
	require.GreaterOrEqual(t, pages, int64(3), "pages of 8, 32 and 128 rows")
	require.Equal(t, int64(1), page, "one page")
}

// A probe runs again only for a read that may take it further: a write that finds the rows it
// reads quietly (Tx.peek: a count, an existence check) is probed once, its rows read ahead with
// the BEGIN, and runs once for real; the same write reading its rows with Get, found, is probed
// a second time with the answers. Both commit in two round trips and write the same.
func TestPostgresQuietReadsFoundDoNotProbeAgain(t *testing.T) {
	t.Parallel()
	s, trips := openTracedPostgres(t)
	const n = 4
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
		for i := range n {
			if err := b.Put([]byte(fmt.Sprintf("count%d", i)), []byte{byte(10 * i)}); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, quiet := range []bool{true, false} {
		runs := make([]int, n)
		fns := make([]func(*Tx) error, n)
		for i := range n {
			fns[i] = func(tx *Tx) error {
				runs[i]++
				b := tx.kv.Bucket(bKVTest)
				key := []byte(fmt.Sprintf("count%d", i))
				var v []byte
				if quiet {
					v = tx.peek(b, key)
				} else {
					v = b.Get(key)
				}
				c := byte(0)
				if len(v) == 1 {
					c = v[0]
				}
				return b.Put(key, []byte{c + 1})
			}
		}
		before := trips.n.Load()
		for _, err := range commitBatch(s, true, fns) {
			require.NoError(t, err)
		}
		got := trips.n.Load() - before
		want := 2 // a probe whose found row was read quietly, the real run
		if !quiet {
			want = 3 // and the probe again, with the answer
		}
		for i := range n {
			require.Equal(t, want, runs[i], "quiet %v: runs of write %d", quiet, i)
		}
		require.LessOrEqual(t, got, int64(3), "quiet %v: BEGIN with the reads; the writes with COMMIT", quiet)
	}
	kvView(t, s, func(b kvBucket) {
		for i := range n {
			require.Equal(t, []byte{byte(10*i) + 2}, b.Get([]byte(fmt.Sprintf("count%d", i))))
		}
	})
}
