package webhook

import (
	"container/heap"
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/heraldhq/herald/persistence"
)

// pendingQueue orders a subscription's pending deliveries by next attempt, then by id (creation).
type pendingQueue []persistence.PendingDelivery

func (q pendingQueue) Len() int { return len(q) }
func (q pendingQueue) Less(i, j int) bool {
	if q[i].Next.Equal(q[j].Next) {
		return q[i].ID < q[j].ID
	}
	return q[i].Next.Before(q[j].Next)
}
func (q pendingQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pendingQueue) Push(x any)   { *q = append(*q, x.(persistence.PendingDelivery)) }
func (q *pendingQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

func (q *pendingQueue) push(it persistence.PendingDelivery) { heap.Push(q, it) }
func (q *pendingQueue) pop() persistence.PendingDelivery {
	return heap.Pop(q).(persistence.PendingDelivery)
}
func (q pendingQueue) peek() persistence.PendingDelivery { return q[0] }

func itoa(n int) string { return strconv.Itoa(n) }

// classifyError turns a failed request into an outcome and a message in DescribeError's
// vocabulary: it names the receiver's host, never the rest of its URL (a URL may carry a token in
// its query) nor the resolver or the addresses Herald dialled.
func classifyError(err error, host string) postOutcome {
	o := postOutcome{outcome: outcomeConnection}
	var ne net.Error
	switch {
	case errors.Is(err, ErrBlocked):
		o.outcome = outcomeBlocked
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		o.outcome = outcomeTimeout
	}
	msg := DescribeError(err, host)
	o.errMsg = &msg
	return o
}
