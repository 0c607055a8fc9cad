// Package cluster keeps one node's share of the work when several Herald nodes run over one
// PostgreSQL store: which account shards and singletons it owns, under which epochs, and
// whether it may still act for them.
//
// Ownership is decided by leases in PostgreSQL (persistence.Leases), never by a node's own view
// of the others: every lease goes to the live node that rendezvous hashing names for it, a node
// takes a lease only when it is free or expired, and it gives one up (after draining it) when a
// node that should own it joins. Two fences keep a node that lost a lease from doing harm:
//   - its store writes for the lease check the epoch (persistence.Tx.Fence), and
//   - it stops acting for a lease once its last successful renewal, by its own monotonic clock
//     and counted from before the renewal was sent, is older than the lease lifetime minus a
//     margin (Trusted). The database counts the lifetime from when it ran the renewal, later,
//     so the node's trust ends before anyone else can take the lease.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// ShardName is the lease name of account shard i.
func ShardName(i int) string { return "shard/" + strconv.Itoa(i) }

// SingletonName is the lease name of a singleton (the scheduler, the outbox dispatcher, …).
func SingletonName(kind string) string { return "singleton/" + kind }

// ShardOf is the shard of an account id among n: a stable hash, the same on every node and
// across releases.
func ShardOf(accountID string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(accountID))
	return int(h.Sum32() % uint32(n))
}

// Owner is the node that rendezvous (highest random weight) hashing names for a lease among
// the live node ids: when a node joins or leaves, only the leases it gains or loses move.
func Owner(name string, nodes []string) string {
	best, bestW := "", uint64(0)
	for _, n := range nodes {
		h := fnv.New64a()
		_, _ = h.Write([]byte(n))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(name))
		if w := mix(h.Sum64()); best == "" || w > bestW || (w == bestW && n < best) {
			best, bestW = n, w
		}
	}
	return best
}

// mix spreads FNV's output (splitmix64's finaliser), whose high bits vary little between
// similar inputs.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Config is a member's work and what it calls when its share changes.
type Config struct {
	Leases *persistence.Leases
	// Addr is where the other nodes reach this one (its remote address).
	Addr string
	// Shards is the number of account shards (256 when 0); Singletons the singleton kinds.
	Shards     int
	Singletons []string
	// Margin is taken off the lease lifetime for the trust window (a fifth of it when 0).
	Margin time.Duration
	// Acquired is called when the node takes a lease, before it acts under it. A takeover
	// (Taken.Released false) means the previous owner may have had calls in flight until its
	// expiry: work that may have been in flight is looked up only after that.
	Acquired func(persistence.Taken)
	// Drain is called before the node gives a lease up (another node should own it, or this
	// one stops): it returns once the work under the lease is finished or handed back to the
	// store. It is never called for a lease already lost.
	Drain func(persistence.Lease)
	// Lost is called when the node finds it no longer holds a lease it held (expired, maybe
	// taken): whatever runs under it must stop at once.
	Lost func(persistence.Lease)
	Log  *slog.Logger
	// Metrics, when set, counts the member's leases, epochs and hand-offs (NewMetrics).
	Metrics *Metrics
	// now is the monotonic clock (time.Now; tests replace it).
	now func() time.Time
}

// Member is one node's membership: it joins, renews, takes and gives up leases until stopped.
type Member struct {
	cfg  Config
	mu   sync.Mutex
	held map[string]persistence.Lease
	// trustedUntil is when the node stops acting under its leases unless it renews first.
	trustedUntil time.Time
	node         string
	names        []string
	// draining are the leases being drained before their release: still held (their writes
	// fence on them) but no longer trusted, so that nothing new starts under them.
	draining map[string]bool
	// where is each shard's owner's address as the lease table was last read (at a step, or by
	// Refresh). whereSeq numbers the readings as they begin and whereAt is the number of the
	// one where came from, so that a reading that ends after a later one does not replace it.
	where             []string
	whereSeq, whereAt uint64
	// refreshing is set while Refresh's reader runs; refreshed, when set, is closed by the next
	// reading it begins.
	refreshing bool
	refreshed  chan struct{}
	// ready is closed once the member joined and ran its first step.
	ready     chan struct{}
	readyOnce sync.Once
	// drains are the hand-offs under way (giveUp).
	drains sync.WaitGroup
	// pauseReq, when set (tests: a stopped process), parks the loop before its next renewal
	// until it is closed; parked is closed once the loop is parked.
	pauseReq, parked chan struct{}
}

