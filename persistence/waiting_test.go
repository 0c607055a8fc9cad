package persistence

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

func newV7() string { return uuid.Must(uuid.NewV7()).String() }

// waitingJob is a queued job of one post to the given accounts, one target each.
func waitingJob(accounts ...string) *Job {
	j := &Job{TrackingID: newV7(), PostID: newV7(), UserID: newV7(), Status: JobQueued, CreatedAt: time.Now().UTC()}
	for i, a := range accounts {
		j.Targets = append(j.Targets, JobTarget{Target: i, Platform: "bluesky", AccountID: a, Phase: PhaseUploading, Message: "queued"})
	}
	return j
}

func waitingOfAccount(t *testing.T, s *Store, account string, limit int, skip func(string) bool) ([]Waiting, bool) {
	t.Helper()
	var out []Waiting
	var more bool
	require.NoError(t, s.View(func(tx *Tx) error { out, more = tx.WaitingFor(account, limit, 0, skip); return nil }))
	return out, more
}

// A new job's targets wait for their accounts, in the order of the jobs' creation; each leaves
// in the transaction that stores its outcome, and all of them once the post took the job.
func TestJobTargetsWaitForTheirAccountsUntilTheirOutcome(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, b := newV7(), newV7()
		var jobs []*Job
		for range 5 {
			j := waitingJob(a, b)
			jobs = append(jobs, j)
			require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutJob(j) }))
		}
		got, more := waitingOfAccount(t, s, a, 10, nil)
		require.False(t, more)
		require.Len(t, got, 5)
		for i, w := range got {
			require.Equal(t, Waiting{AccountID: a, JobID: jobs[i].TrackingID, Target: 0, PostID: jobs[i].PostID}, w)
		}
		// A page, skipping what the account holds already.
		got, more = waitingOfAccount(t, s, b, 2, func(key string) bool {
			return key == (Waiting{AccountID: b, JobID: jobs[0].TrackingID, Target: 1}).Key()
		})
		require.True(t, more)
		require.Equal(t, []Waiting{{b, jobs[1].TrackingID, 1, jobs[1].PostID}, {b, jobs[2].TrackingID, 1, jobs[2].PostID}}, got)

		// The first job's target on a succeeds: it no longer waits; its target on b still does.
		j := jobs[0].Clone()
		j.Status, j.Targets[0].Phase = JobProcessing, PhaseSuccess
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutJob(j) }))
		got, _ = waitingOfAccount(t, s, a, 10, nil)
		require.Len(t, got, 4)
		require.Equal(t, jobs[1].TrackingID, got[0].JobID)
		require.NoError(t, s.View(func(tx *Tx) error {
			require.False(t, tx.IsWaiting(Waiting{AccountID: a, JobID: jobs[0].TrackingID, Target: 0}))
			require.True(t, tx.IsWaiting(Waiting{AccountID: b, JobID: jobs[0].TrackingID, Target: 1}))
			require.Equal(t, map[string]int{a: 4, b: 5}, tx.WaitingCounts())
			require.Empty(t, tx.FinishedActiveJobs("", 10))
			return nil
		}))

		// Its last target fails: the job is finished, flagged for a start-up, and waits no more.
		j = j.Clone()
		j.Status, j.Targets[1].Phase = JobCompleted, PhaseFailed
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutJob(j) }))
		require.NoError(t, s.View(func(tx *Tx) error {
			require.False(t, tx.IsWaiting(Waiting{AccountID: b, JobID: jobs[0].TrackingID, Target: 1}))
			require.Equal(t, []string{j.TrackingID}, tx.FinishedActiveJobs("", 10))
			require.Empty(t, tx.FinishedActiveJobs(j.TrackingID, 10))
			require.True(t, tx.JobActive(j.TrackingID))
			return nil
		}))
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.SettleJob(j.TrackingID) }))
		require.NoError(t, s.View(func(tx *Tx) error {
			require.Empty(t, tx.FinishedActiveJobs("", 10))
			return nil
		}))

		// A job taken by its post while targets were open (a damaged job, say) waits no more.
		j = jobs[1].Clone()
		j.PostSynced = true
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutJob(j) }))
		got, _ = waitingOfAccount(t, s, b, 10, nil)
		require.Len(t, got, 3)
		require.Equal(t, jobs[2].TrackingID, got[0].JobID)

		// An outcome stored elsewhere (StopWaiting) ends the wait too.
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.StopWaiting(got[0]) }))
		got, _ = waitingOfAccount(t, s, b, 10, nil)
		require.Len(t, got, 2)
	})
}

