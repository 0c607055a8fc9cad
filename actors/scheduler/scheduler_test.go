package scheduler_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/scheduler"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
)

// Due posts, many more than a page of the index, fire once each, through real post actors that
// passivate as soon as their job is started, and their jobs' tracking ids follow the order in
// which the posts were due (the order in which each account publishes them), whatever the order
// of the fires in flight.
func TestDuePostsFireOnceInOrderAPageAtATime(t *testing.T) {
	t.Parallel()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	const n = 1500
	user := uuid.Must(uuid.NewV7()).String()
	base := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	type entry struct {
		id string
		at time.Time
	}
	entries := make([]entry, n)
	for i := range entries {
		// Due times in another order than the posts' ids, several posts due at the same instant.
		entries[i] = entry{id: uuid.Must(uuid.NewV7()).String(), at: base.Add(time.Duration(rand.IntN(n/3)) * time.Millisecond)}
	}
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error {
		for _, e := range entries {
			at := e.at
			p := &persistence.Post{ID: e.id, UserID: user, Content: "due " + e.id, Status: persistence.PostScheduled, ScheduledAt: &at,
				CreatedAt: at, UpdatedAt: at, Targets: []persistence.Target{{AccountID: uuid.NewString(), Platform: "bluesky", Status: persistence.TargetPending}}}
			if err := tx.PutPost(p, nil); err != nil {
				return err
			}
			if err := tx.Schedule(p.ID, at); err != nil {
				return err
			}
		}
		return nil
	}))
	sort.Slice(entries, func(i, j int) bool {
		if !entries[i].at.Equal(entries[j].at) {
			return entries[i].at.Before(entries[j].at)
		}
		return entries[i].id < entries[j].id // the index's order: due time, then post id
	})

	var mu sync.Mutex
	started := map[string]string{} // job id → post id
	all := make(chan struct{})
	sys := actors.NewSystem(nil, nil)
	t.Cleanup(sys.Shutdown)
	posts := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, IdleTimeout: time.Hour, Log: quiet,
		Handoff: post.StartFunc(func(j *persistence.Job, p *persistence.Post) {
			mu.Lock()
			defer mu.Unlock()
			started[j.TrackingID] = p.ID
			if len(started) == n {
				close(all)
			}
		})}))
	s := scheduler.New(store, posts, scheduler.Options{Log: quiet, Parallel: 16, Page: 100})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d due posts fired", len(started), n)
	}

	mu.Lock()
	jobs := make([]string, 0, n)
	for j := range started {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs) // UUIDv7s: the order they were made
	for i, j := range jobs {
		require.Equal(t, entries[i].id, started[j], "job %d", i)
	}
	mu.Unlock()
	require.NoError(t, store.View(func(tx *persistence.Tx) error {
		_, any := tx.NextDue()
		require.False(t, any, "every entry left the schedule with its fire")
		return nil
	}))
	require.Eventually(t, func() bool { return posts.Live() == 0 }, 10*time.Second, 5*time.Millisecond, "publishing posts passivate at once")
}
