// Package job is the publish job actor: one virtual actor per job. Its targets wait for their
// connected accounts in the store (persistence jobs_waiting, written with the job), and each
// account takes them in order as its budget allows; the job actor records each phase change its
// accounts report durably before it announces it to stream subscribers, and when every target
// is final hands the outcome to the post. A job waiting for its accounts has no live actor: a
// report, a read or a stream activates it from the store.
//
// Job status: queued (created) → processing (the first account report) → completed (every
// target final and at least one succeeded) or failed (every target failed). A job whose targets
// partly failed is completed; its post is partial. Herald never reports a job as partial: the
// per-target phases say which failed.
package job

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
)

// KindName labels the job actor in metrics.
const KindName = "job"

// ErrNotFound means there is no job with this id.
var ErrNotFound = errors.New("job not found")

// ErrForbidden means the job belongs to another user, or to another workspace of its user.
var ErrForbidden = errors.New("job belongs to another user or workspace")

// Deps are what job actors need.
type Deps struct {
	Store *persistence.Store
	// Handoff takes the job's outcome once it is final (nil: nobody takes it).
	Handoff     Handoff
	Now         func() time.Time
	Log         *slog.Logger
	IdleTimeout time.Duration

	// Campaigns tells the followers of a campaign (its streams) that a job of one of its posts
	// recorded steps in the campaign's timeline (nil: nobody follows).
	Campaigns Followers
}

// Handoff takes a final job (actors/publishing in Herald).
type Handoff interface {
	// Finish hands a final job to its post actor; the post answers with PostSynced.
	Finish(j *persistence.Job)
	// Finished observes every finished job, once, with the time from its creation (metrics).
	Finished(j *persistence.Job, duration time.Duration)
}

// Followers are the followers of campaigns (campaign.Hub).
type Followers interface {
	Notify(campaignID string)
}

type noHandoff struct{}

func (noHandoff) Finish(*persistence.Job)                  {}
func (noHandoff) Finished(*persistence.Job, time.Duration) {}

// Kind returns the job actor kind.
func Kind(d Deps) actors.Kind {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Handoff == nil {
		d.Handoff = noHandoff{}
	}
	return actors.Kind{Name: KindName, IdleTimeout: d.IdleTimeout, New: func(id string) actor.Actor { return &Actor{id: id, deps: d} }}
}

// Actor is one job.
type Actor struct {
	id    string
	deps  Deps
	state *persistence.Job
	subs  map[*Subscriber]bool
	// finishing is set while the post takes the outcome.
	finishing bool
	// loaded tells whether state reflects bbolt (read on the first message after a start,
	// unless that message carries the job).
	loaded bool
	// unstored are the reports whose commit failed because the store could not write, in the
	// order they came: what they tell happened (a network call's outcome among them), so they are
	// recorded again, in order and ahead of any later report, until the store takes them
	// (retryStore). syncUnstored is a post's sync the job could not record.
	unstored     []*account.Report
	syncUnstored bool
	// storeFailures counts the failed commits in a row; retryArmed says a retryStore is coming.
	storeFailures int
	retryArmed    bool
}

// retryStore makes a job record again what its store could not commit.
type retryStore struct{}

// Busy keeps a job with subscribers, one whose post is taking its outcome, or one with reports
// still to store, from passivating. A job waiting for its accounts' reports is not busy: they
// activate it again from the store.
func (a *Actor) Busy() bool {
	return len(a.subs) > 0 || a.finishing || len(a.unstored) > 0 || a.syncUnstored || a.retryArmed
}

// Settled passivates a job as soon as its post has taken the outcome and no stream follows it:
// nothing more happens to it, and a read activates it again from bbolt.
func (a *Actor) Settled() bool {
	return len(a.subs) == 0 && len(a.unstored) == 0 && !a.syncUnstored && !a.retryArmed &&
		a.state != nil && finished(a.state) && a.state.PostSynced
}

// Receive handles the job's messages.
func (a *Actor) Receive(ctx actor.Context) {
	if !a.loaded {
		switch ctx.Message().(type) {
		case actor.SystemMessage, actor.AutoReceiveMessage:
		default:
			a.loaded = true
			a.load()
		}
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// The state is read lazily, on the first message.
		a.loaded = false
	case *actor.Stopped:
		for s := range a.subs {
			close(s.C)
		}
		a.subs = nil
		a.loaded = false
	case *Start:
		a.start()
	case *account.Report:
		a.report(ctx, m)
	case *Get:
		if j, err := a.owned(m.Scope); err != nil {
			actors.ReplyError(ctx, err)
		} else {
			actors.Reply(ctx, &Reply{Job: j.Clone()})
		}
	case *Subscribe:
		a.subscribe(ctx, m)
	case *Unsubscribe:
		if a.subs[m.Sub] {
			delete(a.subs, m.Sub)
			close(m.Sub.C)
		}
	case *PostSynced:
		a.postSynced(ctx, m.Stored)
	case *retryStore:
		a.retryArmed = false
		a.drain(ctx)
		if a.syncUnstored && len(a.unstored) == 0 {
			a.postSynced(ctx, false)
		}
	}
}

