package job

import "sync/atomic"

// Backlog counts the publishes in hand: the targets that connected accounts have taken from the
// store to publish and whose outcome they have not reported, whoever started their jobs (a
// publish request, a campaign, the scheduler, a start-up), except those waiting for their
// network's rate budget or a retry's backoff (account.Deps.InHand counts them). Each of them
// holds memory and work the server has still to do now, so a server whose backlog is full refuses
// new publish requests (503) rather than letting that work grow without bound: see Full. Targets
// waiting in the store for their account's turn are not in hand: they hold no memory until their
// account takes them, a batch at a time, and a burst that the networks' rate limits hold back (an
// agency's thousands of posts, a launch's scheduled million) is not refused.
type Backlog struct {
	n     atomic.Int64
	limit int64
}

// NewBacklog counts jobs in hand against limit (0 or less: no limit).
func NewBacklog(limit int) *Backlog { return &Backlog{limit: int64(limit)} }

// Len is the number of jobs in hand.
func (b *Backlog) Len() int {
	if b == nil {
		return 0
	}
	return int(b.n.Load())
}

// Limit is the backlog's limit (0: none).
func (b *Backlog) Limit() int {
	if b == nil || b.limit <= 0 {
		return 0
	}
	return int(b.limit)
}

// Full reports whether the jobs in hand reached the limit: publish requests are then refused.
// Jobs that start anyway (a scheduled post whose time came) are still counted.
func (b *Backlog) Full() bool {
	return b != nil && b.limit > 0 && b.n.Load() >= b.limit
}

// Add counts d more publishes in hand (account.Deps.InHand).
func (b *Backlog) Add(d int) {
	if b != nil {
		b.n.Add(int64(d))
	}
}
