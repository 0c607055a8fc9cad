package job_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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

// open opens a store in a temporary directory with opts, and an actor system, both closed when
// the test ends.
func open(t *testing.T, opts persistence.Options) (*persistence.Store, *actors.System) {
	t.Helper()
	store, err := storetest.Open(t, t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	return store, sys
}

// Reports whose commit fails are kept, in order, and recorded once the store writes again; the
// job stays alive for them (its idle timeout is far shorter than the retries), finishes once, and
// its account's attempt records and its targets' waiting entries go with the outcomes.
func TestReportsTheStoreCouldNotTakeAreRecordedInOrder(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	store, sys := open(t, persistence.Options{Faults: faults})
	finished := make(chan *persistence.Job, 4)
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: 20 * time.Millisecond,
		Log:     slog.New(slog.DiscardHandler),
		Handoff: finishing(finished)}))

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
	waiting := func() (n int) {
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			for _, jt := range j.Targets {
				if tx.IsWaiting(persistence.Waiting{AccountID: jt.AccountID, JobID: j.TrackingID, Target: jt.Target}) {
					n++
				}
			}
			return nil
		}))
		return n
	}
	require.Equal(t, 2, waiting(), "the new job's targets wait for their accounts")

	// The networks answered; the store cannot record it.
	faults.FailCommits(syscall.ENOSPC)
	bsky, li := j.Targets[0].AccountID, j.Targets[1].AccountID
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, AccountID: bsky, Message: "publishing to bluesky"})
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, AccountID: bsky, Final: true, Success: true, Message: "published to bluesky",
		Publication: platforms.Publication{ID: "bsky-1", URL: "https://bsky.app/x"}})
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 1, AccountID: li, Final: true, Message: "linkedin: refused"})
	deadline := time.Now().Add(10 * time.Second)
	for faults.Injected() < 4 {
		require.True(t, time.Now().Before(deadline), "the job retries its reports")
		time.Sleep(5 * time.Millisecond)
	}
	r, err := actors.Ask[*job.Reply](ctx, dir.To(j.TrackingID), &job.Get{Scope: user})
	require.NoError(t, err)
	require.Equal(t, persistence.JobQueued, r.Job.Status, "nothing recorded, nothing applied")
	require.Empty(t, finished)
	require.Equal(t, 2, waiting())

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
	require.Equal(t, 0, waiting(), "no target waits any more")

	// An outcome reported again (an account that took the target again) changes nothing.
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 1, AccountID: li, Final: true, Success: true, Message: "published"})
	r, err = actors.Ask[*job.Reply](ctx, dir.To(j.TrackingID), &job.Get{Scope: user})
	require.NoError(t, err)
	require.Equal(t, persistence.PhaseFailed, r.Job.Targets[1].Phase)
}

// A finished job whose post had not taken the outcome when Herald stopped hands it to the post
// when started again; a job whose targets wait for their accounts has nothing to do at its start,
// and a report activates it from the store.
func TestStartHandsAFinishedJobToItsPost(t *testing.T) {
	t.Parallel()
	store, sys := open(t, persistence.Options{})
	finished := make(chan *persistence.Job, 4)
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: time.Minute,
		Log:     slog.New(slog.DiscardHandler),
		Handoff: finishing(finished)}))
	user := uuid.NewString()
	newJob := func(phase string) *persistence.Job {
		j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: user, Status: persistence.JobQueued, CreatedAt: time.Now().UTC(),
			Targets: []persistence.JobTarget{{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading}}}
		require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
		if phase != persistence.PhaseUploading {
			j = j.Clone()
			j.Targets[0].Phase, j.Status = phase, persistence.JobFailed
			require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
		}
		return j
	}
	done, open := newJob(persistence.PhaseFailed), newJob(persistence.PhaseUploading)
	dir.Send(done.TrackingID, &job.Start{})
	dir.Send(open.TrackingID, &job.Start{})
	select {
	case j := <-finished:
		require.Equal(t, done.TrackingID, j.TrackingID)
	case <-time.After(10 * time.Second):
		t.Fatal("the finished job was not handed to its post")
	}
	dir.Send(open.TrackingID, &account.Report{JobID: open.TrackingID, Target: 0, AccountID: open.Targets[0].AccountID, Final: true, Success: true, Message: "published"})
	select {
	case j := <-finished:
		require.Equal(t, open.TrackingID, j.TrackingID)
		require.Equal(t, persistence.JobCompleted, j.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("the open job did not finish on its report")
	}
}

