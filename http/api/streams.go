package api

import (
	"context"
	"sync"
)

// Streams keeps count of the open job streams, so that a shutdown ends them cleanly instead of
// cutting them: most are served apart from the request cycle (hijacked), where the HTTP server's
// own shutdown does not see them.
//
// At shutdown (Close) every open stream gets, after the last complete event it sent, the
// farewell below: a comment saying why and a retry: field of one second, which EventSource
// clients take as the wait before they reconnect. The connection is then closed. A client that
// reconnects to a ready Herald (another instance, or this one restarted) gets the job's current
// state at once, or its done event if it ended meanwhile: the stream's contract (progress, then
// done) needs no event of its own for this. A stream asked for once the shutdown has begun is
// refused with 503 before anything of it is written.
type Streams struct {
	mu      sync.Mutex
	closing chan struct{}
	closed  bool
	open    sync.WaitGroup
}

// farewell ends a stream that Herald lets go before its job is done: at shutdown, or when the
// client fell too far behind.
var farewell = []byte(": the stream ends here; reconnect to follow the job\nretry: 1000\n\n")

// NewStreams returns an empty set of streams.
func NewStreams() *Streams { return &Streams{closing: make(chan struct{})} }

// add registers a stream about to start; false once Close has begun.
func (s *Streams) add() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.open.Add(1)
	return true
}

// done unregisters a stream that ended.
func (s *Streams) done() { s.open.Done() }

// Closing is closed when the shutdown begins.
func (s *Streams) Closing() <-chan struct{} { return s.closing }

// Close tells every open stream to end with the farewell, refuses new ones, and waits until they
// have ended or ctx is done.
func (s *Streams) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	ended := make(chan struct{})
	go func() {
		s.open.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
