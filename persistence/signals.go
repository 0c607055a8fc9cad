package persistence

import (
	"sync"
	"sync/atomic"
)

// Signals carry no data: they tell a follower that something it follows changed in the store, and
// the follower reads what is new from the store. The store is the source of every stream (a job's
// change and its timeline, a campaign's timeline, stored in the transactions that make them); the
// signal is only the wake-up, and it is the one thing that differs by backend:
//
//   - In one process (bbolt, or PostgreSQL held by one process), the group committer wakes the
//     followers of what a commit touched once it is durable (Store.Follow, Tx.touch).
//   - With several processes on one PostgreSQL database (Options.Shared), the transaction that
//     touches a topic also sends a NOTIFY, which PostgreSQL delivers at commit and only if it
//     commits, and every process's one listening connection wakes its own followers
//     (pgnotify.go). A follower on any node so sees a change made on any other.
//
// Several wake-ups before a follower reads collapse into one, and a spurious one costs one read.
// Process-wide changes that are not streams (a key revoked: every process's key cache must forget
// it) are Broadcast as a Signal and reach the handlers that OnSignal registered.

// Topic names what a follower follows: one job, or one campaign.
type Topic struct {
	kind byte
	id   [16]byte
}

// The kinds of topic; their byte is the first of a NOTIFY's payload.
const (
	topicJob      byte = 'j'
	topicCampaign byte = 'c'
	topicOutbox   byte = 'o'
)

// JobTopic is the topic of a job: its record changed (a phase, its end), with its timeline.
func JobTopic(trackingID string) Topic {
	t := Topic{kind: topicJob}
	appendID(t.id[:0], trackingID)
	return t
}

// CampaignTopic is the topic of a campaign: its timeline grew, a post of it changed status, or it
// was deleted.
func CampaignTopic(campaignID string) Topic {
	t := Topic{kind: topicCampaign}
	appendID(t.id[:0], campaignID)
	return t
}

// OutboxTopic is the topic of the outbox: an event was appended (AppendEvent), for its
// dispatcher, which runs on one node of several (actors.Notifier.Relay).
func OutboxTopic() Topic { return Topic{kind: topicOutbox} }

// Relay calls fn after every commit that touched t, on any node, until the store closes: for a
// consumer woken by a notifier of its own rather than a channel per follower.
func (s *Store) Relay(t Topic, fn func()) {
	wake, stop := s.Follow(t)
	go func() {
		defer stop()
		for {
			select {
			case <-wake:
				fn()
			case <-s.done:
				return
			}
		}
	}()
}

// Signal is a process-wide change that every process must hear (Broadcast, OnSignal).
type Signal string

const (
	// SignalAuth: API keys, access tokens, users or workspaces changed in a way that the key
	// cache of every process must forget (auth.Authenticator.Invalidate).
	SignalAuth Signal = "a"
	// SignalSessions: dashboard sessions ended (sign-out, a password change); the streams they
	// hold must be checked again.
	SignalSessions Signal = "s"
)

// signals are a store's followers and signal handlers.
type signals struct {
	// followed counts the followers, so that commits collect the topics they touch only while
	// someone in this process follows one (or other processes may: Options.Shared).
	followed atomic.Int64
	mu       sync.Mutex
	subs     map[Topic]map[chan struct{}]struct{}
	hmu      sync.Mutex
	next     int
	handlers map[Signal]map[int]func()
}

// Follow follows a topic: wake gets a value after each commit that touched it (several collapse
// into one). Followed before the follower's first read, so that nothing committed after that read
// goes unseen. cancel stops following it.
func (s *Store) Follow(t Topic) (wake <-chan struct{}, cancel func()) {
	g := &s.signals
	ch := make(chan struct{}, 1)
	g.mu.Lock()
	if g.subs == nil {
		g.subs = map[Topic]map[chan struct{}]struct{}{}
	}
	set := g.subs[t]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		g.subs[t] = set
	}
	set[ch] = struct{}{}
	g.mu.Unlock()
	g.followed.Add(1)
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			g.mu.Lock()
			if set := g.subs[t]; set != nil {
				delete(set, ch)
				if len(set) == 0 {
					delete(g.subs, t)
				}
			}
			g.mu.Unlock()
			g.followed.Add(-1)
		})
	}
}

