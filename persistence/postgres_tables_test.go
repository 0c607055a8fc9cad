package persistence

import (
	"context"
	"testing"

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
