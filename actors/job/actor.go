// Package job is the publish job actor: one virtual actor per job. Its targets wait for their
// connected accounts in the store (persistence jobs_waiting, written with the job), and each
// account takes them in order as its budget allows; the job actor records each phase change its
// accounts report durably before it announces it to stream subscribers, and the transaction
// that makes every target final writes the post's outcome too (Handoff.Settle). A job waiting
// for its accounts has no live actor: a report, a read or a stream activates it from the store.
//
// The reports that reach a job while its previous write commits wait in its mailbox; the job
// stores them together, in order, in one write that encodes the job once (each keeps its own
// seq and timeline entry), and announces them only once it is durable.
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
	// Fence, when several nodes share the store, is the job's shard lease: its writes fence on
	// it (nil: a single process).
	Fence actors.Fence
	// Kept, when set, returns the job as it was last committed on this node (by its post, or by
	// its actor: Keep), with the bytes it was stored as (nil when none is kept). It is shared
	// and never changed. An activation by an account's report takes it as the job's state
	// without reading the store, and the write that stores the report holds only if the store
	// still has those bytes (persistence.Tx.JobStoredAs, in the write's transaction): otherwise
	// the job is read and the write built again. Any other activation reads the job, and keeps
	// the kept one when the store holds it still (persistence.Tx.JobKept) instead of decoding it.
	Kept func(id string) (*persistence.Job, []byte)
	// Keep, when set, is handed each unfinished job its actor stored, with its bytes, for Kept.
	Keep func(j *persistence.Job, raw []byte)
}

// Handoff takes a final job (actors/publishing in Herald).
type Handoff interface {
	// Settle prepares the post's part of the transaction that makes j final, at now: the
	// post's outcome is then written with the job's, in one commit, and the post actor is not
	// activated for it. nil when the post cannot take it there (its record could not be read,
	// it is another job's): the job is stored alone and Finish hands it on after the commit.
	Settle(j *persistence.Job, now time.Time) Settlement
	// Finish hands a final job to its post actor; the post answers with PostSynced.
	Finish(j *persistence.Job)
	// Finished observes every finished job, once, with the time from its creation (metrics).
	Finished(j *persistence.Job, duration time.Duration)
}

// Settlement is a post's part of its job's final transaction (Handoff.Settle).
type Settlement interface {
	// Write stores the post's outcome in the job's transaction; it may run more than once (a
	// group commit replays a write whose batch failed), so it only touches tx.
	Write(tx *persistence.Tx) error
	// Stored announces the outcome once the transaction is durable.
	Stored()
}

// ErrNotSettled is what a Settlement's Write returns when the post, read in the transaction,
// takes no outcome there (it is gone, or takes none from this job): the job is stored alone and
// handed on (Handoff.Finish), as when Settle returns nil.
var ErrNotSettled = errors.New("the post takes no outcome in its job's transaction")

// Followers are the followers of campaigns (campaign.Hub).
type Followers interface {
	Notify(campaignID string)
}

type noHandoff struct{}

func (noHandoff) Settle(*persistence.Job, time.Time) Settlement { return nil }
func (noHandoff) Finish(*persistence.Job)                       {}
func (noHandoff) Finished(*persistence.Job, time.Duration)      {}

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
	// unverified, when set, is the bytes state was kept as (Deps.Kept) when an account's report
	// activated the job without reading it: the next write holds only if the store has them
	// still, and any message but a report reads the job first.
	unverified []byte
	// readErr is why the last read of the job failed (nil: it did not): its state is unknown,
	// and nothing is built on it (a report is never dropped as a gone job's for a read that
	// failed) until a read succeeds.
	readErr error
	// pending are the reports received and not yet stored, in the order they came: what they
	// tell happened (a network call's outcome among them). They are stored together, in one
	// write, once the job has read the reports its mailbox held (flushArmed: a flushReports is
	// on its way behind them), or before any other message. A write the store could not commit
	// leaves them pending, ahead of any later report, until a retryStore stores them.
	// syncUnstored is a post's sync the job could not record.
	pending      []*account.Report
	flushArmed   bool
	syncUnstored bool
	// storeFailures counts the failed commits in a row, storeErr is the last one's error;
	// retryArmed says a retryStore is coming. fenced says a write was refused because the job's
	// shard moved: the actor is stopping.
	storeFailures int
	storeErr      error
	retryArmed    bool
	fenced        bool
}