// New makes a member; Run joins and keeps it.
func New(cfg Config) *Member {
	if cfg.Shards <= 0 {
		cfg.Shards = 256
	}
	if cfg.Margin <= 0 {
		cfg.Margin = cfg.Leases.TTL() / 5
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	for _, f := range []*func(persistence.Lease){&cfg.Drain, &cfg.Lost} {
		if *f == nil {
			*f = func(persistence.Lease) {}
		}
	}
	if cfg.Acquired == nil {
		cfg.Acquired = func(persistence.Taken) {}
	}
	m := &Member{cfg: cfg, held: map[string]persistence.Lease{}, draining: map[string]bool{},
		where: make([]string, cfg.Shards), ready: make(chan struct{})}
	cfg.Metrics.heldBy(m)
	for i := range cfg.Shards {
		m.names = append(m.names, ShardName(i))
	}
	for _, s := range cfg.Singletons {
		m.names = append(m.names, SingletonName(s))
	}
	return m
}

// Node is the id the member runs under now ("" before it joined).
func (m *Member) Node() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node
}

// Trusted returns the lease name is held under, if the node holds it and may still act for
// it: its last renewal is recent enough that no other node can have taken it.
func (m *Member) Trusted(name string) (persistence.Lease, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.draining[name] {
		return persistence.Lease{}, false
	}
	return m.finishing(name)
}

// Finishing reports whether the node holds lease name and its last renewal is recent enough
// that no other node can have taken it, whether or not it is handing the lease off: what the
// node started under the lease may still be finished (a hand-off waits for it), nothing new
// started (Trusted).
func (m *Member) Finishing(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.finishing(name)
	return ok
}

// finishing is the lease name is held under, if held and recently renewed; m.mu is held.
func (m *Member) finishing(name string) (persistence.Lease, bool) {
	l, ok := m.held[name]
	if !ok || !m.cfg.now().Before(m.trustedUntil) {
		return persistence.Lease{}, false
	}
	return l, true
}

// Lease returns the lease name is held under, if the node holds it, trusted or not (a lease
// being drained, one whose renewal is late): writes fence on it, and the store refuses them once
// another node took it.
func (m *Member) Lease(name string) (persistence.Lease, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.held[name]
	return l, ok
}

// Here reports whether the node holds shard i's lease and may act under it (Placement).
func (m *Member) Here(i int) bool {
	_, ok := m.Trusted(ShardName(i))
	return ok
}

// Where is the address of the node that held shard i's lease when the member last read the
// lease table (at its step, or by Refresh), "" when none did (Placement). It never reads the
// database itself.
func (m *Member) Where(i int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 || i >= len(m.where) {
		return ""
	}
	return m.where[i]
}

// Shards is the number of account shards.
func (m *Member) Shards() int { return m.cfg.Shards }

// Current reports whether the member's membership is current: it joined and its last renewal
// is recent enough that its leases are trusted (a node cut off from the database, or paused,
// is not).
func (m *Member) Current() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node != "" && m.cfg.now().Before(m.trustedUntil)
}

// Ready is closed once the member joined and ran its first step: it took the leases it should
// own that were free, and read where the others are.
func (m *Member) Ready() <-chan struct{} { return m.ready }

