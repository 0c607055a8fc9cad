package scheduler_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/scheduler"
	"github.com/heraldhq/herald/persistence"
)

// Scheduler micro-benchmarks (`make bench-micro`): dispatching entries that are all due, the
// scheduler burst in miniature. One op is one due entry, from the index read to the fire's reply.

// firer is a post actor reduced to what a fire costs the store: it removes its index entry in one
// durable write and answers with a job id. An entry read again before its removal committed is
// fired again (as a real post drops a stale fire); it counts once.
type firer struct {
	id    string
	store *persistence.Store
	seen  *sync.Map
	fired func()
}

// quiet keeps the scheduler's and posts' logs out of the benchmark output, which benchstat reads.
var quiet = slog.New(slog.DiscardHandler)

func (f *firer) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*post.Fire)
	if !ok {
		return
	}
	if err := f.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.Unschedule(f.id, m.At) }); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	actors.Reply(ctx, &post.FireReply{JobID: f.id})
	if _, again := f.seen.LoadOrStore(f.id, true); !again {
		f.fired()
	}
}

func openStore(b *testing.B) *persistence.Store {
	b.Helper()
	s, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func newSystem(b *testing.B) *actors.System {
	sys := actors.NewSystem(nil, nil)
	b.Cleanup(sys.Shutdown)
	return sys
}

// dueEntries returns n post ids with due times spread over the last minute.
func dueEntries(n int) ([]string, []time.Time) {
	ids, at := make([]string, n), make([]time.Time, n)
	base := time.Now().Add(-time.Minute).UTC()
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
		at[i] = base.Add(time.Duration(i%60_000) * time.Millisecond)
	}
	return ids, at
}

// runUntil runs the scheduler until done is closed.
func runUntil(b *testing.B, s *scheduler.Scheduler, done <-chan struct{}) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	b.ResetTimer()
	go func() { defer close(stopped); s.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatal("the scheduler did not fire every due entry")
	}
	b.StopTimer()
	cancel()
	<-stopped
}

func counter(n int) (func(), <-chan struct{}) {
	done := make(chan struct{})
	var fired atomic.Int64
	return func() {
		if fired.Add(1) == int64(n) {
			close(done)
		}
	}, done
}

// BenchmarkSchedulerDispatch measures the scheduler's own path: reading due entries from the
// index, fanning fires out with bounded parallelism, and each fire's durable index removal.
func BenchmarkSchedulerDispatch(b *testing.B) {
	store := openStore(b)
	ids, at := dueEntries(b.N)
	if err := store.Update(context.Background(), func(tx *persistence.Tx) error {
		for i := range ids {
			if err := tx.Schedule(ids[i], at[i]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	fired, done := counter(b.N)
	seen := &sync.Map{}
	posts := actors.NewDirectory(newSystem(b), actors.Kind{Name: post.KindName, IdleTimeout: time.Hour, New: func(id string) actor.Actor {
		return &firer{id: id, store: store, seen: seen, fired: fired}
	}})
	b.ReportAllocs()
	runUntil(b, scheduler.New(store, posts, scheduler.Options{Log: quiet}), done)
}

// BenchmarkSchedulerFirePosts measures due scheduled posts fired through real post actors: each
// is activated (its state loaded from bbolt), creates its job and leaves the schedule in one
// durable write, and answers.
func BenchmarkSchedulerFirePosts(b *testing.B) {
	store := openStore(b)
	ids, at := dueEntries(b.N)
	user := uuid.Must(uuid.NewV7()).String()
	if err := store.Update(context.Background(), func(tx *persistence.Tx) error {
		for i := range ids {
			when := at[i]
			p := &persistence.Post{ID: ids[i], UserID: user, Content: "Scheduled for the launch", Status: persistence.PostScheduled,
				ScheduledAt: &when, CreatedAt: when, UpdatedAt: when, MediaIDs: []string{}, Targets: []persistence.Target{
					{AccountID: uuid.Must(uuid.NewV7()).String(), Platform: "linkedin", Status: persistence.TargetPending},
					{AccountID: uuid.Must(uuid.NewV7()).String(), Platform: "bluesky", Status: persistence.TargetPending},
				}}
			if err := tx.PutPost(p, nil); err != nil {
				return err
			}
			if err := tx.Schedule(p.ID, when); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	fired, done := counter(b.N)
	posts := actors.NewDirectory(newSystem(b), post.Kind(post.Deps{Store: store, IdleTimeout: time.Hour, Log: quiet, Handoff: post.StartFunc(func(*persistence.Job, *persistence.Post) { fired() })}))
	b.ReportAllocs()
	runUntil(b, scheduler.New(store, posts, scheduler.Options{Log: quiet}), done)
}
