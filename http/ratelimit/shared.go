package ratelimit

import (
	"context"
	"time"

	"github.com/heraldhq/herald/cluster"
)

// takeTimeout bounds the database round trip of a request whose node has no units of its
// user's quota in hand.
const takeTimeout = 5 * time.Second

// Shared is the hourly quota of users that several nodes serve: the window and the requests
// granted in it are kept in PostgreSQL, and each node takes them in chunks (cluster.Quotas), so
// that the nodes together never allow more than the limit in a window. The window opens with a
// user's first request on any node and lasts Window by the database's clock. RateLimit-Remaining
// is this node's estimate: the limit less what the nodes took, plus what this node holds.
type Shared struct {
	q   *cluster.Quotas
	now func() time.Time
}

var _ Quota = (*Shared)(nil)

// NewShared counts the quotas in q.
func NewShared(q *cluster.Quotas) *Shared { return &Shared{q: q, now: time.Now} }

func quotaName(user string) string { return "api/" + user }

// Take counts one request of user against limit; Decision.Err when the database could not be
// asked.
func (s *Shared) Take(user string, limit int) Decision {
	ctx, cancel := context.WithTimeout(context.Background(), takeTimeout)
	defer cancel()
	g, err := s.q.Take(ctx, quotaName(user), limit, Window, 1)
	if err != nil {
		return Decision{Limit: limit, Reset: time.Second, Err: err}
	}
	return Decision{Allowed: g.OK, Limit: limit, Remaining: g.Remaining, Reset: max(g.End.Sub(s.now()), time.Second)}
}

// Return gives back one request to this node's hand.
func (s *Shared) Return(user string) { s.q.Return(quotaName(user), 1) }

// Peek reports the requests the nodes counted in the user's open window, as this node knows them,
// and the time until it closes (0, 0 when this node knows no open window).
func (s *Shared) Peek(user string) (used int, reset time.Duration) {
	used, end := s.q.Peek(quotaName(user))
	if end.IsZero() {
		return 0, 0
	}
	return used, end.Sub(s.now())
}

// Close gives the requests this node holds back to the other nodes (a stop).
func (s *Shared) Close(ctx context.Context) error { return s.q.Close(ctx) }
