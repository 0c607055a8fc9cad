package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func ended(t *testing.T, ctx context.Context, want error) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the held context did not end")
	}
	require.ErrorIs(t, context.Cause(ctx), want)
}

// rechecked waits until no re-check of the held streams runs.
func rechecked(t *testing.T, a *Authenticator) {
	t.Helper()
	require.Eventually(t, a.streams.Idle, 10*time.Second, time.Millisecond)
}

func isOpen(ctx context.Context) bool { return ctx.Err() == nil }

// A held stream ends when its key is revoked or regenerated (once Invalidate runs, as every door
// that changes a key calls it) and when its key expires; streams of other keys go on, and a
// principal without a credential (a dashboard session) is never ended.
func TestHoldEndsWithTheCredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	now := time.Now()
	_, err = CreateUser(ctx, s, NewUser{Email: "user@example.com"}, now)
	require.NoError(t, err)
	a := NewAuthenticator(s, nil)
	key := func(exp time.Duration) (*CreatedKey, *Principal) {
		k, err := CreateKey(ctx, s, "user@example.com", "k", exp, time.Now())
		require.NoError(t, err)
		p, err := a.Authenticate("Bearer " + k.Key)
		require.NoError(t, err)
		return k, p
	}
	_, po := key(0)
	otherCtx, releaseOther := a.Hold(po)
	defer releaseOther()

	revoked, pr := key(0)
	r1, release1 := a.Hold(pr)
	defer release1()
	r2, release2 := a.Hold(pr)
	defer release2()
	regenerated, pg := key(0)
	g, releaseG := a.Hold(pg)
	defer releaseG()
	require.Equal(t, 4, a.HeldStreams())

	a.Invalidate()  // a change that ends nothing (a profile edit)
	rechecked(t, a) // its re-check runs off the caller's path: let it end before the revoke
	_, err = RevokeKey(ctx, s, revoked.ID, now)
	require.NoError(t, err)
	require.True(t, isOpen(r1), "nothing ends before the revoking door calls Invalidate")
	a.Invalidate()
	ended(t, r1, ErrRevoked)
	ended(t, r2, ErrRevoked)
	_, err = RegenerateKey(ctx, s, regenerated.ID)
	require.NoError(t, err)
	a.Invalidate()
	ended(t, g, ErrRevoked)
	require.True(t, isOpen(otherCtx), "another key's stream goes on")
	require.Equal(t, 1, a.HeldStreams(), "ended streams are no longer held")

	// A key revoked between its request's authentication and the hold: the hold's own read sees
	// it.
	late, pl := key(0)
	_, err = RevokeKey(ctx, s, late.ID, now)
	require.NoError(t, err)
	lc, releaseL := a.Hold(pl)
	defer releaseL()
	ended(t, lc, ErrRevoked)

	// Expiry ends the stream at the key's expiry; a key past it ends at once.
	_, pe := key(300 * time.Millisecond)
	ec, releaseE := a.Hold(pe)
	defer releaseE()
	ended(t, ec, ErrExpired)

	// A session's principal has no credential to follow.
	sc, releaseS := a.Hold(&Principal{User: pe.User})
	defer releaseS()
	a.Invalidate()
	require.True(t, isOpen(sc))

	releaseOther()
	require.ErrorIs(t, context.Cause(otherCtx), context.Canceled)
	releaseL()
	releaseE()
	releaseS()
	require.Zero(t, a.HeldStreams(), "released streams leave the registry")
}

// Many streams and many invalidations at once: every stream of the revoked key ends, none of
// the other's, and the race detector finds nothing.
func TestHoldUnderConcurrentInvalidations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = CreateUser(ctx, s, NewUser{Email: "user@example.com"}, time.Now())
	require.NoError(t, err)
	a := NewAuthenticator(s, nil)
	kA, err := CreateKey(ctx, s, "user@example.com", "a", 0, time.Now())
	require.NoError(t, err)
	kB, err := CreateKey(ctx, s, "user@example.com", "b", 0, time.Now())
	require.NoError(t, err)
	pA, err := a.Authenticate("Bearer " + kA.Key)
	require.NoError(t, err)
	pB, err := a.Authenticate("Bearer " + kB.Key)
	require.NoError(t, err)

	var mu sync.Mutex
	var as, bs []context.Context
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := pA
			if i%2 == 1 {
				p = pB
			}
			c, release := a.Hold(p)
			t.Cleanup(release)
			mu.Lock()
			if p == pA {
				as = append(as, c)
			} else {
				bs = append(bs, c)
			}
			mu.Unlock()
			if i%10 == 0 {
				a.Invalidate()
			}
		}()
	}
	_, err = RevokeKey(ctx, s, kA.ID, time.Now())
	require.NoError(t, err)
	a.Invalidate()
	wg.Wait()
	a.Invalidate()
	for _, c := range as {
		ended(t, c, ErrRevoked)
	}
	for _, c := range bs {
		require.True(t, isOpen(c))
	}
}
