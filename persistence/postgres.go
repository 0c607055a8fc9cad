package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The PostgreSQL backend: the same buckets, one table each, behind the key-value seam (kv.go).
//
//   - Every bucket is a table kv_<bucket> (k bytea primary key, v bytea not null) in the schema
//     the connection string selects (search_path; "public" by default). Open creates the tables
//     and runs the layout upgrades in one SQL transaction, under a transaction-scoped advisory
//     lock so that two processes opening one database at once do not race.
//   - Update is one SERIALIZABLE transaction, retried from the start when PostgreSQL reports a
//     serialization failure or a deadlock (SQLSTATE 40001, 40P01): the group committer's batch
//     function may so run more than once, which the Store.Update contract allows. A
//     transaction's Puts and Deletes are kept in memory (an overlay that its own reads and cursors
//     see over the table's rows) and sent at commit as one statement per bucket and kind, in one
//     pipelined batch with COMMIT (and the BEGIN, when nothing was read before). A batch's reads
//     are read ahead in a few pipelined round trips (postgres_prefetch.go); other reads go to
//     the server as they come, the first with the BEGIN; a key read twice is read once.
//   - View is a REPEATABLE READ READ ONLY transaction: one snapshot, as bbolt's read
//     transactions, and no part in the serializable writers' conflicts. It ends with the next
//     read transaction on its connection (postgres_views.go); ViewAhead reads ahead as a batch
//     of writes does.
//   - Cursors read keyset pages: k > $1 ORDER BY k (k < $1 ORDER BY k DESC backwards), LIMIT
//     growing from a few rows to 1024 as the cursor goes on.
//   - One process at a time: the store holds a session advisory lock on a connection of its own
//     for as long as it is open, as bbolt's file lock does (a second process gets ErrLocked).
//     That connection also LISTENs for the deletion of connected accounts, which every writer
//     announces with NOTIFY in the deleting transaction, so that the account cache
//     (accountcache.go) of every connection forgets them; while it is down the cache is bypassed,
//     and it starts empty when it comes back. When the connection is lost (the server restarted)
//     writes fail with ErrWriteFailed until the lock is held again.
//   - A read that fails inside a transaction (the server went away) fails the transaction: its
//     Get returns nil and the transaction ends with the read's error, wrapped with
//     ErrWriteFailed for a write.

// IsPostgresURL reports whether a --store value names a PostgreSQL database.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// ErrUnavailable marks a read that the store could not make because its database cannot be
// reached (PostgreSQL down, restarting or failing over). Nothing was changed; the request may be
// sent again as it is. (bbolt never returns it: its reads do not fail.)
var ErrUnavailable = errors.New("persistence: the store's database cannot be reached")

// ErrBackupPostgres is Backup's answer on a PostgreSQL store.
var ErrBackupPostgres = errors.New("persistence: a PostgreSQL store is backed up with PostgreSQL's own tools " +
	"(pg_dump for a logical copy; pg_basebackup with WAL archiving for point-in-time recovery), not by herald backup")

// pgTxTimeout bounds one attempt of a transaction, so that a database that stops answering fails
// writes (503) instead of holding them.
const pgTxTimeout = 15 * time.Second

// pgMaxRetries bounds the retries of a transaction that keeps failing to serialize.
const pgMaxRetries = 20

