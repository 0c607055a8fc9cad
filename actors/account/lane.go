package account

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/platforms"
)

// lane hands an account's publishes to its callers, in order, once their budget is reserved and
// their attempts are recorded. A caller is a goroutine that makes one call at a time and takes
// the next request itself as soon as its call is answered, so that a busy account's calls follow
// one another without waiting for the actor between them; the actor hears every outcome
// afterwards (callDone) and keeps the lane filled ahead of the callers.
//
// A call that fails holds the lane: no call starts until the actor has handled that failure
// (waiting for a rate-limit reset, refreshing the token, looking the post up) and releases it, so
// that what the failure means for the requests behind it is decided before any of them is sent.
type lane struct {
	mu      sync.Mutex
	reqs    []*request
	callers int  // goroutines taking requests
	busy    int  // callers in a call
	held    bool // a call failed: none starts until release
	// what a caller needs: set by the actor, read by callers for every call
	adapter platforms.Adapter
	creds   platforms.Credentials
	timeout time.Duration
	send    func(*callDone)
	now     func() time.Time
	// trusted reports whether the node may still call for the account (nil: always); a
	// request found untrusted is not sent and comes back with errUntrusted. finishing reports
	// whether a call already started may send its next request (a hand-off lets it end).
	trusted, finishing func() bool
	limit              int // callers at most (the account's concurrency)
}

// setCredentials gives the calls that start from now on the account's current credentials.
func (l *lane) setCredentials(adapter platforms.Adapter, creds platforms.Credentials) {
	l.mu.Lock()
	l.adapter, l.creds = adapter, creds
	l.mu.Unlock()
}

// push appends requests and starts callers for them, up to the limit, unless the lane is held.
func (l *lane) push(rs []*request) {
	l.mu.Lock()
	l.reqs = append(l.reqs, rs...)
	l.startLocked()
	l.mu.Unlock()
}

// release lets calls start again after a failure.
func (l *lane) release() {
	l.mu.Lock()
	l.held = false
	l.startLocked()
	l.mu.Unlock()
}

// startLocked starts a caller for each waiting request that no caller between two calls will
// take, up to the limit.
func (l *lane) startLocked() {
	for !l.held && l.callers < l.limit && l.callers-l.busy < len(l.reqs) {
		l.callers++
		go l.run()
	}
}

// load returns, in one look, how many requests wait for a caller and how many free call slots
// the lane has (requests handed to it now start at once; none while it is held).
func (l *lane) load() (pending, free int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return len(l.reqs), 0
	}
	return len(l.reqs), max(0, l.limit-l.busy-len(l.reqs))
}

// take removes and returns the requests no caller has started.
func (l *lane) take() []*request {
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.reqs
	l.reqs = nil
	return rs
}

// next hands a caller its next request with what it needs to send it; ok is false when the
// caller should end (nothing waits, or the lane is held). called says the caller has just ended
// a call.
func (l *lane) next(called bool) (r *request, adapter platforms.Adapter, creds platforms.Credentials, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if called {
		l.busy--
	}
	if l.held || len(l.reqs) == 0 {
		l.callers--
		return nil, nil, platforms.Credentials{}, false
	}
	r = l.reqs[0]
	l.reqs[0] = nil
	l.reqs = l.reqs[1:]
	if len(l.reqs) == 0 {
		l.reqs = nil // let the backing array go
	}
	l.busy++
	return r, l.adapter, l.creds, true
}

func (l *lane) hold() {
	l.mu.Lock()
	l.held = true
	l.mu.Unlock()
}

// run is one caller.
func (l *lane) run() {
	for called := false; ; called = true {
		r, adapter, creds, ok := l.next(called)
		if !ok {
			return
		}
		start := l.now()
		var res platforms.Result
		var err error
		if l.trusted != nil && !l.trusted() {
			err = errUntrusted
		} else {
			c, cancel := context.WithTimeout(context.Background(), l.timeout)
			if l.trusted != nil {
				// Checked again before each request of the call: a call of several requests
				// stops at the first one the node no longer trusts its lease for.
				c = platforms.WithGate(c, l.gate)
			}
			res, err = r.call(c, adapter, creds)
			cancel()
		}
		if err != nil {
			l.hold()
		}
		l.send(&callDone{req: r, platform: adapter.Platform(), res: res, err: err, start: start, took: l.now().Sub(start)})
	}
}

// gate is the platforms gate of the lane's calls: errGated once the node may no longer finish
// what it started for the account's shard (a hand-off under way lets the call end).
func (l *lane) gate() error {
	if !l.finishing() {
		return errGated
	}
	return nil
}

// gated is ctx with the node's trust as its platforms gate (WithGate) when the node has a fence:
// every request of a lookup, a refresh, a read or a revoke is sent only while the node may still
// finish what it started for the account's shard, as a publishing call's are (lane.gate): a
// hand-off waits for the look-ups under way too.
func (a *Actor) gated(ctx context.Context) context.Context {
	f, id := a.deps.Fence, a.id
	if f == nil {
		return ctx
	}
	return platforms.WithGate(ctx, func() error {
		if !f.Finishing(id) {
			return errGated
		}
		return nil
	})
}

// newLane makes the account's lane; its callers report to the actor at self, and call only
// while the node trusts its lease of the account's shard (Deps.Fence).
func newLane(d *Deps, ctx actor.Context, id string) *lane {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	l := &lane{
		timeout: d.CallTimeout, now: d.Now, limit: d.Concurrency,
		send: func(m *callDone) { root.Send(self, m) },
	}
	if f := d.Fence; f != nil {
		l.trusted = func() bool { return f.Trusted(id) }
		l.finishing = func() bool { return f.Finishing(id) }
	}
	return l
}
