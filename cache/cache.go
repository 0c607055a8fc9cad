// Package cache is the live-fetch cache of analytics and inbox answers: a ristretto cache keyed
// by user and normalised query, with singleflight coalescing of concurrent fills.
//
// The rules, in one place:
//
//   - An entry younger than Floor (90 seconds) is always served, even when the caller asks for a
//     fresh answer: a dashboard that refreshes every few seconds costs the networks nothing.
//   - An entry older than Floor is served unless the caller asks for fresh; fresh bypasses it and
//     fetches again. Entries expire after MaxAge whatever happens.
//   - Concurrent misses of the same key make one fill; every caller waits for it on its own
//     context, so one caller giving up neither cancels the fill nor fails the others. The fill
//     runs on a context detached from the callers' cancellation (it sets its own deadline).
//   - Errors are never cached.
//   - Every entry carries the time it was fetched (Entry.FetchedAt), which answers show.
//
// The cache is never a source of truth: it holds copies of what the networks said, and losing
// any entry only costs one more fetch.
package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// Floor is the age under which an entry is always served, fresh or not.
const Floor = 90 * time.Second

// Entry is a cached value and when it was fetched.
type Entry[V any] struct {
	Value     V
	FetchedAt time.Time
}

// Options configure a cache.
type Options[V any] struct {
	// Name labels the cache's metrics ("analytics", "inbox").
	Name string
	// MaxCost bounds the sum of the entries' costs (default 64 MiB when Cost counts bytes).
	MaxCost int64
	// Cost is an entry's cost, for example its size in bytes (default 1: MaxCost counts entries).
	Cost func(V) int64
	// Floor overrides the 90-second floor (tests of the rule itself only).
	Floor time.Duration
	// MaxAge is how long an entry is kept at all (default 10 minutes).
	MaxAge time.Duration
	// Now is the clock (default time.Now).
	Now     func() time.Time
	Metrics *Metrics
}

// Cache is a live-fetch cache of values of type V.
type Cache[V any] struct {
	opts  Options[V]
	store *ristretto.Cache[string, Entry[V]]
	group singleflight.Group
}

// New builds a cache.
func New[V any](o Options[V]) (*Cache[V], error) {
	if o.MaxCost <= 0 {
		o.MaxCost = 64 << 20
	}
	if o.Cost == nil {
		o.Cost = func(V) int64 { return 1 }
	}
	if o.Floor <= 0 {
		o.Floor = Floor
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 10 * time.Minute
	}
	if o.MaxAge < o.Floor {
		o.MaxAge = o.Floor
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	// NumCounters: ten per expected entry, as ristretto recommends; an entry costs at least
	// about a kilobyte when Cost counts bytes, so MaxCost/1024 bounds the entries.
	counters := max(o.MaxCost/1024*10, 10_000)
	if counters > 10_000_000 {
		counters = 10_000_000
	}
	store, err := ristretto.NewCache(&ristretto.Config[string, Entry[V]]{
		NumCounters:        counters,
		MaxCost:            o.MaxCost,
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	for _, result := range []string{"hit", "miss", "coalesced", "abandoned"} {
		o.Metrics.Requests.WithLabelValues(o.Name, result) // the series exist from the start, at zero
	}
	return &Cache[V]{opts: o, store: store}, nil
}

// Close releases the cache's goroutines.
func (c *Cache[V]) Close() { c.store.Close() }

// Key joins a user id and a normalised query into a cache key. Entries are per user: no user
// can ever be served another user's entry.
func Key(userID, query string) string { return userID + "\x00" + query }

// Lookup returns the entry of key if the rules let it be served: younger than the floor, or
// older but fresh was not asked for.
func (c *Cache[V]) Lookup(key string, fresh bool) (Entry[V], bool) {
	e, ok := c.store.Get(key)
	if !ok {
		return e, false
	}
	age := c.opts.Now().Sub(e.FetchedAt)
	if age >= c.opts.MaxAge || (fresh && age >= c.opts.Floor) {
		return e, false
	}
	return e, true
}

// Get returns the entry of key when the rules allow, else fills it: one fill per key at a time,
// however many callers ask. fill receives a context detached from every caller's cancellation;
// it must set its own deadline. A caller whose ctx ends first gets ctx's error while the fill
// goes on for the others (and for the cache).
func (c *Cache[V]) Get(ctx context.Context, key string, fresh bool, fill func(context.Context) (V, error)) (Entry[V], error) {
	name := c.opts.Name
	if e, ok := c.Lookup(key, fresh); ok {
		c.opts.Metrics.Requests.WithLabelValues(name, "hit").Inc()
		return e, nil
	}
	detached := context.WithoutCancel(ctx)
	led := false
	ch := c.group.DoChan(key, func() (any, error) {
		led = true
		// Another caller's fill may have completed between our lookup and this call.
		if e, ok := c.Lookup(key, fresh); ok {
			return e, nil
		}
		v, err := fill(detached)
		if err != nil {
			return nil, err
		}
		e := Entry[V]{Value: v, FetchedAt: c.opts.Now()}
		c.put(key, e)
		return e, nil
	})
	select {
	case r := <-ch:
		// led is written by the fill's goroutine before it delivers on ch.
		if led {
			c.opts.Metrics.Requests.WithLabelValues(name, "miss").Inc()
		} else {
			c.opts.Metrics.Requests.WithLabelValues(name, "coalesced").Inc()
		}
		if r.Err != nil {
			return Entry[V]{}, r.Err
		}
		return r.Val.(Entry[V]), nil
	case <-ctx.Done():
		c.opts.Metrics.Requests.WithLabelValues(name, "abandoned").Inc()
		return Entry[V]{}, ctx.Err()
	}
}

// put stores an entry and waits until it is visible, so that the next lookup finds it (a
// ristretto Set is applied asynchronously). A set the admission policy refused is retried once.
func (c *Cache[V]) put(key string, e Entry[V]) {
	cost := max(c.opts.Cost(e.Value), 1)
	for range 2 {
		c.store.SetWithTTL(key, e, cost, c.opts.MaxAge)
		c.store.Wait()
		if _, ok := c.store.Get(key); ok {
			return
		}
	}
}

// Forget drops an entry (for example after a write that changes what it shows).
func (c *Cache[V]) Forget(key string) { c.store.Del(key) }

// IsCanceled reports whether err is a caller's own cancellation or deadline, as Get returns it.
func IsCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Metrics are the cache's counters, labelled by cache name only.
type Metrics struct {
	// Requests counts lookups by result: hit, miss (this caller's fill), coalesced (joined
	// another caller's fill), abandoned (the caller gave up before the fill ended).
	Requests *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_live_cache_requests_total",
			Help: "Live-data cache lookups by cache (analytics, inbox) and result: hit, miss, coalesced (joined a fill in flight), abandoned (the caller gave up first).",
		}, []string{"cache", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.Requests)
	}
	return m
}