// pgStore is a PostgreSQL database behind the seam.
type pgStore struct {
	pool   *pgxpool.Pool
	cfg    *pgx.ConnConfig
	tables map[string]*pgTable
	// channel is the NOTIFY channel of account deletions of this schema.
	channel string
	lockKey string
	// held is true while the session advisory lock is held (shared: while the store's own
	// connection is up).
	held   atomic.Bool
	shared bool
	// onReadFailure is Options.OnReadFailure.
	onReadFailure func(error)
	cache         *accountCache
	notify        *pgNotify // the listening connection of a shared store (pgnotify.go); nil otherwise
	// cc is the committer's connection (committerConn), cmu orders its transactions.
	cmu sync.Mutex
	cc  *pgxpool.Conn
	// views are the connections of the read transactions (postgres_views.go).
	views  *pgViews
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// pgTable is one bucket's table and its statements.
type pgTable struct {
	name                                  string
	get, getMany, upsert, del             string
	first, last, ge, gt, le, lt, countSQL string
	// countAll and countGT count the rows (those after $2), up to $1, in one row of a page:
	// an empty key and the count as 8 bytes big-endian (pgBucket.countAfter).
	countAll, countGT string
}

func newPgTable(bucket string) *pgTable {
	t := pgx.Identifier{"kv_" + bucket}.Sanitize()
	sel := "SELECT k, v FROM " + t
	return &pgTable{
		name:     bucket,
		get:      "SELECT v FROM " + t + " WHERE k = $1",
		getMany:  "SELECT k, v FROM " + t + " WHERE k = ANY($1::bytea[])",
		upsert:   "INSERT INTO " + t + " (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		del:      "DELETE FROM " + t + " WHERE k = ANY($1::bytea[])",
		first:    sel + " ORDER BY k LIMIT $1",
		last:     sel + " ORDER BY k DESC LIMIT $1",
		ge:       sel + " WHERE k >= $2 ORDER BY k LIMIT $1",
		gt:       sel + " WHERE k > $2 ORDER BY k LIMIT $1",
		le:       sel + " WHERE k <= $2 ORDER BY k DESC LIMIT $1",
		lt:       sel + " WHERE k < $2 ORDER BY k DESC LIMIT $1",
		countSQL: "SELECT count(*), coalesce(sum(length(k) + length(v)), 0) FROM " + t,
		countAll: "SELECT ''::bytea, int8send(count(*)) FROM (SELECT 1 FROM " + t + " LIMIT $1) n",
		countGT:  "SELECT ''::bytea, int8send(count(*)) FROM (SELECT 1 FROM " + t + " WHERE k > $2 LIMIT $1) n",
	}
}

// pgCreateTable is the statement that creates a bucket's table.
func pgCreateTable(bucket string) string {
	sql := "CREATE TABLE IF NOT EXISTS " + pgx.Identifier{"kv_" + bucket}.Sanitize() + " (k bytea PRIMARY KEY, v bytea NOT NULL)"
	if ff, ok := pgFillfactor[bucket]; ok {
		sql += fmt.Sprintf(" WITH (fillfactor = %d)", ff)
	}
	return sql
}

// pgFillfactor is how full an insert leaves the pages of the tables whose rows are rewritten in
// place while the work they record goes on: a job is written three to four times as it
// publishes, its post twice, as is the post's index entry. An update whose new version fits in
// the page of the old one is a heap-only tuple (HOT): no new index entry, less WAL and less work
// for vacuum. With full pages (the default, 100) nearly every update of a publish went to another
// page: 12% of the jobs' updates were HOT, 3% of the posts'. The other tables are written once and
// deleted, or hold a row or two, and keep full pages.
var pgFillfactor = map[string]int{"jobs": 50, "posts": 70, "posts_user": 70}

// pgSetFillfactor gives the tables of pgFillfactor created before it their setting (new tables
// have it from pgCreateTable); the pages already written keep their rows as they are.
func pgSetFillfactor(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	for bucket, ff := range pgFillfactor {
		t := pgx.Identifier{"kv_" + bucket}.Sanitize()
		want := fmt.Sprintf("fillfactor=%d", ff)
		var has bool
		if err := q.QueryRow(ctx, "SELECT coalesce($2 = ANY(reloptions), false) FROM pg_class WHERE oid = $1::regclass", t, want).Scan(&has); err != nil {
			return err
		}
		if !has {
			if _, err := q.Exec(ctx, fmt.Sprintf("ALTER TABLE %s SET (fillfactor = %d)", t, ff)); err != nil {
				return err
			}
		}
	}
	return nil
}

// OpenStore opens the store that a --store value names: "" or "bbolt" the bbolt file in dir
// (Open), a postgres:// or postgresql:// URL that PostgreSQL database (OpenPostgres).
func OpenStore(store, dir string, opts Options) (*Store, error) {
	switch {
	case store == "" || store == "bbolt":
		return Open(dir, opts)
	case IsPostgresURL(store):
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return OpenPostgres(ctx, store, opts)
	}
	return nil, fmt.Errorf("persistence: --store %q is neither bbolt nor a postgres:// URL", RedactURL(store))
}

// RedactURL hides the password of a PostgreSQL URL for messages.
func RedactURL(s string) string {
	u, err := neturl.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = neturl.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// OpenPostgres opens the store in the PostgreSQL database of url (postgres://…), creating its
// tables and bringing their layout up to date. It takes the database's Herald lock (ErrLocked
// when another process holds it past opts.LockTimeout). Options.ReadOnly and Options.Check are
// bbolt's and ignored here.
func OpenPostgres(ctx context.Context, url string, opts Options) (*Store, error) {
	return openPostgres(ctx, url, opts, nil)
}

// openPostgres is OpenPostgres with configure, when not nil, adjusting the pool's configuration
// (tests: a tracer that counts the statements sent).
func openPostgres(ctx context.Context, url string, opts Options, configure func(*pgxpool.Config)) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("persistence: PostgreSQL URL: %w", err)
	}
	if pcfg.MaxConns < 8 {
		pcfg.MaxConns = 8
	}
	// Every statement of the store reads by key, or a range of keys in order: the primary key's
	// index is always the way. A store's tables grow from empty within seconds, and a prepared
	// statement's generic plan made while a table was small scanned it whole for every read
	// afterwards (k = ANY over a few thousand rows: 2.4 ms a read instead of 0.1).
	if _, set := pcfg.ConnConfig.RuntimeParams["enable_seqscan"]; !set {
		pcfg.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
	}
	if _, set := pcfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set && opts.IdleInTransaction > 0 {
		pcfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(max(1, opts.IdleInTransaction.Milliseconds()), 10)
	}
	if configure != nil {
		configure(pcfg)
	}
	// The store's statements take their bytea[] parameters encoded (postgres_arrays.go).
	after := pcfg.AfterConnect
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, c); err != nil {
				return err
			}
		}
		return registerByteaArray(ctx, c)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	p := &pgStore{pool: pool, cfg: pcfg.ConnConfig, tables: map[string]*pgTable{}, shared: opts.Shared, onReadFailure: opts.OnReadFailure}
	for _, name := range bucketNames {
		p.tables[string(name)] = newPgTable(string(name))
	}
	var schema string
	if err := pool.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	if schema == "" {
		pool.Close()
		return nil, errors.New("persistence: PostgreSQL: no schema of the search_path exists; create it or name another")
	}
	p.channel, p.lockKey = "herald_accounts:"+schema, "herald:"+schema
	p.ctx, p.cancel = context.WithCancel(context.Background())
	var conn *pgx.Conn
	if opts.Shared {
		p.held.Store(true) // no lock: the processes share the database (pgnotify.go)
	} else if conn, err = p.lock(ctx, opts.LockTimeout); err != nil {
		p.cancel()
		pool.Close()
		return nil, err
	}
	if err := p.migrate(ctx); err != nil {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
		p.cancel()
		pool.Close()
		return nil, err
	}
	// The read transactions keep all of the pool's connections but the committer's and one
	// for the store's own statements (stats).
	p.views = newPgViews(max(1, int(pcfg.MaxConns)-2))
	s := newStore(p, opts)
	s.pg = p
	p.cache = &s.accounts
	p.cache.bypass.Store(true)
	p.wg.Add(2)
	go p.sweepViews()
	if opts.Shared {
		p.notify = newPgNotify(p, schema, &s.signals)
		go p.notify.run()
	} else {
		go p.keep(conn)
	}
	return s, nil
}

