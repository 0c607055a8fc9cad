package actors

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Fence is what an actor needs of its node's leases when several Herald nodes share the store
// (docs/cluster.md): the lease its writes fence on and whether it may still call out. It is nil
// in a single process, where nothing is fenced or checked and the writes cost what they did.
//
// Every actor id lives on the node holding the lease of its shard. Its writes carry that lease
// and check its epoch in the same transaction (Update), so that once another node took the
// shard, nothing the old node still does for it is stored; and an account makes a network call
// only while Trusted, so that a paused or cut-off node stops calling before its lease can pass.
type Fence interface {
	// Lease is the lease of id's shard as this node holds it (ok false: it does not).
	Lease(id string) (persistence.Lease, bool)
	// Trusted reports whether this node may act for id now: it holds id's shard, renewed it
	// recently enough that nobody else can have taken it, and is not handing it off.
	Trusted(id string) bool
	// Finishing reports whether this node may still finish what it started for id: as Trusted,
	// but a shard being handed off included. A hand-off lets the calls and look-ups under way
	// end (the next owner then finds no attempt in doubt); the requests of a call already
	// started ask this, a call about to start asks Trusted.
	Finishing(id string) bool
	// NotBefore is when an attempt that id's shard's previous owner may have left in flight can
	// be looked up on the network (zero: at once). After a takeover it is the old lease's expiry
	// plus the call time-out, so that a call the old owner still had under way has ended.
	NotBefore(id string) time.Time
	// Fenced counts a write the store refused because the lease moved.
	Fenced()
}

// Update is store.Update for actor id's write, fenced on the lease of its shard when f is set:
// persistence.ErrFenced, and nothing written, when this node does not hold the lease or another
// node took it since. With no fence it is store.Update itself.
func Update(ctx context.Context, store *persistence.Store, f Fence, id string, fn func(*persistence.Tx) error) error {
	return fenced(f, id, fn, func(fn func(*persistence.Tx) error) error { return store.Update(ctx, fn) })
}

// UpdateAhead is Update through store.UpdateAhead: fn must keep UpdateAhead's promise (it sets
// nothing outside its transaction but afresh on every run).
func UpdateAhead(ctx context.Context, store *persistence.Store, f Fence, id string, fn func(*persistence.Tx) error) error {
	return fenced(f, id, fn, func(fn func(*persistence.Tx) error) error { return store.UpdateAhead(ctx, fn) })
}

// TryUpdate is store.TryUpdate (a write a request waits on) fenced as Update is.
func TryUpdate(store *persistence.Store, f Fence, id string, fn func(*persistence.Tx) error) error {
	return fenced(f, id, fn, store.TryUpdate)
}

// TryUpdateAhead is TryUpdate through store.TryUpdateAhead, with UpdateAhead's promise.
func TryUpdateAhead(store *persistence.Store, f Fence, id string, fn func(*persistence.Tx) error) error {
	return fenced(f, id, fn, store.TryUpdateAhead)
}

// fenced runs fn through write, checking id's lease first in the same transaction when f is set.
func fenced(f Fence, id string, fn func(*persistence.Tx) error, write func(func(*persistence.Tx) error) error) error {
	if f == nil {
		return write(fn)
	}
	le, ok := f.Lease(id)
	if !ok {
		f.Fenced()
		return persistence.ErrFenced
	}
	err := write(func(tx *persistence.Tx) error {
		if err := tx.Fence(le); err != nil {
			return err
		}
		return fn(tx)
	})
	if errors.Is(err, persistence.ErrFenced) {
		f.Fenced()
	}
	return err
}

// Pin is f as actor id's incarnation uses it: pinned on the lease id's shard has on this node
// now, when the incarnation activates and before it reads its state. A node that lost the shard
// (a step-down, a lease found taken) may take it again soon after under a later epoch while an
// incarnation from before the loss still runs, its state read before another node changed the
// store. Everything it does is held to the lease it activated under, as a shard's range id is:
//
//   - its writes fence on the pinned lease, so the store refuses them once the epoch moved, even
//     while this node holds the shard again;
//   - it is Trusted only while the node's current lease of the shard is the pinned one, and
//     trusted (no network call on another epoch's behalf);
//   - it is stale once the node holds another lease of the shard than the pinned one, or holds
//     one when none was pinned: the directory then stops it and hands its messages to a fresh
//     incarnation, which pins the current lease and reads the store afresh (StaleFence, Stale).
//
// An incarnation activated while the node does not hold the shard pins nothing: its writes are
// all fenced and it calls nothing, and it is not stale until the node takes the shard, so no
// loop of activations runs meanwhile. Pin of nil is nil: a single process pays nothing.
func Pin(f Fence, id string) Fence {
	if f == nil {
		return nil
	}
	if p, ok := f.(*pinned); ok {
		f = p.f // an incarnation activated again pins afresh
	}
	le, held := f.Lease(id)
	return &pinned{f: f, id: id, le: le, held: held}
}

// pinned is a fence held to the lease id's shard had when it was pinned (Pin).
type pinned struct {
	f    Fence
	id   string
	le   persistence.Lease
	held bool
}

// Lease is the pinned lease for id (ok false: none was held when pinned); another id's is the
// node's current one.
func (p *pinned) Lease(id string) (persistence.Lease, bool) {
	if id != p.id {
		return p.f.Lease(id)
	}
	return p.le, p.held
}

// Trusted reports whether the node trusts its lease of id's shard and that lease is the pinned
// one.
func (p *pinned) Trusted(id string) bool { return p.while(id, p.f.Trusted) }

// Finishing is Trusted with a shard being handed off included (Fence.Finishing).
func (p *pinned) Finishing(id string) bool { return p.while(id, p.f.Finishing) }

// while is check of id, held for the pinned id only while the node's current lease is the
// pinned one, read on both sides of the check: epochs only grow, so a lease equal to the pinned
// one before and after was that same lease throughout.
func (p *pinned) while(id string, check func(string) bool) bool {
	if id != p.id {
		return check(id)
	}
	return p.current() && check(id) && p.current()
}

func (p *pinned) NotBefore(id string) time.Time { return p.f.NotBefore(id) }
func (p *pinned) Fenced()                       { p.f.Fenced() }

// current reports whether the node holds the pinned lease still.
func (p *pinned) current() bool {
	le, held := p.f.Lease(p.id)
	return p.held && held && le == p.le
}

// stale reports whether the node holds another lease of the shard than the one pinned.
func (p *pinned) stale() bool {
	le, held := p.f.Lease(p.id)
	return held && (!p.held || le != p.le)
}

// StaleFence reports whether f, an incarnation's pinned fence (Pin), no longer matches the lease its
// node holds of the shard: the incarnation's state may be older than the store's, and a fresh
// one must take its place. Any other fence, nil included, is never stale.
func StaleFence(f Fence) bool {
	p, ok := f.(*pinned)
	return ok && p.stale()
}
