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

// replyProcess is the reply address of one Ask: a process in the registry whose mailbox is a
// one-slot channel. It costs no goroutine and no timer beyond the caller's own.
type replyProcess struct{ ch chan any }

func (p *replyProcess) SendUserMessage(_ *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	select {
	case p.ch <- msg:
	default: // a second reply to the same request is dropped
	}
}

func (p *replyProcess) SendSystemMessage(_ *actor.PID, message any) {}
func (p *replyProcess) Stop(_ *actor.PID)                           {}

// Ask sends msg and waits for the reply of type R, or an error: the actor's ErrorReply, ErrTimeout
// when ctx ends first (or after DefaultAskTimeout when ctx has no deadline), or a type mismatch.
func Ask[R any](ctx context.Context, to Requester, msg any) (R, error) {
	var within time.Duration
	if _, ok := ctx.Deadline(); !ok {
		within = DefaultAskTimeout
	}
	return AskWithin[R](ctx, within, to, msg)
}

// AskWithin is Ask bounded by d (when positive) as well as by ctx, without deriving a context
// for the deadline: a request handler passes its request's context and its own bound.
func AskWithin[R any](ctx context.Context, d time.Duration, to Requester, msg any) (R, error) {
	var zero R
	sys := to.system()
	p := &replyProcess{ch: make(chan any, 1)}
	reg := sys.AS.ProcessRegistry
	pid, _ := reg.Add(p, "ask$"+reg.NextID())
	defer reg.Remove(pid)
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	to.request(msg, pid)
	var res any
	select {
	case res = <-p.ch:
	case <-ctx.Done():
		return zero, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	case <-timeout:
		return zero, ErrTimeout
	}
	switch r := res.(type) {
	case *ErrorReply:
		return zero, r.Err
	case *actor.DeadLetterResponse:
		return zero, fmt.Errorf("actors: %T reached no actor", msg)
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
