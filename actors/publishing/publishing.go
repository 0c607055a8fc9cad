// Package publishing is the publish hand-off between Herald's actors: it owns the post, job,
// account and campaign directories, the scheduler and the job backlog, and carries what one actor
// commits to the next (actors/doc.go draws the flow):
//
//	post, campaign ──StartJob──▶ the accounts of the job's open targets are told to Take them
//	account        ──Report────▶ the job's actor
//	job            ──Settle────▶ the post's outcome, written in the job's final transaction
//	job            ──Finish────▶ the post's actor ──Synced──▶ the job's actor (when Settle could not)
//	post, campaign ──Scheduled─▶ the scheduler
//
// Each actor package declares the small interface it needs (post.Handoff, campaign.Handoff,
// job.Handoff, account.Jobs, account.Backlog) and Publishing implements them all, so no actor
// knows another's directory. At start (Start) it resumes what a stop left: the accounts with
// targets waiting in the store take them, and the jobs whose outcome their post had not taken
// hand it on; then the scheduler runs, and outbox events every consumer has taken are pruned.
package publishing

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/scheduler"
	"github.com/heraldhq/herald/persistence"
)

// StartedPosts is how many of the posts whose jobs started last are kept for their accounts (a
// few hundred bytes each): enough for the posts of a burst that their accounts take at once.
const StartedPosts = 4096

// Config is what publishing is built on.
type Config struct {
	System *actors.System
	Store  *persistence.Store
	// Events wakes the outbox's consumers after an event commits.
	Events *actors.Notifier
	// Hub wakes the campaigns' streams.
	Hub *campaign.Hub
	// Backlog counts the publishes in hand against the job backlog's limit.
	Backlog  *job.Backlog
	Registry prometheus.Registerer
	Log      *slog.Logger
	// IdleTimeout passivates idle post, job and campaign actors (default 30s).
	IdleTimeout time.Duration
	// Capped sets a kind's live-actor cap (nil: the kind as it is).
	Capped func(actors.Kind) actors.Kind
	// Account are the account actors' own dependencies (store, token box, adapters, budgets,
	// metrics, media); their reports, backlog and started posts are publishing's.
	Account account.Deps
	// Scheduler are the scheduler's options (its log and registry are Log and Registry).
	Scheduler scheduler.Options
	// Fence, when several nodes share the store, fences the account and job actors' writes on
	// their shards' leases and gates the accounts' calls (nil: a single process; Shards).
	Fence actors.Fence
	// Route makes the router of each directory, through which the hand-offs, the scheduler and
	// everyone outside the actors reach its kind (To): nil on a single node, where a directory
	// is its own router; a cluster.Remote's when several nodes run.
	Route func(*actors.Directory) actors.Router
}

// Routers reach each kind's actors wherever they run.
type Routers struct {
	Posts, Jobs, Accounts, Campaigns actors.Router
}

// Publishing is the publish hand-off and the directories it links.
type Publishing struct {
	// Posts, Jobs, Accounts and Campaigns are this node's directories (their owner stops them);
	// To reaches the kinds' actors on whichever node they live.
	To        Routers
	Posts     *actors.Directory
	Jobs      *actors.Directory
	Accounts  *actors.Directory
	Campaigns *actors.Directory
	Scheduler *scheduler.Scheduler
	Backlog   *job.Backlog

	store *persistence.Store
	log   *slog.Logger
	// events and hub are woken when a job's final transaction stores its post's outcome.
	events *actors.Notifier
	hub    *campaign.Hub
	// started are the posts whose jobs started last, for their accounts.
	started *actors.Recent[string, *persistence.PostContent]
	// kept are the jobs created last with their posts, as committed (post.Deps.Keep; a job's
	// later writes replace it: job.Deps.Keep), for the jobs' actors and outcomes, by job id.
	kept *actors.Recent[string, *post.Committed]
	// outcomes and durations observe every finished job.
	outcomes  *prometheus.CounterVec
	durations prometheus.Histogram
}

