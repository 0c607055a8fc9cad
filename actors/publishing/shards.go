package publishing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
)

// Shards runs this node's share of the publishing actors when several Herald nodes share the
// store (herald serve --node-addr; docs/cluster.md). An account, job, post or campaign lives on
// the node that holds the lease of its id's shard (cluster.ShardOf); Shards' methods are the
// member's callbacks for the "shard/…" leases:
//
//   - Acquired resumes what the store holds for the shard (Resume, for its ids only): its
//     accounts with targets waiting take them, its jobs whose outcome their post had not taken
//     hand it on. After a takeover, the attempts the old owner may have had in flight are looked
//     up only once its lease's expiry plus the call time-out has passed.
//   - Drain stops the shard's accounts from starting anything new, waits for their calls in
//     flight to come back and be reported, then passivates the shard's actors: the lease is
//     released with no attempt in doubt.
//   - Lost stops the shard's actors at once; whatever they still try to write is fenced, and
//     they call no network (the trust gate).
//   - Every Remind, the shards held are reminded of what the store holds for them
//     (Publishing.Remind): a message lost with a node that died (a report on its way to a job
//     there, a job's Finish to its post) is made good, since resuming on a take covers only the
//     dead node's own shards.
//
// Single-node Herald uses none of it: Start resumes every shard at once.
type Shards struct {
	p           *Publishing
	fence       *cluster.Fence
	n           int
	callTimeout time.Duration
	log         *slog.Logger

	// Remind is how often Run reminds the shards held of their work (0: never); set before Run.
	Remind time.Duration

	mu      sync.Mutex
	pending map[int]bool
	kick    chan struct{}
}

// NewShards manages p's actors over n shards under fence; callTimeout is the accounts' call
// time-out (account.Deps.CallTimeout).
func NewShards(p *Publishing, fence *cluster.Fence, n int, callTimeout time.Duration) *Shards {
	return &Shards{p: p, fence: fence, n: n, callTimeout: callTimeout, log: p.log,
		pending: map[int]bool{}, kick: make(chan struct{}, 1)}
}

// Run resumes the shards taken, all those taken since the last pass in one read of the store
// (a node that starts takes many at once), until ctx ends.
func (s *Shards) Run(ctx context.Context) {
	var remind <-chan time.Time
	if s.Remind > 0 {
		t := time.NewTicker(s.Remind)
		defer t.Stop()
		remind = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-remind:
			s.p.Remind(func(id string) bool { return s.fence.Trusted(id) })
			continue
		case <-s.kick:
		}
		s.mu.Lock()
		shards := s.pending
		s.pending = map[int]bool{}
		s.mu.Unlock()
		if len(shards) == 0 {
			continue
		}
		s.p.ResumeWhere(func(id string) bool {
			if !shards[cluster.ShardOf(id, s.n)] {
				return false
			}
			_, held := s.fence.Lease(id)
			return held
		})
	}
}