func (a *Actor) load() {
	a.state = nil
	_ = a.deps.Store.View(func(tx *persistence.Tx) error {
		if j, err := tx.Job(a.id); err == nil {
			// A finished job that is no longer to be resumed was settled by its post's commit.
			j.PostSynced = j.PostSynced || (finished(j) && !tx.JobActive(a.id))
			a.state = j
		}
		return nil
	})
}

func (a *Actor) owned(scope string) (*persistence.Job, error) {
	if a.state == nil {
		return nil, ErrNotFound
	}
	if a.state.Scope() != scope {
		return nil, ErrForbidden
	}
	return a.state, nil
}

func finished(j *persistence.Job) bool {
	return j.Status == persistence.JobCompleted || j.Status == persistence.JobFailed
}

// start hands a finished job's outcome to its post (again, after a restart). An unfinished
// job's targets wait for their accounts in the store: nothing to send.
func (a *Actor) start() {
	j := a.state
	if j != nil && finished(j) && !j.PostSynced {
		a.finish()
	}
}

func (a *Actor) report(ctx actor.Context, r *account.Report) {
	if a.state == nil || finished(a.state) {
		a.stale(r)
		return
	}
	a.record(ctx, r)
}

// stale takes the outcome of a target whose job is gone or already final (a report that came
// twice, a store with a damaged job): it is not recorded, but its entry leaves jobs_waiting so
// that the account does not take the target again.
func (a *Actor) stale(r *account.Report) {
	if !r.Final || r.AccountID == "" {
		return
	}
	w := persistence.Waiting{AccountID: r.AccountID, JobID: r.JobID, Target: r.Target}
	if err := a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.StopWaiting(w) }); err != nil {
		a.deps.Log.Warn("removing a stale waiting publish failed; its account takes it again later", "job_id", r.JobID, "error", err)
	}
}

// record applies a report, after those still waiting for the store: a report whose commit fails
// because the store cannot write waits with them, to be recorded again (drain).
func (a *Actor) record(ctx actor.Context, r *account.Report) {
	if len(a.unstored) > 0 {
		a.unstored = append(a.unstored, r)
		return
	}
	if err := a.apply(r); err != nil {
		a.unstored = append(a.unstored, r)
		a.storeFailed(ctx, err)
		return
	}
	a.storeFailures = 0
}

// drain records the reports waiting for the store, in order, until one fails again.
func (a *Actor) drain(ctx actor.Context) {
	for len(a.unstored) > 0 {
		if a.state == nil || finished(a.state) {
			a.unstored = nil // what came after the last target's outcome changes nothing
			break
		}
		if err := a.apply(a.unstored[0]); err != nil {
			a.storeFailed(ctx, err)
			return
		}
		a.unstored = a.unstored[1:]
	}
	a.unstored = nil
	a.storeFailures = 0
}

// storeFailed schedules the retry of what the store could not commit. The first failure of a
// streak is logged; the store's own health is what the operator watches (/readyz, metrics).
func (a *Actor) storeFailed(ctx actor.Context, err error) {
	a.storeFailures++
	if a.storeFailures == 1 {
		a.deps.Log.Warn("storing a job's progress failed; it is retried until the store takes it", "job_id", a.id, "error", err)
	}
	if !a.retryArmed {
		a.retryArmed = true
		actors.SendSelfAfter(ctx, actors.StoreRetryDelay(a.storeFailures), &retryStore{})
	}
}

