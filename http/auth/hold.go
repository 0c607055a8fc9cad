package auth

import (
	"context"
	"errors"
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

// heldCred is the key a stream is held under: its credential's hash, and whether it is an access
// token (else an API key).
type heldCred struct {
	hash  [32]byte
	token bool
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
	id := a.streams.Add(heldCred{p.cred, p.token}, cancel)
	// Registered first, then checked: a revocation that committed before this read is seen by
	// it, and one that commits after it calls Invalidate, whose re-check sees this stream.
	if cause := a.stillValid(p.cred, p.token); cause != nil {
		cancel(cause)
	}
	return ctx, func() {
		a.streams.Remove(id)
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
func (a *Authenticator) HeldStreams() int { return a.streams.Len() }

// recheck has the open streams' credentials read again (holds.Registry.Recheck: one pass at a
// time), in one read transaction, and ends the streams of those that no longer authenticate.
func (a *Authenticator) recheck() {
	a.streams.Recheck(func(creds []heldCred) func(heldCred, context.CancelCauseFunc) bool {
		ended := map[heldCred]error{}
		_ = a.store.View(func(tx *persistence.Tx) error {
			for _, c := range creds {
				if cause := validIn(tx, c.hash, c.token); cause != nil {
					ended[c] = cause
				}
			}
			return nil
		})
		if len(ended) == 0 {
			return nil
		}
		return func(c heldCred, cancel context.CancelCauseFunc) bool {
			if cause := ended[c]; cause != nil {
				cancel(cause)
				return true
			}
			return false
		}
	})
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
