// Package ratelimit enforces the per-plan hourly request quota of each user, across all of the
// user's keys.
//
// The window is fixed: it opens with a user's first request and lasts one hour; RateLimit-Reset
// counts the seconds until it closes. A fixed window is exact under concurrency (a counter under a
// lock) and tells clients the simplest truth: how many requests are left, and when the quota
// refills in full. Counters live in memory; Snapshot and Restore carry the open windows across a
// restart (the server stores a snapshot every few seconds and at shutdown).
package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// Window is the quota period.
const Window = time.Hour

// Decision is the outcome of one request against the quota.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is the time until the window closes (at least one second).
	Reset time.Duration
	// Err says the quota could not be counted (Shared: the database cannot be reached); the
	// request is neither allowed nor refused for its quota.
	Err error
}

// Quota counts each user's requests against the plan's hourly limit: a process's own Limiter,
// or Shared when several nodes serve the same users.
type Quota interface {
	// Take counts one request of user against limit.
	Take(user string, limit int) Decision
	// Return gives back one request Take counted in the window still open.
	Return(user string)
	// Peek reports the requests counted in the user's open window and the time until it closes.
	Peek(user string) (used int, reset time.Duration)
}

var _ Quota = (*Limiter)(nil)

// Limiter counts requests per user.
type Limiter struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [64]shard
}

type shard struct {
	mu      sync.Mutex
	windows map[string]*window
}

type window struct {
	start time.Time
	used  int
	dirty bool // counted a request since the last Snapshot
}

// New builds a limiter; now may be nil.
func New(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{now: now, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].windows = map[string]*window{}
	}
	return l
}

// Take counts one request of user against limit.
func (l *Limiter) Take(user string, limit int) Decision {
	now := l.now()
	s := &l.shards[maphash.String(l.seed, user)%uint64(len(l.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.windows[user]
	if w == nil || !now.Before(w.start.Add(Window)) {
		if len(s.windows) > 4096 {
			for k, old := range s.windows {
				if !now.Before(old.start.Add(Window)) {
					delete(s.windows, k)
				}
			}
		}
		w = &window{start: now}
		s.windows[user] = w
	}
	reset := w.start.Add(Window).Sub(now)
	if reset < time.Second {
		reset = time.Second
	}
	d := Decision{Limit: limit, Reset: reset}
	if w.used >= limit {
		return d
	}
	w.used++
	w.dirty = true
	d.Allowed = true
	d.Remaining = limit - w.used
	return d
}

// Return gives back one request that Take counted for user in the window still open (a request
// the server refused for its own reasons, such as overload, is not the client's to pay for).
func (l *Limiter) Return(user string) {
	now := l.now()
	s := &l.shards[maphash.String(l.seed, user)%uint64(len(l.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.windows[user]; w != nil && w.used > 0 && now.Before(w.start.Add(Window)) {
		w.used--
		w.dirty = true
	}
}

// Entry is one user's open window: when it opened and how many requests it has counted.
type Entry struct {
	User  string
	Start time.Time
	Used  int
}

// Snapshot returns the open windows that counted a request since the last snapshot, or every
// open window when all is true.
func (l *Limiter) Snapshot(all bool) []Entry {
	now := l.now()
	var out []Entry
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		for user, w := range s.windows {
			if (all || w.dirty) && now.Before(w.start.Add(Window)) {
				out = append(out, Entry{User: user, Start: w.start, Used: w.used})
			}
			w.dirty = false
		}
		s.mu.Unlock()
	}
	return out
}

// Restore counts the requests of windows a previous run left open. A window already closed is
// skipped; a window the limiter already has keeps the larger count.
func (l *Limiter) Restore(entries []Entry) {
	now := l.now()
	for _, e := range entries {
		if !now.Before(e.Start.Add(Window)) || e.Start.After(now) || e.Used <= 0 {
			continue
		}
		s := &l.shards[maphash.String(l.seed, e.User)%uint64(len(l.shards))]
		s.mu.Lock()
		if w := s.windows[e.User]; w == nil || !now.Before(w.start.Add(Window)) {
			s.windows[e.User] = &window{start: e.Start, used: e.Used}
		} else if e.Used > w.used {
			w.used = e.Used
		}
		s.mu.Unlock()
	}
}

// Peek reports a user's open window without counting a request: the requests it has counted and
// the time until it closes (0, 0 when no window is open).
func (l *Limiter) Peek(user string) (used int, reset time.Duration) {
	now := l.now()
	s := &l.shards[maphash.String(l.seed, user)%uint64(len(l.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.windows[user]
	if w == nil || !now.Before(w.start.Add(Window)) {
		return 0, 0
	}
	return w.used, w.start.Add(Window).Sub(now)
}
