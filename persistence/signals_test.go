package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// putTestJob stores a job of one target through the group committer.
func putTestJob(t *testing.T, s *Store, id string, seq uint64) {
	t.Helper()
	j := &Job{TrackingID: id, PostID: uuid.NewString(), UserID: uuid.NewString(), Status: JobProcessing, Seq: seq,
		Targets: []JobTarget{{Target: 0, Platform: "x", AccountID: uuid.NewString(), Phase: PhaseUploading}}}
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.PutJob(j) }))
}

// woken reports whether wake fires within d.
func woken(wake <-chan struct{}, d time.Duration) bool {
	select {
	case <-wake:
		return true
	case <-time.After(d):
		return false
	}
}

// A commit that stores a job wakes the job's followers once it is durable, and only them; a
// campaign's followers are woken by its timeline.
func TestFollowWakesAfterCommit(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		job, other, camp := uuid.NewString(), uuid.NewString(), uuid.NewString()
		wake, stop := s.Follow(JobTopic(job))
		wakeOther, stopOther := s.Follow(JobTopic(other))
		defer stopOther()
		wakeCamp, stopCamp := s.Follow(CampaignTopic(camp))
		defer stopCamp()
		require.Equal(t, 3, s.Followers())

		putTestJob(t, s, job, 1)
		require.True(t, woken(wake, time.Second), "the job's follower was not woken by its commit")
		require.False(t, woken(wakeOther, 50*time.Millisecond), "another job's follower was woken")

		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
			return tx.AppendCampaignEvents(camp, []CampaignEvent{{PostID: uuid.NewString(), Phase: PhaseUploading}})
		}))
		require.True(t, woken(wakeCamp, time.Second), "the campaign's follower was not woken by its timeline")

		// A write the store refused wakes nobody.
		require.Error(t, s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.PutJob(&Job{TrackingID: job, PostID: uuid.NewString(), UserID: uuid.NewString()}); err != nil {
				return err
			}
			return ErrExists
		}))
		require.False(t, woken(wake, 50*time.Millisecond), "a refused write woke the job's follower")

		stop()
		stop() // twice is harmless
		require.Equal(t, 2, s.Followers())
	})
}

// A follower that begins following while a commit that touches its job is under way (the commit
// began when nobody followed anything, so it noted nothing) is woken once the commit is durable:
// it may have read the store before the commit, and would otherwise wait for a change already
// made.
func TestFollowingDuringACommitIsWokenByIt(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		if s.Shared() {
			t.Skip("a shared store notes every commit's topics")
		}
		job := uuid.NewString()
		in, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- s.Update(context.Background(), func(tx *Tx) error {
				close(in)
				<-release
				return tx.PutJob(&Job{TrackingID: job, PostID: uuid.NewString(), UserID: uuid.NewString(), Status: JobProcessing, Seq: 1,
					Targets: []JobTarget{{Target: 0, Platform: "x", AccountID: uuid.NewString(), Phase: PhaseUploading}}})
			})
		}()
		<-in // the commit is running, begun while nobody followed
		wake, stop := s.Follow(JobTopic(job))
		defer stop()
		close(release)
		require.NoError(t, <-done)
		require.True(t, woken(wake, time.Second), "a follower that began during the commit was not woken by it")
	})
}

// openShared opens a store of the database at url as one of several processes.
func openShared(t *testing.T, url string) *Store {
	t.Helper()
	s, err := OpenPostgres(context.Background(), url, Options{Shared: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	select {
	case <-s.pg.notify.connected:
	case <-time.After(10 * time.Second):
		t.Fatal("the shared store's listening connection did not connect")
	}
	return s
}

// Two processes on one database: a job stored through one wakes its follower in the other, a
// signal broadcast by one reaches the other's handlers, and after the other's listening connection
// is killed it catches up: what was notified while it was down is read again (every follower is
// woken, every handler called) once it listens again.
func TestSharedStoresNotifyEachOther(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := openShared(t, url), openShared(t, url)

	job := uuid.NewString()
	wake, stop := b.Follow(JobTopic(job))
	defer stop()
	auth := make(chan struct{}, 8)
	defer b.OnSignal(SignalAuth, func() { auth <- struct{}{} })()

	start := time.Now()
	putTestJob(t, a, job, 1)
	require.True(t, woken(wake, time.Second), "a job stored through A did not wake its follower on B")
	t.Logf("woken on B %s after A's commit began", time.Since(start))
	var seq uint64
	require.NoError(t, b.View(func(tx *Tx) error {
		j, err := tx.Job(job)
		if err == nil {
			seq = j.Seq
		}
		return err
	}))
	require.EqualValues(t, 1, seq, "B woken did not read A's commit")

	a.Broadcast(SignalAuth)
	require.True(t, woken(auth, time.Second), "a signal broadcast by A did not reach B's handler")

	// The outbox's dispatcher on B is woken by an event appended on A.
	outbox := make(chan struct{}, 8)
	b.Relay(OutboxTopic(), func() { outbox <- struct{}{} })
	require.NoError(t, a.Update(context.Background(), func(tx *Tx) error {
		return tx.AppendEvent(&Event{Type: "post.published", UserID: uuid.NewString(), CreatedAt: time.Now().UTC(), Data: []byte("{}")})
	}))
	require.True(t, woken(outbox, time.Second), "an event appended on A did not wake B's outbox relay")

	// B's listening connection is killed; A stores a change at once, whose notification may be
	// lost. B reconnects and its follower and handler are called all the same.
	pid := b.pg.notify.pid.Load()
	var killed bool
	require.NoError(t, a.pg.pool.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&killed))
	require.True(t, killed)
	putTestJob(t, a, job, 2)
	drain := func(ch <-chan struct{}) {
		for {
			select {
			case <-ch:
			default:
				return
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.pg.notify.pid.Load() == pid {
		require.True(t, time.Now().Before(deadline), "B's listening connection did not come back")
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, woken(wake, time.Second), "B's follower was not woken after its listener came back")
	require.True(t, woken(auth, time.Second), "B's handlers were not called after its listener came back")
	require.NoError(t, b.View(func(tx *Tx) error {
		j, err := tx.Job(job)
		if err == nil {
			seq = j.Seq
		}
		return err
	}))
	require.EqualValues(t, 2, seq)

	// And it hears A again.
	drain(wake)
	putTestJob(t, a, job, 3)
	require.True(t, woken(wake, time.Second), "B did not hear A after reconnecting")
}

// A store that is not shared notifies nothing and calls no handler: one process's signals stay
// in it (its callers clear their own caches).
func TestUnsharedStoreBroadcastsNothing(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		require.False(t, s.Shared())
		called := make(chan struct{}, 1)
		defer s.OnSignal(SignalAuth, func() { called <- struct{}{} })()
		s.Broadcast(SignalAuth)
		require.False(t, woken(called, 100*time.Millisecond))
	})
}