// Acquired is the member's callback for a shard taken: its actors are resumed (Run).
func (s *Shards) Acquired(t persistence.Taken) {
	i, ok := cluster.ShardIndex(t.Name)
	if !ok || i >= s.n {
		return
	}
	wait := t.InDoubt
	if !t.Released {
		// The previous owner went silent: a call it started before its trust ended may run
		// until its lease's expiry plus the call time-out. Its lease had expired when this node
		// took it, so counting from now is never earlier, whatever the clocks say.
		wait = max(wait, s.callTimeout)
	}
	// A shard handed off while a takeover's doubt ran (a node joined soon after another died)
	// keeps it: its lease says how much of it is left (persistence.Leases.SetDoubt), and the
	// node that handed it off did not wait for it (account.Drain ends a lookup still waiting).
	if wait > 0 {
		s.fence.Delay(i, time.Now().Add(wait))
	}
	s.mu.Lock()
	s.pending[i] = true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Drain is the member's callback for a shard it gives up: it returns once the shard's accounts
// have no call in flight and its actors are passivated.
func (s *Shards) Drain(le persistence.Lease) {
	i, ok := cluster.ShardIndex(le.Name)
	if !ok || i >= s.n {
		return
	}
	match := s.unpend(i)
	ids := s.p.Accounts.LiveIDs(match)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A lookup retries for a few minutes at most; a call is bounded by its time-out.
			d, err := actors.AskWithin[*account.Drained](context.Background(), s.callTimeout+5*time.Minute, s.p.Accounts.To(id), &account.Drain{})
			if err != nil {
				s.log.Warn("cluster: an account did not drain; its attempts in flight are looked up by the next owner", "error", err)
				return
			}
			// The outcomes it reported are stored while this node still holds the leases,
			// handed to their jobs with the flush: a report sent earlier may be held back while
			// its job's shard moves too, and the next owner would find the attempt in doubt.
			byJob := map[string][]*account.Report{}
			for _, r := range d.Reports {
				byJob[r.JobID] = append(byJob[r.JobID], r)
			}
			for _, j := range d.Jobs {
				if err := s.flushJob(j, byJob[j]); err != nil {
					s.log.Warn("cluster: a job did not store its reports before its account's hand-off; the next owner looks them up", "error", err)
				}
			}
		}()
	}
	wg.Wait()
	s.passivate(match, 30*time.Second)
}

// flushJobWithin bounds how long a hand-off tries to have a job store its account's reports.
const flushJobWithin = 30 * time.Second

// flushJob has job j store reports (its account's outcomes, drained) and every report it holds,
// where the job lives: here when this node holds its shard (draining too, when the node stops),
// else on its owner. A job whose shard is between owners (released by a node that stops, not
// yet taken) or whose owner just changed cannot be reached for a moment, and one that moved
// while it stored answers persistence.ErrFenced: the flush is sent again, to the owner as it is
// then, until it is stored or flushJobWithin has passed. A flush sent twice stores nothing twice
// (a report on a target already final changes nothing).
func (s *Shards) flushJob(j string, reports []*account.Report) error {
	deadline := time.Now().Add(flushJobWithin)
	wait := 25 * time.Millisecond
	for {
		to := s.p.To.Jobs.To(j)
		if _, held := s.fence.Lease(j); held {
			to = s.p.Jobs.To(j)
		}
		_, err := actors.AskWithin[*job.Flushed](context.Background(), time.Until(deadline), to, &job.Flush{Reports: reports})
		moved := errors.Is(err, cluster.ErrUnavailable) || errors.Is(err, persistence.ErrFenced)
		if err == nil || !moved || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// Lost is the member's callback for a shard that moved without a hand-off: its actors stop at
// once (the fence and the trust gate already keep them from writing and calling).
func (s *Shards) Lost(le persistence.Lease) {
	i, ok := cluster.ShardIndex(le.Name)
	if !ok || i >= s.n {
		return
	}
	match := s.unpend(i)
	go s.passivate(match, 30*time.Second)
}

// unpend forgets a resume not yet run for shard i and returns the matcher of its ids.
func (s *Shards) unpend(i int) func(string) bool {
	s.mu.Lock()
	delete(s.pending, i)
	s.mu.Unlock()
	return func(id string) bool { return cluster.ShardOf(id, s.n) == i }
}

// passivate stops the shard's actors, in a shutdown's order, and drops its accounts from the
// backlog.
func (s *Shards) passivate(match func(string) bool, within time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for _, d := range []*actors.Directory{s.p.Campaigns, s.p.Accounts, s.p.Jobs, s.p.Posts} {
		if err := d.Passivate(ctx, match); err != nil {
			s.log.Warn("cluster: passivating a shard's actors timed out", "actor_kind", d.Kind().Name, "error", err)
		}
	}
	s.p.Backlog.Replace(match, nil)
}