// Held lists the leases the node holds, by name.
func (m *Member) Held() []persistence.Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]persistence.Lease, 0, len(m.held))
	for _, l := range m.held {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Run joins and keeps the membership until ctx ends, then drains and releases every lease and
// leaves. It renews a few times per lease lifetime.
func (m *Member) Run(ctx context.Context) error {
	if err := m.join(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(m.cfg.Leases.TTL() / 4)
	defer tick.Stop()
	for {
		m.step(ctx)
		select {
		case <-ctx.Done():
			m.leave()
			return nil
		case <-tick.C:
		}
	}
}

func (m *Member) join(ctx context.Context) error {
	id, err := m.cfg.Leases.Join(ctx, m.cfg.Addr)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.node = id
	m.trustedUntil = time.Time{}
	m.mu.Unlock()
	m.cfg.Log.Info("cluster: joined", "node", id, "addr", m.cfg.Addr)
	return nil
}

// step renews, drops what was lost, then gives up what another node should own and takes what
// this one should.
func (m *Member) step(ctx context.Context) {
	m.mu.Lock()
	p := m.pauseReq
	if p != nil && m.parked != nil {
		close(m.parked)
		m.parked = nil
	}
	m.mu.Unlock()
	if p != nil {
		select {
		case <-p:
		case <-ctx.Done():
			return
		}
		m.mu.Lock()
		m.pauseReq = nil
		m.mu.Unlock()
	}
	if m.Node() == "" {
		// It stepped down while the database was out of reach: it joins under a new id before
		// anything else, and never renews the old one.
		if err := m.join(ctx); err != nil {
			m.cfg.Log.Warn("cluster: joining again failed", "error", err)
			return
		}
	}
	sent := m.cfg.now()
	renewed, err := m.renew(ctx)
	if errors.Is(err, persistence.ErrStale) {
		m.stepDown(ctx)
		return
	}
	if err != nil {
		m.cfg.Log.Warn("cluster: renewal failed", "error", err)
		if m.mayHaveExpired() {
			// Cut off from the database for a lease lifetime: its leases may have passed to
			// another node, so it gives them up now (its actors stop) rather than when it
			// next reaches the database.
			m.stepDown(ctx)
		}
		return
	}
	m.renewed(sent, renewed)
	live, err := m.cfg.Leases.Live(ctx)
	if err != nil {
		m.cfg.Log.Warn("cluster: reading the live nodes failed", "error", err)
		return
	}
	ids := make([]string, len(live))
	for i, n := range live {
		ids[i] = n.ID
	}
	self := m.Node()
	for _, name := range m.names {
		if m.cfg.now().Sub(sent) > m.cfg.Leases.TTL()/4 {
			// A long step (a node that starts takes every free lease, one transaction each)
			// renews on the way, so that the leases it took first do not expire before it ends.
			sent = m.cfg.now()
			renewed, err := m.renew(ctx)
			if errors.Is(err, persistence.ErrStale) {
				m.stepDown(ctx)
				return
			}
			if err == nil {
				m.renewed(sent, renewed)
			}
		}
		want := Owner(name, ids) == self
		m.mu.Lock()
		l, has := m.held[name]
		draining := m.draining[name]
		if has && !want && len(ids) > 1 && !draining {
			// Drained beside the loop, which goes on renewing every lease meanwhile (this one
			// included: it is released only once drained).
			m.draining[name] = true
			m.drains.Add(1)
			go m.giveUp(l)
		}
		m.mu.Unlock()
		if !has && want {
			m.take(ctx, name)
		}
	}
	m.readWhere(ctx)
	m.readyOnce.Do(func() { close(m.ready) })
}

// renew renews the node's heartbeat and leases within a lease lifetime: a renewal that has not
// answered by then may find its leases expired anyway, and a link that swallows packets would
// otherwise hold the loop (and the step-down) for as long as TCP retries.
func (m *Member) renew(ctx context.Context) ([]persistence.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Leases.TTL())
	defer cancel()
	return m.cfg.Leases.Renew(ctx)
}

// mayHaveExpired reports whether the node holds leases whose last successful renewal was sent
// a lease lifetime ago or more, by its own clock: the database may have let them expire since.
func (m *Member) mayHaveExpired() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.held) > 0 && !m.cfg.now().Before(m.trustedUntil.Add(m.cfg.Margin))
}

