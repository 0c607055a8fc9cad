package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/heraldhq/herald/actors"
)

// Messages between nodes go through three processes of each node's actor system, registered
// under fixed names:
//
//	node A: Router ──envelope (kind, id)──▶ node B: gateway ──▶ B's directory of the kind ──▶ the actor
//	node A: replies ◀──envelope (the answer)── node B: answer ◀── the actor's reply
//
// Every message between nodes is sealed with the key the nodes share (RemoteConfig.Sealer): the
// kind and id of its actor, and its own envelope (envelope.go), sealed together. A forwards a
// message to the node its Placement names for the id's shard. B's gateway delivers
// it to B's own directory only if B holds the shard; otherwise it answers that it does not
// (notHere) and never forwards it again, so a message crosses at most once. A request that
// finds no owner in A's placement, or that B refused so, was delivered nowhere: A reads its
// placement again (Refresher) and sends it once more to the owner named now, or answers
// ErrUnavailable when none other is named (the shard is moving). A request's sender on A waits in
// A's table of pending forwards under a number that travels as the reply address's request id:
// B's actor answers a local process (answer) that puts the reply in an envelope and sends it to
// A's replies, which hands it to the sender. A forward that gets no answer within the time-out,
// or whose connection to B ends, is answered ErrUnavailable.
//
// A message without a reply (Send) carries a return address instead, sealed with it (the sending
// node's address and the number of tries so far): a gateway that does not hold the shard sends
// the sealed message back to that node's returned process, undelivered, and the sending node
// offers it again later (redeliver), as it does a message for a shard whose owner it does not
// know yet, and one that remote could not hand to the node it went to (a dead letter: the
// connection failed). A message is offered again only when it is known not to have been
// delivered, so no actor receives one twice this way.
const (
	gatewayID  = "herald$gateway"
	repliesID  = "herald$replies"
	answerID   = "herald$answer/"
	returnedID = "herald$returned"
)

// A message without a reply that cannot be delivered now (no owner known, or the node it went to
// no longer holds the shard) is offered again after a wait that starts at redeliverFirst and
// doubles up to redeliverMax, redeliverTries times at most (about half a minute, several lease
// lifetimes: long enough for a shard to move, even by takeover), and no more than
// maxRedelivering at once; beyond either it is dropped, counted and logged, and its work waits in
// the store for the shard's owner to resume it.
const (
	redeliverFirst  = 25 * time.Millisecond
	redeliverMax    = time.Second
	redeliverTries  = 40
	maxRedelivering = 10000
)

// ErrUnavailable means a request could not reach the node that owns its actor's shard: no owner
// is known (the shard is moving), the owner cannot be reached, it no longer holds the shard, or
// it did not answer in time. The request may be retried shortly; a client is answered 503 with
// Retry-After. A request whose answer did not come in time may have been carried out, as with
// actors.ErrTimeout.
var ErrUnavailable = errors.New("cluster: the node that owns the actor cannot be reached right now")

// DefaultForwardTimeout bounds the wait for the answer of a forwarded request.
const DefaultForwardTimeout = 5 * time.Second

// RemoteConfig configures the messages between nodes.
type RemoteConfig struct {
	// Addr is the address remote listens on, HOST:PORT (--node-addr). A port of 0 takes a free
	// port (tests).
	Addr string
	// Advertise is the address the other nodes reach this one at, HOST:PORT (--node-advertise):
	// the address of every reply and of this node in the lease table, when it is not Addr (a
	// listener on every interface, a proxy or a NAT in front of the node). "": Addr, as the
	// listener bound it.
	Advertise string
	// Placement says which node holds each shard.
	Placement Placement
	// Shards is the number of shards (256 when 0).
	Shards int
	// Timeout bounds the wait for a forwarded request's answer (DefaultForwardTimeout when 0).
	Timeout time.Duration
	// Sealer seals every message this node sends to another and opens every message it
	// receives (persistence/secret's Box, on the key every node shares to read the account
	// tokens): a message that does not open is neither delivered nor answered, so only the
	// nodes that hold the key can send them work, and what crosses (account credentials among
	// it) is not readable on the wire.
	Sealer   Sealer
	Registry prometheus.Registerer
	Log      *slog.Logger
}