// retryStore makes a job record again what its store could not commit.
type retryStore struct{}

// flushReports is sent by a job to itself on the first of a run of reports: it reaches the job
// after the reports that were in its mailbox (they queue there while the job's previous write
// commits), and they are stored with it in one write.
type flushReports struct{}

// Busy keeps a job with subscribers, one whose post is taking its outcome, or one with reports
// still to store, from passivating. A job waiting for its accounts' reports is not busy: they
// activate it again from the store.
func (a *Actor) Busy() bool {
	return len(a.subs) > 0 || a.finishing || len(a.pending) > 0 || a.flushArmed || a.syncUnstored || a.retryArmed
}

// Stale reports whether the job's incarnation activated under a lease of its shard this node no
// longer holds (actors.Pin), or that ended itself (a write of it was fenced): the directory
// stops it and hands its messages to a fresh incarnation.
func (a *Actor) Stale() bool { return a.fenced || actors.StaleFence(a.deps.Fence) }

// Settled passivates a job as soon as its post has taken the outcome and no stream follows it:
// nothing more happens to it, and a read activates it again from bbolt.
func (a *Actor) Settled() bool {
	return len(a.subs) == 0 && len(a.pending) == 0 && !a.flushArmed && !a.syncUnstored && !a.retryArmed &&
		a.state != nil && finished(a.state) && a.state.PostSynced
}

// Receive handles the job's messages.
func (a *Actor) Receive(ctx actor.Context) {
	if !a.loaded {
		switch ctx.Message().(type) {
		case actor.SystemMessage, actor.AutoReceiveMessage:
		case *account.Report:
			a.loaded = true
			a.loadKept()
		default:
			a.loaded = true
			a.load()
		}
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// The state is read lazily, on the first message; what the job does is held to the
		// lease of its shard as this node holds it now, before the read.
		a.deps.Fence = actors.Pin(a.deps.Fence, a.id)
		a.loaded = false
		return
	case *account.Report:
		a.pending = append(a.pending, m)
		if !a.flushArmed && !a.retryArmed {
			a.flushArmed = true
			ctx.Send(ctx.Self(), &flushReports{})
		}
		return
	case *flushReports:
		a.flushArmed = false
		a.flush(ctx)
		return
	case *retryStore:
		a.retryArmed = false
		a.flush(ctx)
		if a.syncUnstored && len(a.pending) == 0 && !a.retryArmed {
			a.postSynced(ctx, false)
		}
		return
	case *actor.Stopped:
		a.stopped()
		return
	case actor.SystemMessage, actor.AutoReceiveMessage:
		return
	}
	// Every other message sees the reports that came before it, stored, and the job as stored.
	a.flush(ctx)
	if a.unverified != nil || a.readErr != nil {
		a.load()
	}
	switch m := ctx.Message().(type) {
	case *Start:
		a.start()
	case *Flush:
		if len(m.Reports) > 0 {
			a.pending = append(a.pending, m.Reports...)
			a.flush(ctx)
		}
		switch {
		case a.fenced:
			actors.ReplyError(ctx, persistence.ErrFenced)
		case len(a.pending) > 0 && a.storeErr != nil:
			actors.ReplyError(ctx, a.storeErr)
		default:
			actors.Reply(ctx, &Flushed{})
		}
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
	}
}

// stopped ends an incarnation: reports still pending (a stop that came before the job's
// flushReports) are stored first, once; what the store cannot take then is recovered at the
// next start (their targets still wait for their accounts, and an account resolves a target
// whose call it started before sending it again).
func (a *Actor) stopped() {
	if len(a.pending) > 0 && !a.retryArmed && a.loaded {
		if err := a.record(); err != nil {
			a.deps.Log.Warn("storing a job's progress failed as it stopped; its accounts report it again after a restart", "job_id", a.id, "error", err)
		}
	}
	for s := range a.subs {
		close(s.C)
	}
	a.subs = nil
	a.loaded = false
}

