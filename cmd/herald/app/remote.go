package app

import (
	"errors"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
)

// startRemote starts the messages between nodes when Herald runs as one of several
// (Cfg.NodeAddr; docs/cluster.md): Proto.Actor's remote on the node address, before anything
// sends a message, so that the Ask reply address names this node; what crosses is sealed with
// the secret key, which every node shares. Without a node address it
// does nothing and the directories are their own routers, as on a single node.
func (a *App) startRemote() error {
	if a.Cfg.NodeAddr == "" {
		return nil
	}
	if !persistence.IsPostgresURL(a.Cfg.Store) {
		return errors.New("--node-addr runs Herald as one of several nodes, which share a PostgreSQL store: give --store postgres://…")
	}
	place := a.Cfg.Placement
	if place == nil {
		place = cluster.Local{}
	}
	r, err := cluster.StartRemote(a.Actors, cluster.RemoteConfig{Addr: a.Cfg.NodeAddr, Placement: place, Sealer: a.Box,
		Registry: a.Registry, Log: a.Log})
	if err != nil {
		return err
	}
	a.Remote = r
	return nil
}

// route is publishing's Route: each kind's cluster router when the remote runs, else nil (the
// directories themselves).
func (a *App) route() func(*actors.Directory) actors.Router {
	if a.Remote == nil {
		return nil
	}
	return func(d *actors.Directory) actors.Router { return a.Remote.Route(d) }
}
