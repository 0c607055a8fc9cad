package job

import (
	"sync"
	"sync/atomic"
)

// Backlog counts the publishes the server has still to do now: the targets whose accounts could
// send them as soon as their turn comes, whoever started their jobs (a publish request, a
// campaign, the scheduler, a start-up). That is
//
//   - the targets that connected accounts have taken from the store and whose outcome they have
//     not reported, except those waiting for their network's rate budget or a retry's backoff
//     (in hand: account.Deps.InHand counts them), and
//   - the targets waiting in the store (jobs_waiting) for an account that is not held back by its
//     network's rate budget (its turn only: account.Deps.Waiting reports what it takes and when
//     its budget holds it).
//
// A server whose backlog is full refuses new publish requests (503) rather than let the work it
// has accepted, and the time until it is published, grow without bound: see Full. What the
// networks' rate limits hold back (an agency's thousands of posts, a launch's scheduled million)
// does not count, so a burst the budgets pace is not refused: an account that finds its budget
// spent takes its waiting targets out of the count until its budget frees.
//
// The store's part is counted from what the server wrote and what the accounts took, and set
// again from the store whenever an account has taken everything it had waiting: a count that
// drifted (a post deleted with its job's targets still waiting) comes right then.
type Backlog struct {
	inHand atomic.Int64
	limit  int64

	mu       sync.Mutex
	accounts map[string]*waitingFor
	// ready is the sum of waiting over the accounts not held back.
	ready atomic.Int64
}

// waitingFor is one account's part of the store's backlog.
type waitingFor struct {
	waiting int64 // targets waiting in the store, not yet taken
	queued  int64 // targets ever counted by Queued (Mark, Taken)
	held    bool  // the account's budget holds it back
}

// NewBacklog counts the backlog against limit (0 or less: no limit).
func NewBacklog(limit int) *Backlog {
	return &Backlog{limit: int64(limit), accounts: map[string]*waitingFor{}}
}

// Len is the number of publishes the server has still to do now.
func (b *Backlog) Len() int {
	if b == nil {
		return 0
	}
	return int(b.inHand.Load() + b.ready.Load())
}

// Limit is the backlog's limit (0: none).
func (b *Backlog) Limit() int {
	if b == nil || b.limit <= 0 {
		return 0
	}
	return int(b.limit)
}

// Full reports whether the backlog reached the limit: publish requests are then refused. Jobs
// that start anyway (a scheduled post whose time came, a scheduled campaign's) are still counted.
func (b *Backlog) Full() bool { return !b.Fits(1) }

// Fits reports whether n more publishes fit under the limit beside those in hand (a campaign
// that publishes now is accepted whole or not at all).
func (b *Backlog) Fits(n int) bool {
	return b == nil || b.limit <= 0 || int64(b.Len()+n) <= b.limit
}

// Add counts d more publishes in hand (account.Deps.InHand).
func (b *Backlog) Add(d int) {
	if b != nil {
		b.inHand.Add(int64(d))
	}
}

// Queued counts n targets written to the store for an account (a job committed).
func (b *Backlog) Queued(account string, n int) {
	b.update(account, func(w *waitingFor) { w.waiting += int64(n); w.queued += int64(n) })
}

// Mark is taken by an account before it reads what waits for it, and given back to Taken.
func (b *Backlog) Mark(account string) int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.accounts[account]; w != nil {
		return w.queued
	}
	return 0
}

// Taken counts n targets an account took from the store. None left says the account's read,
// which began at mark, reached the end of what waits for it: what is counted then is only what
// was queued since mark (written while it read, possibly after its snapshot; counted once more
// rather than missed, and right again at the account's next read, which the queuing asks for).
func (b *Backlog) Taken(account string, n int, noneLeft bool, mark int64) {
	b.update(account, func(w *waitingFor) {
		w.waiting = max(0, w.waiting-int64(n))
		if noneLeft {
			w.waiting = max(0, w.queued-mark)
		}
	})
}

// Held says whether an account's rate budget holds it back: its waiting targets leave the count
// while it does.
func (b *Backlog) Held(account string, held bool) {
	b.update(account, func(w *waitingFor) { w.held = held })
}

// Set counts what waits in the store for each account (a start-up, from the store), replacing
// what was counted.
func (b *Backlog) Set(waiting map[string]int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.accounts)
	var ready int64
	for id, n := range waiting {
		if n > 0 {
			b.accounts[id] = &waitingFor{waiting: int64(n)}
			ready += int64(n)
		}
	}
	b.ready.Store(ready)
}

// Replace counts what waits in the store for the accounts that match, from waiting (whose
// accounts all match), replacing what was counted for them and keeping the others': a node that
// took or gave up some shards of accounts.
func (b *Backlog) Replace(match func(account string) bool, waiting map[string]int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var ready int64
	for id, w := range b.accounts {
		if match(id) {
			ready -= w.ready()
			delete(b.accounts, id)
		}
	}
	for id, n := range waiting {
		if n > 0 {
			b.accounts[id] = &waitingFor{waiting: int64(n)}
			ready += int64(n)
		}
	}
	b.ready.Add(ready)
}

// update changes one account's part, keeping ready the sum over the accounts not held back.
func (b *Backlog) update(account string, change func(*waitingFor)) {
	if b == nil || account == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.accounts[account]
	if w == nil {
		w = &waitingFor{}
		b.accounts[account] = w
	}
	before := w.ready()
	change(w)
	b.ready.Add(w.ready() - before)
	if w.waiting == 0 && !w.held && w.queued == 0 {
		delete(b.accounts, account)
	}
}

func (w *waitingFor) ready() int64 {
	if w.held {
		return 0
	}
	return w.waiting
}
