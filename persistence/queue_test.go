package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestWorkspaceQueueKept(t *testing.T) {
	persistence.EachStore(t, workspaceQueueKept)
}

// A workspace's posting queue is kept with its record, the main workspace's too (whose record
// exists only once a setting changed), and reads back slot for slot.
func workspaceQueueKept(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	user := &persistence.User{ID: uuid.Must(uuid.NewV7()).String(), Email: uuid.NewString() + "@example.com", CreatedAt: now}
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.CreateUser(user) }))
	other := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: user.ID, Name: "Acme", CreatedAt: now}
	q := &persistence.Queue{Timezone: "Europe/Paris", Slots: []persistence.QueueSlot{{Weekday: "monday", Time: "09:00"}, {Weekday: "friday", Time: "17:30"}}}
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		main, err := tx.Workspace(user.ID, persistence.MainWorkspace)
		if err != nil {
			return err
		}
		require.Nil(t, main.Queue)
		main.Queue = q
		if err := tx.PutWorkspace(main); err != nil {
			return err
		}
		return tx.PutWorkspace(other)
	}))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		main, err := tx.Workspace(user.ID, persistence.MainWorkspace)
		require.NoError(t, err)
		require.Equal(t, q, main.Queue)
		o, err := tx.Workspace(user.ID, other.ID)
		require.NoError(t, err)
		require.Nil(t, o.Queue)
		return nil
	}))
}