// A finished job handed to its post is handed to it again at the next Start while the post has
// not answered (its Finish, or the answer, was lost with a node that died); once the post took
// it, a Start hands nothing.
func TestStartHandsTheOutcomeAgainWhileThePostHasNotTakenIt(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	finished := make(chan *persistence.Job, 4)
	dir := jobDirectory(t, job.Deps{Store: store, Handoff: finishing(finished)})
	j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.NewString(),
		Status: persistence.JobQueued, CreatedAt: time.Now().UTC(),
		Targets: []persistence.JobTarget{{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading}}}
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, AccountID: j.Targets[0].AccountID, Final: true, Success: true, Message: "published"})
	next := func(what string) {
		t.Helper()
		select {
		case got := <-finished:
			require.Equal(t, j.TrackingID, got.TrackingID, what)
			require.Equal(t, persistence.JobCompleted, got.Status, what)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the job was not handed to its post", what)
		}
	}
	next("the job's last report")
	// The post never answered: a resume's Start hands the outcome again, and again.
	dir.Send(j.TrackingID, &job.Start{})
	next("the first Start")
	dir.Send(j.TrackingID, &job.Start{})
	next("the second Start")
	// The post took it: nothing more.
	dir.Send(j.TrackingID, &job.PostSynced{Stored: false})
	dir.Send(j.TrackingID, &job.Start{})
	_, err := actors.Ask[*job.Flushed](context.Background(), dir.To(j.TrackingID), &job.Flush{})
	require.NoError(t, err)
	select {
	case got := <-finished:
		t.Fatalf("handed again after the post took it: %+v", got)
	case <-time.After(200 * time.Millisecond):
	}
}

// A Flush carries the outcomes an account handing its shard off reported to the job: the job
// stores one it never received before it answers (the report itself may be held back while
// the job's shard moves), and takes one it already has as a no-op.
func TestAFlushStoresTheReportsItCarries(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	finished := make(chan *persistence.Job, 4)
	dir := jobDirectory(t, job.Deps{Store: store, Handoff: finishing(finished)})
	j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.NewString(),
		Status: persistence.JobQueued, CreatedAt: time.Now().UTC(),
		Targets: []persistence.JobTarget{
			{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading},
			{Target: 1, Platform: "linkedin", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading},
		}}
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
	first := &account.Report{JobID: j.TrackingID, Target: 0, AccountID: j.Targets[0].AccountID, Final: true, Success: true, Message: "published"}
	dir.Send(j.TrackingID, first)
	// The second target's report never reached the job; the flush carries it, and the first again.
	second := &account.Report{JobID: j.TrackingID, Target: 1, AccountID: j.Targets[1].AccountID, Final: true, Success: true, Message: "published"}
	_, err := actors.Ask[*job.Flushed](context.Background(), dir.To(j.TrackingID), &job.Flush{Reports: []*account.Report{first, second}})
	require.NoError(t, err)
	require.NoError(t, store.View(func(tx *persistence.Tx) error {
		got, err := tx.Job(j.TrackingID)
		require.NoError(t, err)
		require.Equal(t, persistence.JobCompleted, got.Status, "both outcomes stored before the flush answered")
		return nil
	}))
	select {
	case got := <-finished:
		require.Equal(t, persistence.JobCompleted, got.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not handed to its post")
	}
}

