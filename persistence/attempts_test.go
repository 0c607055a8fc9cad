package persistence

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An attempt is kept in its target's waiting entry: read with the entry, cleared without the
// entry leaving, gone with the entry when the outcome is stored, and never written for a target
// that does not wait (which would make it wait again): on each store, whose write of the record
// reads nothing.
func TestAnAttemptLivesInItsTargetsWaitingEntry(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, b := newV7(), newV7()
		j := waitingJob(a, b)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutJob(j) }))
		started := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
		att := &Attempt{JobID: j.TrackingID, Target: 0, AccountID: a, StartedAt: started, Step: 2,
			Done: []Step{{ID: "1", URL: "https://x.test/1"}, {ID: "2", Ref: "r"}}}
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAttempt(att, j.PostID) }))

		attemptOf := func(account string, target int) (*Attempt, error) {
			var got *Attempt
			var err error
			require.NoError(t, s.View(func(tx *Tx) error { got, err = tx.AttemptOf(account, j.TrackingID, target); return nil }))
			return got, err
		}
		got, err := attemptOf(a, 0)
		require.NoError(t, err)
		require.Equal(t, att, got)
		_, err = attemptOf(b, 1)
		require.ErrorIs(t, err, ErrNotFound, "the other target has none")
		ws, _ := waitingOfAccount(t, s, a, 10, nil)
		require.Equal(t, []Waiting{{AccountID: a, JobID: j.TrackingID, Target: 0, PostID: j.PostID, Attempt: att}}, ws,
			"the entry names its post and carries the attempt")

		// A target that does not wait gets no attempt, and no entry.
		other := newV7()
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			return tx.PutAttempt(&Attempt{JobID: j.TrackingID, Target: 5, AccountID: other, StartedAt: started}, j.PostID)
		}))
		ws, _ = waitingOfAccount(t, s, other, 10, nil)
		require.Empty(t, ws)

		// Cleared (a call that created nothing): the target still waits, its post still named.
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.ClearAttempt(a, j.TrackingID, 0, j.PostID) }))
		_, err = attemptOf(a, 0)
		require.ErrorIs(t, err, ErrNotFound)
		ws, _ = waitingOfAccount(t, s, a, 10, nil)
		require.Equal(t, []Waiting{{AccountID: a, JobID: j.TrackingID, Target: 0, PostID: j.PostID}}, ws)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.ClearAttempt(a, j.TrackingID, 0, j.PostID) }), "clearing twice changes nothing")

		// Recorded again, then the outcome stored: entry and attempt leave together, and the
		// target does not come back for a late attempt.
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAttempt(att, j.PostID) }))
		done := j.Clone()
		done.Targets[0].Phase, done.Status = PhaseSuccess, JobProcessing
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutJob(done) }))
		_, err = attemptOf(a, 0)
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAttempt(att, j.PostID) }))
		ws, _ = waitingOfAccount(t, s, a, 10, nil)
		require.Empty(t, ws)

		// In the transaction that creates a job, its attempt follows the new entry (a retry
		// resuming a target's chain): the entry holds it once committed.
		k := waitingJob(a)
		resumed := &Attempt{JobID: k.TrackingID, Target: 0, AccountID: a, StartedAt: started, Step: 1, Pending: true,
			Done: []Step{{ID: "p"}}}
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			if err := tx.PutJob(k); err != nil {
				return err
			}
			return tx.PutAttempt(resumed, k.PostID)
		}))
		ws, _ = waitingOfAccount(t, s, a, 10, nil)
		require.Equal(t, []Waiting{{AccountID: a, JobID: k.TrackingID, Target: 0, PostID: k.PostID, Attempt: resumed}}, ws)
	})
}

// A store of layout 6 kept attempts in a bucket of their own: opened, each attempt of a target
// that still waits moves into its waiting entry, the others are dropped, and the bucket is left
// empty: on bbolt and on PostgreSQL.
func TestLayout6StoreGetsItsAttemptsMoved(t *testing.T) {
	t.Parallel()
	for _, st := range reopenableStores() {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, reopen := st.open(t)
			a := newV7()
			j, finished := waitingJob(a, a), waitingJob(a)
			started := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
			inDoubt := &Attempt{JobID: j.TrackingID, Target: 1, AccountID: a, StartedAt: started, Step: 1, Done: []Step{{ID: "p"}}}
			orphan := &Attempt{JobID: finished.TrackingID, Target: 0, AccountID: a, StartedAt: started}
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				if err := tx.PutJob(j); err != nil {
					return err
				}
				// As layout 6 wrote them: job id | target → the attempt.
				for _, att := range []*Attempt{inDoubt, orphan} {
					raw, err := Encode(att)
					if err != nil {
						return err
					}
					key := binary.BigEndian.AppendUint16(mustID(att.JobID), uint16(att.Target))
					if err := tx.kv.Bucket(bAttempts).Put(key, raw); err != nil {
						return err
					}
				}
				return tx.kv.Bucket(bMeta).Put([]byte("schema"), u64(6))
			}))
			require.NoError(t, s.Close())

			s = reopen()
			ws, _ := waitingOfAccount(t, s, a, 10, nil)
			require.Equal(t, []Waiting{
				{AccountID: a, JobID: j.TrackingID, Target: 0, PostID: j.PostID},
				{AccountID: a, JobID: j.TrackingID, Target: 1, PostID: j.PostID, Attempt: inDoubt},
			}, ws)
			require.NoError(t, s.View(func(tx *Tx) error {
				k, _ := tx.kv.Bucket(bAttempts).Cursor().First()
				require.Nil(t, k, "the old bucket is empty")
				require.False(t, tx.IsWaiting(Waiting{AccountID: a, JobID: finished.TrackingID, Target: 0}), "the orphan made nothing wait")
				require.Equal(t, uint64(schemaVersion), schemaOf(tx.kv))
				return nil
			}))
		})
	}
}
