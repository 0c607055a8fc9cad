package persistence

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the name of the bbolt file inside the data directory.
const FileName = "herald.db"

// ErrLocked means another process holds the data directory's database open.
var ErrLocked = errors.New("persistence: the database is locked by another process")

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("persistence: store is closed")

// ErrBusy is TryUpdate's refusal when the commit queue is full: the write was not queued, so
// nothing of it is written, and it may be retried.
var ErrBusy = errors.New("persistence: the commit queue is full")

// queueSize is the capacity of the commit queue; TryUpdate refuses once half of it is taken, so
// that the writes of work already accepted (Update) always find room behind the requests.
const queueSize = 4096

var bucketNames = [][]byte{
	bMeta, bUsers, bUsersEmail, bAPIKeys, bAPIKeysHash, bAPIKeysUser,
	bAccounts, bAccountsUser, bPosts, bPostsUser,
}

// registerBuckets adds buckets that Open creates; each file of this package that owns buckets
// registers them from init.
func registerBuckets(names ...[]byte) { bucketNames = append(bucketNames, names...) }

var (
	bMeta         = []byte("meta")
	bUsers        = []byte("users")
	bUsersEmail   = []byte("users_email")
	bAPIKeys      = []byte("apikeys")
	bAPIKeysHash  = []byte("apikeys_hash")
	bAPIKeysUser  = []byte("apikeys_user")
	bAccounts     = []byte("accounts")
	bAccountsUser = []byte("accounts_user")
	bPosts        = []byte("posts")
	bPostsUser    = []byte("posts_user")
)

// schemaVersion is the layout this code writes: 2 added posts_count; 3 keeps revoked keys in
// apikeys_hash; 4 added publications; 5 added jobs_waiting and the finished flag of jobs_active; 6 added workspaces (workspaces.go),
// with nothing to rewrite.
const schemaVersion = 6

// Options configure the store.
type Options struct {
	// LockTimeout bounds the wait for the file lock (default 2s).
	LockTimeout time.Duration
	// MaxBatch caps the writes that share one transaction (default 1024).
	MaxBatch int
	// OnCommit, when set, observes every commit of the group committer: how many writes it
	// carried, how long it took, and, when the commit failed (the store could not write: disk
	// full, I/O error), its error, which wraps ErrWriteFailed. A batch rolled back because one of
	// its writes refused (its function returned an error) is no commit: its writes are replayed
	// one per commit, and each of those is observed.
	OnCommit func(writes int, d time.Duration, err error)
	// OnReadFailure, when set, observes every read transaction the store's database could not
	// answer (PostgreSQL down, unreachable or failing over; the error wraps ErrUnavailable). It
	// runs before the read returns, so whoever hears of the failure finds it observed.
	OnReadFailure func(err error)
	// ReadOnly opens the file for reading only.
	ReadOnly bool
	// Check reads every page of the file and runs bbolt's consistency check and Herald's
	// cross-checks (CheckFile's) before the store opens; without it Open checks only the
	// file's structure up to each bucket's root page (damage.go). A damaged file is a
	// *DamagedError either way.
	Check bool
	// Faults, when set, injects failures at the commit boundary (tests; faults.go).
	Faults *Faults
	// MaxMappedBytes, on Linux and bbolt, gives the pages of the file mapped by reads back to
	// the kernel's page cache whenever the process's file-backed resident memory passes it
	// (checked every second; 0: never). See mapped_linux.go.
	MaxMappedBytes int64
	// Shared opens a PostgreSQL store that several Herald nodes use at once (herald serve
	// --node-addr): it takes no session advisory lock, since ownership is decided per shard by
	// leases and every write of an actor fences on its shard's lease (Tx.Fence), which a lock
	// could not do; and every commit tells the other processes what it touched with NOTIFY
	// (pgnotify.go). Ignored by bbolt.
	Shared bool
	// IdleInTransaction, when set on PostgreSQL, has the server end a session that stays idle
	// inside a transaction for longer (idle_in_transaction_session_timeout). A node paused in the
	// middle of a commit (SIGSTOP, a stalled VM) otherwise holds the commit's row locks for as
	// long as it is away, the FOR KEY SHARE of each lease it fenced on among them, and no other node
	// can take those leases over meanwhile. Ignored by bbolt.
	IdleInTransaction time.Duration
}

