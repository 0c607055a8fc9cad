package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Leases are the membership and ownership records of several Herald nodes over one PostgreSQL
// database: a row per node process (a fresh id at every start, with a heartbeat) and a row per
// lease (an account shard or a singleton such as the scheduler), each with its owner, an epoch
// that goes up at every change of owner, and an expiry judged by the database's clock, so that
// the nodes' clocks never decide who owns what.
//
// The rules (Temporal's shard range id and River's leader row, both read at their sources):
//   - A node takes a lease only when it is free (released, or never held) or expired, and
//     taking it bumps the epoch (Acquire).
//   - A node renews every lease it holds that has not expired, and its heartbeat, in one
//     statement (Renew); an expired lease is never renewed, only taken again with a new epoch,
//     so that whoever acts under an epoch knows no one else acted under it.
//   - Every store write made for a lease checks the epoch it was taken at in the same
//     transaction (Tx.Fence): after another node took the lease, the old owner's writes fail
//     with ErrFenced.
//   - A node that finds its own row expired (others may have counted it dead and taken its
//     leases) gets ErrStale from Renew: it drops everything and joins again under a new id.
//
// Advisory locks are not used: a stopped process keeps them for as long as its connection
// looks alive, and they carry no token that a write could check.
type Leases struct {
	pool  *pgxpool.Pool
	ttl   time.Duration
	doubt time.Duration // SetDoubt
	node  string
	addr  string
}

// Lease is a lease as held by a node: its name, the epoch it was taken at and the owner.
type Lease struct {
	Name  string
	Epoch int64
	Owner string
}

// Taken is a lease just acquired and what it was before: Released is false when it was taken
// from a node whose lease expired (a takeover: that node may still have had calls in flight
// until PrevExpiry), true when it was free.
type Taken struct {
	Lease
	Released   bool
	PrevExpiry time.Time
	// InDoubt is how long from now what an earlier owner may have left in flight under the
	// lease stays in doubt: after a takeover, the doubt (SetDoubt) from the take. The database
	// keeps its end across hand-offs, so a lease handed off before it passed hands the rest of
	// it to the next owner (0: nothing in doubt, or the taker set no doubt).
	InDoubt time.Duration
}

// Node is a node as its row holds it.
type Node struct {
	ID        string
	Addr      string
	StartedAt time.Time
	Heartbeat time.Time
}

// ErrFenced fails a write made under a lease that another node has taken since (its epoch or
// owner changed): the node that made it no longer owns what it wrote for.
var ErrFenced = errors.New("persistence: fenced: the lease moved to another node")

// ErrStale is Renew's answer to a node whose own row expired before the renewal: the other
// nodes may have counted it dead. It must drop its leases and Join again under a new id.
var ErrStale = errors.New("persistence: this node's membership expired; join again")

// ErrNotShared is returned where leases are asked of a store that is not PostgreSQL.
var ErrNotShared = errors.New("persistence: leases need the PostgreSQL store")

const leasesSchema = `
CREATE TABLE IF NOT EXISTS cluster_nodes (
	id uuid PRIMARY KEY,
	addr text NOT NULL,
	started_at timestamptz NOT NULL DEFAULT now(),
	heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS cluster_leases (
	name text PRIMARY KEY,
	owner uuid,
	epoch bigint NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS cluster_doubts (
	name text PRIMARY KEY,
	until timestamptz NOT NULL
)`

// OpenLeases connects to the PostgreSQL database of url (the same URL, and so the same schema,
// as the store's) and creates the lease tables if needed. ttl is the lease and heartbeat
// lifetime; a node renews a few times within it.
func OpenLeases(ctx context.Context, url string, ttl time.Duration) (*Leases, error) {
	if ttl < 100*time.Millisecond {
		return nil, fmt.Errorf("persistence: a lease lifetime of %v is too short", ttl)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("persistence: PostgreSQL URL: %w", err)
	}
	if cfg.MaxConns > 4 {
		cfg.MaxConns = 4
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	l := &Leases{pool: pool, ttl: ttl}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Two nodes starting at once must not race on CREATE TABLE.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':cluster'))"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, leasesSchema)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("persistence: PostgreSQL: create the lease tables: %w", err)
	}
	return l, nil
}

