package app

import (
	"context"
	"log/slog"
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

// DefaultFreePostQuota is the free plan's published or scheduled posts per calendar month.
const DefaultFreePostQuota = 10

// postDeps are the post actors' links to jobs, the scheduler and the outbox; the closures reach
// components built after the post directory.
func (a *App) postDeps() post.Deps {
	return post.Deps{
		Store: a.Store, Events: a.Events, IdleTimeout: orDefault(a.Cfg.PostIdleTimeout, 30*time.Second), Log: a.Log,
		StartJob:  func(j *persistence.Job, p *persistence.Post) { a.takeJob(j, p) },
		Synced:    func(id string, stored bool) { a.Jobs.Send(id, &job.PostSynced{Stored: stored}) },
		Scheduled: func(at time.Time) { a.Scheduler.Scheduled(at) },
		// The hub is built before the post directory.
		CampaignChanged: a.CampaignHub.Notify,
	}
}

// buildPublishing starts the job directory and the scheduler.
func (a *App) buildPublishing() {
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_jobs_finished_total", Help: "Publish jobs finished, by status (completed, failed).",
	}, []string{"status"})
	durations := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "herald_job_duration_seconds", Help: "Time from a job's creation to its last target's outcome.",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
	})
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_jobs_in_hand", Help: "Publishes in hand: targets whose outcome is not known and that their accounts could send as their turn comes (waiting in the store or taken), except those held back by a rate budget or a retry; publish requests are refused while it is at herald_jobs_in_hand_limit.",
	}, func() float64 { return float64(a.JobBacklog.Len()) })
	backlogLimit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_jobs_in_hand_limit", Help: "The publish jobs in hand beyond which publish requests are refused (--max-job-backlog; 0: no limit).",
	}, func() float64 { return float64(a.JobBacklog.Limit()) })
	a.Registry.MustRegister(outcomes, durations, backlog, backlogLimit)
	a.Jobs = actors.NewDirectory(a.Actors, a.capped(job.Kind(job.Deps{
		Store: a.Store, Log: a.Log, IdleTimeout: orDefault(a.Cfg.PostIdleTimeout, 30*time.Second),
		Finish: func(j *persistence.Job) { a.Posts.Send(j.PostID, &post.Finish{Job: j}) },
		Finished: func(j *persistence.Job, d time.Duration) {
			outcomes.WithLabelValues(j.Status).Inc()
			durations.Observe(d.Seconds())
			logJobFinished(a.Log, j, d)
		},
		CampaignProgress: a.CampaignHub.Notify,
	})))
	a.Scheduler = scheduler.New(a.Store, a.Posts, scheduler.Options{Log: a.Log, Registry: a.Registry})
	pd := a.postDeps()
	a.Campaigns = actors.NewDirectory(a.Actors, a.capped(campaign.Kind(campaign.Deps{
		Store: a.Store, Posts: a.Posts, StartJob: pd.StartJob, Scheduled: pd.Scheduled, Events: a.Events, Changed: a.CampaignHub.Notify,
		Log: a.Log, IdleTimeout: orDefault(a.Cfg.PostIdleTimeout, 30*time.Second),
	})))
}

// takeJob tells the accounts of a committed job's open targets that they wait for them in the
// store; the post is kept for them among the recently started ones.
func (a *App) takeJob(j *persistence.Job, p *persistence.Post) {
	if p != nil {
		a.startedPosts.Put(p.ID, &persistence.PostContent{UserID: p.UserID, Content: p.Content, MediaIDs: p.MediaIDs})
	}
	waiting := make(map[string]int, len(j.Targets))
	for _, t := range j.Targets {
		if !t.Final() && t.AccountID != "" {
			waiting[t.AccountID]++
		}
	}
	for id, n := range waiting {
		a.JobBacklog.Queued(id, n)
		a.Accounts.Send(id, &account.Take{})
	}
}

// startPublishing resumes every job that was queued or processing when Herald stopped and starts
// the scheduler, which fires at once the posts that came due meanwhile. The open targets wait for
// their accounts in the store: each account with some is told to take them (a target that was in
// flight is resolved, never sent twice blindly), and nothing of a job is loaded until its account
// reports; the finished jobs whose post had not taken the outcome are handed to their posts.
func (a *App) startPublishing() {
	var accounts []string
	var active int
	var waiting map[string]int
	_ = a.Store.View(func(tx *persistence.Tx) error {
		waiting = tx.WaitingCounts()
		active, _ = tx.ActiveJobStats()
		return nil
	})
	for id := range waiting {
		accounts = append(accounts, id)
	}
	a.JobBacklog.Set(waiting)
	for after := ""; ; {
		var ids []string
		_ = a.Store.View(func(tx *persistence.Tx) error {
			ids = tx.FinishedActiveJobs(after, 1000)
			return nil
		})
		for _, id := range ids {
			a.Jobs.Send(id, &job.Start{Resume: true})
		}
		if len(ids) < 1000 {
			break
		}
		after = ids[len(ids)-1]
	}
	for _, id := range accounts {
		a.Accounts.Send(id, &account.Take{})
	}
	if active > 0 {
		a.Log.Info("resumed publish jobs", "count", active, "accounts", len(accounts))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Scheduler.Run(ctx)
	}()
	go a.pruneEvents(ctx)
	a.stopScheduler = func() {
		cancel()
		<-done
	}
}

// pruneEvents deletes, every minute, outbox events that every consumer has taken more than an
// hour ago (the hour keeps recent events readable when debugging a delivery).
func (a *App) pruneEvents(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			var n int
			err := a.Store.Update(ctx, func(tx *persistence.Tx) error {
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

// DefaultMaxJobBacklog is the publish jobs in hand beyond which publish requests are refused,
// when --max-job-backlog is not given (docs/operations.md, Overload).
const DefaultMaxJobBacklog = 4096

func jobBacklogLimit(n int) int {
	switch {
	case n == 0:
		return DefaultMaxJobBacklog
	case n < 0:
		return 0
	}
	return n
}

func freeQuota(n int) int {
	switch {
	case n == 0:
		return DefaultFreePostQuota
	case n < 0:
		return 0
	}
	return n
}

// logJobFinished logs a finished job with its ids: at info when every target failed, at debug
// otherwise (one line per job is too many for a busy server at info).
func logJobFinished(log *slog.Logger, j *persistence.Job, d time.Duration) {
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
