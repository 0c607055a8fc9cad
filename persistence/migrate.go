package persistence

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrNotEmpty means the PostgreSQL database that a migration was to fill holds Herald data already.
var ErrNotEmpty = errors.New("persistence: the PostgreSQL database is not empty")

// BucketCopy is one bucket of a migration: its rows and checksum on either side.
type BucketCopy struct {
	Bucket string
	// Rows and Sum are the source's; TargetRows and TargetSum the target's after the copy. Sum is
	// SHA-256 over every key and value in key order, each preceded by its length (4 bytes).
	Rows, TargetRows int
	Sum, TargetSum   string
}

// Match reports whether the target holds the same rows as the source.
func (b BucketCopy) Match() bool { return b.Rows == b.TargetRows && b.Sum == b.TargetSum }

// MigrateToPostgres copies the bbolt file at from (no process may have it open) into the empty
// PostgreSQL database of url, in one transaction under the database's Herald lock, and verifies
// every bucket's count and checksum on the target against the source. A target that holds any
// row of Herald's tables is refused (ErrNotEmpty) before anything is written. Once verified, the
// store is opened on PostgreSQL once, which brings an older layout up to date there.
func MigrateToPostgres(ctx context.Context, from, url string) ([]BucketCopy, error) {
	if _, err := os.Stat(from); err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	if _, err := preflight(from, false, false, 2*time.Second); err != nil {
		return nil, err
	}
	db, err := openBolt(from, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, ErrLocked
	}
	if err != nil {
		return nil, err
	}
	defer db.Close()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.Background())
	var schema string
	if err := conn.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&schema); err != nil {
		return nil, fmt.Errorf("persistence: PostgreSQL: %w", err)
	}
	if schema == "" {
		return nil, errors.New("persistence: PostgreSQL: no schema of the search_path exists; create it or name another")
	}
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", "herald:"+schema).Scan(&locked); err != nil {
		return nil, fmt.Errorf("persistence: PostgreSQL lock: %w", err)
	}
	if !locked {
		return nil, ErrLocked
	}

	tx, err := conn.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return nil, fmt.Errorf("persistence: PostgreSQL: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	// Refuse a database holding any row, before creating anything.
	for _, name := range bucketNames {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{"kv_" + string(name)}.Sanitize()).Scan(&exists); err != nil {
			return nil, fmt.Errorf("persistence: PostgreSQL: %w", err)
		}
		if !exists {
			continue
		}
		var any bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+pgx.Identifier{"kv_" + string(name)}.Sanitize()+")").Scan(&any); err != nil {
			return nil, fmt.Errorf("persistence: PostgreSQL: %w", err)
		}
		if any {
			return nil, fmt.Errorf("%w: table %s of schema %s has rows; migrate into an empty database (or a new schema)", ErrNotEmpty, "kv_"+string(name), schema)
		}
	}
	var out []BucketCopy
	err = db.View(func(btx *bolt.Tx) error {
		if err := btx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if _, ok := newPgTables()[string(name)]; !ok {
				return fmt.Errorf("persistence: the file has a bucket %q that this version of Herald does not know; migrate with the version that wrote it", name)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, name := range bucketNames {
			if _, err := tx.Exec(ctx, pgCreateTable(string(name))); err != nil {
				return fmt.Errorf("persistence: PostgreSQL: create table for %s: %w", name, err)
			}
			bc := BucketCopy{Bucket: string(name)}
			b := btx.Bucket(name)
			if b != nil {
				sum := sha256.New()
				src := &boltRows{c: b.Cursor(), sum: sum}
				n, err := tx.CopyFrom(ctx, pgx.Identifier{"kv_" + string(name)}, []string{"k", "v"}, src)
				if err != nil {
					return fmt.Errorf("persistence: PostgreSQL: copy %s: %w", name, err)
				}
				bc.Rows, bc.Sum = src.n, hex.EncodeToString(sum.Sum(nil))
				if int(n) != src.n {
					return fmt.Errorf("persistence: PostgreSQL: copy %s: %d rows sent, %d taken", name, src.n, n)
				}
			} else {
				bc.Sum = hex.EncodeToString(sha256.New().Sum(nil))
			}
			out = append(out, bc)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Verify inside the transaction, then commit only if every bucket matches.
	for i := range out {
		n, sum, err := pgChecksum(ctx, tx, out[i].Bucket)
		if err != nil {
			return out, err
		}
		out[i].TargetRows, out[i].TargetSum = n, sum
	}
	for _, b := range out {
		if !b.Match() {
			return out, fmt.Errorf("persistence: bucket %s differs after the copy (%d rows %s, then %d rows %s); nothing was kept", b.Bucket, b.Rows, b.Sum, b.TargetRows, b.TargetSum)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return out, fmt.Errorf("persistence: PostgreSQL: commit: %w", err)
	}
	// Read back after the commit too: what a server will find.
	for i := range out {
		n, sum, err := pgChecksum(ctx, conn, out[i].Bucket)
		if err != nil {
			return out, err
		}
		out[i].TargetRows, out[i].TargetSum = n, sum
		if !out[i].Match() {
			return out, fmt.Errorf("persistence: bucket %s differs after the commit", out[i].Bucket)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtext($1))", "herald:"+schema); err != nil {
		return out, fmt.Errorf("persistence: PostgreSQL: %w", err)
	}
	s, err := OpenPostgres(ctx, url, Options{})
	if err != nil {
		return out, err
	}
	return out, s.Close()
}

func newPgTables() map[string]bool {
	m := map[string]bool{}
	for _, n := range bucketNames {
		m[string(n)] = true
	}
	return m
}

type pgQueryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgChecksum counts a bucket's table and sums it as BucketCopy.Sum does.
func pgChecksum(ctx context.Context, q pgQueryer, bucket string) (int, string, error) {
	rows, err := q.Query(ctx, "SELECT k, v FROM "+pgx.Identifier{"kv_" + bucket}.Sanitize()+" ORDER BY k")
	if err != nil {
		return 0, "", fmt.Errorf("persistence: PostgreSQL: read %s: %w", bucket, err)
	}
	defer rows.Close()
	sum := sha256.New()
	n := 0
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return 0, "", err
		}
		sumKV(sum, k, v)
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, "", fmt.Errorf("persistence: PostgreSQL: read %s: %w", bucket, err)
	}
	return n, hex.EncodeToString(sum.Sum(nil)), nil
}

func sumKV(h hash.Hash, k, v []byte) {
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(k)))
	h.Write(l[:])
	h.Write(k)
	binary.BigEndian.PutUint32(l[:], uint32(len(v)))
	h.Write(l[:])
	h.Write(v)
}

// boltRows feeds a bucket's rows to COPY, summing them as it goes.
type boltRows struct {
	c       *bolt.Cursor
	started bool
	k, v    []byte
	n       int
	sum     hash.Hash
}

func (r *boltRows) Next() bool {
	if !r.started {
		r.started = true
		r.k, r.v = r.c.First()
	} else {
		r.k, r.v = r.c.Next()
	}
	if r.k == nil {
		return false
	}
	if r.v == nil {
		r.v = []byte{}
	}
	r.n++
	sumKV(r.sum, r.k, r.v)
	return true
}

func (r *boltRows) Values() ([]any, error) { return []any{r.k, r.v}, nil }

func (r *boltRows) Err() error { return nil }
