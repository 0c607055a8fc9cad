package job_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/publishing"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
	"github.com/heraldhq/herald/platforms"
)

// world is publishing's hand-offs on a real store and actor system, without accounts: the tests
// send the reports an account would.
type world struct {
	t      *testing.T
	url    string // the store's --store value ("" for bbolt in dir)
	dir    string
	store  *persistence.Store
	faults *persistence.Faults
	// writes counts the writes the store committed.
	writes atomic.Int64
	pub    *publishing.Publishing
	reg    *prometheus.Registry
	user   string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, url: storetest.Store(t), dir: t.TempDir(), user: uuid.NewString()}
	w.open()
	return w
}

// open opens the store (again, after a crash) with a fault injector, and publishing over it.
func (w *world) open() {
	w.t.Helper()
	w.faults = &persistence.Faults{}
	store, err := persistence.OpenStore(w.url, w.dir, persistence.Options{Faults: w.faults,
		OnCommit: func(writes int, _ time.Duration, err error) {
			if err == nil {
				w.writes.Add(int64(writes))
			}
		}})
	require.NoError(w.t, err)
	w.store = store
	w.t.Cleanup(func() { _ = store.Close() })
	w.reg = prometheus.NewRegistry()
	sys := actors.NewSystem(w.reg, nil)
	w.t.Cleanup(sys.Shutdown)
	w.pub = publishing.New(publishing.Config{System: sys, Store: store, Registry: w.reg, IdleTimeout: time.Minute,
		Log: slog.New(slog.DiscardHandler)})
}

// publishing stores a post that is publishing to n targets with its job, as a publish leaves
// them: the job's targets wait for their accounts, and each has an attempt record (its call
// started).
func (w *world) publishing(n int) (*persistence.Post, *persistence.Job) {
	w.t.Helper()
	now := time.Now().UTC()
	p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: w.user, Content: "hello", Status: persistence.PostDraft,
		CreatedAt: now, UpdatedAt: now}
	for i := range n {
		p.Targets = append(p.Targets, persistence.Target{AccountID: uuid.NewString(), Platform: []string{"bluesky", "twitter_x", "linkedin"}[i%3],
			Status: persistence.TargetPending})
	}
	j, err := post.NewJob(p, uuid.Must(uuid.NewV7()).String(), now, nil)
	require.NoError(w.t, err)
	require.NoError(w.t, w.store.Update(context.Background(), func(tx *persistence.Tx) error {
		for _, t := range j.Targets {
			if err := tx.PutAttempt(&persistence.Attempt{JobID: j.TrackingID, Target: t.Target, AccountID: t.AccountID, StartedAt: now}); err != nil {
				return err
			}
		}
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.PutPost(p, nil)
	}))
	return p, j
}

func (w *world) report(j *persistence.Job, target int, final, success bool, msg string) {
	r := &account.Report{JobID: j.TrackingID, Target: target, AccountID: j.Targets[target].AccountID, Final: final, Success: success, Message: msg}
	if final && success {
		r.Publication = platforms.Publication{ID: "net-" + msg, URL: "https://example.com/" + msg}
	}
	w.pub.Jobs.Send(j.TrackingID, r)
}

// stored reads the post and job as stored, whether the job is still to resume, and what waits.
type stored struct {
	post     *persistence.Post
	job      *persistence.Job
	active   bool
	waiting  int
	attempts int
	// published counts the post's post.published events in the outbox.
	published int
	// counted is the post counted as published in its workspace's usage.
	counted int
	// timeline is the job's stored timeline, in order: seq and message.
	timeline []string
}

func (w *world) read(p *persistence.Post, j *persistence.Job) stored {
	w.t.Helper()
	var s stored
	require.NoError(w.t, w.store.View(func(tx *persistence.Tx) error {
		var err error
		if s.post, err = tx.Post(p.ID); err != nil {
			return err
		}
		if s.job, err = tx.Job(j.TrackingID); err != nil {
			return err
		}
		s.active = tx.JobActive(j.TrackingID)
		for _, t := range j.Targets {
			if tx.IsWaiting(persistence.Waiting{AccountID: t.AccountID, JobID: j.TrackingID, Target: t.Target}) {
				s.waiting++
			}
			if _, err := tx.Attempt(j.TrackingID, t.Target); err == nil {
				s.attempts++
			}
		}
		events, err := tx.EventsAfter("test", 1000)
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.Type == "post.published" && containsID(e, p.ID) {
				s.published++
			}
		}
		s.counted = tx.Usage(p.Scope(), time.Now().UTC().Format("2006-01")).Get(persistence.UsagePostsPublished, "")
		seqs, err := tx.JobEvents(j.TrackingID)
		if err != nil {
			return err
		}
		for _, e := range seqs {
			for _, ev := range e.Events {
				s.timeline = append(s.timeline, ev.Message)
			}
		}
		return nil
	}))
	return s
}