// Sealer seals and opens bytes with a key (authenticated encryption).
type Sealer interface {
	Seal(plaintext []byte) []byte
	Open(sealed []byte) ([]byte, error)
}

// Remote is one node's end of the messages between nodes: Proto.Actor's remote on its address,
// the gateway that delivers what other nodes forward, and the forwards waiting for answers.
type Remote struct {
	sys     *actors.System
	rem     *remote.Remote
	cfg     RemoteConfig
	addr    string
	m       remoteMetrics
	sub     *eventstream.Subscription
	mu      sync.Mutex
	dirs    map[string]*actors.Directory
	answers map[string]bool
	pending map[uint32]*pending
	next    uint32
	// redelivering counts the messages waiting to be offered again, tries bounds their tries
	// (redeliverTries); stopped ends them.
	redelivering int
	tries        uint32
	stopped      bool
}

type pending struct {
	sender *actor.PID
	kind   string
	addr   string
	timer  *time.Timer
	// What resend needs to send the request again, once (resent), when it was delivered
	// nowhere: its actor's id and shard, the message, and its sealed envelope.
	id     string
	shard  int
	msg    any
	env    *anypb.Any
	resent bool
}

// notHere is a gateway's answer to a request for a shard its node does not hold: the request
// was not delivered. It is a type of its own, never an error, so that no actor's answer (an
// error passed on from another request) can be taken for it.
type notHere struct{}

func init() { Register[notHere]("cluster.not_here") }

// StartRemote starts Proto.Actor's remote on cfg.Addr and this node's gateway, and names the
// system's Ask reply address after the node's address (actors.System.Listening). It must run
// before anything sends a message.
func StartRemote(sys *actors.System, cfg RemoteConfig) (*Remote, error) {
	host, portText, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: node address %q: %w", cfg.Addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("cluster: node address %q: the port is not a number from 0 to 65535", cfg.Addr)
	}
	if cfg.Sealer == nil {
		return nil, errors.New("cluster: the messages between nodes need a sealer")
	}
	if cfg.Placement == nil {
		cfg.Placement = Local{}
	}
	if cfg.Shards <= 0 {
		cfg.Shards = 256
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultForwardTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	var opts []remote.ConfigOption
	if cfg.Advertise != "" {
		if _, _, err := net.SplitHostPort(cfg.Advertise); err != nil {
			return nil, fmt.Errorf("cluster: advertised node address %q: %w", cfg.Advertise, err)
		}
		// Remote names the system after it: the reply address of every message this node
		// sends, and what a message's target must name to be delivered here.
		opts = append(opts, remote.WithAdvertisedHost(cfg.Advertise))
	}
	rc := remote.Configure(host, port, opts...)
	// One connection attempt, then the endpoint ends (and its forwards are answered at once);
	// the next message to the address tries again.
	rc.MaxRetryCount = 1
	r := &Remote{sys: sys, cfg: cfg, m: newRemoteMetrics(cfg.Registry), dirs: map[string]*actors.Directory{},
		answers: map[string]bool{}, pending: map[uint32]*pending{}, tries: redeliverTries}
	r.rem = remote.NewRemote(sys.AS, rc)
	if err := startRemote(r.rem); err != nil {
		return nil, fmt.Errorf("cluster: starting remote on %s: %w", cfg.Addr, err)
	}
	r.addr = sys.AS.ProcessRegistry.Address
	sys.Listening()
	if _, ok := sys.AS.ProcessRegistry.Add(&gateway{r}, gatewayID); !ok {
		return nil, errors.New("cluster: the gateway is already registered")
	}
	_, _ = sys.AS.ProcessRegistry.Add(&replies{r}, repliesID)
	_, _ = sys.AS.ProcessRegistry.Add(&returned{r}, returnedID)
	r.sub = sys.AS.EventStream.Subscribe(func(evt any) {
		switch t := evt.(type) {
		case *remote.EndpointTerminatedEvent:
			r.endpointEnded(t.Address)
		case *actor.DeadLetterEvent:
			// A message without a reply that remote could not hand to the node it went to (it
			// could not connect: the node died): never delivered there.
			if env, ok := t.Message.(*anypb.Any); ok && t.Sender == nil && t.PID != nil && t.PID.Id == gatewayID {
				go r.unreached(env)
			}
		}
	})
	cfg.Log.Info("cluster: remote listening", "addr", r.addr)
	return r, nil
}

