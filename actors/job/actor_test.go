package job_test

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
	"github.com/heraldhq/herald/platforms"
)

// Reports whose commit fails are kept, in order, and recorded once the store writes again; the
// job stays alive for them (its idle timeout is far shorter than the retries), finishes once, and
// its account's attempt records go with the outcomes.
func TestReportsTheStoreCouldNotTakeAreRecordedInOrder(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{Faults: faults})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	sent, finished := make(chan *account.Publish, 4), make(chan *persistence.Job, 4)
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: 20 * time.Millisecond,
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		SendAccount: func(_ string, m *account.Publish) { sent <- m },
		Finish:      func(j *persistence.Job) { finished <- j }}))

	user := uuid.NewString()
	p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "hello", Status: persistence.PostPublishing, CreatedAt: time.Now().UTC()}
	j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: p.ID, UserID: user, Status: persistence.JobQueued, CreatedAt: time.Now().UTC()}
	for i, pl := range []string{"bluesky", "linkedin"} {
		acct := uuid.NewString()
		p.Targets = append(p.Targets, persistence.Target{AccountID: acct, Platform: pl, Status: persistence.TargetPublishing})
		j.Targets = append(j.Targets, persistence.JobTarget{Target: i, Platform: pl, AccountID: acct, Phase: persistence.PhaseUploading, Message: "queued"})
	}
	ctx := context.Background()
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error {
		for i := range j.Targets {
			if err := tx.PutAttempt(&persistence.Attempt{JobID: j.TrackingID, Target: i, StartedAt: time.Now()}); err != nil {
				return err
			}
		}
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.PutPost(p, nil)
	}))
	dir.Send(j.TrackingID, &job.Start{Job: j, Post: p})
	<-sent
	<-sent

	// The networks answered; the store cannot record it.
	faults.FailCommits(syscall.ENOSPC)
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, Message: "publishing to bluesky"})
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, Final: true, Success: true, Message: "published to bluesky",
		Publication: platforms.Publication{ID: "bsky-1", URL: "https://bsky.app/x"}})
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 1, Final: true, Message: "linkedin: refused"})
	deadline := time.Now().Add(10 * time.Second)
	for faults.Injected() < 4 {
		require.True(t, time.Now().Before(deadline), "the job retries its reports")
		time.Sleep(5 * time.Millisecond)
	}
	r, err := actors.Ask[*job.Reply](ctx, dir.To(j.TrackingID), &job.Get{UserID: user})
	require.NoError(t, err)
	require.Equal(t, persistence.JobQueued, r.Job.Status, "nothing recorded, nothing applied")
	require.Empty(t, finished)

	faults.ClearCommits()
	var done *persistence.Job
	select {
	case done = <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("the job never finished")
	}
	require.Equal(t, persistence.JobCompleted, done.Status)
	require.Equal(t, persistence.PhaseSuccess, done.Targets[0].Phase)
	require.Equal(t, "bsky-1", done.Targets[0].PublicationID)
	require.Equal(t, persistence.PhaseFailed, done.Targets[1].Phase)
	require.NoError(t, store.View(func(tx *persistence.Tx) error {
		stored, err := tx.Job(j.TrackingID)
		require.NoError(t, err)
		require.Equal(t, persistence.JobCompleted, stored.Status)
		require.EqualValues(t, 3, stored.Seq, "three reports, each recorded once")
		events, err := tx.JobEvents(j.TrackingID)
		require.NoError(t, err)
		var msgs []string
		for _, e := range events {
			for _, ev := range e.Events {
				msgs = append(msgs, ev.Message)
			}
		}
		require.Equal(t, []string{"publishing to bluesky", "published to bluesky", "linkedin: refused"}, msgs, "in the order they came")
		for i := range j.Targets {
			_, err := tx.Attempt(j.TrackingID, i)
			require.ErrorIs(t, err, persistence.ErrNotFound)
		}
		return nil
	}))
	require.Empty(t, finished, "finished once")
}

// A job counts in the backlog from its start until it is final, except while every one of its
// open targets waits for its network's rate budget or a retry's backoff; a stopped job leaves it.
func TestBacklogCountsTheJobsInHand(t *testing.T) {
	t.Parallel()
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	backlog := job.NewBacklog(1)
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: time.Minute, Backlog: backlog,
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		SendAccount: func(string, *account.Publish) {},
		Finish:      func(*persistence.Job) {}}))

	user := uuid.NewString()
	p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "hello", Status: persistence.PostPublishing, CreatedAt: time.Now().UTC()}
	j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: p.ID, UserID: user, Status: persistence.JobQueued, CreatedAt: time.Now().UTC()}
	for i, pl := range []string{"twitter_x", "linkedin"} {
		acct := uuid.NewString()
		p.Targets = append(p.Targets, persistence.Target{AccountID: acct, Platform: pl, Status: persistence.TargetPublishing})
		j.Targets = append(j.Targets, persistence.JobTarget{Target: i, Platform: pl, AccountID: acct, Phase: persistence.PhaseUploading, Message: "queued"})
	}
	ctx := context.Background()
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.PutPost(p, nil)
	}))
	counts := func(want int) {
		t.Helper()
		// A Get is answered after the messages sent before it: the count is then settled.
		_, err := actors.Ask[*job.Reply](ctx, dir.To(j.TrackingID), &job.Get{UserID: user})
		require.NoError(t, err)
		require.Equal(t, want, backlog.Len())
		require.Equal(t, want == 1, backlog.Full())
	}
	report := func(target int, final bool, event, msg string) {
		dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: target, Final: final, Event: event, Message: msg})
	}

	dir.Send(j.TrackingID, &job.Start{Job: j, Post: p})
	counts(1)
	report(0, false, persistence.EventWaiting, "waiting for rate budget")
	counts(1) // linkedin is still to publish
	report(1, false, persistence.EventRetrying, "retrying in 1s")
	counts(0) // both wait
	report(0, false, "", "publishing to twitter_x")
	counts(1)
	report(0, true, "", "published")
	report(1, true, "", "linkedin: refused")
	counts(0) // final

	// A job stopped unfinished (shutdown) leaves the backlog too.
	other := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: p.ID, UserID: user, Status: persistence.JobQueued, CreatedAt: time.Now().UTC(),
		Targets: []persistence.JobTarget{{Target: 0, Platform: "twitter_x", AccountID: j.Targets[0].AccountID, Phase: persistence.PhaseUploading}}}
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutJob(other) }))
	dir.Send(other.TrackingID, &job.Start{Job: other, Post: p})
	_, err = actors.Ask[*job.Reply](ctx, dir.To(other.TrackingID), &job.Get{UserID: user})
	require.NoError(t, err)
	require.Equal(t, 1, backlog.Len())
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, dir.Stop(stop))
	require.Equal(t, 0, backlog.Len())
}
