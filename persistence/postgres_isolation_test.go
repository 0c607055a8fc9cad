package persistence

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// A store that is the database's only writer opens its writes REPEATABLE READ: they take none
// of the predicate locks (SIReadLock) that SERIALIZABLE takes on what a transaction reads. A
// store shared by several nodes keeps SERIALIZABLE, and its reads are so locked.
func TestPostgresWriteIsolation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		shared    bool
		isolation string
	}{{"sole writer", false, "repeatable read"}, {"shared", true, "serializable"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.URL(t)
			s, err := OpenPostgres(context.Background(), url, Options{Shared: tc.shared})
			require.NoError(t, err)
			defer s.Close()
			bucket, key := bucketNames[0], []byte("isolation")
			require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.kv.Bucket(bucket).Put(key, []byte("v")) }))
			var isolation string
			var predicateLocks int
			require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
				require.Equal(t, []byte("v"), tx.kv.Bucket(bucket).Get(key))
				// The transaction is open on the committer's connection (held for this function).
				pid := s.pg.cc.Conn().PgConn().PID()
				require.NoError(t, s.pg.pool.QueryRow(context.Background(),
					"SELECT count(*) FROM pg_locks WHERE pid = $1 AND mode = 'SIReadLock'", pid).Scan(&predicateLocks))
				return s.pg.cc.QueryRow(context.Background(), "SHOW transaction_isolation").Scan(&isolation)
			}))
			require.Equal(t, tc.isolation, isolation)
			if tc.shared {
				require.Positive(t, predicateLocks, "a shared store's read is locked for SERIALIZABLE")
			} else {
				require.Zero(t, predicateLocks, "a sole writer's read takes no predicate lock")
			}
		})
	}
}
