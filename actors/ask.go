package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrTimeout means an actor did not answer before the caller's deadline.
var ErrTimeout = errors.New("actors: the actor did not answer in time")

// ErrActorFailed means the actor failed (panicked) while handling the request; it is restarted
// from its persisted state.
var ErrActorFailed = errors.New("actors: the actor failed while handling the request")

// ErrBusy means the actor had too many messages waiting to take another request (Kind's
// MailboxLimit): the request was not delivered, so it changed nothing, and it may be retried.
var ErrBusy = errors.New("actors: the actor is busy; the request was not delivered")

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

// replyRouter is the reply address of every Ask of a system: one process in the registry,
// registered once, that hands each answer to the Ask named by the RequestId of the PID the Ask
// sent as its sender. It costs no goroutine, and an Ask no registry entry of its own. An answer
// for an Ask that is no longer waiting (it timed out) or a second answer to the same request
// finds nobody and is dropped.
type replyRouter struct {
	pid     *actor.PID
	mu      sync.Mutex
	next    uint32
	waiting map[uint32]chan any
}

func newReplyRouter(as *actor.ActorSystem) *replyRouter {
	r := &replyRouter{waiting: map[uint32]chan any{}}
	r.pid, _ = as.ProcessRegistry.Add(r, "ask$replies")
	return r
}

// open registers an Ask and returns the sender PID its request carries.
func (r *replyRouter) open(ch chan any) (*actor.PID, uint32) {
	r.mu.Lock()
	id := r.next
	for _, taken := r.waiting[id]; taken || id == 0; _, taken = r.waiting[id] {
		id++ // 0 is no request; after wrapping around, skip Asks still waiting
	}
	r.next = id + 1
	r.waiting[id] = ch
	address := r.pid.Address
	r.mu.Unlock()
	return &actor.PID{Address: address, Id: r.pid.Id, RequestId: id}, id
}

// readdress names the reply address under the system's address as it is now.
func (r *replyRouter) readdress(address string) {
	r.mu.Lock()
	r.pid = &actor.PID{Address: address, Id: r.pid.Id}
	r.mu.Unlock()
}

// close forgets an Ask that stopped waiting.
func (r *replyRouter) close(id uint32) {
	r.mu.Lock()
	delete(r.waiting, id)
	r.mu.Unlock()
}

func (r *replyRouter) SendUserMessage(pid *actor.PID, message any) {
	if pid == nil {
		return
	}
	_, msg, _ := actor.UnwrapEnvelope(message)
	r.mu.Lock()
	ch := r.waiting[pid.RequestId]
	delete(r.waiting, pid.RequestId)
	r.mu.Unlock()
	if ch != nil {
		ch <- msg // buffered: never blocks
	}
}

func (r *replyRouter) SendSystemMessage(_ *actor.PID, message any) {}
func (r *replyRouter) Stop(_ *actor.PID)                           {}

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
	replies := to.system().replies
	ch := make(chan any, 1)
	pid, id := replies.open(ch)
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	to.request(msg, pid)
	var res any
	select {
	case res = <-ch:
	case <-ctx.Done():
		replies.close(id)
		return zero, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	case <-timeout:
		replies.close(id)
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
