package actors

import (
	"context"
	gotoken "go/token"
	"hash/maphash"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Kind describes one kind of virtual actor: how to make an incarnation and when to passivate it.
type Kind struct {
	// Name labels metrics and logs ("post", "job", "account", "webhook").
	Name string
	// New makes the actor for an id. It loads its state on *actor.Started (which also runs after
	// a restart) and replies only after its changes are durable.
	New func(id string) actor.Actor
	// IdleTimeout passivates an actor that received no message for that long (default 2m).
	IdleTimeout time.Duration
	// Shards is the number of directory shards (default 64).
	Shards int
	// Creator, when set, creates actors without activating them (see Creator).
	Creator Creator
	// MailboxLimit bounds the requests waiting for one actor (default DefaultMailboxLimit;
	// negative: unbounded). A request (a message with a reply address, as Ask sends) that finds
	// that many messages already waiting in the actor's mailbox, or held for its next
	// incarnation, is not delivered: its sender is answered at once with ErrBusy. Messages
	// without a reply address (the work of requests already accepted: a job's publishes, a
	// call's result) are always delivered, so refusing one never loses accepted work.
	MailboxLimit int
	// MaxLive caps the kind's live incarnations (0 or less: no cap). When a message activates an
	// actor beyond the cap, the directory passivates idle incarnations, least recently used
	// first, to make room: an idle incarnation is one that finished its last message with
	// nothing in its mailbox and reported no work in flight (Busy). Passivation writes nothing
	// (an actor's state is durable before it answers) and the next message activates the actor
	// again from the store. An actor with work in flight is never passivated for the cap, so
	// the cap is exceeded, never enforced by dropping work, while every live actor is busy. The
	// cap is kept per directory shard (MaxLive spread over the shards; a kind with a cap below
	// its shard count gets one shard per live actor).
	MaxLive int
}

// DefaultMailboxLimit is a kind's MailboxLimit when it sets none. A request behind that many
// messages of one actor would wait for all of them; the caller learns at once that the actor is
// busy instead.
const DefaultMailboxLimit = 1024

// Creator commits the first state of new actors of a kind without activating an incarnation.
//
// A message that creates an actor (a new post, say) is usually all that actor hears for a while:
// activating an incarnation for it (spawn, mailbox, idle timer, passivation) costs more than the
// write itself. When a kind has a Creator and a creating message reaches an id with no live
// incarnation, the directory runs Create in a goroutine of its own instead, and sends what it
// returns to the sender as the reply. The next message to the id activates an incarnation, which
// loads the committed state from bbolt like any other. Messages that reach the id while Create
// runs are held and delivered, in order, to that incarnation once Create has returned, so that
// at most one of Create and an incarnation ever touches an id's state.
type Creator interface {
	// Creates reports whether msg creates its actor.
	Creates(msg any) bool
	// Create commits the state msg creates for id and returns the reply (an *ErrorReply when it
	// fails). It returns only once the state is durable.
	Create(id string, msg any) (reply any)
}

// Directory is the activation directory of one actor kind: it holds exactly one live incarnation
// per id, activating it on its first message and passivating it when idle.
//
// Passivation never loses a message. An idle actor asks the directory to passivate it; under the
// shard lock the directory marks the entry stopping and sends it a poison pill, which the actor
// processes after every message already in its mailbox. Messages that arrive from then on are
// held by the directory and delivered, in order, to the next incarnation, which is spawned only
// once the previous one has stopped: two incarnations of an id never run at once.
//
// The interface is small (Send, Request, Ask via To) so that a cluster's grains can take its
// place when Herald runs on several nodes.
type Directory struct {
	sys    *System
	m      kindMetrics
	kind   Kind
	seed   maphash.Seed
	shards []*shard
	props  *actor.Props
	wg     sync.WaitGroup // live incarnations
	// stopped refuses new activations once Stop began: what is still sent is dropped, and its
	// work is recovered from bbolt at the next start.
	closing atomic.Bool
}

type shard struct {
	mu      sync.Mutex
	entries map[string]*entry
	// live counts the shard's incarnations not yet told to stop; limit is its share of the
	// kind's MaxLive (0: no cap). idle lists the incarnations that may be passivated for the
	// cap, least recently used first (capped kinds only).
	live, limit int
	idle        idleList
	// recheck says a look at the cap is due shortly (makeRoom left an incarnation still
	// finishing its last message).
	recheck bool
}

type entry struct {
	id       string
	pid      *actor.PID    // nil while a Creator runs for the id
	mailbox  *mailboxDepth // the incarnation's waiting messages (nil with pid)
	stopping bool
	held     []held
	// requeued counts the messages a stale incarnation handed back (requeue): they came before
	// those held since, and go first.
	requeued int
	// prev and next link the entry in its shard's idle list while it is there.
	prev, next *entry
	listed     bool
}

// idleList is a doubly linked list of entries, least recently used at the front.
type idleList struct{ front, back *entry }

func (l *idleList) push(e *entry) {
	e.prev, e.next, e.listed = l.back, nil, true
	if l.back != nil {
		l.back.next = e
	} else {
		l.front = e
	}
	l.back = e
}

func (l *idleList) remove(e *entry) {
	if !e.listed {
		return
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.front = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.back = e.prev
	}
	e.prev, e.next, e.listed = nil, nil, false
}

type held struct {
	msg    any
	sender *actor.PID
}

// NewDirectory creates the directory of a kind.
func NewDirectory(sys *System, k Kind) *Directory {
	if k.IdleTimeout <= 0 {
		k.IdleTimeout = 2 * time.Minute
	}
	if k.Shards <= 0 {
		k.Shards = 64
	}
	if k.MailboxLimit == 0 {
		k.MailboxLimit = DefaultMailboxLimit
	}
	if k.MaxLive > 0 && k.Shards > k.MaxLive {
		k.Shards = k.MaxLive
	}
	d := &Directory{sys: sys, kind: k, seed: maphash.MakeSeed(), shards: make([]*shard, k.Shards), m: newKindMetrics(sys.Metrics, k.Name)}
	for i := range d.shards {
		d.shards[i] = &shard{entries: map[string]*entry{}}
		if k.MaxLive > 0 {
			// The cap spread over the shards, the remainder one each to the first shards.
			d.shards[i].limit = k.MaxLive / k.Shards
			if i < k.MaxLive%k.Shards {
				d.shards[i].limit++
			}
		}
	}
	d.m.m.MaxLive.WithLabelValues(k.Name).Set(float64(max(k.MaxLive, 0)))
	d.props = actor.PropsFromProducer(func() actor.Actor { return nil },
		actor.WithGuardian(supervisor),
		actor.WithReceiverMiddleware(d.instrument),
		actor.WithDispatcher(sys.workers),
	)
	return d
}

// Kind is the directory's actor kind.
func (d *Directory) Kind() Kind { return d.kind }

func (d *Directory) shardOf(id string) *shard {
	return d.shards[maphash.String(d.seed, id)%uint64(len(d.shards))]
}

// Send delivers msg to the actor id, activating it if needed.
func (d *Directory) Send(id string, msg any) { d.deliver(id, msg, nil) }

// SendLive delivers msg to the actor id only if it has a live incarnation (not stopping), and
// reports whether it did; it never activates one. It tells an incarnation of a change another
// actor committed to its state (a job's final transaction writes its post's outcome): an actor
// that is not live reads the change from the store when a later message activates it, and one
// that is stopping hands its held messages to an incarnation that reads it likewise.
func (d *Directory) SendLive(id string, msg any) bool {
	s := d.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[id]
	if e == nil || e.stopping || e.pid == nil {
		return false
	}
	s.idle.remove(e) // it has work now
	d.sys.Root.Send(e.pid, msg)
	return true
}

// Request delivers msg with a reply address.
func (d *Directory) Request(id string, msg any, sender *actor.PID) { d.deliver(id, msg, sender) }

// To addresses one actor of the directory, for Ask.
func (d *Directory) To(id string) Requester { return target{d, id} }

type target struct {
	d  *Directory
	id string
}

func (t target) request(msg any, sender *actor.PID) { t.d.deliver(t.id, msg, sender) }
func (t target) system() *System                    { return t.d.sys }

func (d *Directory) deliver(id string, msg any, sender *actor.PID) {
	s := d.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[id]
	if e == nil {
		if d.closing.Load() {
			return
		}
		if c := d.kind.Creator; c != nil && c.Creates(msg) {
			s.entries[id] = &entry{}
			d.wg.Add(1)
			go d.create(c, id, msg, sender)
			return
		}
		e = d.spawn(s, id)
		s.entries[id] = e
		d.makeRoom(s)
	}
	s.idle.remove(e) // it has work now
	if sender != nil && d.full(e) {
		d.m.refused.Inc()
		d.sys.Root.Send(sender, &ErrorReply{Err: ErrBusy})
		return
	}
	if e.stopping || e.pid == nil {
		e.held = append(e.held, held{msg, sender})
		return
	}
	d.sys.Root.RequestWithCustomSender(e.pid, msg, sender)
}

// full reports whether a request to entry e finds MailboxLimit messages ahead of it; the caller
// holds the shard lock.
func (d *Directory) full(e *entry) bool {
	limit := d.kind.MailboxLimit
	if limit < 0 {
		return false
	}
	if e.stopping || e.pid == nil {
		return len(e.held) >= limit
	}
	return e.mailbox.depth() >= limit
}

// spawn starts an incarnation in shard s; the caller holds the shard lock.
func (d *Directory) spawn(s *shard, id string) *entry {
	inner := d.kind.New(id)
	mb := newMailboxDepth(d.m.depth)
	props := d.props.Clone(actor.WithProducer(func() actor.Actor {
		return &incarnation{d: d, id: id, inner: inner, mailbox: mb}
	}), actor.WithMailbox(mb.producer))
	d.wg.Add(1)
	d.m.live.Inc()
	d.m.activations.Inc()
	s.live++
	return &entry{id: id, pid: d.sys.Root.Spawn(props), mailbox: mb}
}

// stop tells entry e's incarnation to stop once its mailbox is drained; the caller holds the
// shard lock. Messages that reach the id from then on are held for the next incarnation.
func (d *Directory) stop(s *shard, e *entry) {
	e.stopping = true
	s.live--
	s.idle.remove(e)
	d.sys.Root.Poison(e.pid)
}

// makeRoom passivates idle incarnations of shard s, least recently used first, while the shard
// holds more than its share of the cap; the caller holds the shard lock. An incarnation still
// finishing the message after which it reported idle (its mailbox not yet empty) is left for
// later: nothing but the directory delivers to an idle incarnation, so an empty mailbox stays
// empty until the stop.
func (d *Directory) makeRoom(s *shard) {
	if s.limit <= 0 {
		return
	}
	skipped := false
	for e := s.idle.front; e != nil && s.live > s.limit; {
		next := e.next
		if e.mailbox.depth() == 0 {
			d.m.capped.Inc()
			d.m.passivations.Inc()
			d.stop(s, e)
		} else {
			skipped = true
		}
		e = next
	}
	if skipped && s.live > s.limit && !s.recheck && !d.closing.Load() {
		// The incarnations left were still finishing the message after which they reported
		// idle, and may report nothing more: look again once they have.
		s.recheck = true
		time.AfterFunc(capRecheck, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.recheck = false
			d.makeRoom(s)
		})
	}
}

