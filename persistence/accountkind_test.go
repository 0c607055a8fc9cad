package persistence_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestAccountKinds(t *testing.T) { persistence.EachStore(t, accountKinds) }

// accountKinds proves that an account's kind and display name are kept, and that a record written
// before accounts had kinds reads as the kind its network's accounts always were.
func accountKinds(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	user := uuid.Must(uuid.NewV7()).String()
	name := "Acme <Corp>"
	org := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Platform: "linkedin", NetworkUserID: "1001",
		Kind: persistence.AccountOrganization, DisplayName: &name, CreatedAt: time.Now()}
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(org) }))
	var got *persistence.Account
	require.NoError(t, s.View(func(tx *persistence.Tx) (err error) {
		got, err = tx.Account(org.ID)
		return err
	}))
	require.Equal(t, persistence.AccountOrganization, got.KindOf())
	require.Equal(t, name, *got.DisplayName)

	// Records as they were written before kinds: no kind field at all.
	for platform, want := range map[string]string{"linkedin": "profile", "facebook": "page", "youtube": "channel", "bluesky": "profile"} {
		a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Platform: platform, CreatedAt: time.Now()}
		raw, err := json.Marshal(a)
		require.NoError(t, err)
		require.NotContains(t, string(raw), `"kind"`)
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
		require.NoError(t, s.View(func(tx *persistence.Tx) (err error) {
			got, err = tx.Account(a.ID)
			return err
		}))
		require.Empty(t, got.Kind, platform)
		require.Equal(t, want, got.KindOf(), platform)
		require.Nil(t, got.DisplayName)
	}
}

func TestConnectStateChoices(t *testing.T) { persistence.EachStore(t, connectStateChoices) }

func connectStateChoices(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	st := &persistence.ConnectState{ID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.Must(uuid.NewV7()).String(), Platform: "linkedin",
		CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), UsedAt: &now, Choices: []byte{0, 1, 2, 255}}
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutConnectState(st) }))
	var got *persistence.ConnectState
	require.NoError(t, s.View(func(tx *persistence.Tx) (err error) {
		got, err = tx.ConnectState(st.ID)
		return err
	}))
	require.Equal(t, st.Choices, got.Choices)
	require.Nil(t, got.ChosenAt)
}