// New builds the directories; nothing runs until a message or Start.
func New(cfg Config) *Publishing {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	if cfg.Capped == nil {
		cfg.Capped = func(k actors.Kind) actors.Kind { return k }
	}
	if cfg.Backlog == nil {
		cfg.Backlog = job.NewBacklog(0)
	}
	if cfg.Hub == nil {
		cfg.Hub = campaign.NewHub()
	}
	route := cfg.Route
	if route == nil {
		route = func(d *actors.Directory) actors.Router { return d }
	}
	p := &Publishing{Backlog: cfg.Backlog, store: cfg.Store, log: cfg.Log, events: cfg.Events, hub: cfg.Hub,
		started: actors.NewRecent[string, *persistence.PostContent](StartedPosts),
		kept:    actors.NewRecent[string, *post.Committed](StartedPosts)}
	p.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_jobs_finished_total", Help: "Publish jobs finished, by status (completed, failed).",
	}, []string{"status"})
	p.durations = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "herald_job_duration_seconds", Help: "Time from a job's creation to its last target's outcome.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
	})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(p.outcomes, p.durations,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "herald_jobs_in_hand", Help: "Publishes in hand: targets whose outcome is not known and that their accounts could send as their turn comes (waiting in the store or taken), except those held back by a rate budget or a retry; publish requests are refused while it is at herald_jobs_in_hand_limit.",
			}, func() float64 { return float64(p.Backlog.Len()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "herald_jobs_in_hand_limit", Help: "The publish jobs in hand beyond which publish requests are refused (--max-job-backlog; 0: no limit).",
			}, func() float64 { return float64(p.Backlog.Limit()) }))
	}
	p.Posts = actors.NewDirectory(cfg.System, cfg.Capped(post.Kind(post.Deps{
		Store: cfg.Store, Events: cfg.Events, IdleTimeout: cfg.IdleTimeout, Log: cfg.Log,
		Handoff: p, Campaigns: cfg.Hub, Fence: cfg.Fence, Keep: func(c *post.Committed) { p.kept.Put(c.Job.TrackingID, c) },
	})))
	p.To.Posts = route(p.Posts)
	ad := cfg.Account
	ad.Store, ad.Jobs, ad.Backlog, ad.Posts, ad.Fence = cfg.Store, p, p.Backlog, p.started, cfg.Fence
	if ad.Log == nil {
		ad.Log = cfg.Log
	}
	p.Accounts = actors.NewDirectory(cfg.System, cfg.Capped(account.Kind(ad)))
	p.To.Accounts = route(p.Accounts)
	p.Jobs = actors.NewDirectory(cfg.System, cfg.Capped(job.Kind(job.Deps{
		Store: cfg.Store, Log: cfg.Log, IdleTimeout: cfg.IdleTimeout, Handoff: p, Campaigns: cfg.Hub, Fence: cfg.Fence,
		Kept: p.keptJob, Keep: p.keepJob,
	})))
	p.To.Jobs = route(p.Jobs)
	so := cfg.Scheduler
	so.Log, so.Registry = cfg.Log, cfg.Registry
	p.Scheduler = scheduler.New(cfg.Store, p.To.Posts, so)
	p.Campaigns = actors.NewDirectory(cfg.System, cfg.Capped(campaign.Kind(campaign.Deps{
		Store: cfg.Store, Posts: p.To.Posts, Handoff: p, Events: cfg.Events, Changed: cfg.Hub.Notify,
		Log: cfg.Log, IdleTimeout: cfg.IdleTimeout, Fence: cfg.Fence,
	})))
	p.To.Campaigns = route(p.Campaigns)
	return p
}

// StartJob tells the accounts of a committed job's open targets that they wait for them in the
// store; the post is kept for them among the recently started ones (post.Handoff,
// campaign.Handoff).
func (p *Publishing) StartJob(j *persistence.Job, pst *persistence.Post) {
	if pst != nil {
		p.started.Put(pst.ID, persistence.ContentOf(pst))
	}
	waiting := make(map[string]int, len(j.Targets))
	for _, t := range j.Targets {
		if !t.Final() && t.AccountID != "" {
			waiting[t.AccountID]++
		}
	}
	for id, n := range waiting {
		p.Backlog.Queued(id, n)
		p.To.Accounts.Send(id, &account.Take{})
	}
}

// Synced tells a job that its post took its outcome (post.Handoff).
func (p *Publishing) Synced(jobID string, stored bool) {
	p.To.Jobs.Send(jobID, &job.PostSynced{Stored: stored})
}

// Scheduled tells the scheduler of a newly scheduled time (post.Handoff, campaign.Handoff).
func (p *Publishing) Scheduled(at time.Time) { p.Scheduler.Scheduled(at) }

