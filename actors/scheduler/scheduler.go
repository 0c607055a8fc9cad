// Package scheduler fires scheduled posts on time. The schedule lives in a bbolt index (due time,
// post id), so it is re-armed at start-up without waking any post actor; posts due while Herald
// was down fire at once. The scheduler sends each due post a post.Fire; the post starts its job
// and removes its index entry in the same transaction, so an entry fires at most once.
//
// However many posts are due at once (a launch's million), the scheduler holds one page of the
// index and its fires in flight: it walks the due entries in order, a page at a time after the
// last entry read, and starts at most Parallel fires at once. Each fire carries the tracking id
// of its job, made in the order of the walk, and an account publishes its posts in the order of
// their jobs' tracking ids: the posts of one account due in one burst go out in the order they
// were due.
package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
)

// Scheduler watches the schedule index.
type Scheduler struct {
	store *persistence.Store
	posts actors.Router
	now   func() time.Time
	log   *slog.Logger
	wake  chan struct{}
	// parallel bounds the fires in flight; page is the due entries read at once.
	parallel, page int

	mu       sync.Mutex
	inflight map[persistence.Due]bool

	lateness prometheus.Observer
	fired    prometheus.Counter
}

// Options configure a scheduler.
type Options struct {
	Now func() time.Time
	Log *slog.Logger
	// Parallel bounds the fires in flight (default 256); Page is the due entries read from the
	// index at once (default 4096).
	Parallel, Page int
	Registry       prometheus.Registerer
}

// New builds a scheduler.
func New(store *persistence.Store, posts actors.Router, o Options) *Scheduler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Parallel <= 0 {
		o.Parallel = 256
	}
	if o.Page <= 0 {
		o.Page = 4096
	}
	lateness := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "herald_scheduler_lateness_seconds", Help: "How late a scheduled post's job started after its time.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 30, 300},
	})
	fired := prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_scheduler_fired_total", Help: "Scheduled posts fired."})
	if o.Registry != nil {
		o.Registry.MustRegister(lateness, fired)
	}
	return &Scheduler{store: store, posts: posts, now: o.Now, log: o.Log, wake: make(chan struct{}, 1), parallel: o.Parallel, page: o.Page,
		inflight: map[persistence.Due]bool{}, lateness: lateness, fired: fired}
}

// Scheduled tells the scheduler of a new scheduled time (it re-arms if that is earlier).
func (s *Scheduler) Scheduled(time.Time) {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run fires due posts until ctx ends. Over several nodes it runs as a singleton
// (cluster.Singletons): under the scheduler's lease, which each fire carries for its job's
// commit to fence on, and a fire is committed only while the post's schedule entry is in the
// store, so a post fires once across a takeover of the scheduler.
func (s *Scheduler) Run(ctx context.Context) {
	sem := make(chan struct{}, s.parallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.dispatch(ctx, sem, &wg)
		wait := time.Hour
		if !next.IsZero() {
			wait = max(0, next.Sub(s.now()))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.wake:
		}
	}
}

// dispatch fires everything due now, in order, a page of the index at a time, and returns the
// next due time (zero: none).
func (s *Scheduler) dispatch(ctx context.Context, sem chan struct{}, wg *sync.WaitGroup) time.Time {
	now := s.now()
	var after persistence.Due // the last entry read: the next page starts after it
	for {
		var due []persistence.Due
		_ = s.store.View(func(tx *persistence.Tx) error {
			due = tx.DueBefore(now.Add(time.Millisecond), after, s.page)
			return nil
		})
		for _, d := range due {
			after = d
			s.mu.Lock()
			busy := s.inflight[d]
			if !busy {
				s.inflight[d] = true
			}
			s.mu.Unlock()
			if busy {
				continue // its fire is still on its way (or waits to be retried)
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				s.mu.Lock()
				delete(s.inflight, d)
				s.mu.Unlock()
				return time.Time{}
			}
			// The job's tracking id is made here, in the order of the walk.
			jobID := uuid.Must(uuid.NewV7()).String()
			wg.Add(1)
			go func(d persistence.Due) {
				defer wg.Done()
				defer func() { <-sem }()
				s.fire(ctx, d, jobID)
			}(d)
		}
		if len(due) < s.page {
			break
		}
	}
	var next persistence.Due
	var hasNext bool
	_ = s.store.View(func(tx *persistence.Tx) error {
		next, hasNext = tx.NextDue()
		return nil
	})
	switch {
	case !hasNext:
		return time.Time{}
	case !next.At.After(now):
		// Entries due now are still in flight, or came due during the walk: look again
		// shortly (each fire's end wakes the scheduler too).
		return now.Add(20 * time.Millisecond)
	}
	return next.At
}

func (s *Scheduler) fire(ctx context.Context, d persistence.Due, jobID string) {
	defer func() {
		s.mu.Lock()
		delete(s.inflight, d)
		s.mu.Unlock()
		s.Scheduled(time.Time{})
	}()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fire := &post.Fire{At: d.At, JobID: jobID}
	if le, ok := cluster.LeaseOf(ctx); ok {
		fire.Lease = &le
	}
	r, err := actors.Ask[*post.FireReply](c, s.posts.To(d.PostID), fire)
	if err != nil {
		s.log.Warn("firing a scheduled post failed; it is retried", "post_id", d.PostID, "error", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return
	}
	if r.JobID != "" {
		s.fired.Inc()
		s.lateness.Observe(s.now().Sub(d.At).Seconds())
	}
}