// apply records one report durably, then announces it. It fails only when the report could not
// be stored, and then changes nothing.
func (a *Actor) apply(r *account.Report) error {
	cur := a.state
	idx := -1
	for i, t := range cur.Targets {
		if t.Target == r.Target {
			idx = i
		}
	}
	if idx < 0 || cur.Targets[idx].Final() {
		a.stale(r)
		return nil
	}
	next := cur.Clone()
	t := &next.Targets[idx]
	switch {
	case r.Final && r.Success:
		t.Phase, t.PublicationID, t.URL = persistence.PhaseSuccess, r.Publication.ID, r.Publication.URL
	case r.Final:
		t.Phase = persistence.PhaseFailed
	default:
		t.Phase = persistence.PhaseUploading
	}
	t.Message = r.Message
	if r.Publication.ID != "" {
		// A target published in steps is known on its network from its first step on, whatever
		// becomes of the rest.
		t.PublicationID, t.URL = r.Publication.ID, r.Publication.URL
	}
	if r.Parts != nil {
		t.Parts = r.Parts
	}
	if r.Comment != nil {
		t.Comment = r.Comment
	}
	if next.Status == persistence.JobQueued {
		next.Status = persistence.JobProcessing
	}
	allFinal := true
	for _, t := range next.Targets {
		allFinal = allFinal && t.Final()
	}
	now := a.deps.Now().UTC()
	events := timeline(r, t.Phase, now)
	if allFinal {
		completed, _ := next.Counts()
		next.Status = persistence.JobFailed
		if completed > 0 {
			next.Status = persistence.JobCompleted
		}
		next.CompletedAt = &now
	}
	next.Seq++
	// Encoded outside the transaction that many actors share.
	raw, err := persistence.Encode(next)
	var rawEvents []byte
	if err == nil {
		rawEvents, err = persistence.Encode(events)
	}
	steps := campaignSteps(next, t, events)
	if err == nil {
		err = a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error {
			if r.Final {
				// The outcome is stored: the account's attempt record is no longer needed.
				if err := tx.DeleteAttempt(a.id, r.Target); err != nil {
					return err
				}
			}
			if err := tx.PutJobEvents(a.id, next.Seq, rawEvents); err != nil {
				return err
			}
			if steps != nil {
				if err := tx.AppendCampaignEvents(next.CampaignID, steps); err != nil {
					return err
				}
			}
			return tx.PutJobEncoded(next, raw)
		})
	}
	if err != nil {
		return err
	}
	if steps != nil && a.deps.Campaigns != nil {
		a.deps.Campaigns.Notify(next.CampaignID)
	}
	// States are never changed in place (every change builds a new one), so events share them.
	a.state = next
	a.broadcast(&Event{Name: "progress", ID: next.Seq, Job: next, Target: r.Target})
	if allFinal {
		a.deps.Handoff.Finished(next, now.Sub(next.CreatedAt))
		a.broadcast(&Event{Name: "done", ID: next.Seq, Job: next, Target: -1})
		for s := range a.subs {
			close(s.C)
		}
		a.subs = nil
		a.finish()
	}
	return nil
}

// timeline returns the events of one report: its step (waiting, retrying, resolved) when it
// names one, and the target's new phase when it has no step or is final. They are stored with
// the change (persistence.Tx.PutJobEvents).
func timeline(r *account.Report, phase string, at time.Time) []persistence.JobEvent {
	out := make([]persistence.JobEvent, 0, 2)
	if r.Event != "" {
		msg := r.Message
		if r.Final && r.Event == persistence.EventResolved {
			msg = "the outcome was unknown; the post was found on the network"
		}
		out = append(out, persistence.JobEvent{Target: r.Target, Phase: r.Event, Message: msg, At: at})
	}
	if r.Event == "" || r.Final {
		out = append(out, persistence.JobEvent{Target: r.Target, Phase: phase, Message: r.Message, At: at})
	}
	return out
}

// campaignSteps are the events of one report as the job's campaign records them (nil for a job
// outside a campaign): the job's own timeline events, with the post, job and target named.
func campaignSteps(j *persistence.Job, t *persistence.JobTarget, events []persistence.JobEvent) []persistence.CampaignEvent {
	if j.CampaignID == "" {
		return nil
	}
	out := make([]persistence.CampaignEvent, len(events))
	for i, e := range events {
		out[i] = persistence.CampaignEvent{PostID: j.PostID, TrackingID: j.TrackingID, Target: e.Target, Platform: t.Platform,
			AccountID: t.AccountID, Phase: e.Phase, Message: e.Message, At: e.At}
	}
	return out
}

func (a *Actor) broadcast(e *Event) {
	for s := range a.subs {
		select {
		case s.C <- e:
		default:
			// The client does not keep up: drop it rather than stall the job.
			delete(a.subs, s)
			close(s.C)
		}
	}
}

func (a *Actor) finish() {
	if a.finishing {
		return
	}
	a.finishing = true
	a.deps.Handoff.Finish(a.state.Clone())
}

func (a *Actor) postSynced(ctx actor.Context, stored bool) {
	a.finishing = false
	a.syncUnstored = false
	if a.state == nil || a.state.PostSynced {
		return
	}
	next := a.state.Clone()
	next.PostSynced = true
	if stored {
		a.state = next
		return
	}
	raw, err := persistence.Encode(next)
	if err == nil {
		err = a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutJobEncoded(next, raw) })
	}
	if err != nil {
		a.syncUnstored = true
		a.storeFailed(ctx, err)
		return
	}
	a.storeFailures = 0
	a.state = next
}

func (a *Actor) subscribe(ctx actor.Context, m *Subscribe) {
	j, err := a.owned(m.Scope)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if finished(j) {
		actors.Reply(ctx, &SubscribeReply{Job: j.Clone(), Done: true})
		return
	}
	if a.subs == nil {
		a.subs = map[*Subscriber]bool{}
	}
	a.subs[m.Sub] = true
	actors.Reply(ctx, &SubscribeReply{Job: j.Clone()})
}
