package app

import (
	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/cluster"
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
	place := a.Cfg.Placement
	switch {
	case place != nil:
	case a.node != nil:
		place = a.node.member // the leases as the member last read them
	default:
		place = cluster.Local{}
	}
	r, err := cluster.StartRemote(a.Actors, cluster.RemoteConfig{Addr: a.Cfg.NodeAddr, Advertise: a.Cfg.NodeAdvertise, Placement: place, Sealer: a.Box,
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
