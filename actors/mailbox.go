package actors

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
)

// mailboxDepth counts the user messages waiting in one incarnation's mailbox into its kind's
// herald_actor_mailbox_depth gauge. It sits in the mailbox itself, so every message counts,
// whoever sent it: the directory, a timer or goroutine answering the actor (self-sends), or a
// reply. When the incarnation stops, what was left unprocessed is taken off the gauge and later
// posts are ignored, so the gauge never drifts.
type mailboxDepth struct {
	gauge  prometheus.Gauge
	mu     sync.Mutex
	n      int
	closed bool
}

var _ actor.MailboxMiddleware = (*mailboxDepth)(nil)

func newMailboxDepth(g prometheus.Gauge) *mailboxDepth { return &mailboxDepth{gauge: g} }

// producer makes the incarnation's mailbox (unbounded, as Proto.Actor's default) with the counter.
func (m *mailboxDepth) producer() actor.Mailbox { return actor.Unbounded(m)() }

func isSystem(msg any) bool {
	switch msg.(type) {
	case actor.SystemMessage, *actor.SuspendMailbox, *actor.ResumeMailbox:
		return true
	}
	return false
}

func (m *mailboxDepth) MessagePosted(msg any) {
	if isSystem(msg) {
		return
	}
	m.mu.Lock()
	if !m.closed {
		m.n++
		m.gauge.Inc()
	}
	m.mu.Unlock()
}

func (m *mailboxDepth) MessageReceived(msg any) {
	if isSystem(msg) {
		return
	}
	m.mu.Lock()
	if !m.closed {
		m.n--
		m.gauge.Dec()
	}
	m.mu.Unlock()
}

func (m *mailboxDepth) MailboxStarted() {}
func (m *mailboxDepth) MailboxEmpty()   {}

// depth is the number of user messages waiting in the mailbox (the one being processed
// included).
func (m *mailboxDepth) depth() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// close takes the messages the stopped incarnation never processed off the gauge.
func (m *mailboxDepth) close() {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		m.gauge.Sub(float64(m.n))
		m.n = 0
	}
	m.mu.Unlock()
}
