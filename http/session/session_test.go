package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

var cheap = auth.PasswordParams{Time: 1, MemoryKiB: 1024, Threads: 1}

const (
	email    = "user@example.com"
	password = "the right password"
)

// newManager opens a bbolt store with one user whose password is password, and a manager on it
// whose password checks are counted (and slowed by delay, so that concurrent attempts overlap).
func newManager(t *testing.T, cfg Config, delay time.Duration) (*Manager, *persistence.Store, *atomic.Int64) {
	t.Helper()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = auth.CreateUser(context.Background(), s, auth.NewUser{Email: email, Password: password, PasswordParams: cheap}, time.Now())
	require.NoError(t, err)
	cfg.Store, cfg.PasswordParams = s, cheap
	m, err := New(cfg)
	require.NoError(t, err)
	var hashes atomic.Int64
	m.verifyPassword = func(phc, pw string) (bool, error) {
		hashes.Add(1)
		time.Sleep(delay)
		return auth.VerifyPassword(phc, pw)
	}
	return m, s, &hashes
}

// A burst of concurrent wrong sign-ins from one address gets no more password checks than the
// address is allowed failures: each attempt is counted before its hash, in the same step as the
// check. Every attempt is answered as a wrong password or as throttled, never with another error,
// and a person signing in from another address meanwhile gets in.
func TestConcurrentSignInsAreCountedBeforeTheHash(t *testing.T) {
	t.Parallel()
	m, _, hashes := newManager(t, Config{}, 20*time.Millisecond)
	const burst = 100
	start := make(chan struct{})
	var wg sync.WaitGroup
	var invalid, throttled atomic.Int64
	errs := make(chan error, burst)
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// A different e-mail each: only the address's allowance (20) holds them.
			_, err := m.SignIn(context.Background(), fmt.Sprintf("guess%d@example.com", i), "wrong password", "203.0.113.9")
			var te *ThrottledError
			switch {
			case errors.Is(err, ErrInvalid):
				invalid.Add(1)
			case errors.As(err, &te) && te.Seconds() > 0:
				throttled.Add(1)
			default:
				errs <- err
			}
		}()
	}
	close(start)
	iss, err := m.SignIn(context.Background(), email, password, "198.51.100.7")
	require.NoError(t, err, "a person at another address signs in during the burst")
	require.Equal(t, email, iss.User.Email)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("an attempt of the burst answered %v", err)
	}
	require.Equal(t, int64(burst), invalid.Load()+throttled.Load())
	require.LessOrEqual(t, invalid.Load(), int64(20), "no more wrong passwords checked than the address's allowance")
	require.Equal(t, invalid.Load()+1, hashes.Load(), "the hasher ran for the admitted attempts and the person's sign-in only")
	require.LessOrEqual(t, hashes.Load(), int64(21))

	// However the burst was cut, the address is locked once its 20 failures are in.
	for range 21 {
		_, err := m.SignIn(context.Background(), "more@example.com", "wrong password", "203.0.113.9")
		var te *ThrottledError
		if errors.As(err, &te) && te.RetryAfter > InFlightWait {
			break
		}
		require.True(t, errors.Is(err, ErrInvalid) || errors.As(err, &te), "%v", err)
	}
	require.LessOrEqual(t, hashes.Load(), int64(21), "the address's allowance is 20 failures, whatever their pace")
}