// capRecheck is how soon makeRoom looks again at a shard over its cap whose idle incarnations
// were all still finishing a message.
const capRecheck = time.Millisecond

// idle is called by an incarnation that finished a message with no work in flight: it may be
// passivated for the cap from now on, until the directory delivers it another message.
func (d *Directory) idle(id string, pid *actor.PID) {
	s := d.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.incarnation(id, pid)
	if e == nil || e.stopping {
		return
	}
	s.idle.remove(e)
	s.idle.push(e)
	d.makeRoom(s)
}

// create runs the kind's Creator for a creating message to an id with no incarnation, replies, and
// then hands what arrived meanwhile to a new incarnation. A panic fails the request as an actor's
// would; the next message finds the state as committed, if it was.
func (d *Directory) create(c Creator, id string, msg any, sender *actor.PID) {
	defer d.created(id)
	mm := d.m.forMessage(msg)
	start := time.Now()
	var reply any
	func() {
		defer func() {
			if r := recover(); r != nil {
				d.sys.Log.Error("actor failed while creating; the next message activates it from its persisted state", "actor_kind", d.kind.Name, "message_type", mm.name, "panic", r)
				reply = &ErrorReply{Err: ErrActorFailed}
			}
		}()
		reply = c.Create(id, msg)
	}()
	mm.count.Inc()
	mm.duration.Observe(time.Since(start).Seconds())
	if sender != nil {
		d.sys.Root.Send(sender, reply)
	}
}