func containsID(e *persistence.Event, id string) bool {
	return strings.Contains(string(e.Data), `"post_id":"`+id+`"`)
}

// holdCommits keeps the store's committer busy, from its return until release is called:
// writes queue behind it, as behind a slow commit.
func (w *world) holdCommits() (release func()) {
	w.t.Helper()
	held, done, entered := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = w.store.Update(context.Background(), func(*persistence.Tx) error {
			close(entered)
			<-held
			return nil
		})
	}()
	<-entered
	return func() {
		close(held)
		<-done
	}
}

// queued waits until n writes wait for the committer.
func (w *world) queued(n int) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return w.store.QueueDepth() >= n }, 10*time.Second, time.Millisecond)
}

// The reports that reach a job while its write commits are stored together, in one write, in
// the order they came: each keeps its own seq and timeline entry, a stream sees each step and
// then done, and the write that makes the job final writes its post's outcome too, without
// activating the post's actor. A job of three targets whose last two reports queue behind the
// first costs two writes (three reports and the post's outcome took four).
func TestReportsThatQueueBehindAWriteAreStoredInOne(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p, j := w.publishing(3)
	ctx := context.Background()
	sub := job.NewSubscriber(16)
	_, err := actors.Ask[*job.SubscribeReply](ctx, w.pub.Jobs.To(j.TrackingID), &job.Subscribe{Scope: w.user, Sub: sub})
	require.NoError(t, err)

	before := w.writes.Load()
	release := w.holdCommits()
	w.report(j, 0, true, true, "first")
	w.queued(1) // the job's write of the first report waits for the committer
	w.report(j, 1, true, false, "second")
	w.report(j, 2, true, true, "third")
	release()

	var events []*job.Event
	for e := range sub.C {
		events = append(events, e)
	}
	require.Len(t, events, 4, "a progress event per report, then done")
	for i, e := range events[:3] {
		require.Equal(t, "progress", e.Name)
		require.EqualValues(t, i+1, e.ID, "each report keeps its own seq")
		require.Equal(t, i, e.Target)
		for k, tg := range e.Job.Targets {
			require.Equal(t, k <= i, tg.Final(), "event %d shows the job as its report left it (target %d)", i, k)
		}
	}
	require.Equal(t, "done", events[3].Name)
	require.EqualValues(t, 3, events[3].ID)
	require.Equal(t, persistence.JobCompleted, events[3].Job.Status)

	s := w.read(p, j)
	require.EqualValues(t, 3, s.job.Seq)
	require.Equal(t, []string{"first", "second", "third"}, s.timeline, "stored in the order they came")
	require.Equal(t, persistence.PostPartial, s.post.Status, "the post took the outcome")
	require.Equal(t, persistence.TargetPublished, s.post.Targets[0].Status)
	require.Equal(t, "net-first", s.post.Targets[0].PublicationID)
	require.Equal(t, persistence.TargetFailed, s.post.Targets[1].Status)
	require.True(t, s.job.PostSynced, "the job is stored settled")
	require.False(t, s.active, "and is no longer to resume")
	require.Zero(t, s.waiting)
	require.Zero(t, s.attempts)
	require.Equal(t, 1, s.published, "one post.published event")
	require.Equal(t, 1, s.counted, "the post counted once")

	// The held write, the first report's, and the last two reports' with the post's outcome.
	require.EqualValues(t, 3, w.writes.Load()-before, "two writes for the job, none for its post")
	require.Zero(t, testkit.Gathered(t, w.reg, "herald_actor_activations_total", "actor_kind", post.KindName), "the post's actor was not activated")

	// The post answers its outcome when activated, and a late Finish (a restart's) changes
	// nothing.
	got, err := actors.Ask[*post.Reply](ctx, w.pub.Posts.To(p.ID), &post.Get{Scope: w.user})
	require.NoError(t, err)
	require.Equal(t, persistence.PostPartial, got.Post.Status)
	w.pub.Posts.Send(p.ID, &post.Finish{Job: events[3].Job})
	got, err = actors.Ask[*post.Reply](ctx, w.pub.Posts.To(p.ID), &post.Get{Scope: w.user})
	require.NoError(t, err)
	require.Equal(t, s.post.Version, got.Post.Version)
	require.Equal(t, 1, w.read(p, j).published)
}

