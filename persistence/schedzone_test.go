package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestScheduledZoneIsKept(t *testing.T) { persistence.EachStore(t, scheduledZoneIsKept) }

// scheduledZoneIsKept proves that the zone a post was scheduled in is stored with it, and that a
// post without one reads back without one.
func scheduledZoneIsKept(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	at := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	now := time.Now().UTC()
	zoned := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: "u", Content: "hi", Status: persistence.PostDraft,
		ScheduledAt: &at, ScheduledZone: "Asia/Kolkata", CreatedAt: now, UpdatedAt: now, MediaIDs: []string{}}
	plain := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: "u", Content: "hi", Status: persistence.PostDraft,
		CreatedAt: now, UpdatedAt: now, MediaIDs: []string{}}
	for _, p := range []*persistence.Post{zoned, plain} {
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
	}
	for _, want := range []*persistence.Post{zoned, plain} {
		var got *persistence.Post
		require.NoError(t, s.View(func(tx *persistence.Tx) (err error) {
			got, err = tx.Post(want.ID)
			return err
		}))
		require.Equal(t, want.ScheduledZone, got.ScheduledZone)
	}
}