// created ends a Creator's run: messages held meanwhile go to a new incarnation.
func (d *Directory) created(id string) {
	defer d.wg.Done()
	s := d.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	d.handOver(s, id, s.entries[id])
}

// handOver ends entry e of id, under the shard lock: the messages it holds go to a new
// incarnation, or, when it holds none (or the directory is stopping), the id leaves the shard.
func (d *Directory) handOver(s *shard, id string, e *entry) {
	if len(e.held) == 0 || d.closing.Load() {
		delete(s.entries, id)
		return
	}
	next := d.spawn(s, id)
	s.entries[id] = next
	for _, h := range e.held {
		d.sys.Root.RequestWithCustomSender(next.pid, h.msg, h.sender)
	}
}

// passivate is called by an incarnation that is idle or settled, from the message it is
// processing. It passivates it unless another message waits in its mailbox: that message may give
// it work whose replies would find it stopped, so it stays, and decides again after that message
// (passivate reports whether it passivated). The check is made under the shard lock, so no
// message the directory delivers can slip in before the stop.
func (d *Directory) passivate(id string, pid *actor.PID) bool {
	s := d.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.incarnation(id, pid)
	if e == nil || e.stopping {
		return false
	}
	if e.mailbox.depth() > 1 { // the message being processed counts
		return false
	}
	d.m.passivations.Inc()
	d.stop(s, e)
	return true
}