// Store is the bbolt database with its group committer.
type Store struct {
	// mu orders Update's enqueue against Close: no write is queued after the committer's last
	// drain.
	mu       sync.RWMutex
	isClosed bool
	// db is the bbolt file; pg the PostgreSQL database in its place (postgres.go).
	db *bolt.DB
	pg *pgStore
	// c is the commit boundary every transaction goes through: bbolt, behind the fault injector
	// when Options.Faults is set.
	c        committer
	opts     Options
	writes   chan *write
	linger   lingers // the committer's (linger)
	done     chan struct{}
	closed   chan struct{}
	accounts accountCache
	signals  signals // the followers of what commits touch (signals.go)
}

type write struct {
	fn func(*Tx) error
	// ahead: fn may run as a probe that reads ahead for its batch (UpdateAhead).
	ahead bool
	// request: a client's request waits on it (TryUpdate); a batch that holds one lingers only
	// briefly (linger).
	request bool
	err     error
	ok      chan struct{}
}

// Open opens (creating if needed) the database in dir. A damaged file is a *DamagedError
// (errors.Is ErrDamaged); an empty one is damaged too, not a new store (docs/operations.md,
// Damaged data).
func Open(dir string, opts Options) (_ *Store, err error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("persistence: create data directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	if _, err := preflight(path, opts.Check, !opts.ReadOnly, opts.LockTimeout); err != nil {
		return nil, err
	}
	db, err := openBolt(path, &bolt.Options{
		Timeout:         opts.LockTimeout,
		InitialMmapSize: 256 << 20,
		FreelistType:    bolt.FreelistMapType,
		ReadOnly:        opts.ReadOnly,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, ErrLocked
	}
	if errors.Is(err, ErrDamaged) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("persistence: open: %w", err)
	}
	// What bbolt still panics on while the store opens (a page whose contents lie) is damage.
	defer func() {
		if r := recover(); r != nil {
			_ = db.Close()
			err = &DamagedError{Path: path, Problems: []string{"bbolt failed reading it: " + fmt.Sprint(r)}}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if !opts.ReadOnly {
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, name := range bucketNames {
				if _, err := tx.CreateBucketIfNotExists(name); err != nil {
					return err
				}
			}
			return upgrade(newBoltTx(tx))
		}); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("persistence: create buckets: %w", err)
		}
	}
	if opts.Check {
		if r := checkDB(db, path); len(r.Problems) > 0 {
			_ = db.Close()
			return nil, &DamagedError{Path: path, Problems: r.Problems, More: r.More}
		}
	}
	s := newStore(boltCommitter{db}, opts)
	s.db = db
	if opts.MaxMappedBytes > 0 {
		go s.watchMapped(opts.MaxMappedBytes, 100*time.Millisecond)
	}
	return s, nil
}

// newStore starts the group committer of a store over a backend's commit boundary.
func newStore(c committer, opts Options) *Store { return newStoreLinger(c, opts, defaultLingers) }

// newStoreLinger is newStore with the committer's linger tuned (tests).
func newStoreLinger(c committer, opts Options, lp lingers) *Store {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	s := &Store{c: opts.Faults.wrap(c), opts: opts, linger: lp, writes: make(chan *write, queueSize), done: make(chan struct{}), closed: make(chan struct{})}
	go s.commitLoop()
	return s
}

