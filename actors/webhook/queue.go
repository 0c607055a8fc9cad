package webhook

import (
	"container/heap"
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"

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

// classifyError turns a failed request into an outcome and a message that names no URL (a URL may
// carry a token in its query).
func classifyError(err error) postOutcome {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	o := postOutcome{outcome: outcomeConnection}
	msg := err.Error()
	var ne net.Error
	switch {
	case errors.Is(err, ErrBlocked):
		o.outcome = outcomeBlocked
		msg = "refused by the egress policy: " + strings.TrimPrefix(msg, ErrBlocked.Error()+": ")
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		o.outcome = outcomeTimeout
		msg = "timed out: no complete answer within the attempt timeout"
	}
	if len(msg) > 500 {
		msg = msg[:500]
	}
	o.errMsg = &msg
	return o
}