// incarnation is id's entry if pid is its live incarnation (nil: another one, or none); s.mu
// is held.
func (s *shard) incarnation(id string, pid *actor.PID) *entry {
	e := s.entries[id]
	if e == nil || e.pid == nil || !e.pid.Equal(pid) {
		return nil
	}
	return e
}

// stopped is called by an incarnation as it stops; held messages go to a new incarnation.
func (d *Directory) stopped(id string, pid *actor.PID) {
	d.m.live.Dec()
	defer d.wg.Done()
	s := d.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.incarnation(id, pid)
	if e == nil {
		return
	}
	if !e.stopping {
		// Stopped by supervision (too many failures), not by the directory.
		s.live--
		s.idle.remove(e)
	}
	d.handOver(s, id, e)
}

// requeue stops a stale incarnation of id (pid) and, when msg is set, hands it to the next
// incarnation, after the messages handed back before it and before those sent since the stop.
func (d *Directory) requeue(id string, pid *actor.PID, msg any, sender *actor.PID) {
	s := d.shardOf(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.incarnation(id, pid)
	if e == nil {
		return
	}
	if !e.stopping {
		d.m.passivations.Inc()
		d.stop(s, e)
	}
	if msg != nil {
		e.held = slices.Insert(e.held, e.requeued, held{msg, sender})
		e.requeued++
	}
}

// fromOutside reports whether msg is one an actor's callers send it (an exported type), not one
// it sends itself (a call's outcome, a timer: unexported types of its package).
func fromOutside(msg any) bool {
	t := reflect.TypeOf(msg)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && gotoken.IsExported(t.Name())
}

// Live counts the live incarnations and the creations under way.
func (d *Directory) Live() int {
	n := 0
	for _, s := range d.shards {
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}

// Stop passivates every live actor (each finishes the messages in its mailbox first) and waits
// until all have stopped and every Create under way has returned, or ctx ends. From then on the
// directory activates nothing: messages to actors that are not live are dropped (their work is
// recovered from bbolt at the next start).
func (d *Directory) Stop(ctx context.Context) error {
	d.closing.Store(true)
	for _, s := range d.shards {
		s.mu.Lock()
		for _, e := range s.entries {
			if !e.stopping && e.pid != nil {
				d.stop(s, e)
			}
		}
		s.mu.Unlock()
	}
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// instrument is the receiver middleware: metrics per kind and message type, and an error reply
// to the requester when the actor panics (supervision then restarts it).
func (d *Directory) instrument(next actor.ReceiverFunc) actor.ReceiverFunc {
	kind := d.kind.Name
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		switch env.Message.(type) {
		case actor.SystemMessage, actor.AutoReceiveMessage, *idleCheck:
			next(c, env)
			return
		}
		mm := d.m.forMessage(env.Message)
		start := time.Now()
		defer func() {
			mm.count.Inc()
			mm.duration.Observe(time.Since(start).Seconds())
			if r := recover(); r != nil {
				d.sys.Log.Error("actor failed; restarting it from its persisted state", "actor_kind", kind, "message_type", mm.name, "panic", r)
				if env.Sender != nil {
					c.ActorSystem().Root.Send(env.Sender, &ErrorReply{Err: ErrActorFailed})
				}
				panic(r)
			}
		}()
		next(c, env)
	}
}

type idleCheck struct{}

// Busy is implemented by actors that must not passivate while they have work in flight (calls
// whose results come back to them as messages, timers they armed).
type Busy interface{ Busy() bool }

// Settled is implemented by actors that know when their work is over (a job whose outcome its
// post has taken, a post that is published): once Settled reports true after a message, the
// directory passivates the actor at once instead of after its idle timeout. Its state is durable
// and a later message activates it again from bbolt, so memory follows the work in hand rather
// than the work done in the last idle timeout.
type Settled interface{ Settled() bool }

// Stale is implemented by actors whose state holds only under the shard lease they activated
// under (Pin): once Stale reports true before a message, the directory stops the incarnation and
// hands the messages sent to it from outside (those of exported types) to a fresh incarnation,
// in their order. Its own messages (a call's outcome, a timer) are still its own to handle.
//
// An actor that must end its incarnation itself (a write of it was fenced: its shard moved) does
// so by reporting Stale from then on, never with ctx.Stop: once Stale reports true after a
// message, the directory stops the incarnation as it passivates one, so that a request already
// in its mailbox reaches a fresh incarnation and is answered. A self-stop drops such a request
// without a word (Proto.Actor discards what a stopped actor's mailbox still holds), and its
// sender waits out its whole time-out.
type Stale interface{ Stale() bool }

// incarnation wraps a kind's actor with idle passivation and the directory's bookkeeping.
type incarnation struct {
	d     *Directory
	id    string
	inner actor.Actor
	last  time.Time
	timer *time.Timer
	// mailbox counts the incarnation's waiting messages (herald_actor_mailbox_depth).
	mailbox *mailboxDepth
	// stale is set once the inner actor was found Stale: it stays so until it stops.
	stale bool
}

func (a *incarnation) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		a.last = time.Now()
		a.arm(ctx, a.d.kind.IdleTimeout)
		a.inner.Receive(ctx)
		a.retire(ctx)
	case *actor.Restarting:
		a.d.m.restarts.Inc()
		a.inner.Receive(ctx)
	case *idleCheck:
		idle := time.Since(a.last)
		if b, ok := a.inner.(Busy); ok && b.Busy() {
			// Work in flight reports back to this incarnation: stay.
			a.arm(ctx, a.d.kind.IdleTimeout)
			return
		}
		if idle >= a.d.kind.IdleTimeout {
			if !a.d.passivate(a.id, ctx.Self()) {
				a.arm(ctx, a.d.kind.IdleTimeout)
			}
			return
		}
		a.arm(ctx, a.d.kind.IdleTimeout-idle)
	case *actor.Stopped:
		if a.timer != nil {
			a.timer.Stop()
		}
		a.mailbox.close()
		a.inner.Receive(ctx)
		a.d.stopped(a.id, ctx.Self())
	default:
		if a.handBack(ctx) {
			return
		}
		a.last = time.Now()
		a.inner.Receive(ctx)
		if a.retire(ctx) {
			return
		}
		if s, ok := a.inner.(Settled); ok && s.Settled() && a.d.passivate(a.id, ctx.Self()) {
			return
		}
		if a.d.kind.MaxLive > 0 {
			if b, ok := a.inner.(Busy); !ok || !b.Busy() {
				a.d.idle(a.id, ctx.Self())
			}
		}
	}
}

