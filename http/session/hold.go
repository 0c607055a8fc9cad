package session

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// A dashboard request is authenticated once, when it arrives; a stream it opens (a job's or a
// campaign's Server-Sent Events on /api) lives on long after that. Hold ties such a stream to its
// session, as auth.Authenticator.Hold ties a /v1 stream to its key, so that the stream ends when
// the session does:
//
//   - at sign-out, and when a password change ends the session (from the API, which ends the
//     user's other sessions, or `herald users set-password` through the admin socket, which ends
//     them all): each calls for a re-check after its write commits, which re-reads the sessions
//     of the open streams in one read transaction, off the caller's path;
//   - at the session's expiry: its absolute limit at that instant, its idle limit when a timer
//     set for it finds the session still unused then (a request that used it meanwhile moves the
//     timer on);
//   - a session ended by another node on the same PostgreSQL store is seen when its notification
//     arrives (sessionsEnded; docs/cluster.md), within a second, and in any case at the next
//     sweep (every SweepEvery), which re-checks too.

// ErrSessionEnded is the cause of a held stream whose session no longer exists.
var ErrSessionEnded = errors.New("the session has ended (signed out, or ended by a password change)")

// heldStream is a stream held to a session (the registry's key is the session's hash).
type heldStream struct {
	cancel context.CancelCauseFunc
	idle   *time.Timer // the re-check at the session's idle expiry
}

// Hold ties a stream opened on s to s. The context it returns is cancelled, with the reason as
// its cause (ErrSessionEnded, ErrExpired), as soon as the session no longer opens anything;
// release ends the tie and must be called when the stream ends on its own. The context does not
// derive from a request's: a stream served after its handler returned (a hijacked connection)
// outlives the request's context.
func (m *Manager) Hold(s *Session) (ctx context.Context, release func()) {
	if s == nil || s.Record == nil {
		return context.Background(), func() {}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	now := m.cfg.Now()
	absolute := s.Record.CreatedAt.Add(m.cfg.MaxAge)
	ctx, stop := context.WithDeadlineCause(ctx, time.Now().Add(absolute.Sub(now)), ErrExpired)
	hs := &heldStream{cancel: cancel}
	hs.idle = time.AfterFunc(m.idleLeft(s.Record, now), m.recheckStreams)
	id := m.held.Add(string(s.Hash), hs)
	// Registered first, then checked: an end committed before this read is seen by it, and one
	// committed after it asks for a re-check, which sees this stream.
	if cause := m.stillValid(s.Hash); cause != nil {
		cancel(cause)
	}
	return ctx, func() {
		m.held.Remove(id)
		hs.idle.Stop()
		stop()
		cancel(context.Canceled)
	}
}

// idleLeft is how long until rec's idle expiry (at least a second: a timer for the past re-checks
// at once, and a session touched meanwhile moves it).
func (m *Manager) idleLeft(rec *persistence.Session, now time.Time) time.Duration {
	return max(rec.LastSeenAt.Add(m.cfg.IdleTimeout).Sub(now), time.Second)
}

// HeldStreams is the number of streams held to sessions (for tests).
func (m *Manager) HeldStreams() int { return m.held.Len() }

// recheckStreams has the sessions of the open streams read again (holds.Registry.Recheck: one
// pass at a time, a burst of sign-outs while it runs costs one more pass).
func (m *Manager) recheckStreams() { m.held.Recheck(m.heldPass) }

// sessionsEnded follows a write that ended sessions: the streams they hold here are checked
// again, and so are those on the other nodes of a shared store (persistence.Store.Broadcast).
func (m *Manager) sessionsEnded() {
	m.recheckStreams()
	m.cfg.Store.Broadcast(persistence.SignalSessions)
}

// checkHeld runs a pass now.
func (m *Manager) checkHeld() { m.held.Check(m.heldPass) }

// heldPass reads the sessions of the open streams (each once) in one read transaction, ends the
// streams of those gone or expired, and moves the idle timers of the others on.
func (m *Manager) heldPass(hashes []string) func(string, *heldStream) bool {
	now := m.cfg.Now()
	ended := map[string]error{}
	idle := map[string]time.Duration{}
	_ = m.cfg.Store.View(func(tx *persistence.Tx) error {
		for _, hash := range hashes {
			rec, err := tx.Session([]byte(hash))
			switch {
			case errors.Is(err, persistence.ErrNotFound):
				ended[hash] = ErrSessionEnded
			case err != nil:
				// A failed read is no reason to end a stream.
			case m.expired(rec, now):
				ended[hash] = ErrExpired
			default:
				idle[hash] = m.idleLeft(rec, now)
			}
		}
		return nil
	})
	return func(hash string, s *heldStream) bool {
		if cause := ended[hash]; cause != nil {
			s.cancel(cause)
			s.idle.Stop()
			return true
		}
		if d, ok := idle[hash]; ok {
			s.idle.Reset(d)
		}
		return false
	}
}

// stillValid reads one session: nil while it opens requests, else why not. A failed read is
// nil.
func (m *Manager) stillValid(hash []byte) error {
	var cause error
	_ = m.cfg.Store.View(func(tx *persistence.Tx) error {
		rec, err := tx.Session(hash)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			cause = ErrSessionEnded
		case err == nil && m.expired(rec, m.cfg.Now()):
			cause = ErrExpired
		}
		return nil
	})
	return cause
}