// upgrade brings a store whose buckets all exist to this code's layout, in the transaction that
// opens it for writing.
func upgrade(tx kvTx) error {
	if schemaOf(tx) < 2 {
		// Version 2 added posts_count; a store written before it is counted once.
		if err := rebuildPostCounts(tx); err != nil {
			return err
		}
	}
	if schemaOf(tx) < 3 {
		// Version 3 keeps the hashes of revoked keys in apikeys_hash; earlier versions
		// removed them.
		if err := indexRevokedKeys(tx); err != nil {
			return err
		}
	}
	if schemaOf(tx) < 4 {
		// Version 4 added publications; a store written before it is indexed once.
		if err := indexStoredPublications(tx); err != nil {
			return err
		}
	}
	if schemaOf(tx) < 5 {
		// Version 5 keeps the targets of active jobs waiting for their accounts in jobs_waiting
		// and flags the finished ones in jobs_active; a store written before it is indexed once.
		if err := indexWaitingJobs(tx); err != nil {
			return err
		}
	}
	return tx.Bucket(bMeta).Put([]byte("schema"), u64(schemaVersion))
}

// schemaOf returns the layout version a store was last opened for writing with (0: new).
func schemaOf(tx kvTx) uint64 {
	b := tx.Bucket(bMeta)
	if b == nil {
		return 0
	}
	if v := b.Get([]byte("schema")); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// Close stops the committer after the queued writes and closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		return nil
	}
	s.isClosed = true
	s.mu.Unlock()
	close(s.done)
	<-s.closed
	if s.pg != nil {
		return s.pg.close()
	}
	if s.db == nil { // a committer over no file (the committer's own tests)
		return nil
	}
	return s.db.Close()
}

// Path is the database file's path ("" on PostgreSQL).
func (s *Store) Path() string {
	if s.db == nil {
		return ""
	}
	return s.db.Path()
}

// Update runs fn in a write transaction shared with other concurrent writers and returns once the
// transaction is durable. fn may run more than once (when another write of its batch fails, the
// batch is replayed one write at a time), so it must only touch the transaction. When the commit
// fails (disk full, I/O error) every write of the batch gets an error wrapping ErrWriteFailed and
// nothing of them is kept; the next commits are tried as usual, so writes succeed again as soon as
// the storage does. When the commit queue is full, Update waits for room until ctx ends: it is
// for the writes of work already accepted (a job's progress, an outcome), which must not be
// dropped; a write that a request waits on goes through TryUpdate, which refuses instead.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	return s.update(ctx, &write{fn: fn, ok: make(chan struct{})})
}

// UpdateAhead is Update for a write whose function may also run as a probe: on PostgreSQL,
// before a batch of writes runs, the functions of those written with UpdateAhead (or
// TryUpdateAhead) run once or more against what the transaction has read so far, every row
// they have no answer for taken as missing, so that the rows they read are read together in a
// few round trips instead of one each (postgres_prefetch.go). What a probe writes to the
// transaction is dropped, but what it does outside the transaction stays: a variable outside
// fn that fn assigns keeps the probe's value when the real run does not assign it again, and a
// probe takes exactly the "not found" branches (a record to create) that the real run may not.
//
// So fn promises, besides Update's rule that it only touches the transaction, that every
// variable outside it that it assigns is assigned on every path of every run (reset at its
// top), or that it assigns none: its result is what it wrote, or what the caller reads back
// from variables the last run set. It must not panic on a row taken as missing in a way that
// matters (a probe's panic is recovered and ends only that probe). Writes that read nothing
// gain nothing from it. On bbolt it is Update.
func (s *Store) UpdateAhead(ctx context.Context, fn func(*Tx) error) error {
	return s.update(ctx, &write{fn: fn, ahead: true, ok: make(chan struct{})})
}

func (s *Store) update(ctx context.Context, w *write) error {
	s.mu.RLock()
	if s.isClosed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case s.writes <- w:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	// Once queued, a write is committed or failed; wait for it even if ctx ends, so that the
	// caller never reports failure for a write that became durable.
	<-w.ok
	return w.err
}