// SetDoubt sets how long, after this node takes a lease over from an owner that went silent,
// what that owner may have had in flight (a network call whose attempt it recorded) stays in
// doubt: the call time-out. The database keeps the doubt's end (cluster_doubts, by its clock)
// until it passed, whoever holds the lease meanwhile (Taken.InDoubt). Set it before the first
// Acquire.
func (l *Leases) SetDoubt(d time.Duration) { l.doubt = d }

// Close closes the connections (it releases nothing: Leave does).
func (l *Leases) Close() { l.pool.Close() }

// TTL is the lifetime of a lease and of a heartbeat.
func (l *Leases) TTL() time.Duration { return l.ttl }

// NodeID is the id the node joined under ("" before Join).
func (l *Leases) NodeID() string { return l.node }

func (l *Leases) secs() float64 { return l.ttl.Seconds() }

// Join records this process as a node under a fresh id, reachable at addr, and forgets rows of
// nodes silent for a hundred lifetimes.
func (l *Leases) Join(ctx context.Context, addr string) (string, error) {
	id := uuid.Must(uuid.NewV7()).String()
	b := &pgx.Batch{}
	b.Queue("DELETE FROM cluster_nodes WHERE heartbeat_at < now() - make_interval(secs => $1)", 100*l.secs())
	b.Queue("INSERT INTO cluster_nodes (id, addr) VALUES ($1, $2)", id, addr)
	if err := l.pool.SendBatch(ctx, b).Close(); err != nil {
		return "", fmt.Errorf("persistence: join: %w", err)
	}
	l.node, l.addr = id, addr
	return id, nil
}

// Renew renews the node's heartbeat and every lease it holds that has not expired, in one
// statement, and returns the leases it still holds. A lease missing from the answer was lost
// (it expired, and may have been taken). ErrStale: the node's own row had expired.
//
// The statement locks the node's lease rows while fenced writes hold some of them (a group
// commit fences on several leases at once, in its own order), so PostgreSQL may end it as a
// deadlock's victim: it is run again at once, a few times, rather than let the node miss a
// renewal for it (two missed renewals in a row step a node down under load).
func (l *Leases) Renew(ctx context.Context) ([]Lease, error) {
	for try := 1; ; try++ {
		out, err := l.renew(ctx)
		if err == nil || try == 3 || !retryable(err) || ctx.Err() != nil {
			return out, err
		}
	}
}

func (l *Leases) renew(ctx context.Context) ([]Lease, error) {
	rows, err := l.pool.Query(ctx, `
WITH hb AS (
	UPDATE cluster_nodes SET heartbeat_at = now()
	WHERE id = $1 AND heartbeat_at > now() - make_interval(secs => $2)
	RETURNING id
), renewed AS (
	UPDATE cluster_leases SET expires_at = now() + make_interval(secs => $2)
	WHERE owner = $1 AND expires_at > now() AND EXISTS (SELECT 1 FROM hb)
	RETURNING name, epoch
)
SELECT '' AS name, 0::bigint AS epoch, (SELECT count(*) FROM hb) AS alive
UNION ALL SELECT name, epoch, 1 FROM renewed`, l.node, l.secs())
	if err != nil {
		return nil, fmt.Errorf("persistence: renew: %w", err)
	}
	defer rows.Close()
	var out []Lease
	alive := false
	first := true
	for rows.Next() {
		var name string
		var epoch, n int64
		if err := rows.Scan(&name, &epoch, &n); err != nil {
			return nil, fmt.Errorf("persistence: renew: %w", err)
		}
		if first && name == "" {
			alive, first = n == 1, false
			continue
		}
		out = append(out, Lease{Name: name, Epoch: epoch, Owner: l.node})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("persistence: renew: %w", err)
	}
	if !alive {
		return nil, ErrStale
	}
	return out, nil
}

// Live lists the nodes whose heartbeat is younger than a lease lifetime, by id.
func (l *Leases) Live(ctx context.Context) ([]Node, error) {
	rows, err := l.pool.Query(ctx, `SELECT id::text, addr, started_at, heartbeat_at FROM cluster_nodes
WHERE heartbeat_at > now() - make_interval(secs => $1) ORDER BY id`, l.secs())
	if err != nil {
		return nil, fmt.Errorf("persistence: live nodes: %w", err)
	}
	nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Node, error) {
		var n Node
		err := r.Scan(&n.ID, &n.Addr, &n.StartedAt, &n.Heartbeat)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("persistence: live nodes: %w", err)
	}
	return nodes, nil
}

