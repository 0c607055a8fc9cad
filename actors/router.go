package actors

import "github.com/asynkron/protoactor-go/actor"

// Router delivers messages to the actors of one kind by id, wherever they run. Everything that
// talks to actors from outside them (the HTTP layer, account linking, live data, webhooks,
// campaigns, the scheduler, publishing) holds a Router, never a directory, so that where an
// actor lives is decided in one place: one node's Directory is the Router of a single Herald
// process, and a router that forwards a message to the node owning the id's shard takes its
// place when several nodes run (docs/cluster.md). Only the process that made a Directory stops
// it and reads its live count.
type Router interface {
	// Kind is the actor kind the router delivers to.
	Kind() Kind
	// Send delivers msg to the actor id, activating it if needed.
	Send(id string, msg any)
	// Request delivers msg with a reply address.
	Request(id string, msg any, sender *actor.PID)
	// To addresses one actor, for Ask.
	To(id string) Requester
}

var _ Router = (*Directory)(nil)

// Via addresses the actor id through r, for Ask: what a Router other than a Directory returns
// from To.
func Via(sys *System, r Router, id string) Requester { return routed{sys, r, id} }

type routed struct {
	sys *System
	r   Router
	id  string
}

func (t routed) request(msg any, sender *actor.PID) { t.r.Request(t.id, msg, sender) }
func (t routed) system() *System                    { return t.sys }
