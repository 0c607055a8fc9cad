package campaign_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
)

// testBundle is a store, a post directory and a campaign directory, with the jobs the actors
// start recorded instead of run.
type testBundle struct {
	t         *testing.T
	store     *persistence.Store
	posts     *actors.Directory
	campaigns *actors.Directory
	user      string
	accounts  []string

	mu      sync.Mutex
	started map[string]int // post id → jobs started
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	b := &testBundle{t: t, store: store, user: uuid.NewString(), started: map[string]int{}}
	start := func(j *persistence.Job, _ *persistence.Post) {
		b.mu.Lock()
		b.started[j.PostID]++
		b.mu.Unlock()
	}
	b.posts = actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, Handoff: post.StartFunc(start)}))
	b.campaigns = actors.NewDirectory(sys, campaign.Kind(campaign.Deps{Store: store, Posts: b.posts, Handoff: post.StartFunc(start)}))
	b.accounts = []string{uuid.NewString(), uuid.NewString()}
	return b
}

// create creates a campaign of n posts, each to both accounts.
func (b *testBundle) create(mode string, n int, at time.Time) (string, []string) {
	b.t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	m := &campaign.Create{Campaign: &persistence.Campaign{UserID: b.user, Publish: mode}}
	var ids []string
	for i := 0; i < n; i++ {
		p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), Content: "post", Targets: []persistence.Target{
			{AccountID: b.accounts[0], Platform: "bluesky", Status: persistence.TargetPending},
			{AccountID: b.accounts[1], Platform: "twitter_x", Status: persistence.TargetPending}}}
		if mode == persistence.CampaignSchedule {
			p.ScheduledAt = &at
		}
		m.Posts = append(m.Posts, p)
		m.JobIDs = append(m.JobIDs, uuid.Must(uuid.NewV7()).String())
		ids = append(ids, p.ID)
	}
	_, err := actors.Ask[*campaign.CreateReply](context.Background(), b.campaigns.To(id), m)
	require.NoError(b.t, err)
	return id, ids
}

// fail stores what a job's outcome would: the post failed on the account's target.
func (b *testBundle) fail(postID string, target int, status string) {
	b.t.Helper()
	require.NoError(b.t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		p, err := tx.Post(postID)
		if err != nil {
			return err
		}
		msg := "token refresh failed"
		for i := range p.Targets {
			p.Targets[i].Status, p.Targets[i].Error = persistence.TargetPublished, nil
		}
		p.Targets[target].Status, p.Targets[target].Error = persistence.TargetFailed, &msg
		p.Status = status
		return tx.PutPost(p, nil)
	}))
}

func (b *testBundle) jobsStarted() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for k, v := range b.started {
		out[k] = v
	}
	return out
}

// A campaign publishing at once commits every post with its job in one step, counts its posts
// per status, and starts every job; nothing activates a post actor.
func TestCreateCommitsEveryPostAndJobAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, ids := b.create(persistence.CampaignNow, 50, time.Time{})
	require.Len(t, b.jobsStarted(), 50)
	require.Zero(t, b.posts.Live(), "no post actor was activated")
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		c, err := tx.Campaign(id)
		require.NoError(t, err)
		require.Equal(t, 50, c.Posts)
		counts := tx.CampaignCounts(id)
		require.Equal(t, 50, counts.Of(persistence.PostPublishing))
		for _, pid := range ids {
			p, err := tx.Post(pid)
			require.NoError(t, err)
			require.Equal(t, id, p.CampaignID)
			jobs, err := tx.JobsOfPost(pid)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			require.Equal(t, id, jobs[0].CampaignID)
			require.True(t, tx.JobActive(jobs[0].TrackingID))
		}
		return nil
	}))
	// The id is taken now.
	_, err := actors.Ask[*campaign.CreateReply](context.Background(), b.campaigns.To(id),
		&campaign.Create{Campaign: &persistence.Campaign{UserID: b.user, Publish: persistence.CampaignDraft},
			Posts: []*persistence.Post{{ID: uuid.Must(uuid.NewV7()).String(), Content: "x", Targets: []persistence.Target{{AccountID: b.accounts[0], Platform: "bluesky"}}}}})
	require.ErrorIs(t, err, campaign.ErrExists)
}

// A campaign beyond the free plan's quota is refused whole: nothing is stored.
func TestCreateOverTheQuotaStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.Must(uuid.NewV7()).String()
	m := &campaign.Create{Campaign: &persistence.Campaign{UserID: b.user, Publish: persistence.CampaignNow}, Quota: &post.Quota{Limit: 10, Month: "2026-05"}}
	for i := 0; i < 11; i++ {
		m.Posts = append(m.Posts, &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), Content: "x", Targets: []persistence.Target{{AccountID: b.accounts[0], Platform: "bluesky"}}})
		m.JobIDs = append(m.JobIDs, uuid.Must(uuid.NewV7()).String())
	}
	_, err := actors.Ask[*campaign.CreateReply](context.Background(), b.campaigns.To(id), m)
	var qe *post.QuotaExceededError
	require.ErrorAs(t, err, &qe)
	require.Contains(t, qe.Error(), "the campaign has 11 posts")
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		require.False(t, tx.HasCampaign(id))
		require.Zero(t, tx.QuotaUsed(b.user, "2026-05"))
		require.False(t, tx.HasPost(m.Posts[0].ID))
		return nil
	}))
	require.Empty(t, b.jobsStarted())
}