// Acquire takes the lease name if it is free or expired, with the next epoch. ok is false
// when another node holds it (or this node already does: Renew says which it holds), and when
// a fenced write under it is in progress: a take never waits.
func (l *Leases) Acquire(ctx context.Context, name string) (Taken, bool, error) {
	var t Taken
	ok := false
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		// A write fenced on the lease holds its row FOR KEY SHARE until it commits; a node paused
		// (or cut off) in the middle of one holds it for as long as it is away. The row lock is
		// taken NOWAIT (below); any other wait of the take (another node inserting the same new
		// lease) lasts a quarter of a lifetime at most, so that the taker's loop goes on renewing
		// its own leases meanwhile, and tries again at its next step.
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(1, l.ttl.Milliseconds()/4))); err != nil {
			return err
		}
		var prevOwner *string
		var prevExpiry time.Time
		var free bool
		// NOWAIT: a row locked by a fenced write in progress (or another take) is a lease in
		// use; waiting for it would hold up the caller's renewals, and, queued on the row, the
		// owner's own renewal of it. The take is tried again at the next step.
		err := tx.QueryRow(ctx, "SELECT owner::text, expires_at, owner IS NULL OR expires_at <= now() FROM cluster_leases WHERE name = $1 FOR UPDATE NOWAIT",
			name).Scan(&prevOwner, &prevExpiry, &free)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			t.Released = true
			err = tx.QueryRow(ctx, `INSERT INTO cluster_leases (name, owner, epoch, expires_at)
VALUES ($1, $2, 1, now() + make_interval(secs => $3)) ON CONFLICT (name) DO NOTHING RETURNING epoch`, name, l.node, l.secs()).Scan(&t.Epoch)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // another node created it first
			}
		case err != nil:
			return err
		case !free:
			return nil
		default:
			t.Released, t.PrevExpiry = prevOwner == nil, prevExpiry
			err = tx.QueryRow(ctx, `UPDATE cluster_leases SET owner = $2, epoch = epoch + 1, expires_at = now() + make_interval(secs => $3)
WHERE name = $1 RETURNING epoch`, name, l.node, l.secs()).Scan(&t.Epoch)
			if err == nil {
				t.InDoubt, err = l.doubtOf(ctx, tx, name, !t.Released)
			}
		}
		if err != nil {
			return err
		}
		ok = true
		return nil
	})
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "55P03" {
		return Taken{}, false, nil // lock_not_available: in use, see above
	}
	if err != nil {
		return Taken{}, false, fmt.Errorf("persistence: acquire %s: %w", name, err)
	}
	if !ok {
		return Taken{}, false, nil
	}
	t.Name, t.Owner = name, l.node
	return t, true, nil
}

// doubtOf starts a takeover's doubt (or lengthens the one running) and returns what is left of
// the lease's doubt, in the take's transaction (the lease's row is locked). The doubts are rows of
// a table of their own, so that nothing alters cluster_leases, whose rows every fenced write
// reads: a node that started would otherwise queue an ALTER TABLE behind the writes in progress,
// and every renewal behind the ALTER.
func (l *Leases) doubtOf(ctx context.Context, tx pgx.Tx, name string, takeover bool) (time.Duration, error) {
	var secs float64
	err := tx.QueryRow(ctx, `WITH started AS (
	INSERT INTO cluster_doubts (name, until) SELECT $1, now() + make_interval(secs => $3) WHERE $2
	ON CONFLICT (name) DO UPDATE SET until = greatest(cluster_doubts.until, excluded.until)
	RETURNING until
)
SELECT coalesce(greatest(extract(epoch FROM coalesce((SELECT until FROM started), (SELECT until FROM cluster_doubts WHERE name = $1)) - now()), 0), 0)::float8`,
		name, takeover && l.doubt > 0, l.doubt.Seconds()).Scan(&secs)
	return time.Duration(secs * float64(time.Second)), err
}