// Followers is how many followers this process has (for metrics and tests).
func (s *Store) Followers() int { return int(s.signals.followed.Load()) }

// OnSignal calls fn whenever another process (or this one) broadcasts sig, and whenever this
// process may have missed a broadcast (its listening connection was lost and is back): fn must so
// be safe to call at any time. Only a store shared by several processes (Options.Shared) ever
// calls it. cancel unregisters fn.
func (s *Store) OnSignal(sig Signal, fn func()) (cancel func()) {
	g := &s.signals
	g.hmu.Lock()
	if g.handlers == nil {
		g.handlers = map[Signal]map[int]func(){}
	}
	if g.handlers[sig] == nil {
		g.handlers[sig] = map[int]func(){}
	}
	g.next++
	id := g.next
	g.handlers[sig][id] = fn
	g.hmu.Unlock()
	return func() {
		g.hmu.Lock()
		delete(g.handlers[sig], id)
		g.hmu.Unlock()
	}
}

// Broadcast tells every other process on the store's database that sig happened, after the write
// that made it committed. It does nothing in a store that no other process shares (this
// process's own caches are the caller's to clear), and it never fails the caller: a broadcast
// that cannot be sent is lost as one sent while a listener is down is (the caches' time to live
// bounds how long it matters). A nil store broadcasts nothing.
func (s *Store) Broadcast(sig Signal) {
	if s != nil && s.pg != nil && s.pg.notify != nil {
		s.pg.notify.broadcast(sig)
	}
}

// Shared reports whether other processes may write to the store's database (Options.Shared).
func (s *Store) Shared() bool { return s.pg != nil && s.pg.notify != nil }

// collecting tells whether a commit must note the topics it touches: someone in this process
// follows a topic, or other processes may.
func (s *Store) collecting() bool { return s.signals.followed.Load() > 0 || s.Shared() }

// touch notes that the transaction changed a topic, when its commit must tell (collecting).
func (t *Tx) touch(kind byte, id []byte) {
	if !t.collect || len(id) != 16 {
		return
	}
	tp := Topic{kind: kind, id: [16]byte(id)}
	for _, o := range t.touched {
		if o == tp {
			return
		}
	}
	t.touched = append(t.touched, tp)
}

// wake wakes the followers of the topics a commit touched.
func (g *signals) wake(topics []Topic) {
	if len(topics) == 0 || g.followed.Load() == 0 {
		return
	}
	g.mu.Lock()
	for _, t := range topics {
		for ch := range g.subs[t] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	g.mu.Unlock()
}

// wakeCommitted wakes the followers of what a committed transaction touched. A transaction that
// began while nobody in the process followed anything noted nothing (collecting); a follower that
// began following while it committed may have read the store before the commit and would wait
// for a change already made, so when someone follows now, every follower is woken (one woken for
// nothing reads and finds nothing new).
func (g *signals) wakeCommitted(tx *Tx) {
	if tx.collect {
		g.wake(tx.touched)
	} else if g.followed.Load() > 0 {
		g.wakeAll()
	}
}

// wakeAll wakes every follower (changes may have gone unheard: each reads what is new).
func (g *signals) wakeAll() {
	g.mu.Lock()
	for _, set := range g.subs {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	g.mu.Unlock()
}

// call runs the handlers of sig, outside the lock (a handler may register another).
func (g *signals) call(sig Signal) {
	g.hmu.Lock()
	fns := make([]func(), 0, len(g.handlers[sig]))
	for _, fn := range g.handlers[sig] {
		fns = append(fns, fn)
	}
	g.hmu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// callAll runs every handler of every signal.
func (g *signals) callAll() {
	g.hmu.Lock()
	sigs := make([]Signal, 0, len(g.handlers))
	for sig := range g.handlers {
		sigs = append(sigs, sig)
	}
	g.hmu.Unlock()
	for _, sig := range sigs {
		g.call(sig)
	}
}
