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
}

// Throttle counts failed sign-ins per e-mail and per client address, in memory, with bounded
// size. A restart forgets the counts (the refusal windows are minutes long).
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
	count int
	last  time.Time
	until time.Time // refused until then
}

// Check returns how long sign-ins with this e-mail or from this address are still refused (0:
// allowed).
func (t *Throttle) Check(email, addr string) time.Duration {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	for _, f := range []*failures{t.email.get(email), t.addr.get(addr)} {
		if f != nil && f.until.After(now) && f.until.Sub(now) > wait {
			wait = f.until.Sub(now)
		}
	}
	return wait
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
	if f == nil || now.Sub(f.last) >= t.cfg.Forget {
		f = &failures{}
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

// Succeed forgets an e-mail's failures.
func (t *Throttle) Succeed(email string) {
	t.mu.Lock()
	t.email.remove(email)
	t.mu.Unlock()
}

// Sweep forgets the counts with no failure for Forget that are not refusing anything.
func (t *Throttle) Sweep() {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range []*lru{t.email, t.addr} {
		l.removeIf(func(f *failures) bool { return now.Sub(f.last) >= t.cfg.Forget && !f.until.After(now) })
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
