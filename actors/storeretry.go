package actors

import (
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Writes the store could not commit (persistence.ErrWriteFailed: disk full, I/O error) keep
// nothing, so an actor's state stays as it was before them. A request's write is answered with
// the error (the client retries). Work the actor owes no client but must not lose, because the
// world already changed (a network call's outcome, a job's outcome for its post, tokens a network
// issued), is kept in memory and written again after StoreRetryDelay, in order, until the store
// takes it; meanwhile the actor reports itself busy (Busy), so that it is not passivated with the
// work in hand.

// StoreRetryDelay is the wait before the failures-th retry in a row of a write the store could
// not commit: 100 ms doubling up to 5 s, with jitter, so that many actors retrying at once do not
// commit in step.
func StoreRetryDelay(failures int) time.Duration {
	d := 100 * time.Millisecond << min(max(failures-1, 0), 6)
	d = min(d, 5*time.Second)
	return d/2 + rand.N(d/2+1)
}

// SendSelfAfter sends msg to the actor of ctx after d, through its mailbox.
func SendSelfAfter(ctx actor.Context, d time.Duration, msg any) *time.Timer {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	return time.AfterFunc(d, func() { root.Send(self, msg) })
}
