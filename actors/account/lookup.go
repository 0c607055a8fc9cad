package account

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

func (a *Actor) startLookup(ctx actor.Context, r *request, since time.Time) {
	a.startLookupAfter(ctx, r, since, 0)
}

// startLookupAfter looks the request's call up on the network after wait.
func (a *Actor) startLookupAfter(ctx actor.Context, r *request, since time.Time, wait time.Duration) {
	a.lookups++
	a.trace("lookup started", r, "since", since, "wait", wait)
	adapter, creds, retries, backoff := a.adapter, a.creds, a.deps.MaxRetries, a.deps.Backoff
	platform := a.acc.Platform
	self, root := ctx.Self(), ctx.ActorSystem().Root
	var trusted func() bool
	if f, id := a.deps.Fence, a.id; f != nil {
		trusted = func() bool { return f.Trusted(id) }
	}
	drained := a.drainStarted
	go func() {
		if wait > 0 {
			// Waiting out the doubt a takeover left (Fence.NotBefore). A drain ends the wait:
			// the attempt stays in doubt in the store, and the shard's lease keeps what is left
			// of the doubt for the next owner, so a hand-off does not wait for it.
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-drained:
				t.Stop()
				root.Send(self, &lookupDone{req: r, err: errUntrusted})
				return
			}
		}
		var pub platforms.Publication
		var found bool
		var err error
		// A lookup is a read: transient failures are retried with backoff. It is made only
		// while the node trusts the account's shard (each of its requests is gated).
		for i := 0; ; i++ {
			if trusted != nil && !trusted() {
				err = errUntrusted
				break
			}
			c, cancel := context.WithTimeout(context.Background(), time.Minute)
			start := time.Now()
			pub, found, err = r.lookup(a.gated(c), adapter, creds, since.Add(-2*time.Minute))
			cancel()
			a.observeCall(platform, "lookup", start, err)
			if err != nil && trusted != nil && !trusted() {
				// Failed once the trust ended (a request gated, or a failure meanwhile): the
				// outcome stays in doubt for the shard's next owner, never failed from here.
				err = errUntrusted
				break
			}
			if err == nil || !platforms.IsRetryable(err) || i >= retries {
				break
			}
			d := backoff << i
			time.Sleep(d/2 + rand.N(d/2+1))
		}
		root.Send(self, &lookupDone{req: r, pub: pub, found: found, err: err})
	}()
}

func (a *Actor) lookupDone(ctx actor.Context, m *lookupDone) {
	a.lookups = max(0, a.lookups-1)
	r := m.req
	a.trace("lookup done", r, "found", m.found, "error", m.err)
	if r.holding {
		r.holding = false
		a.lane.release()
	}
	if a.acc == nil {
		a.fail(r, "the connected account was disconnected while the post's outcome was being checked")
		return
	}
	if errors.Is(m.err, errUntrusted) {
		// Not looked up: this node no longer trusts its lease of the account's shard. The
		// attempt stays in the store, in doubt, for the shard's next owner to look up (or this
		// node, once it holds the shard again); the actor stops (Receive).
		a.untrusted = true
		return
	}
	platform := a.acc.Platform
	switch {
	case m.err == nil && m.found:
		a.deps.Metrics.UnknownOutcome.WithLabelValues(platform, "found").Inc()
		a.stepDone(r, m.pub, persistence.EventResolved)
	case m.err == nil:
		// The network has no such post: the attempt created nothing, so sending it again is
		// not blind. A second unknown outcome fails.
		a.deps.Metrics.UnknownOutcome.WithLabelValues(platform, "not_found").Inc()
		a.reportStep(r, persistence.EventResolved, false, false, "the outcome was unknown and "+r.stepName()+" is not on "+platform+": it is sent again", r.main())
		r.resolved = true
		a.forgetAttempt(r)
		a.unready() // what was handed to the lane meanwhile goes after it
		a.queueFront(r)
	default:
		a.deps.Metrics.UnknownOutcome.WithLabelValues(platform, "unresolved").Inc()
		reason := errorMessage(m.err)
		if errors.Is(m.err, platforms.ErrLookupUnsupported) {
			reason = platform + " offers no way to look the post up"
		}
		a.fail(r, "outcome unknown: the network did not confirm the post and "+reason+"; check the account before publishing again")
	}
	a.pump(ctx)
}
