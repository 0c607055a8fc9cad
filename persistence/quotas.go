package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Quotas are the quotas that several Herald nodes share over one PostgreSQL database (a user's
// hourly API requests, a network's app-wide daily limit): a row per quota with its window, as the
// database's clock counts it, and the units granted to the nodes in it. A node takes units in
// chunks (Take) and spends them in its memory; the sum of what was granted in a window never
// exceeds the limit, whatever the nodes do. Units a node took and did not spend are lost when it
// dies (its users get fewer requests, never more) and given back when it stops (GiveBack).
type Quotas struct {
	pool *pgxpool.Pool
	ttl  time.Duration
}

// Chunk is what one Take granted.
type Chunk struct {
	// Start identifies the window (when it opened, by the database's clock).
	Start time.Time
	// Units are the units granted to the caller now (0: the window has not enough left).
	Units int
	// Granted are the units granted to every node in the window so far, these included.
	Granted int
	// Left is the time until the window closes, by the database's clock.
	Left time.Duration
}

const quotasSchema = `
CREATE TABLE IF NOT EXISTS cluster_quotas (
	name text PRIMARY KEY,
	window_start timestamptz NOT NULL,
	window_end timestamptz NOT NULL,
	granted bigint NOT NULL,
	last_chunk bigint NOT NULL DEFAULT 0,
	sent boolean NOT NULL DEFAULT false
)`

// OpenQuotas connects to the PostgreSQL database of url (the store's) and creates the quota
// table if needed. nodeTTL is the lease lifetime (OpenLeases): the nodes whose heartbeat is
// younger count among those a quota is shared by; the lease tables must exist.
func OpenQuotas(ctx context.Context, url string, nodeTTL time.Duration) (*Quotas, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("persistence: PostgreSQL URL: %w", err)
	}
	if cfg.MaxConns > 8 {
		cfg.MaxConns = 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':cluster'))"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, quotasSchema)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("persistence: PostgreSQL: create the quota table: %w", err)
	}
	return &Quotas{pool: pool, ttl: nodeTTL}, nil
}

// Close closes the connections.
func (q *Quotas) Close() { q.pool.Close() }

// takeQuota grants a chunk in one statement: a window that closed opens anew from now with
// nothing granted; the chunk is a quarter of what is left divided among the live nodes, at least
// need, at most what is left, and nothing when less than need is left. Every expression reads
// the row's own columns only: when a concurrent take updated the row first, PostgreSQL runs this
// update again on the row that take committed (READ COMMITTED), so no grant is ever lost.
var takeQuota = func() string {
	base := "(CASE WHEN q.window_end <= now() THEN 0 ELSE q.granted END)"
	nodes := "(SELECT greatest(1, count(*)) FROM cluster_nodes WHERE heartbeat_at > now() - make_interval(secs => $5))"
	units := fmt.Sprintf("(CASE WHEN $2 - %[1]s < $4 THEN 0 ELSE least($2 - %[1]s, greatest($4, ($2 - %[1]s) / (4 * %[2]s))) END)", base, nodes)
	return `UPDATE cluster_quotas q SET
	window_start = CASE WHEN q.window_end <= now() THEN now() ELSE q.window_start END,
	window_end = CASE WHEN q.window_end <= now() THEN now() + make_interval(secs => $3) ELSE q.window_end END,
	sent = q.sent AND q.window_end > now(),
	last_chunk = ` + units + `,
	granted = ` + base + ` + ` + units + `
WHERE q.name = $1
RETURNING q.window_start, q.last_chunk, q.granted, extract(epoch FROM q.window_end - now())::float8`
}()

// Take grants up to a chunk of the quota name, whose limit per window is limit, to a node that
// needs need units now. The first take of a quota, or the first after its window closed, opens
// the window for window.
func (q *Quotas) Take(ctx context.Context, name string, limit int, window time.Duration, need int) (Chunk, error) {
	if need <= 0 {
		need = 1
	}
	for range 2 {
		c, err := q.take(ctx, name, limit, window, need)
		if !errors.Is(err, pgx.ErrNoRows) {
			return c, err
		}
		// The first take of this quota: create its row, closed for every take (a window that
		// ended at the insert's now() would still be open for a take whose transaction began a
		// moment before it and whose snapshot saw the row: that take would grant units in a
		// window the next take closes and opens anew, and the two windows would together grant
		// more than the limit).
		if _, err := q.pool.Exec(ctx, `INSERT INTO cluster_quotas (name, window_start, window_end, granted)
VALUES ($1, '-infinity', '-infinity', 0) ON CONFLICT (name) DO NOTHING`, name); err != nil {
			return Chunk{}, fmt.Errorf("persistence: quota %s: %w", name, err)
		}
	}
	return Chunk{}, fmt.Errorf("persistence: quota %s: its row vanished", name)
}

func (q *Quotas) take(ctx context.Context, name string, limit int, window time.Duration, need int) (Chunk, error) {
	var c Chunk
	var units, granted int64
	var left float64
	err := q.pool.QueryRow(ctx, takeQuota, name, limit, window.Seconds(), need, q.ttl.Seconds()).Scan(&c.Start, &units, &granted, &left)
	if errors.Is(err, pgx.ErrNoRows) {
		return Chunk{}, err
	}
	if err != nil {
		return Chunk{}, fmt.Errorf("persistence: quota %s: %w", name, err)
	}
	c.Units, c.Granted, c.Left = int(units), int(granted), time.Duration(left*float64(time.Second))
	return c, nil
}

// Sent moves the end of the window start of quota name to window after now, when that is later
// and no node did it before in this window: the network's window opens with the first call that
// reaches it, which may come after the units were taken. It reports the time left in the window
// (0 when the window is no longer the one open).
func (q *Quotas) Sent(ctx context.Context, name string, start time.Time, window time.Duration) (time.Duration, error) {
	var left float64
	err := q.pool.QueryRow(ctx, `UPDATE cluster_quotas SET sent = true,
	window_end = greatest(window_end, now() + make_interval(secs => $3))
WHERE name = $1 AND window_start = $2 AND window_end > now() AND NOT sent
RETURNING extract(epoch FROM window_end - now())::float8`, name, start, window.Seconds()).Scan(&left)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.pool.QueryRow(ctx, `SELECT extract(epoch FROM window_end - now())::float8 FROM cluster_quotas
WHERE name = $1 AND window_start = $2 AND window_end > now()`, name, start).Scan(&left)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("persistence: quota %s: %w", name, err)
	}
	return time.Duration(left * float64(time.Second)), nil
}

// GiveBack returns units taken and not spent in the window start of quota name, if it is still
// open (a node that stops).
func (q *Quotas) GiveBack(ctx context.Context, name string, start time.Time, units int) error {
	_, err := q.pool.Exec(ctx, `UPDATE cluster_quotas SET granted = greatest(0, granted - $3)
WHERE name = $1 AND window_start = $2 AND window_end > now()`, name, start, units)
	if err != nil {
		return fmt.Errorf("persistence: quota %s: %w", name, err)
	}
	return nil
}