// starting serialises remote's Start, which sets gRPC's process-wide logger each time (several
// nodes run in one process in tests).
var starting sync.Mutex

// startRemote runs remote's Start, which panics when it cannot listen.
func startRemote(rem *remote.Remote) (err error) {
	starting.Lock()
	defer starting.Unlock()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	rem.Start()
	return nil
}

// Addr is the address other nodes reach this one at (the advertised address, when one is given).
func (r *Remote) Addr() string { return r.addr }

// Route makes the router of d's kind and lets other nodes deliver to d through this node's
// gateway.
func (r *Remote) Route(d *actors.Directory) *Router {
	name := d.Kind().Name
	r.mu.Lock()
	r.dirs[name] = d
	r.mu.Unlock()
	return &Router{r: r, dir: d, kind: name}
}

// Stop answers every forward still waiting with ErrUnavailable and stops listening; the
// connections to the other nodes end with the actor system.
func (r *Remote) Stop() {
	r.sys.AS.EventStream.Unsubscribe(r.sub)
	r.mu.Lock()
	waiting := r.pending
	r.pending = map[uint32]*pending{}
	r.stopped = true
	r.mu.Unlock()
	for _, p := range waiting {
		p.timer.Stop()
		r.fail(p)
	}
	r.rem.Shutdown(false)
}

func (r *Remote) directory(kind string) *actors.Directory {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dirs[kind]
}

// forward sends a request for the actor id of kind to the node holding its shard, with sender
// as its reply address. When no owner is known, or the lease table still names this node, which
// does not hold the shard, it moved since the placement was read, or is moving: the request goes
// where the placement, read again, names (resend). A request that cannot be sent is answered
// ErrUnavailable.
func (r *Remote) forward(kind, id string, shard int, msg any, sender *actor.PID) {
	addr := r.cfg.Placement.Where(shard)
	known := addr != "" && addr != r.addr
	if !known && r.refresher() == nil {
		r.m.forwards.WithLabelValues(kind, "unavailable").Inc()
		r.sys.Root.Send(sender, &actors.ErrorReply{Err: ErrUnavailable})
		return
	}
	env, err := r.encode(kind, id, msg, false, "")
	if err != nil {
		r.sys.Root.Send(sender, &actors.ErrorReply{Err: err})
		return
	}
	from := r.open(sender, kind, addr)
	r.mu.Lock()
	if p := r.pending[from.RequestId]; p != nil {
		p.id, p.shard, p.msg, p.env, p.resent = id, shard, msg, env, !known
	}
	r.mu.Unlock()
	if !known {
		go r.resend(from.RequestId, "")
		return
	}
	r.sys.Root.Send(actor.NewPID(addr, gatewayID), &actor.MessageEnvelope{Message: env, Sender: from})
}

// send delivers a message without a reply to the actor id of kind (to a live incarnation only,
// when live) on the node holding its shard: here, or forwarded there. try counts the tries
// before this one. A message that cannot be delivered now is offered again later (redeliver).
// It reports whether it delivered the message here or forwarded it.
func (r *Remote) send(kind, id string, msg any, live bool, try uint32) bool {
	shard := ShardOf(id, r.cfg.Shards)
	if r.cfg.Placement.Here(shard) {
		if dir := r.directory(kind); dir != nil {
			if live {
				return dir.SendLive(id, msg)
			}
			dir.Send(id, msg)
			return true
		}
	}
	addr := r.cfg.Placement.Where(shard)
	if addr == "" || addr == r.addr {
		// No owner known, or the lease table still names this node, which no longer holds the
		// shard: it is moving.
		r.redeliver(kind, id, msg, live, try, "no node is known to hold the shard")
		return false
	}
	env, err := r.encode(kind, id, msg, live, r.addr+" "+strconv.FormatUint(uint64(try), 10))
	if err != nil {
		return false
	}
	r.m.forwards.WithLabelValues(kind, "sent").Inc()
	r.sys.Root.Send(actor.NewPID(addr, gatewayID), env)
	return true
}

