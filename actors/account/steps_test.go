package account_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

// enqueueSteps stores a post whose target 0 on acct has a thread and a first comment, and its
// job, as a publish does.
func (b *bundle) enqueueSteps(acct, job, text string, thread []string, comment string) {
	b.t.Helper()
	now := time.Now().UTC()
	tg := persistence.Target{AccountID: acct, Status: persistence.TargetPublishing}
	for _, s := range thread {
		tg.Thread = append(tg.Thread, persistence.ThreadPart{Content: s})
	}
	if comment != "" {
		tg.FirstComment = &persistence.FirstComment{Content: comment, Status: persistence.CommentPending}
	}
	p := &persistence.Post{ID: newJobID(), UserID: b.userID, Content: text, Status: persistence.PostPublishing, CreatedAt: now, UpdatedAt: now,
		Targets: []persistence.Target{tg}}
	j := &persistence.Job{TrackingID: job, PostID: p.ID, UserID: b.userID, Status: persistence.JobQueued, CreatedAt: now,
		Targets: []persistence.JobTarget{{Target: 0, AccountID: acct, Phase: persistence.PhaseUploading, Message: "queued"}}}
	require.NoError(b.t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.PutPost(p, nil); err != nil {
			return err
		}
		return tx.PutJob(j)
	}))
}

// A thread's parts and a first comment on Threads spend the network's own budgets: the post one
// of its 250 posts a day, each reply (the parts and the comment) one of its 1,000 replies.
func TestStepsSpendTheirNetworksBudgets(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.Threads, "tess")
	job := newJobID()
	b.enqueueSteps(acct, job, "the post", []string{"part two", "part three"}, "a comment")
	b.dir.Send(acct, &account.Take{})
	r := b.finals(job, 1)[0]
	require.True(t, r.Success, r.Message)
	require.Len(t, r.Parts, 2)
	require.Equal(t, persistence.CommentPublished, r.Comment.Status)
	now := time.Now()
	require.Equal(t, 249, b.budgets.Remaining(platforms.Threads, acct, now), "the post is one post")
	require.Equal(t, 997, b.budgets.RemainingOp(platforms.Threads, acct, account.DefaultStepRules[platforms.Threads], now), "three replies")
	recs := b.sim.Publications(platforms.Threads)
	require.Len(t, recs, 4)
	require.Equal(t, []string{"", recs[0].ID, recs[1].ID, recs[0].ID}, []string{recs[0].ReplyTo, recs[1].ReplyTo, recs[2].ReplyTo, recs[3].ReplyTo})
}

// After a crash, a thread resumes where its journal stood: the part whose call was in flight is
// looked up (here it was made) and not sent again, and the chain goes on from the next part.
func TestThreadResumesFromItsJournal(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.X, "jill")
	creds, err := b.sim.NewAccount(platforms.X, "jill")
	require.NoError(t, err)
	x := registry.New(map[platforms.Platform]platforms.Config{platforms.X: b.sim.AdapterConfig(platforms.X)})[platforms.X]
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	// Before the crash: the post and two parts reached X; the journal recorded the second part's
	// call as started, with the post and the first part done.
	post, err := x.Publish(ctx, creds, platforms.Post{Text: "one"})
	require.NoError(t, err)
	th := x.(platforms.Threader)
	two, err := th.PublishReply(ctx, creds, post.Publication, post.Publication, platforms.Post{Text: "two"})
	require.NoError(t, err)
	_, err = th.PublishReply(ctx, creds, post.Publication, two.Publication, platforms.Post{Text: "three"})
	require.NoError(t, err)
	job := newJobID()
	b.enqueueSteps(acct, job, "one", []string{"two", "three", "four"}, "")
	require.NoError(t, b.store.Update(ctx, func(tx *persistence.Tx) error {
		return tx.PutAttempt(&persistence.Attempt{JobID: job, Target: 0, AccountID: acct, StartedAt: since, Step: 2,
			Done: []persistence.Step{{ID: post.Publication.ID, URL: post.Publication.URL}, {ID: two.Publication.ID, URL: two.Publication.URL}}})
	}))
	b.dir.Send(acct, &account.Take{})
	r := b.finals(job, 1)[0]
	require.True(t, r.Success, r.Message)
	require.Equal(t, post.Publication.ID, r.Publication.ID)
	recs := b.sim.Publications(platforms.X)
	require.Len(t, recs, 4, "the third part is not sent again")
	require.Equal(t, []string{"one", "two", "three", "four"}, []string{recs[0].Text, recs[1].Text, recs[2].Text, recs[3].Text})
	require.Equal(t, recs[2].ID, recs[3].ReplyTo, "the fourth part answers the third, found by the lookup")
	require.Len(t, r.Parts, 3)
	require.Equal(t, recs[2].ID, r.Parts[1].ID)
}