// lock connects the store's own connection and takes the session advisory lock on it, waiting
// up to timeout for another process to let it go.
func (p *pgStore) lock(ctx context.Context, timeout time.Duration) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		return nil, fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	if p.shared {
		// Several nodes share the store: no lock, the leases and fences decide (Options.Shared).
		p.held.Store(true)
		return conn, nil
	}
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", p.lockKey).Scan(&ok); err != nil {
			_ = conn.Close(context.Background())
			return nil, fmt.Errorf("persistence: PostgreSQL lock: %w", err)
		}
		if ok {
			p.held.Store(true)
			return conn, nil
		}
		if time.Now().After(deadline) {
			_ = conn.Close(context.Background())
			return nil, ErrLocked
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keep listens for account deletions on the lock's connection and, when the connection is lost,
// connects again, takes the lock again and starts listening again.
func (p *pgStore) keep(conn *pgx.Conn) {
	defer p.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		if conn != nil {
			p.listen(conn)
			_ = conn.Close(context.Background())
			conn = nil
		}
		p.held.Store(false)
		p.cache.forgetAll(true)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(backoff):
		}
		c, err := p.lock(p.ctx, time.Second)
		if err != nil {
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		conn = c
	}
}

// listen serves account deletions until the connection fails or the store closes.
func (p *pgStore) listen(conn *pgx.Conn) {
	if _, err := conn.Exec(p.ctx, "LISTEN "+pgx.Identifier{p.channel}.Sanitize()); err != nil {
		return
	}
	// Deletions made while nobody listened are unknown: start from an empty cache.
	p.cache.forgetAll(false)
	for {
		n, err := conn.WaitForNotification(p.ctx)
		if err != nil {
			return
		}
		if k, err := hex.DecodeString(n.Payload); err == nil && len(k) == 32 {
			p.cache.forget([32]byte(k))
		}
	}
}

func (p *pgStore) close() error {
	p.cancel()
	p.wg.Wait()
	p.closeViews()
	p.cmu.Lock()
	if p.cc != nil {
		p.cc.Release()
		p.cc = nil
	}
	p.cmu.Unlock()
	p.pool.Close()
	return nil
}

