package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func newPost(user string, status string, platforms ...string) *persistence.Post {
	p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "hello", Status: status, CreatedAt: time.Now().UTC()}
	for _, pl := range platforms {
		p.Targets = append(p.Targets, persistence.Target{AccountID: uuid.NewString(), Platform: pl, Status: persistence.TargetPending})
	}
	return p
}

// A failing write does not take the other writes of its batch down with it.
func TestGroupCommitIsolatesAFailingWrite(t *testing.T) {
	persistence.EachStore(t, groupCommitIsolatesAFailingWrite)
}

func groupCommitIsolatesAFailingWrite(t *testing.T, s *persistence.Store) {
	user := uuid.NewString()
	boom := errors.New("refused")
	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := newPost(user, persistence.PostDraft, "linkedin")
			errs[i] = s.Update(context.Background(), func(tx *persistence.Tx) error {
				if err := tx.PutPost(p, nil); err != nil {
					return err
				}
				if i%10 == 0 {
					return boom // written, then refused: must be rolled back
				}
				return nil
			})
		}(i)
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if i%10 == 0 {
			require.ErrorIs(t, err, boom)
			failed++
		} else {
			require.NoError(t, err)
		}
	}
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		_, total, err := tx.ListPosts(persistence.PostFilter{Scope: user, Limit: 10})
		require.Equal(t, 200-failed, total)
		return err
	}))
}

func TestListFiltersAndPages(t *testing.T) { persistence.EachStore(t, listFiltersAndPages) }

func listFiltersAndPages(t *testing.T, s *persistence.Store) {
	user, other := uuid.NewString(), uuid.NewString()
	var ids []string
	for i := 0; i < 30; i++ {
		status := persistence.PostDraft
		if i%3 == 0 {
			status = persistence.PostScheduled
		}
		plats := []string{"linkedin"}
		if i%2 == 0 {
			plats = append(plats, "bluesky")
		}
		p := newPost(user, status, plats...)
		p.Content = fmt.Sprintf("post %d %s", i, map[bool]string{true: "Launch", false: "update"}[i%5 == 0])
		ids = append(ids, p.ID)
		require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
		q := newPost(other, persistence.PostDraft, "linkedin")
		require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(q, nil) }))
	}
	list := func(f persistence.PostFilter) ([]*persistence.Post, int) {
		var out []*persistence.Post
		var n int
		require.NoError(t, s.View(func(tx *persistence.Tx) error {
			var err error
			out, n, err = tx.ListPosts(f)
			return err
		}))
		return out, n
	}
	page, n := list(persistence.PostFilter{Scope: user, Limit: 7, Offset: 7})
	require.Equal(t, 30, n)
	require.Len(t, page, 7)
	require.Equal(t, ids[22], page[0].ID, "newest first, second page")
	_, n = list(persistence.PostFilter{Scope: user, Status: persistence.PostScheduled, Limit: 100})
	require.Equal(t, 10, n)
	_, n = list(persistence.PostFilter{Scope: user, Platform: "bluesky", Limit: 100})
	require.Equal(t, 15, n)
	_, n = list(persistence.PostFilter{Scope: user, Platform: "bluesky", Status: persistence.PostScheduled, Limit: 100})
	require.Equal(t, 5, n)
	_, n = list(persistence.PostFilter{Scope: user, Search: "LAUNCH", Limit: 100})
	require.Equal(t, 6, n)
	_, n = list(persistence.PostFilter{Scope: user, Platform: "tiktok", Limit: 100})
	require.Equal(t, 0, n)

	// Status changes move the post between filters; deletion removes it.
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error {
		p, err := tx.Post(ids[0])
		require.NoError(t, err)
		p.Status = persistence.PostPublished
		return tx.PutPost(p, nil)
	}))
	_, n = list(persistence.PostFilter{Scope: user, Status: persistence.PostPublished, Limit: 100})
	require.Equal(t, 1, n)
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error {
		p, err := tx.Post(ids[0])
		require.NoError(t, err)
		return tx.DeletePost(p)
	}))
	_, n = list(persistence.PostFilter{Scope: user, Limit: 100})
	require.Equal(t, 29, n)
}

func TestSecondOpenTimesOutAndBackupIsConsistent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := persistence.Open(dir, persistence.Options{})
	require.NoError(t, err)
	defer s.Close()
	start := time.Now()
	_, err = persistence.Open(dir, persistence.Options{LockTimeout: 200 * time.Millisecond})
	require.ErrorIs(t, err, persistence.ErrLocked)
	require.Less(t, time.Since(start), 2*time.Second)

	p := newPost(uuid.NewString(), persistence.PostDraft, "x")
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
	backup := t.TempDir()
	require.NoError(t, s.Backup(filepath.Join(backup, persistence.FileName)))
	b, err := persistence.Open(backup, persistence.Options{ReadOnly: true})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.View(func(tx *persistence.Tx) error {
		got, err := tx.Post(p.ID)
		require.NoError(t, err)
		require.Equal(t, "hello", got.Content)
		return nil
	}))
}