// A Flush is answered Flushed only once its reports are stored: a job whose shard moved answers
// persistence.ErrFenced (the hand-off sends the flush to the new owner), one whose store cannot
// commit answers the commit's error, so that a hand-off never takes an unstored outcome for a
// stored one.
func TestAFlushTheJobCouldNotStoreIsAnsweredWithItsError(t *testing.T) {
	t.Parallel()
	newJob := func(store *persistence.Store) (*persistence.Job, *account.Report) {
		j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.NewString(),
			Status: persistence.JobQueued, CreatedAt: time.Now().UTC(),
			Targets: []persistence.JobTarget{{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading}}}
		require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
		return j, &account.Report{JobID: j.TrackingID, Target: 0, AccountID: j.Targets[0].AccountID, Final: true, Success: true, Message: "published"}
	}
	stillWaiting := func(store *persistence.Store, j *persistence.Job) {
		t.Helper()
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			got, err := tx.Job(j.TrackingID)
			require.NoError(t, err)
			require.Equal(t, persistence.JobQueued, got.Status, "nothing stored")
			return nil
		}))
	}
	t.Run("fenced", func(t *testing.T) {
		t.Parallel()
		store := openStore(t)
		dir := jobDirectory(t, job.Deps{Store: store, Fence: notHeld{}, Handoff: finishing(make(chan *persistence.Job, 1))})
		j, rep := newJob(store)
		_, err := actors.Ask[*job.Flushed](context.Background(), dir.To(j.TrackingID), &job.Flush{Reports: []*account.Report{rep}})
		require.ErrorIs(t, err, persistence.ErrFenced)
		stillWaiting(store, j)
	})
	t.Run("store failing", func(t *testing.T) {
		t.Parallel()
		faults := &persistence.Faults{}
		store, err := persistence.Open(t.TempDir(), persistence.Options{Faults: faults})
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		dir := jobDirectory(t, job.Deps{Store: store, Handoff: finishing(make(chan *persistence.Job, 1))})
		j, rep := newJob(store)
		faults.FailCommits(syscall.EIO)
		_, err = actors.Ask[*job.Flushed](context.Background(), dir.To(j.TrackingID), &job.Flush{Reports: []*account.Report{rep}})
		require.ErrorIs(t, err, persistence.ErrWriteFailed)
		stillWaiting(store, j)
		// Once the store writes again, the retry stores the report and a flush is answered.
		faults.ClearCommits()
		require.Eventually(t, func() bool {
			_, err := actors.Ask[*job.Flushed](context.Background(), dir.To(j.TrackingID), &job.Flush{})
			return err == nil
		}, 10*time.Second, 20*time.Millisecond)
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			got, err := tx.Job(j.TrackingID)
			require.NoError(t, err)
			require.Equal(t, persistence.JobCompleted, got.Status)
			return nil
		}))
	})
}

