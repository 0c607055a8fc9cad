// Package holds is the registry of streams held open by the credential that opened them (an API
// key or access token in http/auth, a dashboard session in http/session): a request is
// authenticated once, a stream lives on, and the registry is how a revocation, a sign-out or an
// expiry reaches the streams still open.
//
// Streams are registered under their credential's key and re-checked in passes: a pass reads
// each key once (outside the registry's lock, typically in one read transaction) and then decides
// for each stream of that key whether it ends. Recheck runs passes in one goroutine at a time, so
// a burst of revocations while a pass runs costs one more pass, not one per revocation.
package holds

import "sync"

// Registry holds streams of values V under keys K.
type Registry[K comparable, V any] struct {
	mu      sync.Mutex
	next    uint64
	open    map[uint64]entry[K, V]
	dirty   bool // a pass is asked for
	running bool // a pass goroutine runs
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// Pass reads the keys of the open streams and returns how to settle each stream: settle is
// called, under the registry's lock, for every stream still open under one of keys; it returns
// true when the stream ends (and leaves the registry).
type Pass[K comparable, V any] func(keys []K) (settle func(key K, v V) (end bool))

// Add registers a stream and returns its id for Remove.
func (r *Registry[K, V]) Add(key K, v V) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = map[uint64]entry[K, V]{}
	}
	r.next++
	r.open[r.next] = entry[K, V]{key, v}
	return r.next
}

// Remove takes a stream out (it ended on its own).
func (r *Registry[K, V]) Remove(id uint64) {
	r.mu.Lock()
	delete(r.open, id)
	r.mu.Unlock()
}

// Len is the number of streams held.
func (r *Registry[K, V]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.open)
}

// Idle reports that no pass runs or is asked for.
func (r *Registry[K, V]) Idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.running && !r.dirty
}

// Recheck asks for a pass, run in a goroutine of its own unless one runs already (which then runs
// once more). Nothing is done while no stream is held.
func (r *Registry[K, V]) Recheck(pass Pass[K, V]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.open) == 0 {
		return
	}
	r.dirty = true
	if r.running {
		return
	}
	r.running = true
	go func() {
		for {
			r.mu.Lock()
			if !r.dirty {
				r.running = false
				r.mu.Unlock()
				return
			}
			r.dirty = false
			r.mu.Unlock()
			r.Check(pass)
		}
	}()
}

// Check runs one pass now, in the caller's goroutine.
func (r *Registry[K, V]) Check(pass Pass[K, V]) {
	r.mu.Lock()
	ids := map[K][]uint64{}
	for id, e := range r.open {
		ids[e.key] = append(ids[e.key], id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	keys := make([]K, 0, len(ids))
	for k := range ids {
		keys = append(keys, k)
	}
	settle := pass(keys)
	if settle == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, list := range ids {
		for _, id := range list {
			if e, ok := r.open[id]; ok && settle(k, e.val) {
				delete(r.open, id)
			}
		}
	}
}
