package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// A run on PostgreSQL (--store) gives each server its own schema and drops them all when it is
// over: the database is left as it was found.
func TestBenchDropsTheSchemasItMade(t *testing.T) {
	pg := pgtest.URL(t)
	storeBase = pg
	t.Cleanup(func() { storeBase = "" })
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	require.NoError(t, err)
	defer conn.Close(ctx)
	exists := func(name string) bool {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", name).Scan(&ok))
		return ok
	}
	var names []string
	for range 2 {
		url, err := freshStore()
		require.NoError(t, err)
		i := strings.Index(url, "search_path=")
		require.Positive(t, i, url)
		name := url[i+len("search_path="):]
		if j := strings.IndexByte(name, '&'); j >= 0 {
			name = name[:j]
		}
		require.True(t, exists(name), name)
		_, err = conn.Exec(ctx, "CREATE TABLE "+pgx.Identifier{name, "kv_t"}.Sanitize()+" (k bytea)")
		require.NoError(t, err)
		names = append(names, name)
	}
	require.NotEqual(t, names[0], names[1])
	var log strings.Builder
	dropStores(&log)
	require.Empty(t, log.String())
	for _, name := range names {
		require.False(t, exists(name), "%s is dropped", name)
	}
}
