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
		StartJob:  func(j *persistence.Job, p *persistence.Post) { a.Jobs.Send(j.TrackingID, &job.Start{Job: j, Post: p}) },
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
		Name: "herald_jobs_in_hand", Help: "Publish jobs started and not yet final (live job actors); publish requests are refused while it is at herald_jobs_in_hand_limit.",
	}, func() float64 { return float64(a.JobBacklog.Len()) })
	backlogLimit := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_jobs_in_hand_limit", Help: "The publish jobs in hand beyond which publish requests are refused (--max-job-backlog; 0: no limit).",
	}, func() float64 { return float64(a.JobBacklog.Limit()) })
	a.Registry.MustRegister(outcomes, durations, backlog, backlogLimit)
	a.Jobs = actors.NewDirectory(a.Actors, job.Kind(job.Deps{
		Store: a.Store, Log: a.Log, Media: a.MediaResolver, IdleTimeout: orDefault(a.Cfg.PostIdleTimeout, 30*time.Second), Backlog: a.JobBacklog,
		SendAccount: func(id string, m *account.Publish) { a.Accounts.Send(id, m) },
		Finish:      func(j *persistence.Job) { a.Posts.Send(j.PostID, &post.Finish{Job: j}) },
		Finished: func(j *persistence.Job, d time.Duration) {
			outcomes.WithLabelValues(j.Status).Inc()
			durations.Observe(d.Seconds())
			logJobFinished(a.Log, j, d)
		},
		CampaignProgress: a.CampaignHub.Notify,
	}))
	a.Scheduler = scheduler.New(a.Store, a.Posts, scheduler.Options{Log: a.Log, Registry: a.Registry})
	pd := a.postDeps()
	a.Campaigns = actors.NewDirectory(a.Actors, campaign.Kind(campaign.Deps{
		Store: a.Store, Posts: a.Posts, StartJob: pd.StartJob, Scheduled: pd.Scheduled, Events: a.Events, Changed: a.CampaignHub.Notify,
		Log: a.Log, IdleTimeout: orDefault(a.Cfg.PostIdleTimeout, 30*time.Second),
	}))
}

// startPublishing resumes every job that was queued or processing when Herald stopped (a target
// in flight is resolved, never sent twice blindly) and starts the scheduler, which fires at once
// the posts that came due meanwhile.
func (a *App) startPublishing() {
	var active []string
	_ = a.Store.View(func(tx *persistence.Tx) error {
		active = tx.ActiveJobs()
		return nil
	})
	for _, id := range active {
		a.Jobs.Send(id, &job.Start{Resume: true})
	}
	if len(active) > 0 {
		a.Log.Info("resumed publish jobs", "count", len(active))
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
