package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// The stored form is the PHC string with the default parameters in it, and it verifies.
func TestPasswordHashPHC(t *testing.T) {
	t.Parallel()
	phc, err := HashPassword("correct horse battery", DefaultPasswordParams)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(phc, "$argon2id$v=19$m=65536,t=2,p=2$"), phc)
	parts := strings.Split(phc, "$")
	require.Len(t, parts, 6)
	require.Len(t, parts[4], 22, "16-byte salt, base64 without padding")
	require.Len(t, parts[5], 43, "32-byte hash")
	ok, err := VerifyPassword(phc, "correct horse battery")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = VerifyPassword(phc, "correct horse batterY")
	require.NoError(t, err)
	require.False(t, ok)

	again, err := HashPassword("correct horse battery", DefaultPasswordParams)
	require.NoError(t, err)
	require.NotEqual(t, phc, again, "a new salt each time")

	// A hash made under other parameters verifies under them (parameters can change later).
	cheap, err := HashPassword("correct horse battery", PasswordParams{Time: 1, MemoryKiB: 1024, Threads: 1})
	require.NoError(t, err)
	require.Contains(t, cheap, "$m=1024,t=1,p=1$")
	ok, err = VerifyPassword(cheap, "correct horse battery")
	require.NoError(t, err)
	require.True(t, ok)

	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=18$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "$argon2id$v=19$m=1024,t=0,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=99999999,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "$argon2id$v=19$m=1024,t=1,p=1$!!$aGFzaGhhc2hoYXNoaGFzaA"} {
		_, err := VerifyPassword(bad, "x")
		require.Error(t, err, bad)
	}
}

func TestValidatePassword(t *testing.T) {
	t.Parallel()
	for pw, ok := range map[string]bool{
		"":                          false,
		"123456789":                 false,
		"1234567890":                true,
		"ééééééééé":                 false, // 9 characters, 18 bytes
		"éééééééééé":                true,
		strings.Repeat("x", 1024):   true,
		strings.Repeat("x", 1025):   false,
		"bad utf-8 \xff\xfe\xfd...": false,
	} {
		err := ValidatePassword(pw)
		if ok {
			require.NoError(t, err, "%q", pw)
		} else {
			require.ErrorIs(t, err, ErrInvalid, "%q", pw)
		}
	}
}

// SetPassword replaces the hash and ends every session of the user; CreateUser stores a password
// apart from the user record.
func TestSetPasswordEndsSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	cheap := PasswordParams{Time: 1, MemoryKiB: 1024, Threads: 1}
	u, err := CreateUser(ctx, s, NewUser{Email: "a@example.com", Password: "first password", PasswordParams: cheap}, time.Now())
	require.NoError(t, err)
	_, err = CreateUser(ctx, s, NewUser{Email: "b@example.com", Password: "short"}, time.Now())
	require.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		h := uuid.Must(uuid.NewV7())
		return tx.PutSession(append(h[:], h[:]...), &persistence.Session{UserID: u.ID, CreatedAt: time.Now(), LastSeenAt: time.Now()})
	}))
	_, ended, err := SetPassword(ctx, s, "A@example.com", "second password", cheap)
	require.NoError(t, err)
	require.Equal(t, 1, ended)
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		phc, err := tx.Password(u.ID)
		require.NoError(t, err)
		ok, err := VerifyPassword(phc, "second password")
		require.True(t, ok)
		require.Equal(t, 0, tx.CountSessions())
		_, err2 := tx.User(u.ID)
		require.NoError(t, err2)
		return err
	}))
	_, _, err = SetPassword(ctx, s, "nobody@example.com", "second password", cheap)
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = SetPassword(ctx, s, "a@example.com", "short", cheap)
	require.ErrorIs(t, err, ErrInvalid)
}

// The dummy hash has the parameters given, matches no password, and costs a verification.
func TestDummyHash(t *testing.T) {
	t.Parallel()
	p := PasswordParams{Time: 1, MemoryKiB: 8 << 10, Threads: 1}
	d, err := DummyHash(p)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(d, "$argon2id$v=19$m=8192,t=1,p=1$"), d)
	other, err := DummyHash(p)
	require.NoError(t, err)
	require.NotEqual(t, d, other, "a random salt and key each time")
	for _, pw := range []string{"", "correct horse battery staple", d} {
		ok, err := VerifyPassword(d, pw)
		require.NoError(t, err)
		require.False(t, ok)
	}
}