// A job's final transaction holds its post's outcome, so no crash falls between the two: when it
// cannot commit, neither is stored and the job's targets still wait for their accounts (with
// their attempt records, so that an account resolves each call rather than sending it again);
// after a restart the reports come again and the post takes the outcome once. A restart after
// the commit finds the post published and nothing to hand on.
func TestAJobsFinalTransactionHoldsItsPostsOutcomeAcrossACrash(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p, j := w.publishing(2)

	w.report(j, 0, true, true, "first")
	require.Eventually(t, func() bool { return w.read(p, j).job.Seq == 1 }, 10*time.Second, time.Millisecond)
	w.faults.FailCommits(syscall.EIO)
	w.report(j, 1, true, true, "second")
	require.Eventually(t, func() bool { return w.faults.Injected() >= 1 }, 10*time.Second, time.Millisecond)

	// The crash: the store is abandoned with the outcome in the job's memory only.
	require.NoError(t, w.store.Close())
	w.open()
	s := w.read(p, j)
	require.Equal(t, persistence.PostPublishing, s.post.Status, "the post's outcome was not stored")
	require.Equal(t, persistence.JobProcessing, s.job.Status, "nor the job's")
	require.True(t, s.active)
	require.Equal(t, 1, s.waiting, "the open target waits for its account")
	require.Equal(t, 1, s.attempts, "with its attempt record")
	require.Zero(t, s.published)

	w.pub.Resume()
	// The account, told to take the target again, resolves its call and reports the outcome (the
	// resumed account's own resolution may report first: whichever report the job takes, the post
	// takes the outcome of the job as stored).
	w.report(j, 1, true, true, "second")
	var want string
	require.Eventually(t, func() bool {
		s := w.read(p, j)
		if s.job.Status != persistence.JobCompleted {
			return false
		}
		want = outcomeOf(s.job)
		require.Equal(t, want, s.post.Status, "the job is never stored final without its post's outcome")
		return true
	}, 10*time.Second, time.Millisecond)
	s = w.read(p, j)
	require.Equal(t, persistence.JobCompleted, s.job.Status)
	require.False(t, s.active)
	require.Zero(t, s.waiting)
	require.Zero(t, s.attempts)
	require.Equal(t, 1, s.published)
	require.Equal(t, 1, s.counted)

	// A crash after the commit: nothing is left to hand on.
	require.NoError(t, w.store.Close())
	w.open()
	require.NoError(t, w.store.View(func(tx *persistence.Tx) error {
		require.Empty(t, tx.FinishedActiveJobs("", 10), "no finished job waits for its post")
		return nil
	}))
	w.pub.Resume()
	got, err := actors.Ask[*job.Reply](context.Background(), w.pub.Jobs.To(j.TrackingID), &job.Get{Scope: w.user})
	require.NoError(t, err)
	require.True(t, got.Job.PostSynced)
	s = w.read(p, j)
	require.Equal(t, want, s.post.Status)
	require.Equal(t, 1, s.published, "the outcome announced once")
	require.Equal(t, 1, s.counted)
}

// Reports a job has taken when it is stopped (a shutdown) are stored before it stops, even when
// the stop reached its mailbox before the job's own flush: a clean stop loses no outcome.
func TestReportsPendingAtAStopAreStored(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p, j := w.publishing(2)
	release := w.holdCommits()
	w.report(j, 0, false, false, "uploading")
	w.queued(1)
	w.report(j, 0, true, true, "first")
	w.report(j, 1, true, true, "second")
	// The stop waits in the job's mailbox behind the two reports, while the job's write of the
	// first waits for the committer.
	depth := func() float64 {
		return testkit.Gathered(t, w.reg, "herald_actor_mailbox_depth", "actor_kind", job.KindName)
	}
	before := depth()
	stopped := make(chan error, 1)
	go func() { stopped <- w.pub.Jobs.Stop(context.Background()) }()
	require.Eventually(t, func() bool { return depth() > before }, 10*time.Second, time.Millisecond)
	release()
	require.NoError(t, <-stopped)
	s := w.read(p, j)
	require.Equal(t, []string{"uploading", "first", "second"}, s.timeline)
	require.Equal(t, persistence.JobCompleted, s.job.Status)
	require.Equal(t, persistence.PostPublished, s.post.Status)
}

// outcomeOf is the post status a completed job's targets make: published when every target was,
// partial when some were.
func outcomeOf(j *persistence.Job) string {
	for _, tg := range j.Targets {
		if tg.Phase != persistence.PhaseSuccess {
			return persistence.PostPartial
		}
	}
	return persistence.PostPublished
}
