package job_test

import (
	"context"
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

// report is one account report in a table: target, whether it is the outcome, and whether it
// succeeded.
type report struct {
	target         int
	final, success bool
}

// The job's state machine, table-driven: a job of three targets, given reports in order, is
// queued until its first report, processing until every target's outcome is known, then
// completed when at least one target succeeded and failed when none did; a target's phase follows
// its latest report, a second outcome of a target changes nothing, and the post is handed the job
// exactly once, when it is final.
func TestJobStateMachine(t *testing.T) { //nolint:tparallel // the cases share one job directory and read the final jobs it hands on, in turn
	t.Parallel()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	finished := make(chan *persistence.Job, 64)
	dir := actors.NewDirectory(sys, job.Kind(job.Deps{Store: store, IdleTimeout: time.Minute, Handoff: finishing(finished)}))

	ok, fail, step := func(i int) report { return report{i, true, true} }, func(i int) report { return report{i, true, false} },
		func(i int) report { return report{i, false, false} }
	u, s, f := persistence.PhaseUploading, persistence.PhaseSuccess, persistence.PhaseFailed
	cases := []struct {
		name    string
		reports []report
		status  string
		phases  [3]string
	}{
		{"no report", nil, persistence.JobQueued, [3]string{u, u, u}},
		{"a step", []report{step(0)}, persistence.JobProcessing, [3]string{u, u, u}},
		{"one outcome", []report{ok(1)}, persistence.JobProcessing, [3]string{u, s, u}},
		{"two of three", []report{ok(0), fail(2)}, persistence.JobProcessing, [3]string{s, u, f}},
		{"all succeeded", []report{step(0), ok(0), ok(1), ok(2)}, persistence.JobCompleted, [3]string{s, s, s}},
		{"some failed", []report{fail(0), ok(1), fail(2)}, persistence.JobCompleted, [3]string{f, s, f}},
		{"all failed", []report{fail(0), fail(1), fail(2)}, persistence.JobFailed, [3]string{f, f, f}},
		{"an outcome reported twice", []report{fail(0), ok(0), ok(1), ok(2)}, persistence.JobCompleted, [3]string{f, s, s}},
		{"a step after the outcome", []report{ok(0), step(0)}, persistence.JobProcessing, [3]string{s, u, u}},
	}
	user := uuid.NewString()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := &persistence.Job{TrackingID: uuid.Must(uuid.NewV7()).String(), PostID: uuid.Must(uuid.NewV7()).String(), UserID: user,
				Status: persistence.JobQueued, CreatedAt: time.Now().UTC()}
			for i, pl := range []string{"bluesky", "twitter_x", "linkedin"} {
				j.Targets = append(j.Targets, persistence.JobTarget{Target: i, Platform: pl, AccountID: uuid.NewString(), Phase: u, Message: "queued"})
			}
			require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJob(j) }))
			for _, r := range c.reports {
				dir.Send(j.TrackingID, &account.Report{JobID: j.TrackingID, Target: r.target, AccountID: j.Targets[r.target].AccountID,
					Final: r.final, Success: r.success, Message: "m", Publication: platforms.Publication{ID: "net-1"}})
			}
			got, err := actors.Ask[*job.Reply](context.Background(), dir.To(j.TrackingID), &job.Get{Scope: user})
			require.NoError(t, err)
			require.Equal(t, c.status, got.Job.Status)
			for i, want := range c.phases {
				require.Equal(t, want, got.Job.Targets[i].Phase, "target %d", i)
			}
			final := c.status == persistence.JobCompleted || c.status == persistence.JobFailed
			require.Equal(t, final, got.Job.CompletedAt != nil)
			var stored *persistence.Job
			require.NoError(t, store.View(func(tx *persistence.Tx) error {
				var err error
				stored, err = tx.Job(j.TrackingID)
				return err
			}))
			require.Equal(t, got.Job.Status, stored.Status, "what the job answers is what is stored")
			if final {
				select {
				case h := <-finished:
					require.Equal(t, j.TrackingID, h.TrackingID)
					require.Equal(t, c.status, h.Status)
				case <-time.After(5 * time.Second):
					t.Fatal("the final job was not handed to its post")
				}
			}
			select {
			case h := <-finished:
				t.Fatalf("handed to its post again (or before it was final): %+v", h)
			case <-time.After(20 * time.Millisecond):
			}
			// Someone else's read is refused.
			_, err = actors.Ask[*job.Reply](context.Background(), dir.To(j.TrackingID), &job.Get{Scope: uuid.NewString()})
			require.Error(t, err)
		})
	}
}