func TestUpdateAfterCloseFails(t *testing.T) {
	t.Parallel()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	err = s.Update(context.Background(), func(tx *persistence.Tx) error { return nil })
	require.ErrorIs(t, err, persistence.ErrClosed)
}

// An event whose change commits after a later-created event that a consumer has already taken
// is still read: the outbox's order is the order of the commits (AppendEvent takes the id), not
// the order in which the writers built their events.
func TestOutboxFollowsCommitOrder(t *testing.T) {
	persistence.EachStore(t, outboxFollowsCommitOrder)
}

func outboxFollowsCommitOrder(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	first := &persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: "post.published", CreatedAt: time.Now(), Data: []byte(`{"n":1}`)}
	second := &persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: "post.published", CreatedAt: time.Now(), Data: []byte(`{"n":2}`)}
	take := func() []string {
		var got []string
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
			got = nil
			evs, err := tx.EventsAfter("webhooks", 10)
			if err != nil || len(evs) == 0 {
				return err
			}
			for _, e := range evs {
				got = append(got, string(e.Data))
			}
			return tx.AdvanceEvents("webhooks", evs[len(evs)-1].ID)
		}))
		return got
	}
	// The writer that built its event second commits first, and the consumer takes it.
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.AppendEvent(second) }))
	require.Equal(t, []string{`{"n":2}`}, take())
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.AppendEvent(first) }))
	require.Equal(t, []string{`{"n":1}`}, take(), "the event that committed last is read")
	require.Greater(t, first.ID, second.ID, "ids follow the commits")
}

func TestPruneEventsKeepsWhatAConsumerHasNotTaken(t *testing.T) {
	persistence.EachStore(t, pruneEventsKeepsWhatAConsumerHasNotTaken)
}

func pruneEventsKeepsWhatAConsumerHasNotTaken(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	var ids []string
	for i := 0; i < 5; i++ {
		e := &persistence.Event{Type: "post.deleted", CreatedAt: old, Data: []byte(`{}`)}
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.AppendEvent(e) }))
		ids = append(ids, e.ID)
	}
	prune := func() int {
		var n int
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
			var err error
			n, err = tx.PruneEvents(time.Now().Add(-time.Hour), 100)
			return err
		}))
		return n
	}
	require.Equal(t, 0, prune(), "no consumer yet: nothing is pruned")
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.AdvanceEvents("webhooks", ids[2]) }))
	require.Equal(t, 3, prune(), "the events the consumer took")
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		left, err := tx.EventsAfter("webhooks", 10)
		require.Len(t, left, 2)
		return err
	}))
}

// With the committer held up and half the commit queue taken, TryUpdate refuses at once and
// writes nothing, while Update still queues behind it; once the committer runs again, every
// queued write commits and TryUpdate goes through.
func TestTryUpdateRefusesWhenTheQueueIsFull(t *testing.T) {
	persistence.EachStore(t, tryUpdateRefusesWhenTheQueueIsFull)
}

func tryUpdateRefusesWhenTheQueueIsFull(t *testing.T, s *persistence.Store) {
	user := uuid.NewString()
	entered, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // holds the committer inside its transaction
		defer wg.Done()
		assert.NoError(t, s.Update(context.Background(), func(*persistence.Tx) error {
			select {
			case <-entered:
			default:
				close(entered)
			}
			<-release
			return nil
		}))
	}()
	<-entered
	const queued = 2048 // half of the queue
	for i := 0; i < queued+1; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := newPost(user, persistence.PostDraft, "linkedin")
			assert.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
		}()
	}
	require.Eventually(t, func() bool { return s.QueueDepth() == queued+1 }, 30*time.Second, time.Millisecond)

	refused := newPost(user, persistence.PostDraft, "linkedin")
	ran := false
	err := s.TryUpdate(func(tx *persistence.Tx) error { ran = true; return tx.PutPost(refused, nil) })
	require.ErrorIs(t, err, persistence.ErrBusy)
	require.False(t, ran)

	close(release)
	wg.Wait()
	accepted := newPost(user, persistence.PostDraft, "linkedin")
	require.NoError(t, s.TryUpdate(func(tx *persistence.Tx) error { return tx.PutPost(accepted, nil) }))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		require.False(t, tx.HasPost(refused.ID), "a refused write was written")
		require.True(t, tx.HasPost(accepted.ID))
		_, total, err := tx.ListPosts(persistence.PostFilter{Scope: user, Limit: 1})
		require.Equal(t, queued+2, total)
		return err
	}))
}