// openStore opens a store in the test's directory on the test's backend, closed with the test.
func openStore(t *testing.T) *persistence.Store {
	t.Helper()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// jobDirectory runs the jobs of d in an actor system of their own, shut down with the test, with
// a minute's idle time-out and a silent log.
func jobDirectory(t *testing.T, d job.Deps) *actors.Directory {
	t.Helper()
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	d.IdleTimeout, d.Log = time.Minute, slog.New(slog.DiscardHandler)
	return actors.NewDirectory(sys, job.Kind(d))
}

// notHeld is the fence of a node that does not hold the job's shard: every write is fenced.
type notHeld struct{}

func (notHeld) Lease(string) (persistence.Lease, bool) { return persistence.Lease{}, false }
func (notHeld) Trusted(string) bool                    { return false }
func (notHeld) Finishing(string) bool                  { return false }
func (notHeld) NotBefore(string) time.Time             { return time.Time{} }
func (notHeld) Fenced()                                {}

// finishing is a job directory's hand-off in these tests: the final jobs, on a channel.
type finishing chan *persistence.Job

func (finishing) Settle(*persistence.Job, time.Time) job.Settlement { return nil }
func (f finishing) Finish(j *persistence.Job)                       { f <- j }
func (finishing) Finished(*persistence.Job, time.Duration)          {}

// A job kept as its post committed it is what its actor activates with while the store holds it
// as it was stored; once the job changed (its actor wrote it since, here or on another node),
// the kept one is stale and the stored job is read.
func TestAJobKeptAsCommittedIsUsedOnlyWhileStoredAsItWas(t *testing.T) {
	t.Parallel()
	store, sys := open(t, persistence.Options{})
	user := uuid.NewString()
	j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: user,
		Status: persistence.JobQueued, CreatedAt: time.Now().UTC(),
		Targets: []persistence.JobTarget{{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading, Message: "queued"}}}
	raw, err := persistence.Encode(j)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutJobEncoded(j, raw) }))
	asked := make(chan string, 8)
	// The kept job carries a message its stored bytes do not: only a job taken from the kept
	// one says it.
	kept := j.Clone()
	kept.Targets[0].Message = "kept"
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: 20 * time.Millisecond,
		Log: slog.New(slog.DiscardHandler),
		Kept: func(id string) (*persistence.Job, []byte) {
			asked <- id
			return kept, raw
		}}))
	get := func() *persistence.Job {
		t.Helper()
		r, err := actors.Ask[*job.Reply](ctx, dir.To(j.TrackingID), &job.Get{Scope: user})
		require.NoError(t, err)
		return r.Job
	}
	// The kept job is shared with the request that created it, which reads it meanwhile: the
	// activation must not write to it (the race detector tells).
	stop, reading := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(reading)
		for {
			select {
			case <-stop:
				return
			default:
				_ = kept.PostSynced
				_ = kept.Status
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	require.Equal(t, "kept", get().Targets[0].Message, "stored as it was: the kept job")
	close(stop)
	<-reading
	require.Equal(t, j.TrackingID, <-asked)
	require.Eventually(t, func() bool { return dir.Live() == 0 }, 5*time.Second, 5*time.Millisecond)

	// The job changes in the store: the kept one is stale.
	changed := j.Clone()
	changed.Status, changed.Seq, changed.Targets[0].Message = persistence.JobProcessing, 1, "calling"
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutJob(changed) }))
	got := get()
	require.Equal(t, "calling", got.Targets[0].Message, "the stored job, not the stale kept one")
	require.Equal(t, persistence.JobProcessing, got.Status)
	require.EqualValues(t, 1, got.Seq)
}