// A store of layout 4, written before jobs_waiting, gets the open targets of its active jobs
// indexed, and its finished active jobs flagged, when opened: on bbolt and on PostgreSQL.
func TestLayout4StoreGetsItsWaitingTargetsIndexed(t *testing.T) {
	t.Parallel()
	for _, st := range []struct {
		name string
		open func(t *testing.T) (*Store, func() *Store)
	}{
		{"bbolt", func(t *testing.T) (*Store, func() *Store) {
			dir := t.TempDir()
			reopen := func() *Store {
				s, err := Open(dir, Options{})
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			return reopen(), reopen
		}},
		{"postgres", func(t *testing.T) (*Store, func() *Store) {
			url := pgtest.URL(t)
			reopen := func() *Store {
				s, err := OpenPostgres(context.Background(), url, Options{})
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			return reopen(), reopen
		}},
	} {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, reopen := st.open(t)
			a := newV7()
			open, done, synced := waitingJob(a, a), waitingJob(a), waitingJob(a)
			open.Targets[0].Phase, open.Status = PhaseSuccess, JobProcessing
			done.Targets[0].Phase, done.Status = PhaseFailed, JobFailed
			synced.Targets[0].Phase, synced.Status, synced.PostSynced = PhaseSuccess, JobCompleted, true
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				for _, j := range []*Job{open, done, synced} {
					raw, err := Encode(j)
					if err != nil {
						return err
					}
					// As layout 4 wrote them: the record and its active entry, nothing else.
					if err := tx.kv.Bucket(bJobs).Put(mustID(j.TrackingID), raw); err != nil {
						return err
					}
					if !j.PostSynced {
						if err := tx.kv.Bucket(bJobsActive).Put(mustID(j.TrackingID), nil); err != nil {
							return err
						}
					}
				}
				return tx.kv.Bucket(bMeta).Put([]byte("schema"), u64(4))
			}))
			got, _ := waitingOfAccount(t, s, a, 10, nil)
			require.Empty(t, got)
			require.NoError(t, s.Close())

			s = reopen()
			got, _ = waitingOfAccount(t, s, a, 10, nil)
			require.Equal(t, []Waiting{{a, open.TrackingID, 1, open.PostID}}, got)
			require.NoError(t, s.View(func(tx *Tx) error {
				require.Equal(t, []string{done.TrackingID}, tx.FinishedActiveJobs("", 10))
				require.Equal(t, uint64(schemaVersion), schemaOf(tx.kv))
				n, ok := activeJobsCount(tx.kv)
				require.True(t, ok, "the active jobs are counted")
				require.Equal(t, 2, n)
				return nil
			}))
		})
	}
}