// migrate creates the tables and runs the layout upgrades in one transaction.
func (p *pgStore) migrate(ctx context.Context) error {
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return fmt.Errorf("persistence: PostgreSQL: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1 || ':migrate'))", p.lockKey); err != nil {
		return fmt.Errorf("persistence: PostgreSQL: %w", err)
	}
	for _, name := range bucketNames {
		if _, err := tx.Exec(ctx, pgCreateTable(string(name))); err != nil {
			return fmt.Errorf("persistence: PostgreSQL: create table for %s: %w", name, err)
		}
	}
	if err := pgSetFillfactor(ctx, tx); err != nil {
		return fmt.Errorf("persistence: PostgreSQL: table settings: %w", err)
	}
	t := p.newTx(ctx, tx, "", true)
	if err := upgrade(t); err != nil {
		return fmt.Errorf("persistence: PostgreSQL: upgrade the layout: %w", err)
	}
	if t.err != nil {
		return fmt.Errorf("persistence: PostgreSQL: upgrade the layout: %w", t.err)
	}
	if err := t.flush(false); err != nil {
		return fmt.Errorf("persistence: PostgreSQL: upgrade the layout: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("persistence: PostgreSQL: upgrade the layout: %w", err)
	}
	return nil
}

// retryable reports a serialization failure or a deadlock: the transaction may be run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// errPgRead marks a transaction ended by a failed read.
type errPgRead struct{ err error }

func (e errPgRead) Error() string { return "read: " + e.err.Error() }
func (e errPgRead) Unwrap() error { return e.err }

func (p *pgStore) update(fn func(*Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := p.updateOnce(fn)
		if err == nil || !retryable(err) || attempt >= pgMaxRetries {
			var re errPgRead
			if errors.As(err, &re) {
				// fn saw nils where rows were: whatever it returned, the write failed.
				return writeFailed(re.err)
			}
			return err
		}
		time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6))))
	}
}

func (p *pgStore) updateOnce(fn func(*Tx) error) error {
	if !p.held.Load() {
		return writeFailed(fmt.Errorf("%w: the store's lock on the database is not held (its connection was lost)", ErrLocked))
	}
	ctx, cancel := context.WithTimeout(p.ctx, pgTxTimeout)
	defer cancel()
	p.cmu.Lock()
	defer p.cmu.Unlock()
	c, err := p.committerConn(ctx)
	if err != nil {
		return err
	}
	defer p.rollback(c)
	t := p.newTx(ctx, c.Conn(), pgBeginSerializable, true)
	wt := &Tx{kv: t}
	ferr := fn(wt)
	if t.err != nil {
		if retryable(t.err) {
			return t.err
		}
		return errPgRead{t.err}
	}
	if ferr != nil {
		return ferr
	}
	t.touched = wt.touched
	return t.flush(true)
}

// committerConn returns the connection the writes go through, taken from the pool once and
// kept (again when it was lost), so that a commit never waits for a connection behind the reads.
// p.cmu is held.
func (p *pgStore) committerConn(ctx context.Context) (*pgxpool.Conn, error) {
	if p.cc != nil && !p.cc.Conn().IsClosed() {
		return p.cc, nil
	}
	if p.cc != nil {
		p.cc.Release()
		p.cc = nil
	}
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	p.cc = c
	return c, nil
}

// rollback ends the transaction still open on a connection (the function refused, or a
// statement failed), so that the connection is ready for the next one.
func (p *pgStore) rollback(c *pgxpool.Conn) {
	if pc := c.Conn().PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = c.Exec(ctx, "ROLLBACK")
		cancel()
	}
}

// release gives a read's connection back to the pool, rolled back first: the pool would close a
// connection handed back inside a transaction.
func (p *pgStore) release(c *pgxpool.Conn) {
	p.rollback(c)
	c.Release()
}

func (p *pgStore) view(fn func(*Tx) error) error {
	ctx, cancel := context.WithTimeout(p.ctx, pgTxTimeout)
	defer cancel()
	c, err := p.takeView(ctx)
	if err != nil {
		return p.readFailed(fmt.Errorf("%w: %w", ErrUnavailable, err))
	}
	defer p.giveView(c)
	t := p.newTx(ctx, c.Conn(), pgBeginSnapshot, false)
	if c.Conn().PgConn().TxStatus() != 'I' {
		// The connection is still in the read transaction before this one: it ends with this
		// one's first read (postgres_views.go).
		t.end = "ROLLBACK"
	}
	ferr := fn(&Tx{kv: t})
	if t.end != "" {
		// Nothing read: the transaction before is still open, and is ended now rather than
		// kept (its snapshot would last as long as reads without a read keep the connection).
		p.rollback(c)
	}
	if t.err != nil {
		return p.readFailed(fmt.Errorf("%w: read: %w", ErrUnavailable, t.err))
	}
	return ferr
}

// readFailed reports a read the database could not answer to Options.OnReadFailure, unless the
// store is closing, and returns err.
func (p *pgStore) readFailed(err error) error {
	if p.onReadFailure != nil && p.ctx.Err() == nil {
		p.onReadFailure(err)
	}
	return err
}

// The statements that open a transaction. Neither goes to the server on its own: a transaction
// sends its BEGIN in the pipeline of its first statements (its first reads, or its writes and
// COMMIT), and a transaction that reads and writes nothing never goes to the server at all.
const (
	pgBeginSerializable = "BEGIN ISOLATION LEVEL SERIALIZABLE"
	pgBeginSnapshot     = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
)