// encode seals a message for the actor id of kind, with back, for a message without a reply,
// its return address (the sending node's address and its tries so far: back, parsed by
// returnAddress); a message that cannot cross is counted and logged.
func (r *Remote) encode(kind, id string, msg any, live bool, back string) (*anypb.Any, error) {
	env, err := Encode(msg)
	if err != nil {
		r.m.forwards.WithLabelValues(kind, "unencodable").Inc()
		r.cfg.Log.Error("cluster: a message that cannot cross between nodes was sent to an actor on another node", "actor_kind", kind, "error", err)
		return nil, err
	}
	liveText := ""
	if live {
		liveText = "1"
	}
	return r.seal(kind, id, liveText, env.GetTypeUrl(), string(env.GetValue()), back), nil
}

// sendFields is the number of sealed fields of a message to an actor: its kind, its id, whether
// for a live incarnation only, the type URL and value of its own envelope, and its return address.
const sendFields = 6

// returnAddress parses a message's return address (encode): the node that sent it and its
// tries so far; ok false for a request (it has none).
func returnAddress(back string) (addr string, try uint32, ok bool) {
	addr, n, ok := strings.Cut(back, " ")
	if !ok {
		return "", 0, false
	}
	t, err := strconv.ParseUint(n, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return addr, uint32(t), true
}

// opened decodes a sealed message to an actor: its kind, id, whether for a live incarnation
// only, the message, and its return address.
func (r *Remote) opened(sealed *anypb.Any) (kind, id string, live bool, m any, back string, err error) {
	f, err := r.unseal(sealed, sendFields)
	if err != nil {
		return "", "", false, nil, "", err
	}
	m, err = Decode(&anypb.Any{TypeUrl: f[3], Value: []byte(f[4])})
	return f[0], f[1], f[2] != "", m, f[5], err
}

// unreached offers again a message without a reply that remote could not hand to the node it
// went to.
func (r *Remote) unreached(sealed *anypb.Any) {
	_, _ = r.offerAgain(sealed, "the node it was sent to could not be reached")
}

// offerAgain offers again (redeliver) a sealed message without a reply that was not delivered,
// counted returned, and reports its kind; an error when it does not open or decode (a request,
// which has no return address, is dropped).
func (r *Remote) offerAgain(sealed *anypb.Any, why string) (string, error) {
	kind, id, live, m, back, err := r.opened(sealed)
	if err != nil {
		return kind, err
	}
	if _, try, ok := returnAddress(back); ok {
		r.m.forwards.WithLabelValues(kind, "returned").Inc()
		r.redeliver(kind, id, m, live, try, why)
	}
	return kind, nil
}

// refresher is the placement when it can be read again on demand, else nil.
func (r *Remote) refresher() Refresher {
	f, _ := r.cfg.Placement.(Refresher)
	return f
}

// refresh reads the placement again, when it can be, within the forward's time-out.
func (r *Remote) refresh() {
	if f := r.refresher(); f != nil {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		f.Refresh(ctx)
		cancel()
	}
}

// resend reads the placement again for the forwarded request n, which was delivered nowhere (no
// owner was known for its shard, or the node at refused does not hold it), and sends it to the
// owner named now: to this node's own directory if the shard is here now, else to that node's
// gateway. When the placement still names no other node, the shard is moving indeed and the
// request is answered ErrUnavailable. It runs beside the sender (reading the placement may
// read the database), within the forward's time-out.
func (r *Remote) resend(n uint32, refused string) {
	r.mu.Lock()
	p := r.pending[n]
	r.mu.Unlock()
	if p == nil {
		return // answered by its time-out
	}
	r.refresh()
	if r.cfg.Placement.Here(p.shard) {
		if r.take(n) == p {
			p.timer.Stop()
			r.m.forwards.WithLabelValues(p.kind, "resent").Inc()
			r.directory(p.kind).Request(p.id, p.msg, p.sender)
		}
		return
	}
	addr := r.cfg.Placement.Where(p.shard)
	if addr == "" || addr == r.addr || addr == refused {
		if r.take(n) == p {
			p.timer.Stop()
			r.fail(p)
		}
		return
	}
	r.mu.Lock()
	if r.pending[n] != p {
		r.mu.Unlock()
		return
	}
	p.addr = addr
	r.mu.Unlock()
	r.m.forwards.WithLabelValues(p.kind, "resent").Inc()
	r.sys.Root.Send(actor.NewPID(addr, gatewayID), &actor.MessageEnvelope{Message: p.env,
		Sender: &actor.PID{Address: r.addr, Id: repliesID, RequestId: n}})
}

// redeliver offers a message without a reply, known not to have been delivered, again after a
// wait that grows with its tries; past the last try, or with too many waiting, it is dropped,
// counted and logged: its work is in the store, and the shard's owner resumes it
// (docs/cluster.md).
func (r *Remote) redeliver(kind, id string, msg any, live bool, try uint32, why string) {
	r.mu.Lock()
	ok := !r.stopped && try < r.tries && r.redelivering < maxRedelivering
	if ok {
		r.redelivering++
	}
	r.mu.Unlock()
	if !ok {
		r.m.forwards.WithLabelValues(kind, "dropped").Inc()
		r.cfg.Log.Warn("cluster: a message to an actor on another node was not delivered; its shard's owner resumes its work from the store",
			"actor_kind", kind, "actor_id", id, "reason", why, "tries", try+1)
		return
	}
	r.m.forwards.WithLabelValues(kind, "deferred").Inc()
	wait := redeliverMax
	if try < 6 {
		wait = min(redeliverFirst<<try, redeliverMax)
	}
	time.AfterFunc(wait, func() {
		r.mu.Lock()
		r.redelivering--
		stopped := r.stopped
		r.mu.Unlock()
		if !stopped {
			// The owner may be known by now, before the member's next step reads it.
			r.refresh()
			r.send(kind, id, msg, live, try+1)
		}
	})
}

// open registers a forwarded request's sender and returns the reply address its forward carries.
func (r *Remote) open(sender *actor.PID, kind, addr string) *actor.PID {
	p := &pending{sender: sender, kind: kind, addr: addr}
	r.mu.Lock()
	n := r.next
	for _, taken := r.pending[n]; taken || n == 0; _, taken = r.pending[n] {
		n++
	}
	r.next = n + 1
	r.pending[n] = p
	p.timer = time.AfterFunc(r.cfg.Timeout, func() {
		if p := r.take(n); p != nil {
			r.fail(p)
		}
	})
	r.mu.Unlock()
	return &actor.PID{Address: r.addr, Id: repliesID, RequestId: n}
}

// take removes the pending forward n, if it still waits.
func (r *Remote) take(n uint32) *pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[n]
	delete(r.pending, n)
	return p
}