// A report activates its job on the job as kept, without reading the store, and the write that
// stores the report holds only while the store holds the job as it was kept: a job changed since
// (by a write here or on another node) is read and the report stored on it, the report waiting
// while the store cannot be read, and a job no longer stored is not written again from what was
// kept. What the actor stores is kept in turn.
func TestAReportActivatesAJobOnItsKeptStateWhichItsWriteChecks(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	store, sys := open(t, persistence.Options{Faults: faults})
	user := uuid.NewString()
	ctx := context.Background()
	type keptJob struct {
		j   *persistence.Job
		raw []byte
	}
	var mu sync.Mutex
	kept := map[string]keptJob{}
	handed := make(chan keptJob, 8)
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: time.Minute, Log: slog.New(slog.DiscardHandler),
		Kept: func(id string) (*persistence.Job, []byte) {
			mu.Lock()
			defer mu.Unlock()
			return kept[id].j, kept[id].raw
		},
		Keep: func(j *persistence.Job, raw []byte) { handed <- keptJob{j, raw} },
	}))
	newJob := func() *persistence.Job {
		return &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: user,
			Status: persistence.JobQueued, CreatedAt: time.Now().UTC(), Targets: []persistence.JobTarget{
				{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading, Message: "queued"},
				{Target: 1, Platform: "linkedin", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading, Message: "queued"}}}
	}
	// keep keeps j as stored as raw, with a message on its second target that the bytes do not
	// carry: only a job built on the kept one says it.
	keep := func(j *persistence.Job, raw []byte) {
		k := j.Clone()
		k.Targets[1].Message = "kept"
		mu.Lock()
		kept[j.TrackingID] = keptJob{k, raw}
		mu.Unlock()
	}
	put := func(j *persistence.Job) []byte {
		raw, err := persistence.Encode(j)
		require.NoError(t, err)
		require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutJobEncoded(j, raw) }))
		return raw
	}
	report := func(j *persistence.Job) {
		dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, AccountID: j.Targets[0].AccountID, Final: true, Success: true,
			Message: "published", Publication: platforms.Publication{ID: "net-1", URL: "https://example.com/1"}})
	}
	stored := func(id string) *persistence.Job {
		var j *persistence.Job
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			var err error
			if j, err = tx.Job(id); errors.Is(err, persistence.ErrNotFound) {
				return nil
			}
			return err
		}))
		return j
	}
	reported := func(id string) *persistence.Job {
		t.Helper()
		var j *persistence.Job
		require.Eventually(t, func() bool {
			j = stored(id)
			return j != nil && j.Targets[0].Phase == persistence.PhaseSuccess
		}, 10*time.Second, time.Millisecond)
		return j
	}

	// Stored as kept: the write holds, built on the kept job. The store refuses every read
	// meanwhile: the activation reads nothing.
	held := newJob()
	keep(held, put(held))
	faults.FailViews(errors.New("no reads"))
	report(held)
	var k keptJob
	select {
	case k = <-handed:
	case <-time.After(10 * time.Second):
		t.Fatal("the report was not stored without reading the job")
	}
	faults.Clear()
	got := reported(held.TrackingID)
	require.Equal(t, "kept", got.Targets[1].Message, "built on the kept job, not on the one read")
	require.EqualValues(t, 1, got.Seq)
	require.Equal(t, got, k.j, "what the actor stored is handed on to be kept")
	require.NoError(t, store.View(func(tx *persistence.Tx) error {
		require.True(t, tx.JobStoredAs(held.TrackingID, k.raw), "with the bytes it was stored as")
		return nil
	}))

	// Changed since it was kept: refused, and stored again on the job as stored.
	changed := newJob()
	keep(changed, put(changed))
	since := changed.Clone()
	since.Status, since.Seq, since.Targets[1].Message = persistence.JobProcessing, 1, "calling"
	put(since)
	report(changed)
	got = reported(changed.TrackingID)
	require.Equal(t, "calling", got.Targets[1].Message, "built on the stored job")
	require.EqualValues(t, 2, got.Seq)
	require.Equal(t, persistence.JobProcessing, got.Status)
	require.Equal(t, got, (<-handed).j)

	// Changed since it was kept while the store cannot be read: the report is not dropped, and is
	// stored on the job as stored once the store can be read.
	unread := newJob()
	keep(unread, put(unread))
	since = unread.Clone()
	since.Status, since.Seq, since.Targets[1].Message = persistence.JobProcessing, 1, "calling"
	put(since)
	faults.FailViews(errors.New("no reads"))
	report(unread)
	_, err := actors.Ask[*job.Flushed](ctx, dir.To(unread.TrackingID), &job.Flush{})
	require.Error(t, err, "the report is still to be stored")
	faults.Clear()
	got = reported(unread.TrackingID)
	require.Equal(t, "calling", got.Targets[1].Message, "built on the stored job")
	require.EqualValues(t, 2, got.Seq)
	require.Equal(t, got, (<-handed).j)

	// No longer stored: nothing is written from what was kept.
	gone := newJob()
	raw, err := persistence.Encode(gone)
	require.NoError(t, err)
	keep(gone, raw)
	report(gone)
	_, err = actors.Ask[*job.Flushed](ctx, dir.To(gone.TrackingID), &job.Flush{})
	require.NoError(t, err)
	require.Nil(t, stored(gone.TrackingID))
	_, err = actors.Ask[*job.Reply](ctx, dir.To(gone.TrackingID), &job.Get{Scope: user})
	require.ErrorIs(t, err, job.ErrNotFound)
	select {
	case k := <-handed:
		t.Fatalf("a job no longer stored was kept: %+v", k.j)
	default:
	}
}