// pgSender is where a transaction sends its statements: its connection, on which it opens the
// transaction itself, or a pgx.Tx already open (migrate).
type pgSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// pgTx is one transaction behind the seam. Every statement it sends goes in a pgx.Batch, which
// pgx sends as one pipeline of prepared statements (its statement cache prepares each SQL text
// once per connection): one round trip, however many statements the batch holds.
type pgTx struct {
	p        *pgStore
	ctx      context.Context
	q        pgSender
	writable bool
	// begin is the statement that opens the transaction, sent ahead of its first statements;
	// "" once sent (or when q is a transaction already open).
	begin string
	// end, when set, ends the transaction still open on the connection before begin: it is
	// sent with begin.
	end     string
	buckets map[string]*pgBucket
	// reads holds what the transaction read of the tables (rows and cursor pages), shared with
	// the probes that read ahead for a batch of writes (postgres_prefetch.go).
	reads *pgReads
	// probe is set on a probe: it notes the rows it reads that the transaction has not read,
	// instead of reading them.
	probe *pgProbe
	// err is the first read that failed; the transaction fails with it.
	err error
	// touched are the topics the transaction changed: a shared store notifies them at commit.
	touched []Topic
}

func (p *pgStore) newTx(ctx context.Context, q pgSender, begin string, writable bool) *pgTx {
	return &pgTx{p: p, ctx: ctx, q: q, begin: begin, writable: writable, buckets: map[string]*pgBucket{},
		reads: &pgReads{rows: map[pgRowKey]pgRead{}, pages: map[pgReq][]pgRow{}}}
}

func (t *pgTx) Bucket(name []byte) kvBucket {
	if b, ok := t.buckets[string(name)]; ok {
		return b
	}
	tbl, ok := t.p.tables[string(name)]
	if !ok {
		return nil
	}
	b := &pgBucket{tx: t, tbl: tbl}
	t.buckets[tbl.name] = b
	return b
}

func (t *pgTx) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// flush sends the transaction's writes in one pipeline, with COMMIT when commit is set (and the
// BEGIN still unsent): the writes and the commit of a transaction whose reads were all made
// take one round trip. A transaction that neither read nor wrote sends nothing.
func (t *pgTx) flush(commit bool) error {
	batch := &pgx.Batch{}
	if t.begin != "" {
		batch.Queue(t.begin)
	}
	writes := 0
	for _, b := range t.buckets {
		if len(b.keys) == 0 {
			continue
		}
		var putK, delK []string
		var putV [][]byte
		for _, k := range b.keys {
			w := b.pend[k]
			if w.del {
				delK = append(delK, k)
				if b.tbl.name == string(bAccountsUser) {
					batch.Queue("SELECT pg_notify($1, $2)", t.p.channel, hex.EncodeToString([]byte(k)))
				}
				continue
			}
			if b.tbl.name == string(bAccountsUser) {
				// An account's index changed (its default options): the other processes forget
				// what they cached of it, as they do for a deletion.
				batch.Queue("SELECT pg_notify($1, $2)", t.p.channel, hex.EncodeToString([]byte(k)))
			}
			putK, putV = append(putK, k), append(putV, w.v) // nil: the empty value, never NULL
		}
		if len(delK) > 0 {
			batch.Queue(b.tbl.del, byteaArray(delK))
			writes++
		}
		if len(putK) > 0 {
			batch.Queue(b.tbl.upsert, byteaArray(putK), byteaArray(putV))
			writes++
		}
	}
	if writes == 0 && t.begin != "" {
		// Nothing read, nothing written: no transaction to open, none to commit.
		return nil
	}
	// The followers of what changed are told at commit: PostgreSQL delivers a notification
	// only when its transaction commits.
	t.p.notify.queue(batch, t.touched)
	if commit {
		batch.Queue("COMMIT")
	}
	if batch.Len() == 0 {
		return nil
	}
	t.begin = ""
	return t.q.SendBatch(t.ctx, batch).Close()
}

// pgReads is what a transaction read of its tables, each row and page read once.
type pgReads struct {
	rows  map[pgRowKey]pgRead
	pages map[pgReq][]pgRow
}

// pgRowKey names a row of a table.
type pgRowKey struct {
	tbl *pgTable
	key string
}

// pgReq is a read of a table: a row by its key, or (page set) a cursor's page: the rows from x
// (key; none when hasX is false) by sql, at most n of them.
type pgReq struct {
	tbl  *pgTable
	page bool
	sql  string
	key  string
	hasX bool
	n    int
}

// row returns the row of key in tbl (not the pending writes), reading it when this transaction
// has not yet. A probe reads nothing: it notes the row and takes it as missing.
func (t *pgTx) row(tbl *pgTable, key []byte) pgRead {
	k := pgRowKey{tbl, string(key)}
	if r, ok := t.reads.rows[k]; ok {
		return r
	}
	if t.err != nil {
		return pgRead{}
	}
	if t.probe != nil {
		t.probe.miss(pgReq{tbl: tbl, key: k.key})
		return pgRead{}
	}
	t.read([]pgReq{{tbl: tbl, key: k.key}})
	return t.reads.rows[k]
}