func (r *Remote) fail(p *pending) {
	r.m.forwards.WithLabelValues(p.kind, "unavailable").Inc()
	r.sys.Root.Send(p.sender, &actors.ErrorReply{Err: ErrUnavailable})
}

// endpointEnded answers at once the forwards waiting on a node whose connection ended.
func (r *Remote) endpointEnded(addr string) {
	var ended []*pending
	r.mu.Lock()
	for n, p := range r.pending {
		if p.addr == addr {
			ended = append(ended, p)
			delete(r.pending, n)
		}
	}
	r.mu.Unlock()
	for _, p := range ended {
		p.timer.Stop()
		r.fail(p)
	}
}

// answerTo is the local reply address of a request forwarded by the node at addr, under the
// request id the forwarding node gave it.
func (r *Remote) answerTo(from *actor.PID) *actor.PID {
	id := answerID + from.Address
	r.mu.Lock()
	if !r.answers[from.Address] {
		r.answers[from.Address] = true
		_, _ = r.sys.AS.ProcessRegistry.Add(&answer{r: r, to: from.Address}, id)
	}
	r.mu.Unlock()
	return &actor.PID{Address: r.addr, Id: id, RequestId: from.RequestId}
}

// gateway receives what other nodes forward.
type gateway struct{ r *Remote }

