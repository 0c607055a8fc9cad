package session

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

// Two nodes on one PostgreSQL store: a session signed out through node A is refused by node B at
// once (B reads sessions from the store), and the stream B holds for it ends within a second,
// not at B's next sweep.
func TestSessionEndedOnOneNodeEndsItsStreamsOnTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	open := func() (*persistence.Store, *Manager) {
		s, err := persistence.OpenPostgres(ctx, url, persistence.Options{Shared: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.Eventually(t, func() bool { return s.ListenerPID() != 0 }, 10*time.Second, 10*time.Millisecond, "the store did not listen")
		m, err := New(Config{Store: s, PasswordParams: cheap, SweepEvery: time.Hour})
		require.NoError(t, err)
		return s, m
	}
	sa, a := open()
	_, b := open()
	_, err := auth.CreateUser(ctx, sa, auth.NewUser{Email: email, Password: password, PasswordParams: cheap}, time.Now())
	require.NoError(t, err)
	iss, err := a.SignIn(ctx, email, password, "198.51.100.7")
	require.NoError(t, err)

	s, err := b.Lookup(ctx, iss.Token)
	require.NoError(t, err)
	held, release := b.Hold(s)
	defer release()
	require.NoError(t, held.Err())

	require.NoError(t, a.SignOut(ctx, iss.Session))
	signedOut := time.Now()
	_, err = b.Lookup(ctx, iss.Token)
	require.ErrorIs(t, err, ErrNoSession)
	select {
	case <-held.Done():
		require.ErrorIs(t, context.Cause(held), ErrSessionEnded)
		t.Logf("the stream on B ended %s after the sign-out on A", time.Since(signedOut))
	case <-time.After(time.Second):
		t.Fatal("the stream node B holds outlived, by a second, the session signed out on node A")
	}
}
