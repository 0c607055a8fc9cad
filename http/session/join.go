package session

import (
	"context"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// NewPasswordHash checks a new password against the dashboard's rules (auth.ValidatePassword)
// and hashes it, holding one of the hasher's slots as a sign-in does: auth.ErrInvalid (wrapped)
// when it is refused, ErrBusy when the hasher stayed busy.
func (m *Manager) NewPasswordHash(ctx context.Context, password string) (string, error) {
	if err := auth.ValidatePassword(password); err != nil {
		return "", err
	}
	var phc string
	err := m.hash(ctx, func() error {
		var err error
		phc, err = auth.HashPassword(password, m.cfg.PasswordParams)
		return err
	})
	return phc, err
}

// Open opens a session for a user who has just proved who they are another way than with a
// password (a member who has just accepted an invitation and set theirs).
func (m *Manager) Open(ctx context.Context, u *persistence.User) (*Issued, error) {
	token := randomToken()
	now := m.cfg.Now().UTC()
	rec := &persistence.Session{UserID: u.ID, CreatedAt: now, LastSeenAt: now, CSRFToken: randomToken()}
	h := HashToken(token)
	if err := m.cfg.Store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutSession(h, rec) }); err != nil {
		return nil, err
	}
	m.m.created.Inc()
	return &Issued{Token: token, Session: &Session{User: u, Record: rec, Hash: h}}, nil
}

// EndedSessions has the streams opened on sessions that no longer exist ended (a member removed
// with every session of theirs).
func (m *Manager) EndedSessions() { m.sessionsEnded() }

// ActsFor is the id of the user whose data the session acts on: the team's owner for a member,
// else the session's own user.
func (s *Session) ActsFor() string {
	if s.Member != nil && s.Owner != nil {
		return s.Owner.ID
	}
	return s.User.ID
}

// HasRole reports whether the session holds at least the role least (auth's roles): always for
// a user who is no one's member.
func (s *Session) HasRole(least string) bool {
	return s.Member == nil || auth.RoleRank(s.Member.Role) >= auth.RoleRank(least)
}