// page returns a cursor's page, reading it when this transaction has not yet; ok is false when
// the read failed. A probe reads nothing: it notes the page and takes it as empty.
func (t *pgTx) page(req pgReq) ([]pgRow, bool) {
	if rows, ok := t.reads.pages[req]; ok {
		return rows, true
	}
	if t.err != nil {
		return nil, false
	}
	if t.probe != nil {
		t.probe.miss(req)
		return nil, true
	}
	t.read([]pgReq{req})
	rows, ok := t.reads.pages[req]
	return rows, ok
}

// read sends reqs (and the BEGIN when still unsent) in one pipeline and keeps what they read:
// the rows of a table in one statement (k = ANY), each page in one. A failure fails the
// transaction.
func (t *pgTx) read(reqs []pgReq) bool {
	batch := &pgx.Batch{}
	begin, end := t.begin != "", t.end != ""
	if begin {
		if end {
			batch.Queue(t.end)
			t.end = ""
		}
		batch.Queue(t.begin)
		t.begin = ""
	}
	// The statements in the order they are queued: a table's rows, or a page.
	var sent []pgSent
	for _, r := range reqs {
		if r.page {
			sent = append(sent, pgSent{tbl: r.tbl, page: r})
			continue
		}
		i := slices.IndexFunc(sent, func(s pgSent) bool { return !s.page.page && s.tbl == r.tbl })
		if i < 0 {
			sent = append(sent, pgSent{tbl: r.tbl})
			i = len(sent) - 1
		}
		sent[i].keys = append(sent[i].keys, []byte(r.key))
	}
	for _, s := range sent {
		switch {
		case s.page.page && s.page.hasX:
			batch.Queue(s.page.sql, s.page.n, []byte(s.page.key))
		case s.page.page:
			batch.Queue(s.page.sql, s.page.n)
		case len(s.keys) == 1:
			batch.Queue(s.tbl.get, s.keys[0])
		default:
			batch.Queue(s.tbl.getMany, byteaArray(s.keys))
		}
	}
	br := t.q.SendBatch(t.ctx, batch)
	err := t.readResults(br, begin, end, sent)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.fail(err)
		return false
	}
	return true
}

// pgSent is a statement of a read: the rows of keys in tbl, or a page.
type pgSent struct {
	tbl  *pgTable
	keys [][]byte
	page pgReq
}

