package session

import (
	"container/list"
	"sync"
	"time"
)

// ThrottleConfig bounds failed sign-ins. Zero fields take the defaults below.
type ThrottleConfig struct {
	// EmailFailures is how many failures in a row one e-mail may have before sign-ins with it are
	// refused for a while (default 10); a success resets it.
	EmailFailures int
	// AddressFailures is the same for one client address (default 20: several people may share
	// an address). A success does not reset it, so that signing in to one's own account between
	// guesses gains nothing.
	AddressFailures int
	// Base is the first refusal window (default 1 min); each further failure doubles it, up to
	// Max (default 15 min).
	Base, Max time.Duration
	// Forget drops the count of an e-mail or address with no failure for this long (default 1h).
	Forget time.Duration
	// Capacity bounds the e-mails and the addresses remembered (default 65536 each); the least
	// recently failed are forgotten first.
	Capacity int
	// AddressInFlight is how many attempts of one client address may be checked at once (default
	// 4): the others are refused at once rather than queued for the password hasher, so that one
	// address's burst cannot hold everyone else's sign-in behind it.
	AddressInFlight int
}

func (c *ThrottleConfig) defaults() {
	if c.EmailFailures <= 0 {
		c.EmailFailures = 10
	}
	if c.AddressFailures <= 0 {
		c.AddressFailures = 20
	}
	if c.Base <= 0 {
		c.Base = time.Minute
	}
	if c.Max <= 0 {
		c.Max = 15 * time.Minute
	}
	if c.Forget <= 0 {
		c.Forget = time.Hour
	}
	if c.Capacity <= 0 {
		c.Capacity = 65536
	}
	if c.AddressInFlight <= 0 {
		c.AddressInFlight = 4
	}
}

// InFlightWait is the Retry-After of an attempt refused because the attempts already in flight
// could use up what is left of the allowance (or the address has AddressInFlight of them): their
// outcome is known within a second or so.
const InFlightWait = time.Second

// Throttle counts failed sign-ins per e-mail and per client address, in memory, with bounded
// size. A restart forgets the counts (the refusal windows are minutes long).
//
// An attempt takes its place in the counts before its password is hashed (Reserve), in the same
// step as the check: each attempt in flight counts as a failure until its outcome is known, so
// a burst of concurrent attempts gets no more hashes than failures are allowed, however many
// arrive at once.
type Throttle struct {
	cfg   ThrottleConfig
	now   func() time.Time
	mu    sync.Mutex
	email *lru
	addr  *lru
}

// NewThrottle builds a throttle.
func NewThrottle(cfg ThrottleConfig, now func() time.Time) *Throttle {
	cfg.defaults()
	return &Throttle{cfg: cfg, now: now, email: newLRU(cfg.Capacity), addr: newLRU(cfg.Capacity)}
}

type failures struct {
	count   int
	pending int // attempts reserved whose outcome is not known yet
	last    time.Time
	until   time.Time // refused until then
}

// stale reports whether f's count is forgotten: no failure for Forget and nothing refused.
func (t *Throttle) stale(f *failures, now time.Time) bool {
	return now.Sub(f.last) >= t.cfg.Forget && !f.until.After(now)
}

// Reservation is an attempt admitted by Reserve, counted as in flight until its outcome is told
// with exactly one of Fail, Succeed or Release.
type Reservation struct {
	t           *Throttle
	email, addr string
	done        bool
}

// Reserve checks an attempt with this e-mail from this address and, when it is allowed, counts
// it as in flight, in one step. The wait is how long the attempt is refused (0: allowed, with a
// reservation): a refusal window, or InFlightWait when the attempts in flight could use up the
// allowance of the e-mail or the address, or the address has AddressInFlight of them.
func (t *Throttle) Reserve(email, addr string) (*Reservation, time.Duration) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	check := func(l *lru, key string, limit, inFlight int) {
		f := l.get(key)
		if key == "" || f == nil {
			return
		}
		if f.until.After(now) {
			wait = max(wait, f.until.Sub(now))
			return
		}
		count := f.count
		if t.stale(f, now) {
			count = 0
		}
		// What is left of the allowance; past a refusal window, one attempt at a time (its
		// failure opens the next window).
		allowance := max(limit-count, 1)
		if f.pending >= allowance || f.pending >= inFlight {
			wait = max(wait, InFlightWait)
		}
	}
	check(t.email, email, t.cfg.EmailFailures, t.cfg.EmailFailures)
	check(t.addr, addr, t.cfg.AddressFailures, t.cfg.AddressInFlight)
	if wait > 0 {
		return nil, wait
	}
	for _, e := range []struct {
		l   *lru
		key string
	}{{t.email, email}, {t.addr, addr}} {
		if e.key == "" {
			continue
		}
		f := e.l.get(e.key)
		if f == nil {
			f = &failures{last: now}
		}
		f.pending++
		e.l.put(e.key, f)
	}
	return &Reservation{t: t, email: email, addr: addr}, 0
}