// Report hands an account's report to its job (account.Jobs).
func (p *Publishing) Report(r *account.Report) { p.To.Jobs.Send(r.JobID, r) }

// Settle prepares the post's part of its job's final transaction (job.Handoff): the outcome is
// read from the post as stored and written with the job, so that the post's actor is neither
// activated nor written for it. The post is taken as kept when it is; otherwise, on a store that
// reads ahead (PostgreSQL), it is read in the final transaction itself, a row among the commit's
// reads, and elsewhere (bbolt) before it, off the committer's thread.
func (p *Publishing) Settle(j *persistence.Job, now time.Time) job.Settlement {
	kept, _ := p.kept.Take(j.TrackingID) // the job's last use of it
	if !post.KeptFor(j, kept) && p.store.ReadsAhead() {
		return &settlement{p: p, job: j, now: now}
	}
	o := post.ReadOutcomeKept(p.store, j, now, kept)
	if o == nil {
		return nil
	}
	return &settlement{p: p, o: o}
}

// settlement is a post's outcome written in its job's final transaction: o, built before it, or,
// when job is set, built in it from the post as the transaction reads it.
type settlement struct {
	p   *Publishing
	o   *post.Outcome
	job *persistence.Job
	now time.Time
}

// Write runs with every run of the transaction (a probe's on PostgreSQL too: UpdateAhead), and
// sets o afresh on each when it reads the post: the last run's is the one committed.
func (s *settlement) Write(tx *persistence.Tx) error {
	if s.job != nil {
		s.o = nil
		o, err := post.ReadOutcomeIn(tx, s.job, s.now)
		if errors.Is(err, persistence.ErrNotFound) || (err == nil && o == nil) {
			return job.ErrNotSettled
		}
		if err != nil {
			return err
		}
		s.o = o
	}
	return s.o.Write(tx)
}

// Stored announces the outcome as the post actor would have: a live incarnation of the post
// takes it as its state, on whichever node it lives; the outbox's consumers and the campaign's
// streams are woken.
func (s *settlement) Stored() {
	s.p.sendLive(s.o.Post.ID, &post.Took{Post: s.o.Post})
	if s.p.events != nil {
		s.p.events.Notify()
	}
	if id := s.o.Post.CampaignID; id != "" {
		s.p.hub.Notify(id)
	}
}

// liveSender delivers to a live incarnation only, never activating one (actors.Directory,
// cluster.Router).
type liveSender interface {
	SendLive(id string, msg any) bool
}

// sendLive tells a post's live incarnation, wherever it lives, of a change committed to its state.
func (p *Publishing) sendLive(id string, msg any) {
	if l, ok := p.To.Posts.(liveSender); ok {
		l.SendLive(id, msg)
		return
	}
	p.Posts.SendLive(id, msg)
}

// keptJob is the job kept as its post or its actor last committed it, for its actor's
// activation (job.Deps.Kept).
func (p *Publishing) keptJob(id string) (*persistence.Job, []byte) {
	if c, ok := p.kept.Get(id); ok {
		return c.Job, c.JobRaw
	}
	return nil, nil
}

// keepJob keeps a job its actor stored in place of the one kept before, with the post kept with
// it, for the job's next activation (job.Deps.Keep). A job no longer kept is not kept again: the
// room is for the jobs its posts committed last.
func (p *Publishing) keepJob(j *persistence.Job, raw []byte) {
	if c, ok := p.kept.Get(j.TrackingID); ok {
		p.kept.Put(j.TrackingID, &post.Committed{Job: j, JobRaw: raw, Post: c.Post, PostRaw: c.PostRaw})
	}
}

// Finish hands a final job to its post (job.Handoff).
func (p *Publishing) Finish(j *persistence.Job) { p.To.Posts.Send(j.PostID, &post.Finish{Job: j}) }

// Finished observes a finished job: its metrics and a log line (job.Handoff).
func (p *Publishing) Finished(j *persistence.Job, d time.Duration) {
	p.outcomes.WithLabelValues(j.Status).Inc()
	p.durations.Observe(d.Seconds())
	logFinished(p.log, j, d)
}

// The kinds of publishing's loops that run once across nodes (cluster.Singletons).
const (
	// SchedulerKind fires the scheduled posts as they come due.
	SchedulerKind = "scheduler"
	// PruneEventsKind prunes the outbox events every consumer has taken.
	PruneEventsKind = "outbox-prune"
)

