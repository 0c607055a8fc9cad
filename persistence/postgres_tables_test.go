package persistence

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// reloptions reads a table's storage settings in the store's schema.
func reloptions(t *testing.T, s *Store, table string) []string {
	t.Helper()
	var opts []string
	require.NoError(t, s.pg.pool.QueryRow(context.Background(),
		"SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass", table).Scan(&opts))
	return opts
}

// The tables whose rows are rewritten as a publish goes on leave room in their pages for the
// new versions (HOT updates), whether the store is new or its tables were created before the
// setting: a store opened again gives it to them; the others keep full pages.
func TestPostgresTablesLeaveRoomForUpdates(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	s, err := OpenPostgres(context.Background(), url, Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"fillfactor=50"}, reloptions(t, s, "kv_jobs"))
	require.Equal(t, []string{"fillfactor=70"}, reloptions(t, s, "kv_posts"))
	require.Equal(t, []string{"fillfactor=70"}, reloptions(t, s, "kv_posts_user"))
	require.Empty(t, reloptions(t, s, "kv_events"))
	// A table as an earlier version created it.
	_, err = s.pg.pool.Exec(context.Background(), "ALTER TABLE kv_jobs RESET (fillfactor)")
	require.NoError(t, err)
	require.Empty(t, reloptions(t, s, "kv_jobs"))
	require.NoError(t, s.Close())
	s, err = OpenPostgres(context.Background(), url, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, []string{"fillfactor=50"}, reloptions(t, s, "kv_jobs"))
}

// pgSQL records the statements a store's connections send in pipelines.
type pgSQL struct {
	mu  sync.Mutex
	sql []string
}

func (c *pgSQL) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (c *pgSQL) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *pgSQL) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *pgSQL) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.mu.Lock()
	c.sql = append(c.sql, d.SQL)
	c.mu.Unlock()
}

func (c *pgSQL) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *pgSQL) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sql
	c.sql = nil
	return out
}

// A write transaction writes a row it read as what it found: an UPDATE for a row that is there,
// a plain INSERT for one that is not, and only a row it did not read through INSERT … ON
// CONFLICT DO UPDATE; each ends with the value written.
func TestPostgresWritesRowsAsRead(t *testing.T) {
	t.Parallel()
	rec := &pgSQL{}
	s, err := openPostgres(context.Background(), pgtest.URL(t), Options{}, func(c *pgxpool.Config) { c.ConnConfig.Tracer = rec })
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("there"), []byte("old")) }))
	tbl := s.pg.tables[string(bKVTest)]
	// One kind of write at a time, so that each is its statement.
	for _, c := range []struct {
		name string
		fn   func(b kvBucket) error
		sql  string
	}{
		{"found", func(b kvBucket) error {
			require.Equal(t, []byte("old"), b.Get([]byte("there")))
			return b.Put([]byte("there"), []byte("new"))
		}, tbl.update},
		{"missing", func(b kvBucket) error {
			require.Nil(t, b.Get([]byte("absent")))
			return b.Put([]byte("absent"), []byte("made"))
		}, tbl.insert},
		{"unread", func(b kvBucket) error { return b.Put([]byte("blind"), []byte("put")) }, tbl.upsert},
	} {
		rec.take()
		require.NoError(t, kvUpdate(t, s, c.fn), c.name)
		require.Contains(t, rec.take(), c.sql, c.name)
	}
	kvView(t, s, func(b kvBucket) {
		require.Equal(t, []byte("new"), b.Get([]byte("there")))
		require.Equal(t, []byte("made"), b.Get([]byte("absent")))
		require.Equal(t, []byte("put"), b.Get([]byte("blind")))
	})
	// An update whose row is not there fails its transaction instead of writing nothing (it
	// cannot happen in a SERIALIZABLE transaction that read the row; the statement checks).
	ctx := context.Background()
	tx, err := s.pg.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, tbl.update, [][]byte{[]byte("there"), []byte("nowhere")}, [][]byte{[]byte("a"), []byte("b")}, 2)
	require.ErrorContains(t, err, "a row to update is missing: 1 of 2 updated")
}