// Release gives the lease up at once (after the node drained its work), if it still holds it
// at that epoch; the next owner takes it without waiting for its expiry.
func (l *Leases) Release(ctx context.Context, le Lease) error {
	_, err := l.pool.Exec(ctx, "UPDATE cluster_leases SET owner = NULL, expires_at = now() WHERE name = $1 AND owner = $2 AND epoch = $3",
		le.Name, l.node, le.Epoch)
	if err != nil {
		return fmt.Errorf("persistence: release %s: %w", le.Name, err)
	}
	return nil
}

// Leave releases every lease the node still holds and removes its row.
func (l *Leases) Leave(ctx context.Context) error {
	if l.node == "" {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("UPDATE cluster_leases SET owner = NULL, expires_at = now() WHERE owner = $1", l.node)
	b.Queue("DELETE FROM cluster_nodes WHERE id = $1", l.node)
	if err := l.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("persistence: leave: %w", err)
	}
	l.node = ""
	return nil
}

// All lists every lease with its current owner ("" when released) and epoch, by name.
func (l *Leases) All(ctx context.Context) ([]Lease, error) {
	rows, err := l.pool.Query(ctx, "SELECT name, coalesce(owner::text, ''), epoch FROM cluster_leases ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("persistence: leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		var le Lease
		err := r.Scan(&le.Name, &le.Owner, &le.Epoch)
		return le, err
	})
	if err != nil {
		return nil, fmt.Errorf("persistence: leases: %w", err)
	}
	return out, nil
}

// Fence fails the transaction with ErrFenced unless le is still the lease's current owner and
// epoch. On PostgreSQL the lease row is read FOR KEY SHARE inside the transaction: a take of
// the lease (Acquire locks the row FOR UPDATE NOWAIT) is refused until this transaction ends,
// and this one, when the take locked first, waits for it and then fails to serialize, is run
// again and finds the new epoch. So the new owner, which reads the store after taking the lease,
// sees every write the old owner made under it. KEY SHARE, not SHARE: a renewal's update of the
// expiry (and a release's) changes no key, so it neither waits for the node's fenced writes nor
// they for it, and the writes under load neither delay the renewals nor queue behind them; a
// release needs no wait, since the take that follows it is refused while the write is in
// progress. On bbolt a single process owns everything and Fence checks nothing. Fence is for stores whose nodes run with leases (OpenLeases made the table).
func (t *Tx) Fence(le Lease) error {
	pt, ok := t.kv.(*pgTx)
	if !ok {
		return nil
	}
	if pt.probe != nil {
		// A probe reading ahead for a batch checks nothing: the write's own run fences.
		return nil
	}
	if pt.err != nil {
		return pt.err
	}
	var owner *string
	var epoch int64
	batch := &pgx.Batch{}
	begin := pt.begin != ""
	if begin {
		batch.Queue(pt.begin)
		pt.begin = ""
	}
	// FOR KEY SHARE: a take (FOR UPDATE) conflicts with it, a renewal or a release (an UPDATE
	// of no key) does not, so that a slow write never holds up its owner's renewals.
	batch.Queue("SELECT owner::text, epoch FROM cluster_leases WHERE name = $1 FOR KEY SHARE", le.Name)
	br := pt.q.SendBatch(pt.ctx, batch)
	var err error
	if begin {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&owner, &epoch)
	}
	if cerr := br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) && cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrFenced
	case err != nil:
		pt.fail(err)
		return err
	case owner == nil || *owner != le.Owner || epoch != le.Epoch:
		return ErrFenced
	}
	return nil
}

// Owners maps the name of every lease that a live node holds and that has not expired to that
// node's address, as the database sees them now: where the work under each lease runs.
func (l *Leases) Owners(ctx context.Context) (map[string]string, error) {
	rows, err := l.pool.Query(ctx, `SELECT l.name, n.addr FROM cluster_leases l JOIN cluster_nodes n ON n.id = l.owner
WHERE l.expires_at > now() AND n.heartbeat_at > now() - make_interval(secs => $1)`, l.secs())
	if err != nil {
		return nil, fmt.Errorf("persistence: lease owners: %w", err)
	}
	out := map[string]string{}
	var name, addr string
	_, err = pgx.ForEachRow(rows, []any{&name, &addr}, func() error {
		out[name] = addr
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("persistence: lease owners: %w", err)
	}
	return out, nil
}
