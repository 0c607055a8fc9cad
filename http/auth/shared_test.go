package auth

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Two nodes on one PostgreSQL store, each with its own key cache: a key revoked through node A
// is refused by node B within a second, though B had it cached (and its TTL is long), and the
// stream B holds for it ends.
func TestKeyRevokedOnOneNodeIsRefusedOnTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	open := func() *persistence.Store {
		s, err := persistence.OpenPostgres(ctx, url, persistence.Options{Shared: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.Eventually(t, func() bool { return s.ListenerPID() != 0 }, 10*time.Second, 10*time.Millisecond, "the store did not listen")
		return s
	}
	sa, sb := open(), open()
	a, b := NewAuthenticator(sa, nil), NewAuthenticator(sb, nil)
	_, err := CreateUser(ctx, sa, NewUser{Email: "user@example.com"}, time.Now())
	require.NoError(t, err)
	k, err := CreateKey(ctx, sa, "user@example.com", "k", 0, time.Now())
	require.NoError(t, err)
	other, err := CreateKey(ctx, sa, "user@example.com", "other", 0, time.Now())
	require.NoError(t, err)

	// B caches both keys and holds a stream of the first.
	p, err := b.Authenticate("Bearer " + k.Key)
	require.NoError(t, err)
	held, release := b.Hold(p)
	defer release()
	_, err = b.Authenticate("Bearer " + other.Key)
	require.NoError(t, err)

	// A revokes it, as every door that revokes a key does: the write, then Invalidate.
	_, err = RevokeKey(ctx, sa, k.ID, time.Now())
	require.NoError(t, err)
	revoked := time.Now()
	a.Invalidate()
	_, err = a.Authenticate("Bearer " + k.Key)
	require.ErrorIs(t, err, ErrRevoked)

	require.Eventually(t, func() bool {
		_, err := b.Authenticate("Bearer " + k.Key)
		return err == ErrRevoked
	}, time.Second, 5*time.Millisecond, "node B still takes the key a second after node A revoked it")
	t.Logf("refused on B %s after the revocation on A", time.Since(revoked))
	ended(t, held, ErrRevoked)
	_, err = b.Authenticate("Bearer " + other.Key)
	require.NoError(t, err, "the other key still works on B")
}