// changedPost is a hand-off whose post changed since it was kept: its part of the job's final
// transaction is refused (post.Outcome.Write), and the post is handed the job (Finish).
type changedPost chan *persistence.Job

func (changedPost) Settle(*persistence.Job, time.Time) job.Settlement { return refusedSettlement{} }
func (c changedPost) Finish(j *persistence.Job)                       { c <- j }
func (changedPost) Finished(*persistence.Job, time.Duration)          {}

type refusedSettlement struct{}

func (refusedSettlement) Write(*persistence.Tx) error { return persistence.ErrChanged }
func (refusedSettlement) Stored()                     { panic("a refused outcome was announced") }

// A final write whose post's part is refused because the post changed since it was kept stores
// the job alone, still to be settled, and hands it to the post's actor, which reads the post.
func TestAFinalWriteWhosePostChangedSinceItWasKeptHandsTheOutcomeToThePost(t *testing.T) {
	t.Parallel()
	store, sys := open(t, persistence.Options{})
	finished := make(chan *persistence.Job, 1)
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: time.Minute, Log: slog.New(slog.DiscardHandler),
		Handoff: changedPost(finished)}))
	j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.NewString(),
		Status: persistence.JobQueued, CreatedAt: time.Now().UTC(),
		Targets: []persistence.JobTarget{{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading}}}
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, AccountID: j.Targets[0].AccountID, Final: true, Success: true, Message: "published"})
	select {
	case got := <-finished:
		require.Equal(t, persistence.JobCompleted, got.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not handed to its post")
	}
	require.NoError(t, store.View(func(tx *persistence.Tx) error {
		got, err := tx.Job(j.TrackingID)
		require.NoError(t, err)
		require.Equal(t, persistence.JobCompleted, got.Status, "the job stored alone")
		require.False(t, got.PostSynced)
		require.True(t, tx.JobActive(j.TrackingID), "to be settled by its post")
		return nil
	}))
}

// A report that activates a job the store cannot read is not taken for a gone job's: it waits,
// the job's read answers its error meanwhile, and the report is stored once the store can be
// read.
func TestAReportWaitsWhileItsJobCannotBeRead(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	store, sys := open(t, persistence.Options{Faults: faults})
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: time.Minute, Log: slog.New(slog.DiscardHandler)}))
	user := uuid.NewString()
	j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: user,
		Status: persistence.JobQueued, CreatedAt: time.Now().UTC(), Targets: []persistence.JobTarget{
			{Target: 0, Platform: "bluesky", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading, Message: "queued"},
			{Target: 1, Platform: "linkedin", AccountID: uuid.NewString(), Phase: persistence.PhaseUploading, Message: "queued"}}}
	ctx := context.Background()
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutJob(j) }))
	faults.FailViews(errors.New("no reads"))
	dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: 0, AccountID: j.Targets[0].AccountID, Final: true, Success: true,
		Message: "published", Publication: platforms.Publication{ID: "net-1", URL: "https://example.com/1"}})
	_, err := actors.Ask[*job.Flushed](ctx, dir.To(j.TrackingID), &job.Flush{})
	require.Error(t, err, "the report is still to be stored")
	_, err = actors.Ask[*job.Reply](ctx, dir.To(j.TrackingID), &job.Get{Scope: user})
	require.Error(t, err)
	require.NotErrorIs(t, err, job.ErrNotFound, "a job that could not be read is not a job that is not there")
	faults.Clear()
	require.Eventually(t, func() bool {
		var got *persistence.Job
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			var err error
			got, err = tx.Job(j.TrackingID)
			return err
		}))
		return got.Targets[0].Phase == persistence.PhaseSuccess
	}, 10*time.Second, 5*time.Millisecond, "the report was stored once the job could be read")
	require.NoError(t, store.View(func(tx *persistence.Tx) error {
		require.True(t, tx.IsWaiting(persistence.Waiting{AccountID: j.Targets[1].AccountID, JobID: j.TrackingID, Target: 1}))
		return nil
	}))
}
