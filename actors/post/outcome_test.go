package post_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
)

// A job's final transaction writes the outcome its post would take (Outcome): the same post, the
// same event and usage counts as the post's actor's Finish. The post answers it from then on: an
// older state told later (Took) does not replace it, and a Finish of the same job afterwards
// changes nothing.
func TestAnOutcomeWrittenByItsJobIsTheOutcomeThePostTakes(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	ctx := context.Background()
	final := func(id string) *persistence.Job {
		var j *persistence.Job
		require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
			p, err := tx.Post(id)
			if err != nil {
				return err
			}
			j, err = tx.Job(*p.TrackingID)
			return err
		}))
		j = j.Clone()
		now := time.Now().UTC()
		j.Status, j.CompletedAt = persistence.JobCompleted, &now
		j.Targets[0].Phase, j.Targets[0].PublicationID, j.Targets[0].URL = persistence.PhaseSuccess, "net-1", "https://example.com/1"
		j.Targets[1].Phase, j.Targets[1].Message = persistence.PhaseFailed, "refused by the network"
		return j
	}
	events := func(id string) (types []string) {
		require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
			evs, err := tx.EventsAfter("test", 1000)
			for _, e := range evs {
				var d post.EventData
				require.NoError(t, persistence.Decode(e.Data, &d))
				if d.PostID == id {
					types = append(types, e.Type)
				}
			}
			return err
		}))
		return types
	}

	// One post takes its outcome through its actor.
	byActor, _ := s.in(persistence.PostPublishing)
	s.dir.Send(byActor, &post.Finish{Job: final(byActor)})
	require.Eventually(t, func() bool { return s.get(byActor).Status == persistence.PostPartial }, 5*time.Second, 5*time.Millisecond)

	// The other through its job's transaction.
	byJob, _ := s.in(persistence.PostPublishing)
	before := s.get(byJob)
	j := final(byJob)
	o, err := post.NewOutcome(before, j, time.Now())
	require.NoError(t, err)
	require.NotNil(t, o)
	require.NoError(t, s.store.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.PutJob(j); err != nil {
			return err
		}
		if err := tx.SettleJob(j.TrackingID); err != nil {
			return err
		}
		return o.Write(tx)
	}))
	s.dir.Send(byJob, &post.Took{Post: o.Post})
	got := s.get(byJob)
	require.Equal(t, persistence.PostPartial, got.Status)

	a, b := s.get(byActor), got
	require.Equal(t, a.Version, b.Version)
	require.Equal(t, *a.TrackingID == a.FinishedJob, *b.TrackingID == b.FinishedJob)
	for i := range a.Targets {
		require.Equal(t, a.Targets[i].Status, b.Targets[i].Status)
		require.Equal(t, a.Targets[i].Error, b.Targets[i].Error)
		require.Equal(t, a.Targets[i].PublicationID, b.Targets[i].PublicationID)
		require.Equal(t, a.Targets[i].PublishedAt != nil, b.Targets[i].PublishedAt != nil)
	}
	require.Equal(t, []string{"post.published"}, events(byActor))
	require.Equal(t, []string{"post.published"}, events(byJob))
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		require.False(t, tx.JobActive(j.TrackingID), "the job is settled")
		u := tx.Usage(s.user, time.Now().UTC().Format("2006-01"))
		require.Equal(t, 2, u.Get(persistence.UsagePostsPublished, ""), "each post counted once")
		return nil
	}))

	// An older state told later is not taken; a Finish of the same job changes nothing.
	s.dir.Send(byJob, &post.Took{Post: before})
	s.dir.Send(byJob, &post.Finish{Job: j})
	got = s.get(byJob)
	require.Equal(t, persistence.PostPartial, got.Status)
	require.Equal(t, o.Post.Version, got.Version)
	require.Equal(t, []string{"post.published"}, events(byJob))

	// A post whose job is another, or that took this job's outcome, takes none.
	none, err := post.NewOutcome(got, j, time.Now())
	require.NoError(t, err)
	require.Nil(t, none)
	none, err = post.NewOutcome(nil, j, time.Now())
	require.NoError(t, err)
	require.Nil(t, none)
}

// The outcome of a job's final transaction is built on the post kept as the job was committed,
// without reading the store, changing a copy of it; its write holds only while the store holds
// the post as it was kept, and is refused otherwise, writing nothing.
func TestAnOutcomeBuiltOnTheKeptPostHoldsOnlyWhileStoredAsItWas(t *testing.T) {
	t.Parallel()
	s := newStates(t)
	id, _ := s.in(persistence.PostPublishing)
	var stored *persistence.Post
	var j *persistence.Job
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		var err error
		if stored, err = tx.Post(id); err != nil {
			return err
		}
		j, err = tx.Job(*stored.TrackingID)
		return err
	}))
	raw, err := persistence.Encode(stored)
	require.NoError(t, err)
	now := time.Now().UTC()
	j.Status, j.CompletedAt = persistence.JobCompleted, &now
	for i := range j.Targets {
		j.Targets[i].Phase, j.Targets[i].PublicationID = persistence.PhaseSuccess, "net-1"
	}
	// The kept post carries a text its stored bytes do not: only an outcome made from it says it.
	keptPost := stored.Clone()
	keptPost.Content = "kept"
	ctx := context.Background()

	// Kept as bytes the store does not hold: refused, and nothing changed.
	stale := &post.Committed{Post: keptPost, PostRaw: append([]byte(nil), raw[:len(raw)-1]...)}
	o := post.ReadOutcomeKept(s.store, j, now, stale)
	require.NotNil(t, o)
	require.Equal(t, "kept", o.Post.Content, "built on the kept post, not read")
	require.ErrorIs(t, s.store.Update(ctx, o.Write), persistence.ErrChanged)
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(id)
		require.NoError(t, err)
		require.Equal(t, persistence.PostPublishing, p.Status)
		require.Equal(t, "hello", p.Content)
		evs, err := tx.EventsAfter("test", 1000)
		require.Empty(t, evs, "no event")
		return err
	}))

	kept := &post.Committed{Post: keptPost, PostRaw: raw}
	o = post.ReadOutcomeKept(s.store, j, now, kept)
	require.NotNil(t, o)
	require.Equal(t, "kept", o.Post.Content)
	require.Equal(t, persistence.PostPublished, o.Post.Status)
	require.NotSame(t, keptPost, o.Post)
	require.Equal(t, persistence.PostPublishing, keptPost.Status, "the kept post is shared: unchanged")
	require.NoError(t, s.store.Update(ctx, o.Write))
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(id)
		require.NoError(t, err)
		require.Equal(t, persistence.PostPublished, p.Status)
		require.Equal(t, "kept", p.Content, "the outcome written is the one built on the kept post")
		return nil
	}))

	// Without a kept post, the stored one is read.
	o = post.ReadOutcomeKept(s.store, j, now, nil)
	require.Nil(t, o, "the stored post took this job's outcome already")
}