// unreserve takes the attempt out of the in-flight counts; false if it already was.
func (r *Reservation) unreserve() bool {
	if r.done {
		return false
	}
	r.done = true
	for _, e := range []struct {
		l   *lru
		key string
	}{{r.t.email, r.email}, {r.t.addr, r.addr}} {
		if f := e.l.get(e.key); f != nil && f.pending > 0 {
			f.pending--
			if f.pending == 0 && f.count == 0 {
				e.l.remove(e.key) // nothing to remember
			}
		}
	}
	return true
}

// Fail counts the attempt as a failure.
func (r *Reservation) Fail() {
	now := r.t.now()
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	if r.unreserve() {
		r.t.fail(r.t.email, r.email, r.t.cfg.EmailFailures, now)
		r.t.fail(r.t.addr, r.addr, r.t.cfg.AddressFailures, now)
	}
}

// Succeed ends the attempt as a success: the e-mail's failures are forgotten, the address's
// stay (signing in to one's own account between guesses gains nothing).
func (r *Reservation) Succeed() {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	if r.unreserve() {
		if f := r.t.email.get(r.email); f != nil && f.pending == 0 {
			r.t.email.remove(r.email)
		} else if f != nil {
			f.count, f.until = 0, time.Time{} // other attempts are still in flight
		}
	}
}

// Release ends an attempt whose password was never compared (the hasher was busy, the client
// left): it counts as nothing.
func (r *Reservation) Release() {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	r.unreserve()
}

// Fail counts a failed sign-in.
func (t *Throttle) Fail(email, addr string) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fail(t.email, email, t.cfg.EmailFailures, now)
	t.fail(t.addr, addr, t.cfg.AddressFailures, now)
}

func (t *Throttle) fail(l *lru, key string, limit int, now time.Time) {
	if key == "" {
		return
	}
	f := l.get(key)
	if f == nil {
		f = &failures{}
	} else if now.Sub(f.last) >= t.cfg.Forget {
		f.count, f.until = 0, time.Time{} // forgotten; the attempts in flight still count
	}
	f.count++
	f.last = now
	if f.count >= limit {
		wait := t.cfg.Base
		for i := limit; i < f.count && wait < t.cfg.Max; i++ {
			wait *= 2
		}
		f.until = now.Add(min(wait, t.cfg.Max))
	}
	l.put(key, f)
}

// Sweep forgets the counts with no failure for Forget that are not refusing anything.
func (t *Throttle) Sweep() {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range []*lru{t.email, t.addr} {
		l.removeIf(func(f *failures) bool { return f.pending == 0 && t.stale(f, now) })
	}
}

// Len is how many e-mails and addresses are remembered.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.email.ll.Len() + t.addr.ll.Len()
}

// lru is a map with a capacity that forgets its least recently updated entry first.
type lru struct {
	cap int
	ll  *list.List
	m   map[string]*list.Element
}

type lruEntry struct {
	key string
	f   *failures
}

func newLRU(capacity int) *lru {
	return &lru{cap: capacity, ll: list.New(), m: map[string]*list.Element{}}
}

func (l *lru) get(key string) *failures {
	if e, ok := l.m[key]; ok {
		return e.Value.(*lruEntry).f
	}
	return nil
}

func (l *lru) put(key string, f *failures) {
	if e, ok := l.m[key]; ok {
		e.Value.(*lruEntry).f = f
		l.ll.MoveToFront(e)
		return
	}
	l.m[key] = l.ll.PushFront(&lruEntry{key: key, f: f})
	for l.ll.Len() > l.cap {
		last := l.ll.Back()
		l.ll.Remove(last)
		delete(l.m, last.Value.(*lruEntry).key)
	}
}

func (l *lru) remove(key string) {
	if e, ok := l.m[key]; ok {
		l.ll.Remove(e)
		delete(l.m, key)
	}
}

func (l *lru) removeIf(drop func(*failures) bool) {
	for e := l.ll.Front(); e != nil; {
		next := e.Next()
		if en := e.Value.(*lruEntry); drop(en.f) {
			l.ll.Remove(e)
			delete(l.m, en.key)
		}
		e = next
	}
}
