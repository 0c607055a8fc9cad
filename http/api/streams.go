package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/heraldhq/herald/http/apierr"
)

// Streams keeps count of the open job streams, so that a shutdown ends them cleanly instead of
// cutting them: most are served apart from the request cycle (hijacked), where the HTTP server's
// own shutdown does not see them.
//
// At shutdown (Close) every open stream gets, after the last complete event it sent, the
// farewell (sse.go): a comment saying why and a retry: field of one second, which EventSource
// clients take as the wait before they reconnect. The connection is then closed. A client that
// reconnects to a ready Herald (another instance, or this one restarted) gets the job's current
// state at once, or its done event if it ended meanwhile: the stream's contract (progress, then
// done) needs no event of its own for this. A stream asked for once the shutdown has begun is
// refused with 503 before anything of it is written.
//
// It also caps the streams one user has open at once (MaxPerUser), job and campaign streams
// together, whichever the door (/v1 on a key or an access token, /api on a session): each stream
// holds a connection for as long as its job or campaign runs, and the connections the API
// listener takes are shared by everyone (--max-conns). A stream over the cap is refused with 429
// before anything of it is written.
type Streams struct {
	mu         sync.Mutex
	closing    chan struct{}
	closed     bool
	open       sync.WaitGroup
	maxPerUser int
	users      map[string]int
}

// DefaultMaxStreamsPerUser is the default of NewStreams' cap: more than a person's dashboard tabs
// follow (a browser keeps 6 connections per host) or a program following its publishes needs
// (polling suffices for a backend), a small share of the connection cap.
const DefaultMaxStreamsPerUser = 32

// StreamRetryAfter is the Retry-After of a stream refused over the cap, in seconds: a stream
// frees its place when its job or campaign ends or its client leaves.
const StreamRetryAfter = 5

// NewStreams returns an empty set of streams that lets one user open at most maxPerUser at once
// (0: DefaultMaxStreamsPerUser; negative: no cap).
func NewStreams(maxPerUser int) *Streams {
	if maxPerUser == 0 {
		maxPerUser = DefaultMaxStreamsPerUser
	}
	return &Streams{closing: make(chan struct{}), maxPerUser: maxPerUser, users: map[string]int{}}
}

// MaxPerUser is the cap in force (negative: none).
func (s *Streams) MaxPerUser() int { return s.maxPerUser }

// add registers a stream of user about to start; an error in the API's shape when it may not:
// 503 once Close has begun (shutdown is why), 429 when user has MaxPerUser streams open. Each
// add that succeeds is matched by one done(user).
func (s *Streams) add(user, shutdown string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return apierr.Unavailable(shutdown)
	}
	if s.maxPerUser > 0 && s.users[user] >= s.maxPerUser {
		return apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimitExceeded,
			"%s", fmt.Sprintf("this user already has %d streams open, as many as one user may; close one, or poll instead", s.maxPerUser)).
			WithHeader("Retry-After", strconv.Itoa(StreamRetryAfter))
	}
	s.users[user]++
	s.open.Add(1)
	return nil
}

// done unregisters a stream of user that ended.
func (s *Streams) done(user string) {
	s.mu.Lock()
	if s.users[user] <= 1 {
		delete(s.users, user)
	} else {
		s.users[user]--
	}
	s.mu.Unlock()
	s.open.Done()
}

// OpenOf is how many streams user has open (for tests).
func (s *Streams) OpenOf(user string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[user]
}

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