func (g *gateway) SendUserMessage(_ *actor.PID, message any) {
	r := g.r
	_, msg, sender := actor.UnwrapEnvelope(message)
	sealed, _ := msg.(*anypb.Any)
	f, err := r.unseal(sealed, sendFields)
	if err != nil {
		// Not from a node that holds the key: neither delivered nor answered.
		r.m.received.WithLabelValues("unknown", "unsealed").Inc()
		r.cfg.Log.Warn("cluster: a message that does not open with this node's key was not delivered", "error", err)
		return
	}
	kind, id, live := f[0], f[1], f[2] != ""
	env := &anypb.Any{TypeUrl: f[3], Value: []byte(f[4])}
	backAddr, _, back := returnAddress(f[5])
	dir := r.directory(kind)
	label := kind
	if dir == nil {
		label = "unknown"
	}
	reply := func(m any) {
		if sender != nil {
			if env, err := r.encodeReply(m); err == nil {
				r.sys.Root.Send(sender, env)
			}
		}
	}
	if dir == nil {
		r.m.received.WithLabelValues(label, "unknown_type").Inc()
		reply(&actors.ErrorReply{Err: fmt.Errorf("%w: no actor kind %q on this node", ErrUnknownType, kind)})
		return
	}
	if !r.cfg.Placement.Here(ShardOf(id, r.cfg.Shards)) {
		// Never forwarded on: the sender learns that it was not delivered, and sends it to
		// the owner its placement names once read again (a request), or offers it again later
		// (a message without a reply).
		r.m.received.WithLabelValues(label, "refused").Inc()
		switch {
		case back:
			r.sys.Root.Send(actor.NewPID(backAddr, returnedID), sealed)
		case sender == nil:
			r.cfg.Log.Warn("cluster: a message forwarded here for a shard this node does not hold was not delivered; the shard's owner resumes its work from the store",
				"actor_kind", kind, "actor_id", id)
		}
		reply(&notHere{})
		return
	}
	m, err := Decode(env)
	if err != nil {
		r.m.received.WithLabelValues(label, "unknown_type").Inc()
		r.cfg.Log.Warn("cluster: a forwarded message could not be decoded", "actor_kind", kind, "error", err)
		reply(&actors.ErrorReply{Err: err})
		return
	}
	r.m.received.WithLabelValues(label, "delivered").Inc()
	switch {
	case sender == nil && live:
		dir.SendLive(id, m)
		return
	case sender == nil:
		dir.Send(id, m)
		return
	}
	dir.Request(id, m, r.answerTo(sender))
}

func (g *gateway) SendSystemMessage(*actor.PID, any) {}
func (g *gateway) Stop(*actor.PID)                   {}

// answer sends a local actor's reply to a forwarded request back to the forwarding node.
type answer struct {
	r  *Remote
	to string
}

func (a *answer) SendUserMessage(pid *actor.PID, message any) {
	_, msg, _ := actor.UnwrapEnvelope(message)
	if _, ok := msg.(*actor.DeadLetterResponse); ok {
		msg = &actors.ErrorReply{Err: ErrUnavailable}
	}
	env, err := a.r.encodeReply(msg)
	if err != nil {
		a.r.cfg.Log.Error("cluster: a reply that cannot cross between nodes", "error", err)
		if env, err = a.r.encodeReply(&actors.ErrorReply{Err: err}); err != nil {
			return
		}
	}
	a.r.sys.Root.Send(&actor.PID{Address: a.to, Id: repliesID, RequestId: pid.RequestId}, env)
}

func (a *answer) SendSystemMessage(*actor.PID, any) {}
func (a *answer) Stop(*actor.PID)                   {}

// replies receives the answers to this node's forwarded requests and hands each to its sender.
type replies struct{ r *Remote }

func (p *replies) SendUserMessage(pid *actor.PID, message any) {
	r := p.r
	_, msg, _ := actor.UnwrapEnvelope(message)
	var reply any
	if m, ok := msg.(*anypb.Any); ok {
		f, err := r.unseal(m, 2)
		if err != nil {
			r.cfg.Log.Warn("cluster: an answer that does not open with this node's key was dropped", "error", err)
		} else if reply, err = Decode(&anypb.Any{TypeUrl: f[0], Value: []byte(f[1])}); err != nil {
			reply = &actors.ErrorReply{Err: err}
		}
	}
	if _, ok := reply.(*notHere); ok {
		// The node it went to does not hold the shard: sent again once, to the owner the
		// placement names when read again.
		r.mu.Lock()
		w := r.pending[pid.RequestId]
		again := w != nil && !w.resent && r.refresher() != nil
		var refused string
		if again {
			w.resent, refused = true, w.addr
		}
		r.mu.Unlock()
		if again {
			go r.resend(pid.RequestId, refused)
			return
		}
		reply = nil
	}
	w := r.take(pid.RequestId)
	if w == nil {
		return // late: the sender was answered already
	}
	w.timer.Stop()
	if reply == nil {
		// Not sealed with the key, a dead letter (the owner node runs no gateway), or a
		// refusal not sent again.
		r.fail(w)
		return
	}
	if e, ok := reply.(*actors.ErrorReply); ok && errors.Is(e.Err, ErrUnavailable) {
		r.m.forwards.WithLabelValues(w.kind, "unavailable").Inc()
	} else {
		r.m.forwards.WithLabelValues(w.kind, "answered").Inc()
	}
	r.sys.Root.Send(w.sender, reply)
}

