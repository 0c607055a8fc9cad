package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Quotas spends quotas that every node shares (a user's hourly API requests, X's daily app limit,
// YouTube's daily units) from chunks taken from PostgreSQL (persistence.Quotas): a node spends
// the units of its chunk in memory and takes another chunk when it runs out, one database round
// trip per chunk, so that the nodes together never spend more than a limit in its window. A
// chunk is a quarter of what is left divided among the live nodes, so the chunks shrink as the
// window fills and a node that dies loses little (its units are never spent, and never
// granted again in the window).
type Quotas struct {
	store *persistence.Quotas
	now   func() time.Time
	mu    sync.Mutex
	held  map[string]*held
}

// held is one quota as this node holds it: the window it took its last chunk in and what it has
// left of it.
type held struct {
	// mu serializes the takes of the quota on this node (one chunk at a time).
	mu sync.Mutex
	// start identifies the window (the database's); end is when it closes by this node's clock.
	start, end time.Time
	// units are those in hand; granted the window's units granted to every node at the last
	// take; limit the limit of that take, and full that the window had nothing left for it.
	units, granted, limit int
	full                  bool
	sent                  bool
}

// Grant is what Take answers.
type Grant struct {
	OK bool
	// Remaining is an estimate of the units left in the window over every node: the limit less
	// what was granted, plus what this node has in hand.
	Remaining int
	// End is when the window closes, by this node's clock (zero: no window is known).
	End time.Time
}

// NewQuotas spends shared quotas from store.
func NewQuotas(store *persistence.Quotas) *Quotas {
	return &Quotas{store: store, now: time.Now, held: map[string]*held{}}
}

// pruneAbove is the number of quotas held beyond which the closed windows are forgotten when
// another quota is first used (a user's requests open a quota each).
const pruneAbove = 16384

func (q *Quotas) of(name string) *held {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.held[name]
	if h == nil {
		if len(q.held) >= pruneAbove {
			q.prune()
		}
		h = &held{}
		q.held[name] = h
	}
	return h
}

// prune forgets the quotas whose window closed (what a closed window had in hand is worth
// nothing); one in use at the moment is kept. q.mu held.
func (q *Quotas) prune() {
	now := q.now()
	for name, h := range q.held {
		if !h.mu.TryLock() {
			continue
		}
		if !now.Before(h.end) {
			delete(q.held, name)
		}
		h.mu.Unlock()
	}
}

// Take spends need units of the quota name, whose limit is limit per window. It takes a chunk
// from the database when this node has too few units in hand for the window open now; ok is
// false when the window has not enough left (End says when it closes). An error (the database
// cannot be reached) spends nothing.
func (q *Quotas) Take(ctx context.Context, name string, limit int, window time.Duration, need int) (Grant, error) {
	h := q.of(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	now := q.now()
	open := !h.start.IsZero() && now.Before(h.end)
	if open && h.units >= need {
		h.units -= need
		return h.grant(limit, true), nil
	}
	if open && h.full && limit <= h.limit {
		// Nothing more will be granted in this window (a larger limit may find some).
		return h.grant(limit, false), nil
	}
	c, err := q.store.Take(ctx, name, limit, window, need)
	if err != nil {
		return Grant{}, err
	}
	if !c.Start.Equal(h.start) {
		// A new window: what was in hand belonged to the closed one.
		h.start, h.units, h.sent = c.Start, 0, false
	}
	h.end = now.Add(c.Left)
	h.units += c.Units
	h.granted, h.limit, h.full = c.Granted, limit, c.Units == 0
	if h.units < need {
		return h.grant(limit, false), nil
	}
	h.units -= need
	return h.grant(limit, true), nil
}

func (h *held) grant(limit int, ok bool) Grant {
	return Grant{OK: ok, Remaining: max(0, limit-h.granted+h.units), End: h.end}
}

// Return gives back units spent in the window still open, to this node's hand (a request
// refused for the server's own reasons, a call never sent).
func (q *Quotas) Return(name string, units int) {
	h := q.of(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.start.IsZero() && q.now().Before(h.end) {
		h.units += units
	}
}

// Peek reports the units spent in the open window as this node knows them (granted to the
// nodes less what it has in hand) and when it closes; 0 and the zero time when none is open.
func (q *Quotas) Peek(name string) (used int, end time.Time) {
	h := q.of(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.start.IsZero() || !q.now().Before(h.end) {
		return 0, time.Time{}
	}
	return max(0, h.granted-h.units), h.end
}

// Sent tells that the first call of the quota's open window reached the network at about now:
// the window's end moves to window after it, once per window over every node, so that it never
// closes before the network's.
func (q *Quotas) Sent(ctx context.Context, name string, window time.Duration) error {
	h := q.of(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	now := q.now()
	if h.sent || h.start.IsZero() || !now.Before(h.end) {
		return nil
	}
	left, err := q.store.Sent(ctx, name, h.start, window)
	if err != nil {
		return err
	}
	h.sent = true
	if left > 0 {
		h.end = now.Add(left)
	}
	return nil
}

// Close gives the units in hand of the open windows back to the database, for the other nodes
// (a stop).
func (q *Quotas) Close(ctx context.Context) error {
	q.mu.Lock()
	names := make([]string, 0, len(q.held))
	for name := range q.held {
		names = append(names, name)
	}
	q.mu.Unlock()
	var first error
	for _, name := range names {
		h := q.of(name)
		h.mu.Lock()
		if h.units > 0 && q.now().Before(h.end) {
			if err := q.store.GiveBack(ctx, name, h.start, h.units); err != nil && first == nil {
				first = err
			}
			h.units = 0
		}
		h.mu.Unlock()
	}
	return first
}
