package api

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/persistence"
)

// A job stream reads the job from the store, not from its actor: the job's record and its
// timeline (job_events) are stored in the transaction of each change, so the store holds every
// step of every job, whichever node's actor made it, and a stream on any node follows a job whose
// actor runs on another, and ends with done when a node that took the job over finishes it.
// The store wakes the reader after each commit that touched the job (persistence.Store.Follow:
// in the process on one node, by NOTIFY across nodes).
//
// The streams of one job in one process share one reader (a feed): one read of the store per
// change, whatever the number of streams, and each event rendered once for all of them
// (job.Event.Render), as when they were fed by the job's actor.

// feedRetry is how long a feed waits before it reads again after a read failed (the database
// cannot be reached): a wake-up that found the store unreadable is not lost.
const feedRetry = time.Second

// jobFeeds are the feeds of the jobs streamed by this process.
type jobFeeds struct {
	store *persistence.Store
	log   *slog.Logger
	mu    sync.Mutex
	feeds map[string]*jobFeed
}

func newJobFeeds(store *persistence.Store, log *slog.Logger) *jobFeeds {
	if log == nil {
		log = slog.Default()
	}
	return &jobFeeds{store: store, log: log, feeds: map[string]*jobFeed{}}
}

// jobFeed reads one job's changes for the streams that follow it.
type jobFeed struct {
	id    string
	refs  int           // joins not yet released (jobFeeds.mu)
	ready chan struct{} // closed once the first read is done
	quit  chan struct{} // closed when the last join is released
	mu    sync.Mutex
	cur   *persistence.Job // the job as last sent
	err   error            // the first read's failure
	ended bool             // done was sent (or the job is gone): no more events
	subs  map[*job.Subscriber]struct{}
}

// join follows a job for a stream acting in scope. It returns the job as the stream first shows
// it and, unless the job is finished (done: the stream sends it as done, and nothing follows),
// the subscriber that receives the job's next events; leave must be called once the stream ends
// (in every case; more than once is harmless). Errors: job.ErrNotFound, job.ErrForbidden, or the store's.
func (fs *jobFeeds) join(id, scope string) (first *persistence.Job, done bool, sub *job.Subscriber, leave func(), err error) {
	fs.mu.Lock()
	f := fs.feeds[id]
	creator := f == nil
	if creator {
		f = &jobFeed{id: id, ready: make(chan struct{}), quit: make(chan struct{}), subs: map[*job.Subscriber]struct{}{}}
		fs.feeds[id] = f
	}
	f.refs++
	fs.mu.Unlock()
	var once sync.Once
	leave = func() { once.Do(func() { fs.release(f) }) }
	if creator {
		fs.start(f)
	}
	<-f.ready
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.err != nil:
		return nil, false, nil, leave, f.err
	case f.cur.Scope() != scope:
		return nil, false, nil, leave, job.ErrForbidden
	case f.ended || finished(f.cur):
		return f.cur, true, nil, leave, nil
	}
	sub = job.NewSubscriber(32)
	f.subs[sub] = struct{}{}
	return f.cur, false, sub, func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs, sub)
			f.mu.Unlock()
			fs.release(f)
		})
	}, nil
}

// release ends a join; the last one stops the feed.
func (fs *jobFeeds) release(f *jobFeed) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.refs--
	if f.refs == 0 {
		if fs.feeds[f.id] == f {
			delete(fs.feeds, f.id)
		}
		close(f.quit)
	}
}

// forget removes a feed that sends nothing more, so that a later stream starts a fresh one.
func (fs *jobFeeds) forget(f *jobFeed) {
	fs.mu.Lock()
	if fs.feeds[f.id] == f {
		delete(fs.feeds, f.id)
	}
	fs.mu.Unlock()
}

