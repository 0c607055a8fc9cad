package app

import (
	"context"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/oauth"
	"github.com/heraldhq/herald/http/session"
)

// registerSingletons registers the background loops of which one runs across all nodes
// (cluster.Singletons; docs/cluster.md, Singletons): the scheduler and the outbox's pruning, the
// webhook dispatcher, the session and OAuth sweeps and the media janitor. The loops that keep a
// process's own state (the API quota snapshots, the keys' last use, the sessions' streams and
// sign-in throttle) run on every node.
func (a *App) registerSingletons() {
	for kind, run := range a.Publishing.Singletons() {
		a.Singletons.Register(kind, run)
	}
	a.Singletons.Register(webhook.DispatcherKind, a.Webhooks.Run)
	a.Singletons.Register(session.SweepKind, a.Sessions.Run)
	a.Singletons.Register(oauth.SweepKind, a.OAuth.Run)
	if run := a.Media.janitor(); run != nil {
		a.Singletons.Register(JanitorKind, run)
	}
}

// runLocal runs the sessions' loop of this process (session.Manager.RunLocal) until stopSweep.
func (a *App) runLocal() {
	ctx, stop := context.WithCancel(context.Background())
	a.stopSweep, a.sweepDone = stop, make(chan struct{})
	go func() {
		defer close(a.sweepDone)
		a.Sessions.RunLocal(ctx)
	}()
}
