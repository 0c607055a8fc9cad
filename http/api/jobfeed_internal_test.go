package api

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// feedJob is a job of two targets as its writer (the job actor, on whichever node) stores it.
type feedJob struct {
	t *testing.T
	s *persistence.Store // the writer's store
	j *persistence.Job
}

func newFeedJob(t *testing.T, s *persistence.Store) *feedJob {
	j := &persistence.Job{TrackingID: uuid.NewString(), PostID: uuid.NewString(), UserID: uuid.NewString(), Status: persistence.JobQueued,
		CreatedAt: time.Now().UTC(), Targets: []persistence.JobTarget{
			{Target: 0, Platform: "x", AccountID: uuid.NewString(), Phase: "queued"},
			{Target: 1, Platform: "bluesky", AccountID: uuid.NewString(), Phase: "queued"},
		}}
	f := &feedJob{t: t, s: s, j: j}
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
	return f
}

// change stores the next change of the job as the job actor does: the target's new phase and
// the change's timeline, in one transaction.
func (f *feedJob) change(target int, phase string, events ...persistence.JobEvent) {
	next := f.j.Clone()
	next.Seq++
	next.Status = persistence.JobProcessing
	next.Targets[target].Phase, next.Targets[target].Message = phase, events[len(events)-1].Message
	final := true
	for _, t := range next.Targets {
		final = final && t.Final()
	}
	if final {
		next.Status = persistence.JobFailed
		if c, _ := next.Counts(); c > 0 {
			next.Status = persistence.JobCompleted
		}
		now := time.Now().UTC()
		next.CompletedAt = &now
	}
	raw, err := persistence.Encode(events)
	require.NoError(f.t, err)
	require.NoError(f.t, f.s.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.PutJobEvents(next.TrackingID, next.Seq, raw); err != nil {
			return err
		}
		return tx.PutJob(next)
	}))
	f.j = next
}

// next waits for the subscriber's next event.
func next(t *testing.T, sub *job.Subscriber, within time.Duration) *job.Event {
	t.Helper()
	select {
	case e, ok := <-sub.C:
		require.True(t, ok, "the feed closed the stream before done")
		return e
	case <-time.After(within):
		t.Fatalf("no event within %s", within)
		return nil
	}
}

func openShared(t *testing.T, url string) *persistence.Store {
	t.Helper()
	s, err := persistence.OpenPostgres(context.Background(), url, persistence.Options{Shared: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.Eventually(t, func() bool { return s.ListenerPID() != 0 }, 10*time.Second, 10*time.Millisecond, "the store did not listen")
	return s
}

// followJob follows a job written through writer with a feed over reader (another process's
// store, or the same), and checks every step of it: a progress per change, each with the job as
// that change left it, then done, then the end of the stream. between runs before the last
// change is written.
func followJob(t *testing.T, writer, reader *persistence.Store, between func(), within time.Duration) {
	fj := newFeedJob(t, writer)
	feeds := newJobFeeds(reader, nil)
	_, _, _, leave, err := feeds.join(uuid.NewString(), fj.j.Scope())
	leave()
	require.Equal(t, job.ErrNotFound, err)
	_, _, _, leave, err = feeds.join(fj.j.TrackingID, uuid.NewString())
	leave()
	require.Equal(t, job.ErrForbidden, err)

	first, done, sub, leave, err := feeds.join(fj.j.TrackingID, fj.j.Scope())
	require.NoError(t, err)
	defer leave()
	require.False(t, done)
	require.EqualValues(t, 0, first.Seq)
	// A second stream of the job shares the feed.
	_, _, sub2, leave2, err := feeds.join(fj.j.TrackingID, fj.j.Scope())
	require.NoError(t, err)
	require.Len(t, feeds.feeds, 1)

	at := time.Now().UTC()
	fj.change(0, persistence.PhaseUploading, persistence.JobEvent{Target: 0, Phase: persistence.EventWaiting, Message: "waiting for rate budget", At: at})
	e := next(t, sub, within)
	p := progressOf(e.Job, e.Target)
	require.Equal(t, "progress", e.Name)
	require.EqualValues(t, 1, e.ID)
	require.Equal(t, Progress{Status: "processing", Phase: persistence.PhaseUploading, Platform: "x", Message: "waiting for rate budget", Total: 2}, p)
	require.Same(t, e, next(t, sub2, within), "the streams of a job share its events")
	leave2()

	fj.change(0, persistence.PhaseSuccess, persistence.JobEvent{Target: 0, Phase: persistence.PhaseSuccess, Message: "published", At: at})
	e = next(t, sub, within)
	require.EqualValues(t, 2, e.ID)
	require.Equal(t, Progress{Status: "processing", Phase: persistence.PhaseSuccess, Platform: "x", Message: "published", Completed: 1, Total: 2},
		progressOf(e.Job, e.Target))

	between()
	fj.change(1, persistence.PhaseFailed,
		persistence.JobEvent{Target: 1, Phase: persistence.EventRetrying, Message: "timeout", At: at},
		persistence.JobEvent{Target: 1, Phase: persistence.PhaseFailed, Message: "rejected", At: at})
	e = next(t, sub, within)
	require.Equal(t, "progress", e.Name)
	require.EqualValues(t, 3, e.ID)
	require.Equal(t, Progress{Status: "completed", Phase: persistence.PhaseFailed, Platform: "bluesky", Message: "rejected", Completed: 1, Failed: 1, Total: 2},
		progressOf(e.Job, e.Target))
	e = next(t, sub, time.Second)
	require.Equal(t, "done", e.Name)
	require.EqualValues(t, 3, e.ID)
	require.Equal(t, persistence.JobCompleted, e.Job.Status)
	_, ok := <-sub.C
	require.False(t, ok, "the stream ends after done")

	// A stream opened now gets the finished job alone.
	j, done, _, leave3, err := feeds.join(fj.j.TrackingID, fj.j.Scope())
	leave3()
	require.NoError(t, err)
	require.True(t, done)
	require.EqualValues(t, 3, j.Seq)
	leave()
	require.Empty(t, feeds.feeds)
	require.Eventually(t, func() bool { return reader.Followers() == 0 }, time.Second, 5*time.Millisecond, "the feed stopped following")
}

// In one process (bbolt) the feed is woken by the store's commits.
func TestJobFeedFollowsTheStore(t *testing.T) {
	t.Parallel()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	followJob(t, s, s, func() {}, time.Second)
}

// A stream on node B follows a job whose changes node A writes, to its done, within a second of
// each; and after B's listening connection is killed, B catches up with what it missed and the
// stream still ends with done.
func TestJobFeedFollowsAnotherNode(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := openShared(t, url), openShared(t, url)
	followJob(t, a, b, func() {}, time.Second)

	followJob(t, a, b, func() {
		// The last change is written while B is not listening: its notification is lost.
		pid := b.ListenerPID()
		conn, err := pgx.Connect(context.Background(), url)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		var killed bool
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&killed))
		require.True(t, killed, "B's listening connection was not ended")
	}, 10*time.Second)
}