// TryUpdate is Update for a write a request is waiting on: when the commit queue is full (half
// its capacity taken, the rest kept for Update), it refuses at once with ErrBusy instead of
// waiting for room, and nothing is written. Once queued, it waits for its commit as Update does.
func (s *Store) TryUpdate(fn func(*Tx) error) error {
	return s.tryUpdate(&write{fn: fn, request: true, ok: make(chan struct{})})
}

// TryUpdateAhead is TryUpdate for a write whose function may run as a probe, with the promise
// UpdateAhead describes.
func (s *Store) TryUpdateAhead(fn func(*Tx) error) error {
	return s.tryUpdate(&write{fn: fn, ahead: true, request: true, ok: make(chan struct{})})
}

func (s *Store) tryUpdate(w *write) error {
	s.mu.RLock()
	if s.isClosed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if len(s.writes) >= queueSize/2 {
		s.mu.RUnlock()
		return ErrBusy
	}
	select {
	case s.writes <- w:
	default:
		s.mu.RUnlock()
		return ErrBusy
	}
	s.mu.RUnlock()
	<-w.ok
	return w.err
}

// ReadsAhead reports whether the reads of writes made with UpdateAhead are read ahead, many
// writes' together (PostgreSQL): such a read costs a row in a statement a commit sends anyway,
// where a View of its own costs a statement and a round trip. On bbolt, where a read is a
// lookup in memory but a write's reads run on the one committer thread, it is false.
func (s *Store) ReadsAhead() bool { return s.pg != nil }

// QueueDepth is the number of writes waiting for the committer.
func (s *Store) QueueDepth() int { return len(s.writes) }

// View runs fn in a read transaction.
func (s *Store) View(fn func(*Tx) error) error { return s.c.view(fn) }

// ViewAhead is View for a function that may run as a probe first, with the promise UpdateAhead
// describes (what it assigns outside it is assigned afresh on every run): on PostgreSQL its
// reads are read ahead in a few pipelined round trips (a walk of an index and the records it
// names: one round trip for the walk's page, one for all the records) instead of one each.
// On bbolt it is View.
func (s *Store) ViewAhead(fn func(*Tx) error) error {
	return s.c.view(func(t *Tx) error {
		t.prefetchView(fn)
		return fn(t)
	})
}

