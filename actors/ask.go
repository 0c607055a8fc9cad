package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrTimeout means an actor did not answer before the caller's deadline.
var ErrTimeout = errors.New("actors: the actor did not answer in time")

// ErrActorFailed means the actor failed (panicked) while handling the request; it is restarted
// from its persisted state.
var ErrActorFailed = errors.New("actors: the actor failed while handling the request")

// ErrorReply is an actor's error answer to a request; Ask returns Err.
type ErrorReply struct{ Err error }

// DefaultAskTimeout bounds an Ask whose context has no deadline.
const DefaultAskTimeout = 10 * time.Second

// Requester is anything that delivers a request to an actor with a reply address: a Directory
// (by id) bound with To, or a plain PID.
type Requester interface {
	request(msg any, sender *actor.PID)
	system() *System
}

// Ask sends msg and waits for the reply of type R, or an error: the actor's ErrorReply, ErrTimeout
// when ctx ends first, or a type mismatch. It never blocks past ctx.
func Ask[R any](ctx context.Context, to Requester, msg any) (R, error) {
	var zero R
	timeout := DefaultAskTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return zero, ErrTimeout
		}
	}
	sys := to.system()
	f := actor.NewFuture(sys.AS, timeout)
	to.request(msg, f.PID())
	done := make(chan struct{})
	var res any
	var err error
	go func() {
		res, err = f.Result()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return zero, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
	if err != nil {
		if errors.Is(err, actor.ErrTimeout) {
			return zero, ErrTimeout
		}
		return zero, err
	}
	switch r := res.(type) {
	case *ErrorReply:
		return zero, r.Err
	case R:
		return r, nil
	}
	return zero, fmt.Errorf("actors: unexpected reply %T to %T", res, msg)
}

// Reply answers the current request, if it has a sender.
func Reply(ctx actor.Context, msg any) {
	if ctx.Sender() != nil {
		ctx.Respond(msg)
	}
}

// ReplyError answers the current request with an error.
func ReplyError(ctx actor.Context, err error) { Reply(ctx, &ErrorReply{Err: err}) }
