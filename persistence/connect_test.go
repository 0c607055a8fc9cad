package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestConnectStatesArePurgedOnceExpired(t *testing.T) {
	persistence.EachStore(t, connectStatesArePurgedOnceExpired)
}

func connectStatesArePurgedOnceExpired(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var ids []string
	// Five states that expire one minute apart.
	for i := range 5 {
		st := &persistence.ConnectState{ID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.Must(uuid.NewV7()).String(), Platform: "linkedin",
			CreatedAt: now, ExpiresAt: now.Add(time.Duration(i) * time.Minute)}
		ids = append(ids, st.ID)
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutConnectState(st) }))
	}
	purge := func(at time.Time, max int) int {
		var n int
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) (err error) {
			n, err = tx.PurgeConnectStates(at, max)
			return err
		}))
		return n
	}
	exists := func(id string) bool {
		var err error
		require.NoError(t, s.View(func(tx *persistence.Tx) error {
			_, err = tx.ConnectState(id)
			return nil
		}))
		if err != nil {
			require.ErrorIs(t, err, persistence.ErrNotFound)
		}
		return err == nil
	}
	require.Equal(t, 0, purge(now.Add(-time.Second), 100), "nothing expired yet")
	require.Equal(t, 1, purge(now.Add(90*time.Second), 1), "bounded by max")
	require.False(t, exists(ids[0]))
	require.True(t, exists(ids[1]))
	require.Equal(t, 1, purge(now.Add(90*time.Second), 100))
	require.Equal(t, 0, purge(now.Add(90*time.Second), 100))
	for _, id := range ids[2:] {
		require.True(t, exists(id))
	}
	require.Equal(t, 3, purge(now.Add(time.Hour), 100))
}

func TestAccountOfNetworkUser(t *testing.T) { persistence.EachStore(t, accountOfNetworkUser) }

func accountOfNetworkUser(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	user, other := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	put := func(owner, platform, networkUser string) *persistence.Account {
		a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: owner, Platform: platform, NetworkUserID: networkUser, CreatedAt: time.Now()}
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
		return a
	}
	put(user, "linkedin", "n1")
	want := put(user, "linkedin", "n2")
	put(user, "threads", "n3")
	put(other, "threads", "n3")
	find := func(owner, platform, networkUser string) (*persistence.Account, error) {
		var a *persistence.Account
		var err error
		require.NoError(t, s.View(func(tx *persistence.Tx) error {
			a, err = tx.AccountOfNetworkUser(owner, platform, networkUser)
			return nil
		}))
		return a, err
	}
	got, err := find(user, "linkedin", "n2")
	require.NoError(t, err)
	require.Equal(t, want.ID, got.ID)
	for _, miss := range [][3]string{{user, "threads", "n2"}, {other, "linkedin", "n2"}, {user, "linkedin", ""}, {user, "myspace", "n1"}} {
		_, err := find(miss[0], miss[1], miss[2])
		require.ErrorIs(t, err, persistence.ErrNotFound, "%v", miss)
	}
}
