package actors

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// workerPool is the dispatcher of Herald's actor system: it runs each mailbox's processing pass
// on a worker goroutine it keeps, instead of a new goroutine per pass.
//
// Proto.Actor's default dispatcher starts `go fn()` whenever a message reaches an idle mailbox.
// A publish job wakes about fifteen idle mailboxes, and each new goroutine starts on a small stack
// that grows again on the way into the actor's code (JSON, the store, the network client); that
// growth alone cost about 35 µs of CPU per job. A worker keeps its grown stack between passes.
//
// The pool never caps its workers: when every worker is busy (some of them blocked in a store
// commit or an Ask, for as long as that takes), the next pass gets a new worker, so no actor ever
// waits for another to finish. Idle workers wait on a stack, the last to finish taking the next
// pass (its stack and caches are the warmest), so that under a light load the same few workers
// run everything and the rest, at the bottom, expire after idleTimeout. At rest the pool holds
// no goroutine but those that finished a pass within idleTimeout.
//
// Order per actor is the mailbox's business, not the dispatcher's: a mailbox schedules one pass
// at a time (it flips its status from idle to running before Schedule and back only when the
// pass ends), so the pool only has to run every pass it is given exactly once.
type workerPool struct {
	throughput  int
	idleTimeout time.Duration

	mu      sync.Mutex
	idle    []*poolWorker // LIFO: the most recently idle at the end
	closed  bool
	trimArm bool // a trim is scheduled (trimTimer)
	trimmer *time.Timer

	workers atomic.Int64 // live workers, busy and idle (tests, metrics)
}

// poolWorker is one worker goroutine; a pass (or nil: exit) reaches it through next.
type poolWorker struct {
	next      chan func() // buffered 1: Schedule never blocks on a worker
	idleSince time.Time
}

var _ actor.Dispatcher = (*workerPool)(nil)

// Proto.Actor's default throughput: a pass yields the processor (runtime.Gosched) after this many
// messages and goes on with the same mailbox.
const dispatcherThroughput = 300

// workerIdleTimeout is how long an idle worker waits for another pass before it exits.
const workerIdleTimeout = 5 * time.Second

func newWorkerPool(throughput int, idleTimeout time.Duration) *workerPool {
	return &workerPool{throughput: throughput, idleTimeout: idleTimeout}
}

// Throughput is the messages a pass processes before it yields.
func (p *workerPool) Throughput() int { return p.throughput }

// Schedule runs fn on an idle worker, or on a new one when none is idle.
func (p *workerPool) Schedule(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.next <- fn
		return
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		// After Close (the actor system is stopping), passes still run, each on its own goroutine.
		go fn()
		return
	}
	p.workers.Add(1)
	go p.work(&poolWorker{next: make(chan func(), 1)}, fn)
}

// work runs passes until the worker is retired (nil pass).
func (p *workerPool) work(w *poolWorker, fn func()) {
	defer p.workers.Add(-1)
	for fn != nil {
		fn()
		fn = nil // the pass's closure is not kept while idle
		if !p.park(w) {
			return
		}
		fn = <-w.next
	}
}

// park puts w on the idle stack; false when the pool is closed and w should exit instead.
func (p *workerPool) park(w *poolWorker) bool {
	w.idleSince = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.idle = append(p.idle, w)
	if !p.trimArm {
		p.trimArm = true
		if p.trimmer == nil {
			p.trimmer = time.AfterFunc(p.idleTimeout, p.trim)
		} else {
			p.trimmer.Reset(p.idleTimeout)
		}
	}
	return true
}

// trim retires the workers idle for idleTimeout or longer (the bottom of the stack) and, while
// idle workers remain, schedules itself for when the oldest of them expires. One timer serves
// the whole pool, so that a pass costs no timer operation.
func (p *workerPool) trim() {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trimArm = false
	if p.closed {
		return
	}
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].idleSince) >= p.idleTimeout {
		p.idle[n].next <- nil
		n++
	}
	if n > 0 {
		rest := copy(p.idle, p.idle[n:])
		clear(p.idle[rest:])
		p.idle = p.idle[:rest]
	}
	if len(p.idle) > 0 {
		p.trimArm = true
		p.trimmer.Reset(p.idleTimeout - now.Sub(p.idle[0].idleSince))
	}
}

// Close retires the idle workers; busy ones exit when their pass ends, and passes scheduled from
// then on run on goroutines of their own.
func (p *workerPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for i, w := range p.idle {
		w.next <- nil
		p.idle[i] = nil
	}
	p.idle = nil
	if p.trimmer != nil {
		p.trimmer.Stop()
	}
}

// live is the number of workers, busy and idle.
func (p *workerPool) live() int { return int(p.workers.Load()) }
