package persistence

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A campaign's counts written before pending_approval existed (seven cells) are read with the
// new status at 0, and the next change of one of its posts writes the eighth cell.
func TestCampaignCountsOfOlderRecord(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		campaign, postID := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
		old := make([]byte, oldCampaignCells*4)
		binary.BigEndian.PutUint32(old[0:], 3)                                // every post
		binary.BigEndian.PutUint32(old[int(statusCode(PostScheduled))*4:], 2) // scheduled
		binary.BigEndian.PutUint32(old[int(statusCode(PostFailed))*4:], 1)    // failed
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
			return tx.kv.Bucket(bCampaignCounts).Put(mustID(campaign), old)
		}))
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
			c := tx.CampaignCounts(campaign)
			require.Equal(t, 3, c.Total())
			require.Equal(t, 2, c.Of(PostScheduled))
			require.Equal(t, 1, c.Of(PostFailed))
			require.Equal(t, 0, c.Of(PostPendingApproval))
			require.Equal(t, 2, c.Open())
			// A scheduled post of it is held for approval.
			return tx.moveCampaignPost(mustID(campaign), mustID(postID), statusCode(PostScheduled), statusCode(PostPendingApproval))
		}))
		require.NoError(t, s.View(func(tx *Tx) error {
			require.Len(t, tx.kv.Bucket(bCampaignCounts).Get(mustID(campaign)), campaignCells*4)
			c := tx.CampaignCounts(campaign)
			require.Equal(t, 3, c.Total())
			require.Equal(t, 1, c.Of(PostScheduled))
			require.Equal(t, 1, c.Of(PostPendingApproval))
			require.Equal(t, 2, c.Open(), "a post waiting for approval is still open")
			return nil
		}))
	})
}

// The approval events sit past the seventh bit of a subscription's flags: a subscription asking
// for them is found, and one stored with one flags byte (before there were more than seven events)
// still answers for the events it names and for none of the new ones.
func TestSubscribersOfEventsPastTheFirstByte(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		user := uuid.NewString()
		approvals := &Webhook{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, URL: "https://a.example/h", Active: true,
			Events: []string{PostEventApproved, PostEventRejected}}
		legacy := uuid.Must(uuid.NewV7()).String()
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.PutWebhook(approvals); err != nil {
				return err
			}
			// An older record: every event of its time, active, in one byte.
			return tx.kv.Bucket(bWebhooksUser).Put(join(mustID(user), mustID(legacy)), []byte{0x1f | webhookActive})
		}))
		require.NoError(t, s.View(func(tx *Tx) error {
			require.Equal(t, []string{approvals.ID}, tx.SubscribersOf(user, PostEventApproved))
			require.Equal(t, []string{approvals.ID}, tx.SubscribersOf(user, PostEventRejected))
			require.Empty(t, tx.SubscribersOf(user, PostEventApprovalRequested))
			require.Equal(t, []string{legacy}, tx.SubscribersOf(user, PostEventPublished))
			require.Equal(t, []string{legacy}, tx.SubscribersOf(user, CampaignEventCompleted))
			return nil
		}))
	})
}
