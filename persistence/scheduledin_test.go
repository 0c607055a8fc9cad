package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestScheduledInListsAWorkspacesSoonest(t *testing.T) {
	persistence.EachStore(t, scheduledInListsAWorkspacesSoonest)
}

// scheduledInListsAWorkspacesSoonest: the schedule holds two users' posts interleaved; each user
// gets its own soonest first, whatever order the posts were made in, and the scan bound stops
// the walk.
func scheduledInListsAWorkspacesSoonest(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	mine, theirs := uuid.NewString(), uuid.NewString()
	base := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	var want []string
	// Made latest-due first, so that creation order (the list index's) is the reverse of due order.
	for i := 9; i >= 0; i-- {
		for _, user := range []string{theirs, mine} {
			at := base.Add(time.Duration(i) * time.Minute)
			if user == theirs {
				at = at.Add(-time.Second)
			}
			p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "x", Status: persistence.PostScheduled,
				ScheduledAt: &at, CreatedAt: base, UpdatedAt: base, MediaIDs: []string{}}
			require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
				if err := tx.PutPost(p, nil); err != nil {
					return err
				}
				return tx.Schedule(p.ID, at)
			}))
			if user == mine && i < 3 {
				want = append([]string{p.ID}, want...)
			}
		}
	}
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		got := tx.ScheduledIn(mine, time.Time{}, 3, 1000)
		var ids []string
		for _, d := range got {
			ids = append(ids, d.PostID)
		}
		require.Equal(t, want, ids, "the three soonest of mine, soonest first")
		require.Equal(t, base, got[0].At)
		require.Len(t, tx.ScheduledIn(mine, time.Time{}, 3, 3), 1, "three entries walked: theirs, mine, theirs")
		require.Len(t, tx.ScheduledIn(mine, base.Add(8*time.Minute), 5, 1000), 2, "from a time on")
		require.Empty(t, tx.ScheduledIn(uuid.NewString(), time.Time{}, 5, 1000))
		return nil
	}))
}

func TestCalendarPostsReadsOnlyWhatARangeMayShow(t *testing.T) {
	persistence.EachStore(t, calendarPostsReadsOnlyWhatARangeMayShow)
}

// calendarPostsReadsOnlyWhatARangeMayShow: a range gets its scheduled posts from the schedule and
// its published, failed and waiting posts from the index, but no draft, no post of another user,
// no scheduled post due outside it and no post made after it.
func calendarPostsReadsOnlyWhatARangeMayShow(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	user, other := uuid.NewString(), uuid.NewString()
	now := time.Now().UTC().Truncate(time.Second)
	from, to := now.Add(-time.Hour), now.Add(time.Hour)
	put := func(owner, status string, at *time.Time) string {
		p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: owner, Content: status, Status: status,
			ScheduledAt: at, CreatedAt: now, UpdatedAt: now, MediaIDs: []string{}}
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
			if err := tx.PutPost(p, nil); err != nil {
				return err
			}
			if status == persistence.PostScheduled {
				return tx.Schedule(p.ID, *at)
			}
			return nil
		}))
		return p.ID
	}
	in, out := now.Add(30*time.Minute), now.Add(3*time.Hour)
	want := []string{
		put(user, persistence.PostPublished, nil),
		put(user, persistence.PostFailed, nil),
		put(user, persistence.PostScheduled, &in),
	}
	put(user, persistence.PostDraft, nil)
	put(user, persistence.PostScheduled, &out)
	put(other, persistence.PostPublished, nil)
	var got []string
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		list, err := tx.CalendarPosts(user, from, to, 100)
		for _, p := range list {
			got = append(got, p.ID)
		}
		return err
	}))
	require.ElementsMatch(t, want, got)
	// A range that ended before the posts were made reads none of them.
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		list, err := tx.CalendarPosts(user, now.Add(-3*time.Hour), now.Add(-2*time.Hour), 100)
		require.Empty(t, list)
		return err
	}))
}
