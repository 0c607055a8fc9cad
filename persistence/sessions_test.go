package persistence

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func sessionHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Sessions are found by their token's hash, ended one by one, all but one of a user's at once,
// and swept when expired; passwords are stored apart from the user record.
func TestSessionsAndPasswords(t *testing.T) { EachStore(t, sessionsAndPasswords) }

func sessionsAndPasswords(t *testing.T, s *Store) {
	ctx := context.Background()
	alice, bob := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	put := func(token, user string, created time.Time) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			return tx.PutSession(sessionHash(token), &Session{UserID: user, CreatedAt: created, LastSeenAt: created, CSRFToken: "csrf-" + token})
		}))
	}
	put("a1", alice, now)
	put("a2", alice, now)
	put("a3", alice, now.Add(-48*time.Hour))
	put("b1", bob, now)

	require.NoError(t, s.View(func(tx *Tx) error {
		got, err := tx.Session(sessionHash("a1"))
		require.NoError(t, err)
		require.Equal(t, alice, got.UserID)
		require.Equal(t, "csrf-a1", got.CSRFToken)
		_, err = tx.Session(sessionHash("unknown"))
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.Session([]byte("short"))
		require.ErrorIs(t, err, ErrNotFound)
		require.Equal(t, 4, tx.CountSessions())
		_, err = tx.Password(alice)
		require.ErrorIs(t, err, ErrNotFound)
		return nil
	}))

	// The sweep ends the sessions seen more than a day ago. (Update runs its function on the
	// committer's goroutine: results are checked after it returns.)
	var n int
	require.NoError(t, s.Update(ctx, func(tx *Tx) (err error) {
		n, err = tx.DeleteExpiredSessions(func(s *Session) bool { return now.Sub(s.LastSeenAt) > 24*time.Hour }, 100)
		return err
	}))
	require.Equal(t, 1, n)
	// A password change ends every other session of the user, never another user's.
	require.NoError(t, s.Update(ctx, func(tx *Tx) (err error) {
		if err := tx.SetPassword(alice, "$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$aGFzaA"); err != nil {
			return err
		}
		n, err = tx.DeleteSessionsOfUser(alice, sessionHash("a1"))
		return err
	}))
	require.Equal(t, 1, n)
	require.NoError(t, s.View(func(tx *Tx) error {
		_, err := tx.Session(sessionHash("a1"))
		require.NoError(t, err, "the session that changed the password stays")
		_, err = tx.Session(sessionHash("a2"))
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.Session(sessionHash("b1"))
		require.NoError(t, err)
		phc, err := tx.Password(alice)
		require.NoError(t, err)
		require.Contains(t, phc, "$argon2id$")
		return nil
	}))
	var first, second bool
	count := -1
	require.NoError(t, s.Update(ctx, func(tx *Tx) (err error) {
		if first, err = tx.DeleteSession(sessionHash("a1")); err != nil {
			return err
		}
		if second, err = tx.DeleteSession(sessionHash("a1")); err != nil {
			return err
		}
		count = tx.CountSessions()
		n, err = tx.DeleteSessionsOfUser(alice, nil)
		return err
	}))
	require.True(t, first)
	require.False(t, second, "ending an ended session changes nothing")
	require.Equal(t, 1, count, "counted exactly inside the write")
	require.Equal(t, 0, n)
}