// Two retries of one campaign at once: they run one after the other, so the failed targets are
// published again once, by the first; the second finds nothing left to retry. Only the targets
// of the account asked for are retried.
func TestConcurrentRetriesPublishEachTargetOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, ids := b.create(persistence.CampaignDraft, 40, time.Time{})
	for i, pid := range ids {
		switch i % 4 {
		case 0:
			b.fail(pid, 0, persistence.PostPartial) // account 0 failed
		case 1:
			b.fail(pid, 1, persistence.PostPartial) // account 1 failed
		}
	}
	var wg sync.WaitGroup
	replies := make([]*campaign.RetryReply, 2)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := actors.Ask[*campaign.RetryReply](context.Background(), b.campaigns.To(id),
				&campaign.Retry{Scope: b.user, Only: post.Only{AccountID: b.accounts[0]}})
			assert.NoError(t, err)
			replies[i] = r
		}()
	}
	wg.Wait()
	retried := map[string]int{}
	for _, r := range replies {
		require.Empty(t, r.Skipped)
		for _, p := range r.Retried {
			retried[p.PostID]++
			require.Equal(t, 1, p.Targets, "only the failed target of the account")
		}
	}
	require.Len(t, retried, 10)
	for i, pid := range ids {
		if i%4 == 0 {
			require.Equal(t, 1, retried[pid], "post %d retried once", i)
		}
	}
	require.True(t, len(replies[0].Retried) == 0 || len(replies[1].Retried) == 0, "the second retry ran after the first")
	// A post actor hands its job off just after it answers: the last start may follow the reply.
	require.Eventually(t, func() bool { return len(b.jobsStarted()) >= 10 }, 10*time.Second, time.Millisecond)
	started := b.jobsStarted()
	require.Len(t, started, 10)
	for _, n := range started {
		require.Equal(t, 1, n)
	}

	// Another user's campaign is not found.
	_, err := actors.Ask[*campaign.RetryReply](context.Background(), b.campaigns.To(id), &campaign.Retry{Scope: uuid.NewString()})
	require.ErrorIs(t, err, campaign.ErrNotFound)
	_, err = actors.Ask[*campaign.CancelReply](context.Background(), b.campaigns.To(uuid.NewString()), &campaign.Cancel{Scope: b.user})
	require.ErrorIs(t, err, campaign.ErrNotFound)
}

// Cancelling deletes the draft and scheduled posts and keeps the others; a campaign left
// without posts is gone, one that keeps posts is marked cancelled.
func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Now().Add(time.Hour).UTC()
	id, ids := b.create(persistence.CampaignSchedule, 6, at)
	b.fail(ids[0], 0, persistence.PostFailed)
	r, err := actors.Ask[*campaign.CancelReply](context.Background(), b.campaigns.To(id), &campaign.Cancel{Scope: b.user})
	require.NoError(t, err)
	require.Equal(t, ids[1:], r.Cancelled)
	require.Equal(t, []campaign.Kept{{PostID: ids[0], Status: persistence.PostFailed}}, r.Kept)
	require.False(t, r.Removed)
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		c, err := tx.Campaign(id)
		require.NoError(t, err)
		require.NotNil(t, c.CancelledAt)
		require.Equal(t, 1, tx.CampaignCounts(id).Total())
		// The schedule entries went with the posts (the failed post's was left by this test,
		// which failed it without its job).
		due := tx.DueBefore(at.Add(time.Minute), persistence.Due{}, 10)
		require.Len(t, due, 1)
		require.Equal(t, ids[0], due[0].PostID)
		return nil
	}))

	id2, _ := b.create(persistence.CampaignDraft, 3, time.Time{})
	r, err = actors.Ask[*campaign.CancelReply](context.Background(), b.campaigns.To(id2), &campaign.Cancel{Scope: b.user})
	require.NoError(t, err)
	require.Len(t, r.Cancelled, 3)
	require.Empty(t, r.Kept)
	require.True(t, r.Removed)
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		require.False(t, tx.HasCampaign(id2))
		return nil
	}))
	_, err = actors.Ask[*campaign.CancelReply](context.Background(), b.campaigns.To(id2), &campaign.Cancel{Scope: b.user})
	require.ErrorIs(t, err, campaign.ErrNotFound)
}