// handBack stops the incarnation once its inner actor is Stale and hands the message to the next
// incarnation if it came from outside (reporting true); its own messages it still handles.
func (a *incarnation) handBack(ctx actor.Context) bool {
	msg := ctx.Message()
	switch msg.(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage:
		return false
	}
	if !a.retire(ctx) || !fromOutside(msg) {
		return false
	}
	a.d.requeue(a.id, ctx.Self(), msg, ctx.Sender())
	return true
}

// retire stops the incarnation once its inner actor reports Stale, before a message (handBack)
// or after one (reporting true, and true from then on): the messages sent to it from outside,
// those already in its mailbox included, go to a fresh incarnation (handBack), and those the
// directory delivers from now on are held for it.
func (a *incarnation) retire(ctx actor.Context) bool {
	if a.stale {
		return true
	}
	st, ok := a.inner.(Stale)
	if !ok || !st.Stale() {
		return false
	}
	a.stale = true
	a.d.requeue(a.id, ctx.Self(), nil, nil)
	return true
}

// arm schedules the next idle check as a message to self (never ReceiveTimeout, which races).
func (a *incarnation) arm(ctx actor.Context, after time.Duration) {
	if a.timer != nil {
		a.timer.Stop()
	}
	self, root := ctx.Self(), a.d.sys.Root
	a.timer = time.AfterFunc(after, func() { root.Send(self, &idleCheck{}) })
}

