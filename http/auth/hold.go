package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// A request is authenticated once, when it arrives; a stream (a job's Server-Sent Events, an MCP
// response stream) lives on long after that. Hold ties such a stream to the credential that
// opened it, so that the stream ends when the credential stops opening anything:
//
//   - when its key is revoked or regenerated, or its OAuth access token revoked or its grant's
//     connector key revoked or replaced, from any door (the dashboard's /api/keys, `herald keys`
//     through the admin socket, POST /oauth/revoke, a new approval of the same connector): every
//     one of them calls Invalidate after its write commits, and Invalidate re-reads the
//     credentials of the open streams, in one read transaction, off the caller's path;
//   - when the key (or the access token) expires: at that instant.
//
// The registry is keyed by stream, each holding the credential's hash; several streams of one
// credential are checked once.

// streams is the registry of held streams.
type streams struct {
	mu      sync.Mutex
	next    uint64
	open    map[uint64]*heldStream
	dirty   bool // a re-check is asked for
	running bool // a re-check goroutine runs
}

type heldStream struct {
	cred   [32]byte
	token  bool
	cancel context.CancelCauseFunc
}

// Hold ties a stream opened by p to p's credential. The context it returns is cancelled, with the
// reason as its cause (ErrRevoked, ErrExpired, ErrTokenExpired), as soon as the credential no
// longer authenticates; release ends the tie and must be called when the stream ends on its own.
// The context does not derive from a request's: a stream served after its handler returned (a
// hijacked connection) outlives the request's context. A principal that was not authenticated by
// a credential (a dashboard session) is never ended by Hold.
func (a *Authenticator) Hold(p *Principal) (ctx context.Context, release func()) {
	if p == nil || !p.held {
		return context.Background(), func() {}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	end := func() { cancel(context.Canceled) }
	if at, cause := expiry(p); !at.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, time.Now().Add(at.Sub(a.now())), cause)
		end = func() { stop(); cancel(context.Canceled) }
	}
	id := a.streams.add(&heldStream{cred: p.cred, token: p.token, cancel: cancel})
	// Registered first, then checked: a revocation that committed before this read is seen by
	// it, and one that commits after it calls Invalidate, whose re-check sees this stream.
	if cause := a.stillValid(p.cred, p.token); cause != nil {
		cancel(cause)
	}
	return ctx, func() {
		a.streams.remove(id)
		end()
	}
}

// expiry is when p's credential expires (zero: never) and the cause to report then.
func expiry(p *Principal) (time.Time, error) {
	at, cause := time.Time{}, ErrExpired
	if p.Key != nil && p.Key.ExpiresAt != nil {
		at = *p.Key.ExpiresAt
	}
	if p.token && (at.IsZero() || p.TokenExpiresAt.Before(at)) {
		at, cause = p.TokenExpiresAt, ErrTokenExpired
	}
	return at, cause
}

// HeldStreams is the number of streams held open (for tests and metrics).
func (a *Authenticator) HeldStreams() int {
	a.streams.mu.Lock()
	defer a.streams.mu.Unlock()
	return len(a.streams.open)
}

func (s *streams) add(h *heldStream) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = map[uint64]*heldStream{}
	}
	s.next++
	s.open[s.next] = h
	return s.next
}

func (s *streams) remove(id uint64) {
	s.mu.Lock()
	delete(s.open, id)
	s.mu.Unlock()
}

// recheck has the open streams' credentials read again, by one goroutine at a time: a burst of
// invalidations while it runs costs one more pass, not one per invalidation.
func (s *streams) recheck(a *Authenticator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) == 0 {
		return
	}
	s.dirty = true
	if s.running {
		return
	}
	s.running = true
	go s.run(a)
}

func (s *streams) run(a *Authenticator) {
	for {
		s.mu.Lock()
		if !s.dirty {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.dirty = false
		type cred struct {
			hash  [32]byte
			token bool
		}
		creds := map[cred][]uint64{}
		for id, h := range s.open {
			c := cred{h.cred, h.token}
			creds[c] = append(creds[c], id)
		}
		s.mu.Unlock()

		ended := map[cred]error{}
		_ = a.store.View(func(tx *persistence.Tx) error {
			for c := range creds {
				if cause := validIn(tx, c.hash, c.token); cause != nil {
					ended[c] = cause
				}
			}
			return nil
		})
		if len(ended) == 0 {
			continue
		}
		s.mu.Lock()
		for c, cause := range ended {
			for _, id := range creds[c] {
				if h, ok := s.open[id]; ok {
					h.cancel(cause)
					delete(s.open, id)
				}
			}
		}
		s.mu.Unlock()
	}
}

// stillValid reads one credential: nil while it authenticates, else why not.
func (a *Authenticator) stillValid(hash [32]byte, token bool) error {
	var cause error
	_ = a.store.View(func(tx *persistence.Tx) error {
		cause = validIn(tx, hash, token)
		return nil
	})
	return cause
}

// validIn reads a credential in tx as Authenticate does: nil while it authenticates; ErrRevoked
// when it no longer exists (a regenerated key's old secret, a revoked access token) or its key is
// revoked. A failed read is no reason to end a stream: nil. Expiry is the stream's deadline.
func validIn(tx *persistence.Tx, hash [32]byte, token bool) error {
	read := keyPrincipal
	if token {
		read = tokenPrincipal
	}
	p, err := read(tx, hash[:])
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return ErrRevoked
	case err != nil:
		return nil
	case p.Key.RevokedAt != nil:
		return ErrRevoked
	}
	return nil
}
