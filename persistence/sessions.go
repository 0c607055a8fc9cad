package persistence

import (
	"bytes"
	"errors"
	"time"
)

// Session is a person's signed-in browser session on the dashboard. The session's token never
// reaches the store: the record is keyed by the token's SHA-256, so a copy of the file does not
// hold working sessions.
type Session struct {
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
	// LastSeenAt is the last request made with the session, written at most once a minute.
	LastSeenAt time.Time `json:"last_seen_at"`
	// CSRFToken is the token every state-changing dashboard request must echo.
	CSRFToken string `json:"csrf_token"`
	// WorkspaceID is the workspace the dashboard shows (its switcher's choice; "" for main).
	WorkspaceID string `json:"workspace_id,omitempty"`
}

// The password and session buckets:
//
//	user_passwords  user id (16) → the password's argon2id hash in PHC string form
//	sessions        SHA-256 of the session token (32) → Session (JSON)
//	sessions_user   user id (16) | SHA-256 of the token (32) → empty: a user's sessions, to end
//	                them all when the password changes
var (
	bUserPasswords = []byte("user_passwords")
	bSessions      = []byte("sessions")
	bSessionsUser  = []byte("sessions_user")
)

func init() { registerBuckets(bUserPasswords, bSessions, bSessionsUser) }

// SessionHashLen is the length of a session key (a SHA-256).
const SessionHashLen = 32

// ErrBadSessionKey means a session key is not a SHA-256.
var ErrBadSessionKey = errors.New("persistence: a session key is 32 bytes")

// SetPassword stores the password hash of a user (replacing any).
func (t *Tx) SetPassword(userID, phc string) error {
	return t.kv.Bucket(bUserPasswords).Put(mustID(userID), []byte(phc))
}

// Password returns the password hash of a user; ErrNotFound when the user has none.
func (t *Tx) Password(userID string) (string, error) {
	v := t.kv.Bucket(bUserPasswords).Get(mustID(userID))
	if v == nil {
		return "", ErrNotFound
	}
	return string(v), nil
}

// PutSession stores a session (new, or with a later LastSeenAt) under the hash of its token.
func (t *Tx) PutSession(hash []byte, s *Session) error {
	if len(hash) != SessionHashLen {
		return ErrBadSessionKey
	}
	if err := t.kv.Bucket(bSessionsUser).Put(join(mustID(s.UserID), hash), nil); err != nil {
		return err
	}
	return t.put(bSessions, hash, s)
}

// Session returns the session stored under the hash of a token; ErrNotFound when there is none.
func (t *Tx) Session(hash []byte) (*Session, error) {
	if len(hash) != SessionHashLen {
		return nil, ErrNotFound
	}
	var s Session
	if err := t.get(bSessions, hash, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSession ends a session; deleting a session that is gone succeeds.
func (t *Tx) DeleteSession(hash []byte) (bool, error) {
	s, err := t.Session(hash)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := t.kv.Bucket(bSessionsUser).Delete(join(mustID(s.UserID), hash)); err != nil {
		return false, err
	}
	return true, t.kv.Bucket(bSessions).Delete(hash)
}

// DeleteSessionsOfUser ends every session of a user but the one stored under keep (nil: all),
// and returns how many it ended.
func (t *Tx) DeleteSessionsOfUser(userID string, keep []byte) (int, error) {
	prefix := mustID(userID)
	var gone [][]byte
	c := t.kv.Bucket(bSessionsUser).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if h := k[len(prefix):]; !bytes.Equal(h, keep) {
			gone = append(gone, append([]byte(nil), h...))
		}
	}
	n := 0
	for _, h := range gone {
		ok, err := t.DeleteSession(h)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// DeleteExpiredSessions ends the sessions for which expired is true, at most max of them, and
// returns how many it ended.
func (t *Tx) DeleteExpiredSessions(expired func(*Session) bool, max int) (int, error) {
	var gone [][]byte
	c := t.kv.Bucket(bSessions).Cursor()
	for k, v := c.First(); k != nil && len(gone) < max; k, v = c.Next() {
		var s Session
		if err := Decode(v, &s); err != nil || expired(&s) {
			gone = append(gone, append([]byte(nil), k...))
		}
	}
	n := 0
	for _, h := range gone {
		ok, err := t.DeleteSession(h)
		if err != nil {
			return n, err
		}
		if !ok { // unreadable: remove the record itself
			if err := t.kv.Bucket(bSessions).Delete(h); err != nil {
				return n, err
			}
		}
		n++
	}
	return n, nil
}

// CountSessions counts the stored sessions (expired ones not yet swept included) by walking their
// keys, which is exact inside a write transaction too.
func (t *Tx) CountSessions() int {
	n := 0
	c := t.kv.Bucket(bSessions).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}