// LiveIDs lists the ids with a live incarnation (not stopping) that match.
func (d *Directory) LiveIDs(match func(id string) bool) []string {
	var out []string
	for _, s := range d.shards {
		s.mu.Lock()
		for id, e := range s.entries {
			if e.pid != nil && !e.stopping && match(id) {
				out = append(out, id)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// Passivate stops the live incarnations whose id matches, each after the messages already in its
// mailbox, and waits until they have stopped or ctx ends. Messages that reach them meanwhile are
// held for a next incarnation, as with any passivation. When several nodes share the store, a
// node passivates the actors of a shard it hands off or lost.
func (d *Directory) Passivate(ctx context.Context, match func(id string) bool) error {
	type stopping struct {
		id  string
		pid *actor.PID
	}
	var wait []stopping
	for _, s := range d.shards {
		s.mu.Lock()
		for id, e := range s.entries {
			if e.pid != nil && match(id) {
				if !e.stopping {
					d.m.passivations.Inc()
					d.stop(s, e)
				}
				wait = append(wait, stopping{id, e.pid})
			}
		}
		s.mu.Unlock()
	}
	for _, w := range wait {
		for {
			s := d.shardOf(w.id)
			s.mu.Lock()
			e := s.entries[w.id]
			gone := e == nil || e.pid == nil || !e.pid.Equal(w.pid)
			s.mu.Unlock()
			if gone {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	return nil
}