// readWhere reads where each shard's owner is, once per step and at Refresh (Where answers
// from it).
func (m *Member) readWhere(ctx context.Context) {
	m.mu.Lock()
	m.whereSeq++
	seq := m.whereSeq
	m.mu.Unlock()
	owners, err := m.cfg.Leases.Owners(ctx)
	if err != nil {
		m.cfg.Log.Warn("cluster: reading the lease owners failed", "error", err)
		return
	}
	where := make([]string, m.cfg.Shards)
	for i := range where {
		where[i] = owners[ShardName(i)]
	}
	m.mu.Lock()
	if seq > m.whereAt {
		m.where, m.whereAt = where, seq
	}
	m.mu.Unlock()
}

// Refresh reads the lease table again, off the member's step, and returns once a reading that
// began after the call has ended (or ctx ended): Where then names the owners as they were at
// least as late as the call (Refresher). A node forwarding a request finds in it the owner of a
// shard that moved since its last step (up to a quarter of a lease lifetime ago) instead of
// answering that none is known. The callers that arrive while a reading runs share the next
// one, so that at most one runs at a time, whatever the number of callers.
func (m *Member) Refresh(ctx context.Context) {
	m.mu.Lock()
	if m.refreshed == nil {
		m.refreshed = make(chan struct{})
	}
	done := m.refreshed
	run := !m.refreshing
	m.refreshing = true
	m.mu.Unlock()
	if run {
		go m.refreshLoop()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// refreshLoop reads the lease table for the callers of Refresh, once for all those that waited
// while the reading before ran, until none waits.
func (m *Member) refreshLoop() {
	for {
		m.mu.Lock()
		done := m.refreshed
		m.refreshed = nil
		if done == nil {
			m.refreshing = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Leases.TTL())
		m.readWhere(ctx)
		cancel()
		close(done)
	}
}

// renewed keeps what the renewal returned and reports the leases missing from it as lost.
func (m *Member) renewed(sent time.Time, renewed []persistence.Lease) {
	now := make(map[string]persistence.Lease, len(renewed))
	for _, l := range renewed {
		now[l.Name] = l
	}
	var lost []persistence.Lease
	m.mu.Lock()
	for name, l := range m.held {
		if r, ok := now[name]; !ok || r.Epoch != l.Epoch {
			lost = append(lost, l)
			delete(m.held, name)
		}
	}
	m.trustedUntil = sent.Add(m.cfg.Leases.TTL() - m.cfg.Margin)
	m.mu.Unlock()
	for _, l := range lost {
		m.cfg.Log.Warn("cluster: lease lost", "lease", l.Name, "epoch", l.Epoch)
		m.cfg.Lost(l)
	}
}

func (m *Member) take(ctx context.Context, name string) {
	sent := m.cfg.now()
	t, ok, err := m.cfg.Leases.Acquire(ctx, name)
	if err != nil {
		m.cfg.Log.Warn("cluster: taking a lease failed", "lease", name, "error", err)
		return
	}
	if !ok {
		return
	}
	m.mu.Lock()
	m.held[name] = t.Lease
	// A lease just taken runs a whole lifetime from the database's now, which is later than sent;
	// the other leases' trust still follows their last renewal.
	if until := sent.Add(m.cfg.Leases.TTL() - m.cfg.Margin); len(m.held) == 1 || until.Before(m.trustedUntil) {
		m.trustedUntil = until
	}
	m.mu.Unlock()
	m.cfg.Log.Info("cluster: lease taken", "lease", name, "epoch", t.Epoch, "takeover", !t.Released)
	m.cfg.Metrics.taken(t)
	m.cfg.Acquired(t)
}

// giveUp drains a lease marked draining and releases it; it runs beside the member's loop.
func (m *Member) giveUp(l persistence.Lease) {
	defer m.drains.Done()
	start := time.Now()
	m.cfg.Drain(l)
	m.mu.Lock()
	if h, ok := m.held[l.Name]; !ok || h.Epoch != l.Epoch || !m.draining[l.Name] {
		// Lost meanwhile (a step-down): nothing to release.
		m.mu.Unlock()
		return
	}
	delete(m.held, l.Name)
	delete(m.draining, l.Name)
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Leases.TTL())
	defer cancel()
	if err := m.cfg.Leases.Release(ctx, l); err != nil {
		// It expires in its time instead; the new owner waits for that.
		m.cfg.Log.Warn("cluster: releasing a lease failed", "lease", l.Name, "error", err)
	}
	m.cfg.Metrics.handedOff(time.Since(start))
}

// stepDown drops every lease (they may have been taken already) and joins under a new id: at
// once when the database answers, else at a later step (the node has no id meanwhile, so that
// the old one is never renewed again).
func (m *Member) stepDown(ctx context.Context) {
	m.mu.Lock()
	lost := make([]persistence.Lease, 0, len(m.held))
	for _, l := range m.held {
		lost = append(lost, l)
	}
	m.held = map[string]persistence.Lease{}
	clear(m.draining)
	old := m.node
	m.node = ""
	m.mu.Unlock()
	m.cfg.Log.Warn("cluster: this node's membership expired or cannot be renewed; stepping down", "node", old)
	for _, l := range lost {
		m.cfg.Lost(l)
	}
	// The leases still under the old id are not released: calls this node started before it
	// went silent may still be under way, so whoever takes them next must take them over (and
	// wait out the call time-out before looking those calls up), never as a hand-off. They
	// expire in their time; the old row is forgotten by a later Join.
	if err := m.join(ctx); err != nil {
		m.cfg.Log.Warn("cluster: joining again failed", "error", err)
	}
}

// leave drains and releases what the node holds, then removes it, within one lease lifetime.
func (m *Member) leave() {
	// The leases are renewed while their work drains, so that a long drain (a slow call) does
	// not let them expire under it.
	stop := make(chan struct{})
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		tick := time.NewTicker(m.cfg.Leases.TTL() / 4)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if m.Node() == "" {
					continue // stepped down: the old id is never renewed
				}
				ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Leases.TTL()/4)
				sent := m.cfg.now()
				if renewed, err := m.cfg.Leases.Renew(ctx); err == nil {
					m.renewed(sent, renewed)
				}
				cancel()
			}
		}
	}()
	defer func() { close(stop); <-renewing }()
	m.drains.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Leases.TTL())
	defer cancel()
	for _, l := range m.Held() {
		if _, ok := m.Trusted(l.Name); ok {
			start := time.Now()
			m.mu.Lock()
			m.draining[l.Name] = true
			m.mu.Unlock()
			m.cfg.Drain(l)
			m.cfg.Metrics.handedOff(time.Since(start))
		} else {
			m.cfg.Lost(l)
		}
	}
	m.mu.Lock()
	m.held = map[string]persistence.Lease{}
	stepped := m.node == ""
	m.mu.Unlock()
	if stepped {
		// It stepped down and never joined again: the old id's leases expire in their time
		// (calls made under them may still be under way), and it has nothing else to leave.
		return
	}
	if err := m.cfg.Leases.Leave(ctx); err != nil {
		m.cfg.Log.Warn("cluster: leaving failed; the leases expire instead", "error", err)
	}
}

// AddSingletons adds singleton kinds to the leases the member shares out among the nodes (every
// node must add the same); call it before Run.
func (m *Member) AddSingletons(kinds ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range kinds {
		m.names = append(m.names, SingletonName(s))
	}
}

// String names the member for logs.
func (m *Member) String() string { return fmt.Sprintf("node %s at %s", m.Node(), m.cfg.Addr) }
