package scheduler_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/scheduler"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/persistence/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// gated holds every message to a post actor (To) once open is closed, until release is: the
// scheduler's fires in flight stay on their way while the test moves its lease.
type gated struct {
	actors.Router
	fired   atomic.Int64
	after   int64
	reached chan struct{}
	once    sync.Once
	release chan struct{}
}

func (g *gated) To(id string) actors.Requester {
	if g.fired.Add(1) > g.after {
		g.once.Do(func() { close(g.reached) })
		<-g.release
	}
	return g.Router.To(id)
}

// jobsByPost records the jobs each post started, whichever node started them.
type jobsByPost struct {
	mu   sync.Mutex
	jobs map[string][]string
	all  chan struct{}
	n    int
}

func (j *jobsByPost) handoff() post.StartFunc {
	return func(job *persistence.Job, p *persistence.Post) {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.jobs[p.ID] = append(j.jobs[p.ID], job.TrackingID)
		if len(j.jobs) == j.n {
			close(j.all)
		}
	}
}

// schedulePosts stores n posts due in the past, scheduled.
func schedulePosts(t *testing.T, store *persistence.Store, n int) []string {
	t.Helper()
	user := uuid.Must(uuid.NewV7()).String()
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	ids := make([]string, n)
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error {
		for i := range ids {
			ids[i] = uuid.Must(uuid.NewV7()).String()
			p := &persistence.Post{ID: ids[i], UserID: user, Content: "due", Status: persistence.PostScheduled, ScheduledAt: &at,
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
	return ids
}

// A scheduled post fires once across a takeover of the scheduler, on PostgreSQL: node a's
// scheduler runs under the singleton lease and has fires on their way (each with its own post
// actors, as two nodes would) when its lease expires without a renewal (a paused node) and node
// b takes it. a's fires still in flight, and a's run until it learns of the loss, are fenced;
// b fires the rest. Every post starts exactly one job, and the schedule ends empty.
func TestAPostFiresOnceAcrossASchedulerTakeover(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	store, err := persistence.OpenPostgres(ctx, url, persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	const n = 400
	ids := schedulePosts(t, store, n)
	rec := &jobsByPost{jobs: map[string][]string{}, all: make(chan struct{}), n: n}

	// node builds one node's post actors, its scheduler (through route) and its singletons.
	node := func(route func(actors.Router) actors.Router) (*cluster.Singletons, *persistence.Leases) {
		sys := actors.NewSystem(nil, nil)
		t.Cleanup(sys.Shutdown)
		posts := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, IdleTimeout: time.Hour, Log: quiet, Handoff: rec.handoff()}))
		s := scheduler.New(store, route(posts), scheduler.Options{Log: quiet, Parallel: 8, Page: 50})
		one := cluster.NewSingletons(nil, nil)
		one.Register(publishingScheduler, s.Run)
		t.Cleanup(one.Stop)
		l, err := persistence.OpenLeases(ctx, url, 300*time.Millisecond)
		require.NoError(t, err)
		t.Cleanup(l.Close)
		_, err = l.Join(ctx, "127.0.0.1:0")
		require.NoError(t, err)
		return one, l
	}
	g := &gated{after: n / 4, reached: make(chan struct{}), release: make(chan struct{})}
	a, la := node(func(r actors.Router) actors.Router { g.Router = r; return g })
	b, lb := node(func(r actors.Router) actors.Router { return r })

	name := cluster.SingletonName(publishingScheduler)
	ta, ok, err := la.Acquire(ctx, name)
	require.NoError(t, err)
	require.True(t, ok)
	a.Acquired(ta)
	select {
	case <-g.reached: // a fired a quarter and has fires on their way
	case <-time.After(30 * time.Second):
		t.Fatal("a's scheduler did not fire")
	}
	// a renews nothing (paused): once its lease expires, b takes it over with the next epoch.
	var tb persistence.Taken
	require.Eventually(t, func() bool {
		var err error
		tb, ok, err = lb.Acquire(ctx, name)
		require.NoError(t, err)
		return ok
	}, 10*time.Second, 10*time.Millisecond)
	require.False(t, tb.Released, "a takeover")
	require.Equal(t, ta.Epoch+1, tb.Epoch)
	b.Acquired(tb)
	close(g.release) // a's fires in flight reach a's post actors under the lost lease
	time.Sleep(100 * time.Millisecond)
	a.Lost(ta.Lease) // a wakes and learns of the loss

	select {
	case <-rec.all:
	case <-time.After(60 * time.Second):
		rec.mu.Lock()
		defer rec.mu.Unlock()
		t.Fatalf("%d of %d posts fired", len(rec.jobs), n)
	}
	b.Stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.jobs, n)
	for _, id := range ids {
		require.Len(t, rec.jobs[id], 1, "post %s started one job", id)
	}
	require.NoError(t, store.View(func(tx *persistence.Tx) error {
		_, due := tx.NextDue()
		require.False(t, due, "every entry left the schedule")
		for _, id := range ids {
			p, err := tx.Post(id)
			require.NoError(t, err)
			require.Equal(t, persistence.PostPublishing, p.Status)
			j, err := tx.Job(rec.jobs[id][0])
			require.NoError(t, err)
			require.Equal(t, id, j.PostID)
		}
		return nil
	}))
}

// publishingScheduler is the scheduler's singleton kind (publishing.SchedulerKind).
const publishingScheduler = "scheduler"

// Two incarnations of one post (two nodes' post actors during a hand-over), both holding it as
// scheduled, are fired for the same entry at once: one starts the job, the other finds the entry
// gone in its transaction and starts nothing.
func TestTwoIncarnationsOfAPostFireItsEntryOnce(t *testing.T) {
	t.Parallel()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	for round := range 20 {
		ids := schedulePosts(t, store, 1)
		rec := &jobsByPost{jobs: map[string][]string{}, all: make(chan struct{}), n: 1}
		var p persistence.Post
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			got, err := tx.Post(ids[0])
			if err == nil {
				p = *got
			}
			return err
		}))
		var dirs [2]*actors.Directory
		for i := range dirs {
			sys := actors.NewSystem(nil, nil)
			defer sys.Shutdown()
			dirs[i] = actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, IdleTimeout: time.Hour, Log: quiet, Handoff: rec.handoff()}))
			// Each incarnation reads the post while it is scheduled.
			_, err := actors.Ask[*post.Reply](context.Background(), dirs[i].To(ids[0]), &post.Get{Scope: p.Scope()})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		var started atomic.Int64
		for i := range dirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := actors.Ask[*post.FireReply](context.Background(), dirs[i].To(ids[0]), &post.Fire{At: *p.ScheduledAt, JobID: uuid.Must(uuid.NewV7()).String()})
				if err != nil {
					t.Errorf("fire: %v", err)
					return
				}
				if r.JobID != "" {
					started.Add(1)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int64(1), started.Load(), "round %d", round)
		// The post answers Fire before it hands the job on (the answer is not held up by it).
		select {
		case <-rec.all:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the started job was not handed on", round)
		}
		rec.mu.Lock()
		require.Len(t, rec.jobs[ids[0]], 1, "round %d", round)
		rec.mu.Unlock()
	}
}
