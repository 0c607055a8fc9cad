package actors

import "sync"

// Recent holds the last n values put, by key, for the actors that are likely to need them soon
// after another component stored them: the reads they save cost a decode of a stored record, or
// the read itself when the write that uses the value checks it is stored still. It
// is bounded (the oldest entry goes when a new one comes), safe for concurrent use, and never a
// source of truth: a miss means reading the store. Put only values that do not change while they
// may be read from here (or use Take, which hands a value out once).
type Recent[K comparable, V any] struct {
	mu   sync.Mutex
	m    map[K]recentEntry[V]
	ring []K
	next int
}

type recentEntry[V any] struct {
	v    V
	slot int
}

// NewRecent holds up to n values (n <= 0: none; Put then does nothing).
func NewRecent[K comparable, V any](n int) *Recent[K, V] {
	return &Recent[K, V]{m: make(map[K]recentEntry[V], max(n, 0)), ring: make([]K, max(n, 0))}
}

// Put keeps v under k, in place of the oldest value when full.
func (r *Recent[K, V]) Put(k K, v V) {
	if r == nil || len(r.ring) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.m[k]; ok {
		r.m[k] = recentEntry[V]{v, e.slot}
		return
	}
	if e, ok := r.m[r.ring[r.next]]; ok && e.slot == r.next {
		delete(r.m, r.ring[r.next])
	}
	r.ring[r.next] = k
	r.m[k] = recentEntry[V]{v, r.next}
	r.next = (r.next + 1) % len(r.ring)
}

// Get returns the value under k.
func (r *Recent[K, V]) Get(k K) (V, bool) {
	if r == nil {
		var zero V
		return zero, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[k]
	return e.v, ok
}

// Take returns the value under k and forgets it.
func (r *Recent[K, V]) Take(k K) (V, bool) {
	if r == nil {
		var zero V
		return zero, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[k]
	if ok {
		delete(r.m, k) // its ring slot is reused in turn
	}
	return e.v, ok
}

// Len is the number of values held.
func (r *Recent[K, V]) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
