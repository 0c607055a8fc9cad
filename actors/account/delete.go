package account

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

func (a *Actor) delete(ctx actor.Context, m *Delete) {
	switch {
	case a.acc == nil:
		actors.ReplyError(ctx, ErrNotFound)
		return
	case a.acc.Scope() != m.Scope:
		actors.ReplyError(ctx, ErrForbidden)
		return
	case a.deleting != nil:
		actors.ReplyError(ctx, ErrNotFound)
		return
	}
	a.deleting = ctx.Sender()
	a.failWaiting("the connected account was disconnected before the post could be published")
	adapter, creds, platform := a.adapter, a.creds, a.acc.Platform
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		if adapter != nil && creds.AccessToken != "" {
			c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			c = a.gated(c)
			start := time.Now()
			err := adapter.Revoke(c, creds)
			cancel()
			a.observeCall(platform, "revoke", start, err)
		}
		root.Send(self, &revokeDone{})
	}()
}

func (a *Actor) finishDelete(ctx actor.Context) {
	sender := a.deleting
	a.deleting = nil
	gone := a.acc
	err := a.update(func(tx *persistence.Tx) error { return tx.DeleteAccount(gone) })
	if err != nil {
		ctx.Send(sender, &actors.ErrorReply{Err: err})
		return
	}
	a.deps.Store.ForgetAccount(gone.Scope(), gone.ID)
	a.acc, a.creds, a.adapter = nil, platforms.Credentials{}, nil
	a.lane.setCredentials(nil, a.creds)
	ctx.Send(sender, &Reply{Account: gone})
	a.more = true
	a.pump(ctx) // what still waits in the store fails: the account is gone
}