// A password change is counted before its hash in the same way.
func TestConcurrentPasswordChangesAreCountedBeforeTheHash(t *testing.T) {
	t.Parallel()
	m, _, hashes := newManager(t, Config{}, 20*time.Millisecond)
	iss, err := m.SignIn(context.Background(), email, password, "198.51.100.7")
	require.NoError(t, err)
	hashes.Store(0)
	var wg sync.WaitGroup
	start := make(chan struct{})
	var wrong atomic.Int64
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := m.ChangePassword(context.Background(), iss.Session, "wrong password", "a new password", "203.0.113.9")
			var te *ThrottledError
			if errors.Is(err, ErrInvalid) {
				wrong.Add(1)
			} else if !errors.As(err, &te) {
				t.Errorf("a password change of the burst answered %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	require.LessOrEqual(t, wrong.Load(), int64(10), "no more wrong current passwords checked than the e-mail's allowance")
	require.Equal(t, wrong.Load(), hashes.Load())
}

// The wait for the hasher is bounded: an attempt that finds it busy for HashWait is ErrBusy,
// which counts as no attempt at all.
func TestABusyHasherAnswersBusy(t *testing.T) {
	t.Parallel()
	m, _, _ := newManager(t, Config{HashConcurrency: 1, HashWait: 50 * time.Millisecond}, 0)
	hold := make(chan struct{})
	entered := make(chan struct{})
	m.verifyPassword = func(phc, pw string) (bool, error) {
		entered <- struct{}{}
		<-hold
		return auth.VerifyPassword(phc, pw)
	}
	first := make(chan error, 1)
	go func() {
		_, err := m.SignIn(context.Background(), email, "wrong password", "203.0.113.1")
		first <- err
	}()
	<-entered
	_, err := m.SignIn(context.Background(), "other@example.com", "wrong password", "203.0.113.2")
	require.ErrorIs(t, err, ErrBusy)
	// A request deadline that passes while waiting is the same answer, not the deadline's error.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = m.SignIn(ctx, "other@example.com", "wrong password", "203.0.113.2")
	require.ErrorIs(t, err, ErrBusy)
	close(hold)
	require.ErrorIs(t, <-first, ErrInvalid)
	res, wait := m.throttle.Reserve("other@example.com", "203.0.113.2")
	require.Zero(t, wait)
	res.Release()
	require.Nil(t, m.throttle.addr.get("203.0.113.2"), "the busy answers counted as nothing: the address is not remembered")
}

// A stream held to a session ends when the session does: at sign-out, when a password change
// from another session ends it, and when the session expires (found by the sweep); the stream of
// the session that changed the password goes on, and a release ends the tie.
func TestHoldEndsWithTheSession(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	m, _, _ := newManager(t, Config{Now: clock}, 0)
	signIn := func() *Session {
		iss, err := m.SignIn(context.Background(), email, password, "198.51.100.7")
		require.NoError(t, err)
		return iss.Session
	}
	ended := func(ctx context.Context, cause error, why string) {
		t.Helper()
		select {
		case <-ctx.Done():
			require.ErrorIs(t, context.Cause(ctx), cause, why)
		case <-time.After(10 * time.Second):
			t.Fatalf("the stream did not end after %s", why)
		}
	}
	a, b, c := signIn(), signIn(), signIn()
	ctxA, releaseA := m.Hold(a)
	defer releaseA()
	ctxA2, releaseA2 := m.Hold(a)
	defer releaseA2()
	ctxB, releaseB := m.Hold(b)
	defer releaseB()
	ctxC, releaseC := m.Hold(c)
	defer releaseC()
	require.Equal(t, 4, m.HeldStreams())

	require.NoError(t, m.SignOut(context.Background(), a))
	ended(ctxA, ErrSessionEnded, "sign-out")
	ended(ctxA2, ErrSessionEnded, "sign-out")
	require.NoError(t, ctxB.Err())

	// B changes the password: C ends, B goes on.
	require.NoError(t, m.ChangePassword(context.Background(), b, password, "the next password", "198.51.100.7"))
	ended(ctxC, ErrSessionEnded, "a password change from another session")
	require.NoError(t, ctxB.Err(), "the session that changed the password stays, and its streams")

	// A stream held to a session already ended ends at once.
	ctxGone, releaseGone := m.Hold(a)
	defer releaseGone()
	ended(ctxGone, ErrSessionEnded, "holding an ended session")

	// Idle past its limit: the sweep ends the session and its stream.
	mu.Lock()
	now = now.Add(DefaultIdleTimeout + time.Minute)
	mu.Unlock()
	_, err := m.Sweep(context.Background())
	require.NoError(t, err)
	ended(ctxB, ErrExpired, "the session's expiry")
	require.Eventually(t, func() bool { return m.HeldStreams() == 0 }, 10*time.Second, 5*time.Millisecond)
}

// A stream held to a session ends at the session's absolute expiry, at that instant.
func TestHoldEndsAtTheSessionsMaxAge(t *testing.T) {
	t.Parallel()
	m, _, _ := newManager(t, Config{MaxAge: 2 * time.Second}, 0)
	iss, err := m.SignIn(context.Background(), email, password, "198.51.100.7")
	require.NoError(t, err)
	ctx, release := m.Hold(iss.Session)
	defer release()
	select {
	case <-ctx.Done():
		require.ErrorIs(t, context.Cause(ctx), ErrExpired)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its session")
	}
}

// SetWorkspace keeps the switcher's choice in the session's record: the next lookup of that
// session has it, another session of the user does not, and an ended session is ErrNoSession
// with nothing written back.
func TestSetWorkspaceIsTheSessionsOwn(t *testing.T) {
	t.Parallel()
	m, s, _ := newManager(t, Config{}, 0)
	ctx := context.Background()
	a, err := m.SignIn(ctx, email, password, "198.51.100.7")
	require.NoError(t, err)
	b, err := m.SignIn(ctx, email, password, "198.51.100.7")
	require.NoError(t, err)
	ws := "0190f000-0000-7000-8000-000000000002"

	require.NoError(t, m.SetWorkspace(ctx, a.Session, ws))
	got, err := m.Lookup(ctx, a.Token)
	require.NoError(t, err)
	require.Equal(t, ws, got.Record.WorkspaceID)
	require.Equal(t, a.Record.CSRFToken, got.Record.CSRFToken, "the rest of the record is kept")
	other, err := m.Lookup(ctx, b.Token)
	require.NoError(t, err)
	require.Empty(t, other.Record.WorkspaceID)

	require.NoError(t, m.SetWorkspace(ctx, a.Session, ""))
	got, err = m.Lookup(ctx, a.Token)
	require.NoError(t, err)
	require.Empty(t, got.Record.WorkspaceID, "back to main")

	require.NoError(t, m.SignOut(ctx, b.Session))
	require.ErrorIs(t, m.SetWorkspace(ctx, b.Session, ws), ErrNoSession)
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		_, err := tx.Session(b.Hash)
		require.ErrorIs(t, err, persistence.ErrNotFound, "an ended session is not written back")
		return nil
	}))
}