// Singletons are publishing's background loops by kind, each running until its context ends:
// the scheduler and the pruning of the outbox. Everything they do is in the store, so each may
// stop at any point and run again on another node.
func (p *Publishing) Singletons() map[string]func(context.Context) {
	return map[string]func(context.Context){
		SchedulerKind:   p.Scheduler.Run,
		PruneEventsKind: func(ctx context.Context) { p.PruneEvents(ctx, time.Minute) },
	}
}

// Resume counts what waits in the store into the backlog, hands the finished jobs their post had
// not taken to their posts, and tells every account with waiting targets to take them.
func (p *Publishing) Resume() { p.ResumeWhere(nil) }

// ResumeWhere is Resume for the accounts and jobs whose id match (nil: all): a node that took
// some shards resumes theirs (Shards), and counts only their waiting targets in its backlog.
func (p *Publishing) ResumeWhere(match func(id string) bool) {
	var active int
	var waiting map[string]int
	_ = p.store.View(func(tx *persistence.Tx) error {
		waiting = tx.WaitingCounts()
		active, _ = tx.ActiveJobStats()
		return nil
	})
	if match == nil {
		p.Backlog.Set(waiting)
	} else {
		maps.DeleteFunc(waiting, func(id string, _ int) bool { return !match(id) })
		p.Backlog.Replace(match, waiting)
		active = -1 // not counted by shard
	}
	for after := ""; ; {
		var ids []string
		_ = p.store.View(func(tx *persistence.Tx) error {
			ids = tx.FinishedActiveJobs(after, 1000)
			return nil
		})
		for _, id := range ids {
			if match == nil || match(id) {
				p.To.Jobs.Send(id, &job.Start{})
			}
		}
		if len(ids) < 1000 {
			break
		}
		after = ids[len(ids)-1]
	}
	for id := range waiting {
		p.To.Accounts.Send(id, &account.Take{})
	}
	if active > 0 {
		p.log.Info("resumed publish jobs", "count", active, "accounts", len(waiting))
	}
}

// Remind tells the jobs and accounts whose id match again of what the store holds for them,
// without counting anything into the backlog (Resume did): the finished jobs whose post has not
// taken their outcome hand it on, and every account with targets waiting takes them and reports
// again the outcomes its jobs have not stored (account.Take's Resume). A message between nodes
// that was lost with a node that died is so made good at the next reminder; a repeated one
// changes nothing (Shards runs it periodically).
func (p *Publishing) Remind(match func(id string) bool) {
	var waiting map[string]int
	_ = p.store.View(func(tx *persistence.Tx) error {
		waiting = tx.WaitingCounts()
		return nil
	})
	for after := ""; ; {
		var ids []string
		_ = p.store.View(func(tx *persistence.Tx) error {
			ids = tx.FinishedActiveJobs(after, 1000)
			return nil
		})
		for _, id := range ids {
			if match(id) {
				p.To.Jobs.Send(id, &job.Start{})
			}
		}
		if len(ids) < 1000 {
			break
		}
		after = ids[len(ids)-1]
	}
	for id := range waiting {
		if match(id) {
			p.To.Accounts.Send(id, &account.Take{Resume: true})
		}
	}
}

// PruneEvents deletes, every period until ctx ends, outbox events that every consumer has taken
// more than an hour ago (the hour keeps recent events readable when debugging a delivery).
func (p *Publishing) PruneEvents(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			var n int
			err := p.store.Update(ctx, func(tx *persistence.Tx) error {
				var err error
				n, err = tx.PruneEvents(time.Now().Add(-time.Hour), 1000)
				return err
			})
			if err != nil || n < 1000 {
				break
			}
		}
	}
}

// logFinished logs a finished job with its ids: at info when every target failed, at debug
// otherwise (one line per job is too many for a busy server at info).
func logFinished(log *slog.Logger, j *persistence.Job, d time.Duration) {
	level, msg := slog.LevelDebug, "publish job finished"
	if j.Status == persistence.JobFailed {
		level, msg = slog.LevelInfo, "publish job failed on every target"
	}
	if !log.Enabled(context.Background(), level) {
		return
	}
	completed, failed := j.Counts()
	log.Log(context.Background(), level, msg, "job_id", j.TrackingID, "post_id", j.PostID, "user_id", j.UserID,
		"status", j.Status, "completed", completed, "failed", failed, "duration_ms", d.Milliseconds())
}
