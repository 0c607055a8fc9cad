package cluster

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
)

// Router is the actors.Router of one kind when several nodes run: a message for an id whose
// shard this node holds goes to the local directory as on a single node; any other is forwarded
// once to the node holding the shard (Remote). A request that cannot reach that node is answered
// ErrUnavailable; a message without a reply that finds no owner, or an owner that no longer holds
// the shard, is offered again shortly.
type Router struct {
	r    *Remote
	dir  *actors.Directory
	kind string
}

var _ actors.Router = (*Router)(nil)

// Kind is the kind of the router's directory.
func (rt *Router) Kind() actors.Kind { return rt.dir.Kind() }

// Send delivers msg to the actor id on the node holding its shard.
func (rt *Router) Send(id string, msg any) { rt.deliver(id, msg, nil) }

// Request delivers msg with a reply address to the actor id on the node holding its shard.
func (rt *Router) Request(id string, msg any, sender *actor.PID) { rt.deliver(id, msg, sender) }

// To addresses one actor, for Ask.
func (rt *Router) To(id string) actors.Requester { return actors.Via(rt.r.sys, rt, id) }

// SendLive delivers msg to the actor id only if it has a live incarnation, on the node holding
// its shard; it never activates one (actors.Directory.SendLive). It reports whether it delivered
// here, or forwarded (whether a live incarnation there took it is not known).
func (rt *Router) SendLive(id string, msg any) bool {
	shard := ShardOf(id, rt.r.cfg.Shards)
	if rt.r.cfg.Placement.Here(shard) {
		return rt.dir.SendLive(id, msg)
	}
	return rt.r.send(rt.kind, id, msg, true, 0)
}

// deliver delivers here when this node holds the shard; a request elsewhere is forwarded once
// (answered ErrUnavailable when it cannot be), and a message without a reply is forwarded and
// offered again until it is delivered or its tries run out (Remote.send).
func (rt *Router) deliver(id string, msg any, sender *actor.PID) {
	shard := ShardOf(id, rt.r.cfg.Shards)
	switch {
	case rt.r.cfg.Placement.Here(shard):
		rt.dir.Request(id, msg, sender)
	case sender == nil:
		rt.r.send(rt.kind, id, msg, false, 0)
	default:
		rt.r.forward(rt.kind, id, shard, msg, sender)
	}
}