func (t *pgTx) readResults(br pgx.BatchResults, begin, end bool, sent []pgSent) error {
	if end {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	if begin {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	for _, s := range sent {
		if len(s.keys) == 1 {
			var v []byte
			err := br.QueryRow().Scan(&v)
			var got pgRead
			switch {
			case err == nil:
				if v == nil {
					v = []byte{}
				}
				got = pgRead{v: v, found: true}
			case errors.Is(err, pgx.ErrNoRows):
			default:
				return err
			}
			t.reads.rows[pgRowKey{s.tbl, string(s.keys[0])}] = got
			continue
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		out := []pgRow{}
		for rows.Next() {
			var row pgRow
			if err := rows.Scan(&row.k, &row.v); err != nil {
				rows.Close()
				return err
			}
			if row.v == nil {
				row.v = []byte{}
			}
			out = append(out, row)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if s.page.page {
			t.reads.pages[s.page] = out
			continue
		}
		// The keys asked for and not found are missing rows.
		for _, k := range s.keys {
			t.reads.rows[pgRowKey{s.tbl, string(k)}] = pgRead{}
		}
		for _, row := range out {
			t.reads.rows[pgRowKey{s.tbl, string(row.k)}] = pgRead{v: row.v, found: true}
		}
	}
	return nil
}

// pgWrite is a pending write: a value, or a deletion.
type pgWrite struct {
	v   []byte
	del bool
}

// pgRead is a row read from the table in this transaction (found false: no such row).
type pgRead struct {
	v     []byte
	found bool
}

// pgBucket is a bucket of a transaction: the table and the writes pending.
type pgBucket struct {
	tx  *pgTx
	tbl *pgTable
	// pend holds the pending writes; keys holds their keys in order.
	pend map[string]pgWrite
	keys []string
}

// row reads key from the table (not the pending writes).
func (b *pgBucket) row(key []byte) pgRead { return b.tx.row(b.tbl, key) }

func (b *pgBucket) Get(key []byte) []byte {
	if w, ok := b.pend[string(key)]; ok {
		if w.del {
			return nil
		}
		if w.v == nil {
			return []byte{}
		}
		return w.v
	}
	return b.row(key).v
}

func (b *pgBucket) Has(key []byte) bool {
	if w, ok := b.pend[string(key)]; ok {
		return !w.del
	}
	return b.row(key).found
}

var (
	errTxReadOnly  = errors.New("persistence: write in a read-only transaction")
	errKeyRequired = errors.New("persistence: empty key")
)

func (b *pgBucket) write(key []byte, w pgWrite) error {
	if !b.tx.writable {
		return errTxReadOnly
	}
	if len(key) == 0 {
		return errKeyRequired
	}
	if b.pend == nil {
		b.pend = map[string]pgWrite{}
	}
	if _, ok := b.pend[string(key)]; !ok {
		k := string(key)
		i, _ := slices.BinarySearch(b.keys, k)
		b.keys = slices.Insert(b.keys, i, k)
		b.pend[k] = w
		return nil
	}
	b.pend[string(key)] = w
	return nil
}

func (b *pgBucket) Put(key, value []byte) error { return b.write(key, pgWrite{v: value}) }

func (b *pgBucket) Delete(key []byte) error { return b.write(key, pgWrite{del: true}) }

func (b *pgBucket) Cursor() kvCursor { return &pgCursor{b: b} }

// countAfter counts the table's rows after x (every row when x is nil), up to max, in one
// statement that sends back the number alone, where a cursor's walk would bring every row's
// value over the connection (a metric's count of a million outbox events was a gigabyte a
// scrape). It counts only when nothing is pending in the bucket and the transaction is not a
// probe; ok is false otherwise, or when the read failed (the transaction has failed then).
func (b *pgBucket) countAfter(x []byte, max int) (n int, ok bool) {
	if len(b.keys) > 0 || b.tx.probe != nil {
		return 0, false
	}
	sql := b.tbl.countAll
	if x != nil {
		sql = b.tbl.countGT
	}
	rows, ok := b.tx.page(pgReq{tbl: b.tbl, page: true, sql: sql, key: string(x), hasX: x != nil, n: max})
	if !ok || len(rows) != 1 || len(rows[0].v) != 8 {
		return 0, false
	}
	return int(binary.BigEndian.Uint64(rows[0].v)), true
}

// pgRow is a row of a cursor's page.
type pgRow struct{ k, v []byte }

// pgCursor merges the table's rows, read in keyset pages, with the transaction's pending writes.
// The table does not change under it during the transaction (writes are pending until commit, and
// the snapshot is fixed), so a page stays true for as long as the cursor lives.
type pgCursor struct {
	b   *pgBucket
	cur []byte // the key the cursor is on; nil: none
	// The page: rows (ascending) are every row of the table between lo and hi.
	rows           []pgRow
	valid          bool
	lo, hi         []byte
	loInf, hiInf   bool
	loIncl, hiIncl bool
	fetches        int
	// want is the least the next read asks for (wantPage); 0 once read.
	want int
}

func (c *pgCursor) wantPage(n int) { c.want = n }

// page sizes: a cursor's first read fetches a few rows, and each further read four times more.
func (c *pgCursor) limit(seek bool) int {
	n := 32
	if seek {
		n = 8
	}
	n <<= 2 * min(c.fetches, 4)
	return min(max(n, c.want), 1024)
}

// covers reports whether the page holds the first row from x (inclusive or not) in direction
// dir; x nil is the end the direction starts from.
func (c *pgCursor) covers(x []byte, incl bool, dir int) bool {
	if !c.valid {
		return false
	}
	if dir > 0 {
		if x == nil {
			return c.loInf
		}
		if c.loInf {
			return true
		}
		d := bytes.Compare(c.lo, x)
		return d < 0 || d == 0 && (c.loIncl || !incl)
	}
	if x == nil {
		return c.hiInf
	}
	if c.hiInf {
		return true
	}
	d := bytes.Compare(x, c.hi)
	return d < 0 || d == 0 && (c.hiIncl || !incl)
}

// inPage finds the first row of the page from x in direction dir.
func (c *pgCursor) inPage(x []byte, incl bool, dir int) (pgRow, bool) {
	if dir > 0 {
		i := 0
		if x != nil {
			i, _ = slices.BinarySearchFunc(c.rows, x, func(r pgRow, x []byte) int { return bytes.Compare(r.k, x) })
			if !incl && i < len(c.rows) && bytes.Equal(c.rows[i].k, x) {
				i++
			}
		}
		if i < len(c.rows) {
			return c.rows[i], true
		}
		return pgRow{}, false
	}
	i := len(c.rows) - 1
	if x != nil {
		j, found := slices.BinarySearchFunc(c.rows, x, func(r pgRow, x []byte) int { return bytes.Compare(r.k, x) })
		i = j - 1
		if found && incl {
			i = j
		}
	}
	if i >= 0 {
		return c.rows[i], true
	}
	return pgRow{}, false
}

// table returns the first table row from x in direction dir.
func (c *pgCursor) table(x []byte, incl bool, dir int, seek bool) (pgRow, bool) {
	if c.covers(x, incl, dir) {
		if r, ok := c.inPage(x, incl, dir); ok {
			return r, true
		}
		if dir > 0 && c.hiInf || dir < 0 && c.loInf {
			return pgRow{}, false
		}
	}
	if !c.fetch(x, incl, dir, seek) {
		return pgRow{}, false
	}
	return c.inPage(x, incl, dir)
}

// fetch reads the page from x in direction dir.
func (c *pgCursor) fetch(x []byte, incl bool, dir int, seek bool) bool {
	t := c.b.tx
	if t.err != nil {
		return false
	}
	n := c.limit(seek)
	c.fetches, c.want = c.fetches+1, 0
	var sql string
	switch {
	case x == nil && dir > 0:
		sql = c.b.tbl.first
	case x == nil:
		sql = c.b.tbl.last
	case dir > 0 && incl:
		sql = c.b.tbl.ge
	case dir > 0:
		sql = c.b.tbl.gt
	case incl:
		sql = c.b.tbl.le
	default:
		sql = c.b.tbl.lt
	}
	req := pgReq{tbl: c.b.tbl, page: true, sql: sql, key: string(x), hasX: x != nil, n: n}
	out, ok := t.page(req)
	if !ok {
		c.valid = false
		return false
	}
	full := len(out) == n
	c.valid = true
	if dir > 0 {
		c.lo, c.loInf, c.loIncl = x, x == nil, incl
		c.hiInf = !full
		if full {
			c.hi, c.hiIncl = out[len(out)-1].k, true
		}
	} else {
		// The page is the transaction's (a later cursor may read it again): reversed in a copy.
		out = slices.Clone(out)
		slices.Reverse(out)
		c.hi, c.hiInf, c.hiIncl = x, x == nil, incl
		c.loInf = !full
		if full {
			c.lo, c.loIncl = out[0].k, true
		}
	}
	c.rows = out
	return true
}

// pendingFrom returns the first pending key from x in direction dir.
func (c *pgCursor) pendingFrom(x []byte, incl bool, dir int) (string, bool) {
	keys := c.b.keys
	if len(keys) == 0 {
		return "", false
	}
	if dir > 0 {
		i := 0
		if x != nil {
			var found bool
			i, found = slices.BinarySearch(keys, string(x))
			if found && !incl {
				i++
			}
		}
		if i < len(keys) {
			return keys[i], true
		}
		return "", false
	}
	i := len(keys) - 1
	if x != nil {
		j, found := slices.BinarySearch(keys, string(x))
		i = j - 1
		if found && incl {
			i = j
		}
	}
	if i >= 0 {
		return keys[i], true
	}
	return "", false
}

// step moves the cursor to the first key from x in direction dir, skipping pending deletions.
func (c *pgCursor) step(x []byte, incl bool, dir int, seek bool) ([]byte, []byte) {
	for {
		r, rok := c.table(x, incl, dir, seek)
		pk, pok := c.pendingFrom(x, incl, dir)
		if c.b.tx.err != nil {
			c.cur = nil
			return nil, nil
		}
		if !rok && !pok {
			c.cur = nil
			return nil, nil
		}
		usePending := pok
		if rok && pok {
			d := bytes.Compare(r.k, []byte(pk))
			usePending = d == 0 || (d > 0) == (dir > 0)
		}
		if !usePending {
			c.cur = r.k
			return r.k, r.v
		}
		k := []byte(pk)
		w := c.b.pend[pk]
		if w.del {
			x, incl = k, false
			continue
		}
		c.cur = k
		v := w.v
		if v == nil {
			v = []byte{}
		}
		return k, v
	}
}

func (c *pgCursor) First() ([]byte, []byte) { return c.step(nil, true, 1, false) }

func (c *pgCursor) Last() ([]byte, []byte) { return c.step(nil, true, -1, false) }

func (c *pgCursor) Seek(key []byte) ([]byte, []byte) {
	return c.step(append([]byte(nil), key...), true, 1, true)
}

func (c *pgCursor) Next() ([]byte, []byte) {
	if c.cur == nil {
		return nil, nil
	}
	return c.step(c.cur, false, 1, false)
}

func (c *pgCursor) Prev() ([]byte, []byte) {
	if c.cur == nil {
		return nil, nil
	}
	return c.step(c.cur, false, -1, false)
}

func (c *pgCursor) Delete() error {
	if c.cur == nil {
		return errors.New("persistence: cursor delete on no key")
	}
	return c.b.Delete(c.cur)
}

// stats reads the size of the store's tables.
func (p *pgStore) stats() DBStats {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	var out DBStats
	_ = p.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'kv\_%'`).Scan(&out.SizeBytes)
	return out
}

// DropPostgresSchema drops a schema of the database of url with everything in it (the bench's,
// once its run is over).
func DropPostgresSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("persistence: PostgreSQL: %w", err)
	}
	return nil
}

// CreatePostgresSchema creates an empty schema in the database of url and returns url with its
// search_path set to it: a new, empty store (the bench gives each server and ceiling its own).
func CreatePostgresSchema(ctx context.Context, url, schema string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", fmt.Errorf("persistence: connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return "", fmt.Errorf("persistence: PostgreSQL: %w", err)
	}
	u, err := neturl.Parse(url)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