// The count of active jobs that the job gauges read is kept by every change of jobs_active: a
// new job, a phase change, a finished job, its post taking the outcome (SettleJob or a job stored
// post-synced), and a job stored finished from the start; it always equals the index's entries.
func TestActiveJobsAreCountedWithTheirIndex(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		check := func(want int) {
			t.Helper()
			require.NoError(t, s.View(func(tx *Tx) error {
				n, _ := tx.ActiveJobStats()
				require.Equal(t, want, n)
				walked := 0
				require.NoError(t, forEach(tx.kv.Bucket(bJobsActive), func(_, _ []byte) error { walked++; return nil }))
				require.Equal(t, walked, n, "the count is the index's")
				return nil
			}))
		}
		put := func(j *Job) { require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutJob(j) })) }
		check(0)
		a := newV7()
		j1, j2, j3 := waitingJob(a), waitingJob(a), waitingJob(a)
		put(j1)
		put(j2)
		put(j2) // stored again unchanged
		check(2)
		j1 = j1.Clone()
		j1.Status, j1.Targets[0].Phase = JobProcessing, PhaseUploading
		put(j1) // a phase change
		check(2)
		j1 = j1.Clone()
		j1.Status, j1.Targets[0].Phase = JobCompleted, PhaseSuccess
		put(j1) // finished, not yet taken by its post
		check(2)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.SettleJob(j1.TrackingID) }))
		check(1)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.SettleJob(j1.TrackingID) })) // again: no entry
		check(1)
		j3.Status, j3.Targets[0].Phase = JobFailed, PhaseFailed
		put(j3) // stored finished from the start
		check(2)
		j2 = j2.Clone()
		j2.Status, j2.Targets[0].Phase, j2.PostSynced = JobCompleted, PhaseSuccess, true
		put(j2) // stored post-synced
		put(j2)
		check(1)
		// A failed write changes no count.
		require.Error(t, s.Update(ctx, func(tx *Tx) error {
			if err := tx.PutJob(waitingJob(a)); err != nil {
				return err
			}
			return errors.New("the write fails after the job was stored")
		}))
		check(1)
	})
}

// A job kept by the reader that its writer handed it is the one read while the store holds the
// bytes it was stored as, and a job or post is stored as its kept bytes until anything changed
// it; then the stored record is read.
func TestJobAndPostStoredAsTheyWereKept(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		j := waitingJob(newV7())
		jobRaw, err := Encode(j)
		require.NoError(t, err)
		now := time.Now().UTC()
		p := &Post{ID: j.PostID, UserID: j.UserID, Content: "kept", Status: PostPublishing, CreatedAt: now, UpdatedAt: now, Version: 1,
			Targets: []Target{{AccountID: j.Targets[0].AccountID, Platform: "bluesky", Status: TargetPending}}}
		postRaw, err := Encode(p)
		require.NoError(t, err)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			if err := tx.PutJobEncoded(j, jobRaw); err != nil {
				return err
			}
			return tx.PutPost(p, postRaw)
		}))
		read := func(kj *Job, jr []byte) (gj *Job, jobHeld, postHeld bool) {
			t.Helper()
			require.NoError(t, s.View(func(tx *Tx) error {
				var err error
				gj, err = tx.JobKept(j.TrackingID, kj, jr)
				jobHeld, postHeld = tx.JobStoredAs(j.TrackingID, jobRaw), tx.PostStoredAs(p.ID, postRaw)
				return err
			}))
			return gj, jobHeld, postHeld
		}
		gj, jobHeld, postHeld := read(j, jobRaw)
		require.Same(t, j, gj, "the kept job, not decoded")
		require.True(t, jobHeld)
		require.True(t, postHeld)
		gj, _, _ = read(nil, nil)
		require.Equal(t, j.TrackingID, gj.TrackingID)

		// Changed since: the kept ones are stale, and the stored ones are read.
		j2 := j.Clone()
		j2.Status, j2.Targets[0].Message, j2.Seq = JobProcessing, "calling", 1
		p2 := p.Clone()
		p2.Content, p2.Version = "changed", 2
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			if err := tx.PutJob(j2); err != nil {
				return err
			}
			return tx.PutPost(p2, nil)
		}))
		gj, jobHeld, postHeld = read(j, jobRaw)
		require.NotSame(t, j, gj)
		require.Equal(t, JobProcessing, gj.Status)
		require.EqualValues(t, 1, gj.Seq)
		require.False(t, jobHeld, "changed since it was kept")
		require.False(t, postHeld, "changed since it was kept")

		require.NoError(t, s.View(func(tx *Tx) error {
			_, err := tx.JobKept(newV7(), j, jobRaw)
			require.ErrorIs(t, err, ErrNotFound)
			require.False(t, tx.JobStoredAs(newV7(), jobRaw), "no such job")
			require.False(t, tx.PostStoredAs(newV7(), postRaw), "no such post")
			return nil
		}))
	})
}