func (s *Store) commitLoop() {
	defer close(s.closed)
	// The committer keeps an OS thread of its own. Every write waits for its commit, and under
	// load a commit's duration is mostly the committer waiting to run again after each write
	// and fdatasync. On its own thread it does not wait for the goroutine that took its thread
	// meanwhile: with 64 clients creating drafts on 2 cores, commits took 1.23 ms on a shared
	// thread and about 1.0 ms on its own, and creates rose 12-14% (bench/RESULTS.md).
	runtime.LockOSThread()
	batch := make([]*write, 0, s.opts.MaxBatch)
	l := linger{lingers: s.linger}
	for {
		var first *write
		select {
		case first = <-s.writes:
		case <-s.done:
			// Drain what was queued before Close.
			for {
				select {
				case w := <-s.writes:
					s.commit([]*write{w})
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case w := <-s.writes:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		batch = l.wait(s, batch)
		start := time.Now()
		waiting := s.commit(batch)
		l.committed(batch, time.Since(start), waiting)
	}
}

// linger makes commits fewer and fuller when they run back to back. Every commit costs the
// same CPU whatever it carries (bbolt's spill, freelist and meta page, two fdatasyncs and the
// kernel's journal work behind them, waking the committer's thread), and the pages a batch's
// writes share (branch pages, the leaves of the keys written last) are written once for all of
// them: when the CPU is what bounds the throughput, writers are slow to come back with their
// next write, each commit takes the few that are waiting, and the fixed cost is paid again and
// again for small batches.
//
// So when the last commit ended with writes already waiting (the committer is never idle: the
// commits run back to back) and the next batch is small, the committer waits a little for more
// writes before committing it: at most a share of the last commit's duration (the writes of
// the batch have waited that long for it already), never more than a cap, and no longer than
// it takes for the batch to reach the size from which it no longer waits. When the last commit
// found nothing waiting (the store is idle or lightly loaded, a lone writer), a write is
// committed at once: the linger adds no latency there.
//
// How long it waits depends on who waits for the batch. A batch that holds a write a client's
// request waits on (TryUpdate: a post created, edited, published) lingers briefly (lingers.request);
// one of work already accepted alone (a job's progress, an account's attempt, an outcome: Update)
// lingers longer (lingers.accepted), which is where a backlog's drain spends its CPU, unless the
// last batch held a request's write too: while requests keep coming (a load, an overload), every
// commit keeps the brief linger, so that accepting is never slowed for the drain. A request's
// write that arrives during a longer linger shortens it to the request's bound, counted from the
// linger's start.
type linger struct {
	lingers
	backToBack bool
	last       time.Duration // the last commit's duration
	requests   bool          // the last commit's batch held a request's write
	timer      *time.Timer
}

// lingers tune the linger of a batch that holds a request's write and of one that does not.
type lingers struct {
	request, accepted lingerParams
}

// lingerParams tune one linger.
type lingerParams struct {
	writes int           // the batch size from which a commit no longer waits
	share  int           // a linger waits at most the last commit's duration divided by this (0: max alone bounds it)
	max    time.Duration // and never longer than this (0: no linger)
}

// bound is how long a linger with these parameters may last after a commit of duration last.
func (p lingerParams) bound(last time.Duration) time.Duration {
	d := p.max
	if p.share > 0 {
		d = min(last/time.Duration(p.share), d)
	}
	return d
}

// defaultLingers: a batch with a request's write waits only while under 16 writes (on two cores,
// publishing's commits carried 13.8 writes while the CPU was the bound; 64 clients creating
// drafts, waiting on the disk, 27-30, which a linger would only delay: the writers are all in the
// batch already), a quarter of the last commit's duration at most, and never more than half a
// millisecond. A batch of accepted work alone waits while under 48 writes, up to the last
// commit's duration and 3 ms: in a drained backlog that halves the commits (0.24 to 0.12 a job),
// and the jobs, whose progress waits on these writes, are many while the CPU is the bound
// (bench/RESULTS.md).
var defaultLingers = lingers{
	request:  lingerParams{writes: 16, share: 4, max: 500 * time.Microsecond},
	accepted: lingerParams{writes: 48, share: 1, max: 3 * time.Millisecond},
}

// wait lingers for more writes when the commits run back to back and batch is small, and
// returns the batch with what arrived meanwhile. Close ends a linger at once.
func (l *linger) wait(s *Store, batch []*write) []*write {
	if !l.backToBack {
		return batch
	}
	p := l.accepted
	if l.requests || holdsRequest(batch) {
		p = l.request
	}
	target := min(p.writes, s.opts.MaxBatch)
	d := p.bound(l.last)
	if len(batch) >= target || d <= 0 {
		return batch
	}
	start := time.Now()
	if l.timer == nil {
		l.timer = time.NewTimer(d)
	} else {
		l.timer.Reset(d)
	}
	defer l.timer.Stop()
	for len(batch) < target {
		select {
		case w := <-s.writes:
			batch = append(batch, w)
			if w.request && p != l.request {
				// A request waits now: the linger ends by the request's bound.
				p = l.request
				target = min(p.writes, s.opts.MaxBatch)
				left := p.bound(l.last) - time.Since(start)
				if left <= 0 {
					return batch
				}
				l.timer.Reset(left)
			}
		case <-l.timer.C:
			return batch
		case <-s.done:
			return batch
		}
	}
	return batch
}

// committed notes a commit of batch: how long it took and whether writes were waiting when it
// ended.
func (l *linger) committed(batch []*write, d time.Duration, waiting bool) {
	l.last, l.backToBack, l.requests = d, waiting, holdsRequest(batch)
}

// holdsRequest reports whether a request waits on a write of batch.
func holdsRequest(batch []*write) bool {
	return slices.ContainsFunc(batch, func(w *write) bool { return w.request })
}

var errBatchFailed = errors.New("persistence: a write in the batch failed")

// commit commits a batch and acknowledges its writes. It reports whether writes were waiting in
// the queue when the transaction ended (before the acknowledgements, which let writers queue
// their next writes at once).
func (s *Store) commit(batch []*write) (waiting bool) {
	start := time.Now()
	failed := -1
	var tx *Tx
	err := s.c.update(func(t *Tx) error {
		failed = -1
		tx, t.collect = t, s.collecting()
		// On PostgreSQL, the rows the batch's UpdateAhead writes read are read ahead together
		// (postgres_prefetch.go).
		t.prefetch(batch)
		for i, w := range batch {
			if err := w.fn(t); err != nil {
				w.err = err
				failed = i
				return errBatchFailed
			}
		}
		return nil
	})
	waiting = len(s.writes) > 0
	if failed < 0 {
		if err != nil {
			// The commit itself failed (disk full, I/O error): every write failed.
			err = writeFailed(err)
		} else if tx != nil {
			s.signals.wakeCommitted(tx)
		}
		s.observe(len(batch), time.Since(start), err)
		for _, w := range batch {
			w.err = err
			close(w.ok)
		}
		return waiting
	}
	// One write refused: replay each alone so the others still commit.
	for _, w := range batch {
		start := time.Now()
		var refused error
		var tx *Tx
		err := s.c.update(func(t *Tx) error {
			tx, t.collect = t, s.collecting()
			refused = w.fn(t)
			return refused
		})
		if err != nil && refused == nil {
			err = writeFailed(err)
			s.observe(1, time.Since(start), err)
		} else if err == nil {
			s.signals.wakeCommitted(tx)
			s.observe(1, time.Since(start), nil)
		}
		w.err = err
		close(w.ok)
	}
	return waiting
}

// observe reports one commit to Options.OnCommit.
func (s *Store) observe(writes int, d time.Duration, err error) {
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(writes, d, err)
	}
}

// Probe commits a tiny write (meta "probe" → the time) through the group committer and returns
// its outcome: nil once the store can write. A readiness check calls it when the last commit
// failed, so that a store that works again is noticed without other traffic.
func (s *Store) Probe(ctx context.Context) error {
	now := u64(uint64(time.Now().UnixNano()))
	return s.Update(ctx, func(tx *Tx) error { return tx.kv.Bucket(bMeta).Put([]byte("probe"), now) })
}

// Backup writes a consistent snapshot of the database to path while it stays in use.
func (s *Store) Backup(path string) error {
	if s.db == nil {
		return ErrBackupPostgres
	}
	return s.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(path, 0o600) })
}

// Tx is a read or write transaction with Herald's typed accessors, over a backend's transaction
// behind the key-value seam (kv.go).
type Tx struct {
	kv kvTx
	// collect says the commit tells the followers of the topics it touches (signals.go);
	// touched are those topics.
	collect bool
	touched []Topic
}

// indexRevokedKeys puts the hashes of revoked keys back into apikeys_hash, which stores written
// before schema 3 removed on revocation.
func indexRevokedKeys(tx kvTx) error {
	hashes := tx.Bucket(bAPIKeysHash)
	return forEach(tx.Bucket(bAPIKeys), func(id, v []byte) error {
		var k APIKey
		if err := Decode(v, &k); err != nil {
			return fmt.Errorf("persistence: read API key: %w", err)
		}
		if k.RevokedAt == nil || len(k.Hash) == 0 || hashes.Get(k.Hash) != nil {
			return nil
		}
		return hashes.Put(k.Hash, append([]byte(nil), id...))
	})
}