// loadKept takes the kept job as the state without reading it, for an activation by a report,
// when one is kept and unfinished (a finished one may need settling: load decides); the report's
// write verifies it (Deps.Kept). Otherwise it reads the job.
func (a *Actor) loadKept() {
	var kept *persistence.Job
	var raw []byte
	if a.deps.Kept != nil {
		if kept, raw = a.deps.Kept(a.id); kept != nil && !finished(kept) {
			a.state, a.unverified = kept, raw
			return
		}
	}
	a.read(kept, raw)
}

// load reads the job: the state the actor took without reading (loadKept), or the kept one, is
// kept when the store holds it still. A state taken without reading stays, still to be verified,
// when the store cannot be read: the reports built on it are never dropped for a read that
// failed (their write checks it, and a refused one is retried).
func (a *Actor) load() {
	var kept *persistence.Job
	var raw []byte
	if a.unverified != nil {
		kept, raw = a.state, a.unverified
	} else if a.deps.Kept != nil {
		kept, raw = a.deps.Kept(a.id)
	}
	a.read(kept, raw)
}

// read reads the job, keeping kept (stored as raw; nil: none) when the store holds it still.
func (a *Actor) read(kept *persistence.Job, raw []byte) {
	var state *persistence.Job
	err := a.deps.Store.View(func(tx *persistence.Tx) error {
		j, err := tx.JobKept(a.id, kept, raw)
		if errors.Is(err, persistence.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		// A finished job that is no longer to be resumed was settled by its post's commit.
		if !j.PostSynced && finished(j) && !tx.JobActive(a.id) {
			if j == kept {
				j = j.Clone() // the kept job is shared: never written
			}
			j.PostSynced = true
		}
		state = j
		return nil
	})
	if err != nil {
		if a.unverified == nil {
			a.state, a.readErr = nil, err
		}
		return
	}
	a.state, a.unverified, a.readErr = state, nil, nil
}

func (a *Actor) owned(scope string) (*persistence.Job, error) {
	if a.state == nil && a.readErr != nil {
		return nil, a.readErr
	}
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

// start hands a finished job's outcome to its post (again, after a restart, or when a resume
// finds the post has still not taken it: the Finish sent before, or the post's answer, may
// have been lost with a node that died; a post takes a repeated Finish as a no-op). An
// unfinished job's targets wait for their accounts in the store: nothing to send.
func (a *Actor) start() {
	j := a.state
	if j != nil && finished(j) && !j.PostSynced {
		a.finishing = false
		a.finish()
	}
}

// flush stores the pending reports, unless a retry of a write the store could not commit is on
// its way (it stores them, in order).
func (a *Actor) flush(ctx actor.Context) {
	if len(a.pending) == 0 || a.retryArmed {
		return
	}
	if err := a.record(); err != nil {
		a.storeFailed(ctx, err)
		return
	}
	a.storeFailures = 0
}

// storeFailed schedules the retry of what the store could not commit. The first failure of a
// streak is logged; the store's own health is what the operator watches (/readyz, metrics).
func (a *Actor) storeFailed(ctx actor.Context, err error) {
	if errors.Is(err, persistence.ErrFenced) {
		// The job's shard moved to another node: what is pending is not stored here, and is not
		// lost either (its accounts' attempts and waiting targets stay in the store until the
		// new owner stores their outcomes). The actor stops without retrying.
		a.deps.Log.Info("a job's shard moved to another node; its actor stops here", "job_id", a.id)
		// It ends by reporting Stale (never ctx.Stop, which would drop a Flush already in its
		// mailbox unanswered): the directory stops it and hands what comes from outside to a
		// fresh incarnation, whose write is fenced in turn and answered as such.
		a.pending, a.syncUnstored, a.fenced = nil, false, true
		return
	}
	a.storeFailures++
	a.storeErr = err
	if a.storeFailures == 1 {
		a.deps.Log.Warn("storing a job's progress failed; it is retried until the store takes it", "job_id", a.id, "error", err)
	}
	if !a.retryArmed {
		a.retryArmed = true
		actors.SendSelfAfter(ctx, actors.StoreRetryDelay(a.storeFailures), &retryStore{})
	}
}

// batch is what one write of a job stores: the pending reports applied in order.
type batch struct {
	now time.Time
	// next is the job as the reports leave it (nil: none of them changes it), raw its encoding.
	next *persistence.Job
	raw  []byte
	// events are the timeline of each report that changed the job, under its seq.
	events []seqEvents
	// steps are the same events in the job's campaign's timeline (a campaign's job only).
	steps []persistence.CampaignEvent
	// done are the targets whose outcome the write stores: their attempt records go.
	done []int
	// stale are the waiting entries of outcomes that change nothing (a job gone or final, a
	// target reported twice): they go, so that their accounts do not take them again.
	stale []persistence.Waiting
	// changes are the job as each report left it, for the stream's progress events.
	changes []change
	// final says the write makes the job final; settle is then its post's part (nil: the post
	// takes the outcome through Finish after the commit).
	final  bool
	settle Settlement
	// expect, when set, is the bytes the store must hold the job as for the write to hold: the
	// state it was built on was kept, not read (Actor.unverified).
	expect []byte
}

// errUnverified refuses a write built on a kept job the store no longer holds as kept.
var errUnverified = errors.New("the job changed since it was kept")

type seqEvents struct {
	seq uint64
	raw []byte
}

type change struct {
	job    *persistence.Job
	target int
}

// build applies the pending reports, in order, to a copy of the job, and encodes what the write
// stores: the job once, whatever the number of reports.
func (a *Actor) build() (*batch, error) {
	b := &batch{now: a.deps.Now().UTC()}
	watched := len(a.subs) > 0
	cur := a.state
	for _, r := range a.pending {
		if b.next != nil {
			cur = b.next
		}
		idx := -1
		if cur != nil && !finished(cur) {
			for i, t := range cur.Targets {
				if t.Target == r.Target {
					idx = i
				}
			}
		}
		if idx < 0 || cur.Targets[idx].Final() {
			if r.Final && r.AccountID != "" {
				b.stale = append(b.stale, persistence.Waiting{AccountID: r.AccountID, JobID: r.JobID, Target: r.Target})
			}
			continue
		}
		if b.next == nil {
			b.next = cur.Clone()
		}
		next := b.next
		t := applyReport(&next.Targets[idx], r)
		if next.Status == persistence.JobQueued {
			next.Status = persistence.JobProcessing
		}
		allFinal := true
		for _, t := range next.Targets {
			allFinal = allFinal && t.Final()
		}
		events := timeline(r, t.Phase, b.now)
		if allFinal {
			completed, _ := next.Counts()
			next.Status = persistence.JobFailed
			if completed > 0 {
				next.Status = persistence.JobCompleted
			}
			now := b.now
			next.CompletedAt = &now
			b.final = true
		}
		next.Seq++
		raw, err := persistence.Encode(events)
		if err != nil {
			return nil, err
		}
		b.events = append(b.events, seqEvents{seq: next.Seq, raw: raw})
		b.steps = append(b.steps, campaignSteps(next, t, events)...)
		if r.Final {
			b.done = append(b.done, r.Target)
		}
		snapshot := next
		if watched {
			// Later reports of the batch change next in place; a stream sees each step.
			snapshot = next.Clone()
		}
		b.changes = append(b.changes, change{job: snapshot, target: r.Target})
	}
	return b, nil
}

// applyReport sets a target as a report tells it, and returns it.
func applyReport(t *persistence.JobTarget, r *account.Report) *persistence.JobTarget {
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
	return t
}

// encode encodes the job as the batch leaves it; a final job its post settles in the same
// transaction is stored synced.
func (b *batch) encode() error {
	if b.next == nil {
		return nil
	}
	b.next.PostSynced = b.settle != nil
	var err error
	b.raw, err = persistence.Encode(b.next)
	return err
}

// write is the batch's transaction. Built on a kept job, it is refused unless the store holds
// that job still; the check does not end the function early, so that on PostgreSQL a probe of it
// (Store.UpdateAhead) notes every row it reads at once.
func (b *batch) write(tx *persistence.Tx, id string) error {
	held := b.expect == nil || tx.JobStoredAs(id, b.expect)
	err := b.writes(tx, id)
	if !held {
		return errUnverified
	}
	return err
}

// writes are the batch's writes.
func (b *batch) writes(tx *persistence.Tx, id string) error {
	for _, target := range b.done {
		// The outcome is stored: the account's attempt record is no longer needed.
		if err := tx.DeleteAttempt(id, target); err != nil {
			return err
		}
	}
	for _, w := range b.stale {
		if err := tx.StopWaiting(w); err != nil {
			return err
		}
	}
	if b.next == nil {
		return nil
	}
	for _, e := range b.events {
		if err := tx.PutJobEvents(id, e.seq, e.raw); err != nil {
			return err
		}
	}
	if len(b.steps) > 0 {
		if err := tx.AppendCampaignEvents(b.next.CampaignID, b.steps); err != nil {
			return err
		}
	}
	if err := tx.PutJobEncoded(b.next, b.raw); err != nil {
		return err
	}
	if b.settle != nil {
		return b.settle.Write(tx)
	}
	return nil
}

// record stores the pending reports durably in one write, then applies and announces them. It
// fails only when the store could not take them, and then changes nothing: they stay pending.
// A write built on a kept job that the store no longer holds as kept is built again on the job
// as stored.
func (a *Actor) record() error {
	if a.readErr != nil {
		if a.load(); a.readErr != nil {
			return a.readErr
		}
	}
	err := a.recordOnce()
	if errors.Is(err, errUnverified) {
		a.deps.Log.Debug("a job changed since it was kept; it is read and its reports stored again", "job_id", a.id)
		a.load()
		err = a.recordOnce()
	}
	return err
}

func (a *Actor) recordOnce() error {
	b, err := a.build()
	if err != nil {
		return err
	}
	if b.next == nil && len(b.stale) == 0 {
		a.pending = nil
		return nil
	}
	b.expect = a.unverified
	if b.final {
		b.settle = a.deps.Handoff.Settle(b.next, b.now)
	}
	if err := b.encode(); err != nil {
		return err
	}
	// Read ahead on PostgreSQL (persistence.Store.UpdateAhead): write sets nothing outside the
	// transaction but the ids and numbers of the events it appends, on every run.
	err = actors.UpdateAhead(context.Background(), a.deps.Store, a.deps.Fence, a.id, func(tx *persistence.Tx) error { return b.write(tx, a.id) })
	if err != nil && b.settle != nil && !errors.Is(err, errUnverified) && !errors.Is(err, persistence.ErrWriteFailed) && !errors.Is(err, persistence.ErrClosed) && !errors.Is(err, persistence.ErrFenced) {
		// The post's part was refused (a record it reads is damaged, or the post it was built
		// on changed since it was kept): the job is stored alone, and its post takes the
		// outcome through Finish, as after a restart.
		switch {
		case errors.Is(err, persistence.ErrChanged):
			a.deps.Log.Debug("a job's post changed since it was kept; the post takes the outcome on its own", "job_id", a.id)
		case errors.Is(err, ErrNotSettled):
			a.deps.Log.Debug("a job's post takes no outcome in the job's transaction; the post decides on its own", "job_id", a.id)
		default:
			a.deps.Log.Warn("storing a job's outcome with its post's failed; the post takes it on its own", "job_id", a.id, "error", err)
		}
		b.settle = nil
		if err := b.encode(); err != nil {
			return err
		}
		err = actors.UpdateAhead(context.Background(), a.deps.Store, a.deps.Fence, a.id, func(tx *persistence.Tx) error { return b.write(tx, a.id) })
	}
	if err != nil {
		return err
	}
	a.pending, a.unverified = nil, nil
	next := b.next
	if next == nil {
		return nil
	}
	if !b.final && a.deps.Keep != nil {
		a.deps.Keep(next, b.raw)
	}
	if b.settle != nil {
		b.settle.Stored()
	}
	if len(b.steps) > 0 && a.deps.Campaigns != nil {
		a.deps.Campaigns.Notify(next.CampaignID)
	}
	// States are never changed in place once applied (every change builds a new one), so
	// events share them.
	a.state = next
	for _, c := range b.changes {
		a.broadcast(&Event{Name: "progress", ID: c.job.Seq, Job: c.job, Target: c.target})
	}
	if b.final {
		a.deps.Handoff.Finished(next, b.now.Sub(next.CreatedAt))
		a.broadcast(&Event{Name: "done", ID: next.Seq, Job: next, Target: -1})
		for s := range a.subs {
			close(s.C)
		}
		a.subs = nil
		if b.settle == nil {
			a.finish()
		}
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
		err = actors.Update(context.Background(), a.deps.Store, a.deps.Fence, a.id, func(tx *persistence.Tx) error { return tx.PutJobEncoded(next, raw) })
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
