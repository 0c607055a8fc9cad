package persistence_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// A campaign's index and counts follow its posts through every change PutPost and DeletePost
// make, and its timeline numbers events in order; a deleted campaign leaves nothing behind that
// the full check would report.
func TestCampaignIndexCountsAndTimeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := persistence.Open(dir, persistence.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	user := uuid.NewString()
	c := &persistence.Campaign{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Name: "launch", Publish: persistence.CampaignNow, Posts: 3, CreatedAt: time.Now().UTC()}
	posts := make([]*persistence.Post, 3)
	for i := range posts {
		posts[i] = &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "p", Status: persistence.PostPublishing,
			CampaignID: c.ID, CreatedAt: time.Now().UTC(), Targets: []persistence.Target{{AccountID: uuid.NewString(), Platform: "bluesky"}}}
	}
	alone := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "alone", Status: persistence.PostDraft, CreatedAt: time.Now().UTC()}
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		require.False(t, tx.HasCampaign(c.ID))
		if err := tx.CreateUser(&persistence.User{ID: user, Email: "campaigns@example.com", Plan: "pro", CreatedAt: time.Now().UTC()}); err != nil {
			return err
		}
		if err := tx.PutCampaign(c); err != nil {
			return err
		}
		for _, p := range append(posts, alone) {
			if err := tx.PutPost(p, nil); err != nil {
				return err
			}
		}
		return nil
	}))
	counts := func() persistence.CampaignCounts {
		var out persistence.CampaignCounts
		require.NoError(t, s.View(func(tx *persistence.Tx) error { out = tx.CampaignCounts(c.ID); return nil }))
		return out
	}
	require.Equal(t, 3, counts().Total())
	require.Equal(t, 3, counts().Open())

	// One post is published, one fails, the third is still publishing; then the failed one is
	// published again.
	next := func(p *persistence.Post, status string) *persistence.Post {
		n := p.Clone()
		n.Status = status
		return n
	}
	posts[0], posts[1] = next(posts[0], persistence.PostPublished), next(posts[1], persistence.PostFailed)
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.PutPost(posts[0], nil); err != nil {
			return err
		}
		return tx.PutPost(posts[1], nil)
	}))
	got := counts()
	require.Equal(t, []int{3, 1, 1, 1}, []int{got.Total(), got.Of(persistence.PostPublished), got.Of(persistence.PostFailed), got.Open()})
	var listed []persistence.CampaignPost
	require.NoError(t, s.View(func(tx *persistence.Tx) error { listed = tx.CampaignPosts(c.ID); return nil }))
	require.Equal(t, []persistence.CampaignPost{{PostID: posts[0].ID, Status: "published"}, {PostID: posts[1].ID, Status: "failed"},
		{PostID: posts[2].ID, Status: "publishing"}}, listed)

	// The timeline numbers events from 1, in the order of the transactions that append them.
	for i := 0; i < 3; i++ {
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
			return tx.AppendCampaignEvents(c.ID, []persistence.CampaignEvent{
				{PostID: posts[i].ID, Phase: persistence.PhaseUploading, At: time.Now().UTC()},
				{PostID: posts[i].ID, Phase: persistence.PhaseSuccess, At: time.Now().UTC()},
			})
		}))
	}
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		all, err := tx.CampaignEventsAfter(c.ID, 0, 100)
		require.NoError(t, err)
		require.Len(t, all, 6)
		for i, e := range all {
			require.Equal(t, uint64(i+1), e.Seq)
			require.Equal(t, posts[i/2].ID, e.PostID)
		}
		page, err := tx.CampaignEventsAfter(c.ID, 4, 1)
		require.NoError(t, err)
		require.Len(t, page, 1)
		require.Equal(t, uint64(5), page[0].Seq)
		none, err := tx.CampaignEventsAfter(uuid.NewString(), 0, 100)
		require.NoError(t, err)
		require.Empty(t, none, "another campaign's timeline is its own")
		list, total, err := tx.ListCampaigns(user, 0, 10)
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, c.ID, list[0].ID)
		return nil
	}))

	// Deleting the posts empties the index and the counts; the campaign can then go.
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		for _, p := range posts {
			if err := tx.DeletePost(p); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Equal(t, 0, counts().Total())
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.DeleteCampaign(c) }))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		require.False(t, tx.HasCampaign(c.ID))
		rest, err := tx.CampaignEventsAfter(c.ID, 0, 100)
		require.NoError(t, err)
		require.Empty(t, rest)
		_, total, err := tx.ListCampaigns(user, 0, 10)
		require.NoError(t, err)
		require.Zero(t, total)
		return nil
	}))
	require.NoError(t, s.Close())
	r, err := persistence.CheckFile(filepath.Join(dir, persistence.FileName), time.Second)
	require.NoError(t, err)
	require.True(t, r.Sound(), "%v", r.Problems)
}
