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