func (p *replies) SendSystemMessage(*actor.PID, any) {}
func (p *replies) Stop(*actor.PID)                   {}

// returned receives the messages without a reply that a node sent back undelivered (it no
// longer holds their shard), and offers each again (redeliver).
type returned struct{ r *Remote }

func (p *returned) SendUserMessage(_ *actor.PID, message any) {
	r := p.r
	_, msg, _ := actor.UnwrapEnvelope(message)
	sealed, _ := msg.(*anypb.Any)
	kind, err := r.offerAgain(sealed, "the node it was sent to does not hold the shard")
	switch {
	case errors.Is(err, errUnsealed):
		r.m.received.WithLabelValues("unknown", "unsealed").Inc()
		r.cfg.Log.Warn("cluster: a returned message that does not open with this node's key was dropped", "error", err)
	case err != nil:
		r.cfg.Log.Warn("cluster: a returned message could not be decoded", "actor_kind", kind, "error", err)
	}
}

func (p *returned) SendSystemMessage(*actor.PID, any) {}
func (p *returned) Stop(*actor.PID)                   {}

// sealedType is the type URL of a sealed envelope: its value is the sealed fields of the message
// (the kind, the id, whether for a live incarnation only, the type URL and value of the message's
// own envelope, its return address; or, for an answer, the type URL and value).
const sealedType = typePrefix + "sealed"

// encodeReply puts an answer in its envelope, sealed.
func (r *Remote) encodeReply(m any) (*anypb.Any, error) {
	env, err := Encode(m)
	if err != nil {
		return nil, err
	}
	return r.seal(env.GetTypeUrl(), string(env.GetValue())), nil
}

// seal frames the fields (each its length, then its bytes) and seals them.
func (r *Remote) seal(fields ...string) *anypb.Any {
	n := 0
	for _, f := range fields {
		n += binary.MaxVarintLen64 + len(f)
	}
	b := make([]byte, 0, n)
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return &anypb.Any{TypeUrl: sealedType, Value: r.cfg.Sealer.Seal(b)}
}

// errUnsealed is a message that is not a sealed envelope of n fields opened by this node's key.
var errUnsealed = errors.New("cluster: the message is not sealed with this node's key")

// unseal opens a sealed envelope of n fields.
func (r *Remote) unseal(a *anypb.Any, n int) ([]string, error) {
	if a.GetTypeUrl() != sealedType {
		return nil, errUnsealed
	}
	b, err := r.cfg.Sealer.Open(a.GetValue())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnsealed, err)
	}
	fields := make([]string, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, errUnsealed
		}
		fields = append(fields, string(b[k:k+int(l)]))
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return nil, errUnsealed
	}
	return fields, nil
}

type remoteMetrics struct {
	forwards, received *prometheus.CounterVec
}

func newRemoteMetrics(reg prometheus.Registerer) remoteMetrics {
	m := remoteMetrics{
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_cluster_forwards_total",
			Help: "Messages this node forwarded to the node owning their actor's shard, by actor kind and outcome: sent (a message without reply, handed to the connection), answered (a request whose answer came back), unavailable (a request answered 503: no owner known, unreachable, not the owner, or no answer in time), resent (a request delivered nowhere, no owner known or refused by a node that does not hold the shard, sent again to the owner named by the lease table read anew), deferred (a message without reply held for another try: no owner known yet), returned (a message without reply sent back undelivered by a node that no longer holds the shard, or that remote could not hand to its node, to be tried again), dropped (a message without reply given up after its last try), unencodable (a message type that cannot cross).",
		}, []string{"kind", "outcome"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_cluster_forwards_received_total",
			Help: "Messages other nodes forwarded to this one, by actor kind and outcome: delivered, refused (this node does not hold the shard; answered, never forwarded again), unknown_type, unsealed (not sealed with the nodes' key: dropped unanswered).",
		}, []string{"kind", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.forwards, m.received)
	}
	return m
}
