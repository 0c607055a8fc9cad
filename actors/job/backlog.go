package job

import "sync/atomic"

// Backlog counts the jobs in hand: live job actors whose job is not final yet, whoever started
// them (a publish request, the scheduler, the resumption at start-up), except those whose every
// open target waits for its network's rate budget or a retry's backoff. Each of them holds memory
// (its actor, its publishes queued at the accounts) and work the server has still to do, so a
// server whose backlog is full refuses new publish requests (503) rather than letting it, and the
// wait of every job in it, grow without bound: see Full.
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

func (b *Backlog) add(d int64) {
	if b != nil {
		b.n.Add(d)
	}
}
