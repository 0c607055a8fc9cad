package persistence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestAccountPlatformIsCachedAndForgottenOnDelete(t *testing.T) {
	persistence.EachStore(t, accountPlatformIsCachedAndForgottenOnDelete)
}

func accountPlatformIsCachedAndForgottenOnDelete(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	user, other := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Platform: "bluesky", NetworkUserID: "did:plc:x", CreatedAt: time.Now()}
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(a) }))

	for range 2 { // a miss that reads the index, then a hit
		platform, ok, err := s.AccountPlatform(user, a.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "bluesky", platform)
	}
	_, ok, err := s.AccountPlatform(other, a.ID)
	require.NoError(t, err)
	require.False(t, ok, "another user's account")

	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.DeleteAccount(a) }))
	s.ForgetAccount(user, a.ID)
	_, ok, err = s.AccountPlatform(user, a.ID)
	require.NoError(t, err)
	require.False(t, ok, "a deleted account is still answered")
}

// Lookups racing a deletion never leave the deleted account in the cache once the deletion is
// committed and forgotten.
func TestAccountPlatformRacingDeletion(t *testing.T) {
	persistence.EachStore(t, accountPlatformRacingDeletion)
}

func accountPlatformRacingDeletion(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	user := uuid.Must(uuid.NewV7()).String()
	for range 20 {
		a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Platform: "linkedin", NetworkUserID: uuid.NewString(), CreatedAt: time.Now()}
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
						_, _, _ = s.AccountPlatform(user, a.ID)
					}
				}
			}()
		}
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.DeleteAccount(a) }))
		s.ForgetAccount(user, a.ID)
		close(stop)
		wg.Wait()
		_, ok, err := s.AccountPlatform(user, a.ID)
		require.NoError(t, err)
		require.False(t, ok)
	}
}

// Whether an account has default options is cached with its platform, and read again once the
// account is forgotten after a change; AccountDefaults reads the record only when it has some.
func TestAccountDefaultsAreCachedAndForgotten(t *testing.T) {
	persistence.EachStore(t, func(t *testing.T, s *persistence.Store) {
		ctx := context.Background()
		user := uuid.Must(uuid.NewV7()).String()
		a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Platform: "tiktok", NetworkUserID: "open-1", CreatedAt: time.Now()}
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
		has, ok, err := s.AccountHasDefaults(user, a.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.False(t, has)

		a.DefaultOptions = []byte(`{"privacy_level":"SELF_ONLY"}`)
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
		s.ForgetAccount(user, a.ID)
		has, ok, err = s.AccountHasDefaults(user, a.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, has)
		require.NoError(t, s.View(func(tx *persistence.Tx) error {
			d, ok, err := tx.AccountDefaults(user, a.ID)
			require.True(t, ok)
			require.JSONEq(t, `{"privacy_level":"SELF_ONLY"}`, string(d))
			return err
		}))
	})
}

// An account's platform and defaults answered from memory cost no allocation (they are read for
// every target of every publish).
func TestAccountCacheHitAllocatesNothing(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses a parallel test
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	user := uuid.Must(uuid.NewV7()).String()
	a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Platform: "bluesky", NetworkUserID: "did:plc:x", CreatedAt: time.Now()}
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
	_, ok, err := s.AccountPlatform(user, a.ID)
	require.NoError(t, err)
	require.True(t, ok)
	allocs := testing.AllocsPerRun(100, func() {
		if p, ok, err := s.AccountPlatform(user, a.ID); p != "bluesky" || !ok || err != nil {
			t.Error("wrong platform")
		}
		if _, ok, err := s.AccountHasDefaults(user, a.ID); !ok || err != nil {
			t.Error("wrong defaults")
		}
	})
	require.Zero(t, allocs)
}