// start makes the feed's first read and, for a job still running, runs the feed.
func (fs *jobFeeds) start(f *jobFeed) {
	// Followed before the read: a change committed after it wakes the feed.
	wake, stop := fs.store.Follow(persistence.JobTopic(f.id))
	var j *persistence.Job
	err := fs.store.View(func(tx *persistence.Tx) error {
		var err error
		j, err = tx.Job(f.id)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		err = job.ErrNotFound
	}
	f.mu.Lock()
	f.cur, f.err = j, err
	f.ended = err != nil || finished(j)
	f.mu.Unlock()
	close(f.ready)
	if f.ended {
		stop()
		fs.forget(f)
		return
	}
	go fs.run(f, wake, stop)
}

// run reads the job after each wake-up until it is finished or nobody follows it.
func (fs *jobFeeds) run(f *jobFeed, wake <-chan struct{}, stop func()) {
	defer stop()
	var retry <-chan time.Time
	for {
		select {
		case <-wake:
		case <-retry:
		case <-f.quit:
			return
		}
		retry = nil
		ended, err := fs.read(f)
		if err != nil {
			fs.log.Warn("reading a followed job failed; it is read again shortly", "job_id", f.id, "error", err)
			retry = time.After(feedRetry)
			continue
		}
		if ended {
			fs.forget(f)
			return
		}
	}
}

// read reads what changed since the feed's last read and sends it: a progress event for each
// change, in order, and done when the job is finished. It reports whether the feed has ended.
func (fs *jobFeeds) read(f *jobFeed) (ended bool, err error) {
	f.mu.Lock()
	cur := f.cur
	f.mu.Unlock()
	var next *persistence.Job
	var changes []persistence.JobEventSeq
	err = fs.store.View(func(tx *persistence.Tx) error {
		var err error
		if next, err = tx.Job(f.id); err != nil || next.Seq <= cur.Seq {
			return err
		}
		changes, err = tx.JobEventsAfter(f.id, cur.Seq)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		// The job is gone (its post was deleted): the streams end, and a reconnect is told.
		f.end(nil)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if next.Seq <= cur.Seq {
		return false, nil
	}
	evs := progressEvents(cur, next, changes)
	if finished(next) {
		evs = append(evs, &job.Event{Name: "done", ID: next.Seq, Job: next, Target: -1})
		f.end(evs)
		return true, nil
	}
	f.send(next, evs)
	return false, nil
}

// send passes events to every subscriber; one that does not keep up is dropped (its channel
// closed: its stream ends with the farewell), never waited for.
func (f *jobFeed) send(cur *persistence.Job, evs []*job.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur = cur
	for s := range f.subs {
		for _, e := range evs {
			select {
			case s.C <- e:
				continue
			default:
			}
			delete(f.subs, s)
			close(s.C)
			break
		}
	}
}

// end sends the last events and closes every subscriber.
func (f *jobFeed) end(evs []*job.Event) {
	var last *persistence.Job
	if n := len(evs); n > 0 {
		last = evs[n-1].Job
	}
	f.mu.Lock()
	cur := f.cur
	f.mu.Unlock()
	if last == nil {
		last = cur
	}
	f.send(last, evs)
	f.mu.Lock()
	f.ended = true
	for s := range f.subs {
		delete(f.subs, s)
		close(s.C)
	}
	f.mu.Unlock()
}

// progressEvents are the progress events of the changes from cur to next, one per change, each
// with the job as that change left it: the stored timeline of a change names its target, the
// step and the target's phase, and the job at the last change is next itself. A change whose
// timeline is missing is passed over; when none is left, next is sent as one progress.
func progressEvents(cur, next *persistence.Job, changes []persistence.JobEventSeq) []*job.Event {
	var out []*job.Event
	snap := cur
	for _, c := range changes {
		if c.Seq <= cur.Seq || c.Seq > next.Seq || len(c.Events) == 0 {
			continue
		}
		target := c.Events[len(c.Events)-1].Target
		var j *persistence.Job
		if c.Seq == next.Seq {
			j = next
		} else {
			j = snap.Clone()
			j.Seq = c.Seq
			if j.Status == persistence.JobQueued {
				j.Status = persistence.JobProcessing
			}
			for _, e := range c.Events {
				for i := range j.Targets {
					t := &j.Targets[i]
					if t.Target != e.Target {
						continue
					}
					switch e.Phase {
					case persistence.PhaseSuccess, persistence.PhaseFailed, persistence.PhaseUploading:
						t.Phase = e.Phase
					default:
						// A step (waiting, retrying, resolved, a part, a comment) leaves the
						// target uploading until its outcome.
						if !t.Final() {
							t.Phase = persistence.PhaseUploading
						}
					}
					t.Message = e.Message
				}
			}
		}
		out = append(out, &job.Event{Name: "progress", ID: j.Seq, Job: j, Target: target})
		snap = j
	}
	if len(out) == 0 || out[len(out)-1].Job != next {
		out = append(out, &job.Event{Name: "progress", ID: next.Seq, Job: next, Target: -1})
	}
	return out
}

func finished(j *persistence.Job) bool {
	return j.Status == persistence.JobCompleted || j.Status == persistence.JobFailed
}
