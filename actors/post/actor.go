// Package post is the post actor: one virtual actor per post, owning its state. It loads the post
// from bbolt when activated, and every change is built as a copy, committed, and only then
// applied and answered.
package post

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
)

// KindName labels the post actor in metrics.
const KindName = "post"

// Deps are what post actors need.
type Deps struct {
	Store *persistence.Store
	Now   func() time.Time
	// Handoff hears what the post committed: a job to start, a job's outcome taken, a new
	// scheduled time (nil: nobody hears).
	Handoff Handoff
	// Events is notified after an event is committed to the outbox.
	Events *actors.Notifier
	Log    *slog.Logger
	// IdleTimeout passivates idle post actors (default 2m).
	IdleTimeout time.Duration

	// Campaigns tells the followers of a campaign (its streams) that the status of one of its
	// posts changed (nil: nobody follows).
	Campaigns Followers
	// Fence, when several nodes share the store, is the post's shard lease: its writes fence on
	// it, and a request whose write it refuses changes nothing (nil: a single process).
	Fence actors.Fence
	// Keep, when set, is handed a post published at its creation and its new job as committed,
	// with the bytes they were stored as, before the hand-off starts the job: their readers
	// (the job's actor, its outcome) build on them without reading the store, and their writes
	// hold only while the store holds those bytes still (persistence.Tx.JobStoredAs,
	// PostStoredAs). What it is handed is shared and never changed.
	Keep func(*Committed)
}

// Committed is a new job and its post as committed, with the bytes each was stored as.
type Committed struct {
	Job     *persistence.Job
	JobRaw  []byte
	Post    *persistence.Post
	PostRaw []byte
}

// tryUpdate is the post id's write a request waits on, fenced on its shard's lease.
func (d *Deps) tryUpdate(id string, fn func(*persistence.Tx) error) error {
	return actors.TryUpdate(d.Store, d.Fence, id, fn)
}

// update is the post id's write of work already accepted, fenced on its shard's lease.
func (d *Deps) update(id string, fn func(*persistence.Tx) error) error {
	return actors.Update(context.Background(), d.Store, d.Fence, id, fn)
}

// Followers are the followers of campaigns (campaign.Hub).
type Followers interface {
	Notify(campaignID string)
}

// Handoff is where a post actor hands on what it committed, once it is committed
// (actors/publishing in Herald).
type Handoff interface {
	// StartJob: a job was committed, with the post as committed; its accounts take its targets
	// from the store.
	StartJob(j *persistence.Job, p *persistence.Post)
	// Synced tells a job that the post took its outcome; stored says that the post's commit
	// also settled the job (persistence.Tx.SettleJob), so the job need not write.
	Synced(jobID string, stored bool)
	// Scheduled tells the scheduler of a newly scheduled time.
	Scheduled(at time.Time)
}

// NoHandoff hears nothing (a post directory of its own, in tools and tests).
type NoHandoff struct{}

func (NoHandoff) StartJob(*persistence.Job, *persistence.Post) {}
func (NoHandoff) Synced(string, bool)                          {}
func (NoHandoff) Scheduled(time.Time)                          {}

// StartFunc is a Handoff that hears only the jobs started (a post directory of its own, in tools
// and tests), as http.HandlerFunc is a handler.
type StartFunc func(j *persistence.Job, p *persistence.Post)

func (f StartFunc) StartJob(j *persistence.Job, p *persistence.Post) { f(j, p) }
func (StartFunc) Synced(string, bool)                                {}
func (StartFunc) Scheduled(time.Time)                                {}

// Kind returns the post actor kind for an activation directory.
func Kind(d Deps) actors.Kind {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Handoff == nil {
		d.Handoff = NoHandoff{}
	}
	return actors.Kind{
		Name:        KindName,
		IdleTimeout: d.IdleTimeout,
		New:         func(id string) actor.Actor { return &Actor{id: id, deps: d} },
		Creator:     creator{d},
	}
}

// creator commits drafts (Create) and new posts published at once (Publish with Create) without
// activating their actors: a new draft's next message (its read, edit, publish) is usually far
// off, and a publishing post's is its job's outcome; an incarnation kept for either until then
// costs more than the write. Schedule that creates its post does go through the actor.
type creator struct{ deps Deps }

func (creator) Creates(msg any) bool {
	switch m := msg.(type) {
	case *Create:
		return true
	case *Publish:
		return m.Create != nil
	}
	return false
}

func (c creator) Create(id string, msg any) any {
	if m, ok := msg.(*Publish); ok {
		return createAndPublish(c.deps, id, m)
	}
	p, err := createPost(&c.deps, id, msg.(*Create))
	if err != nil {
		return &actors.ErrorReply{Err: err}
	}
	return &Reply{Post: p}
}

// Actor is one post.
type Actor struct {
	id    string
	deps  Deps
	state *persistence.Post // nil: no such post
	// loaded tells whether state reflects bbolt (it is read on the first message after a start).
	loaded bool
	// unfinished is a job's outcome the store could not commit: the job is done on the networks,
	// so it is taken again after a wait (retryFinish) until the store takes it; storeFailures
	// counts the failed commits in a row.
	unfinished    *Finish
	storeFailures int
}

// retryFinish makes the post take again an outcome its store could not commit.
type retryFinish struct{}

// Busy keeps a post that still has to store a job's outcome from passivating.
func (a *Actor) Busy() bool { return a.unfinished != nil }

// Stale reports whether the post's incarnation activated under a lease of its shard this node no
// longer holds (actors.Pin): the directory hands its messages to a fresh incarnation.
func (a *Actor) Stale() bool { return actors.StaleFence(a.deps.Fence) }

// Settled passivates a post as soon as it waits for something far off: a scheduled post for its
// time, a publishing post for its job's outcome (its targets wait for their accounts in the
// store), a post that a job's outcome made published, partial or failed for a read or a new
// publish of what failed. Its next message activates it again from the store, so that a
// backlog of scheduled or publishing posts holds no actors. A draft stays for its idle timeout:
// an edit is often followed by another.
func (a *Actor) Settled() bool {
	if a.state == nil || a.unfinished != nil {
		return false
	}
	switch a.state.Status {
	case persistence.PostScheduled, persistence.PostPublishing, persistence.PostPublished, persistence.PostPartial, persistence.PostFailed,
		persistence.PostPendingApproval:
		return true
	}
	return false
}

// isCreate reports whether a message creates its post.
func isCreate(m any) bool {
	switch m := m.(type) {
	case *Create:
		return true
	case *Publish:
		return m.Create != nil
	case *Schedule:
		return m.Create != nil
	}
	return false
}

// Receive handles the post's messages.
func (a *Actor) Receive(ctx actor.Context) {
	msg := ctx.Message()
	switch msg.(type) {
	case *actor.Started:
		// The state is read lazily: a post created by this very message needs no read (its
		// transaction checks that the id is free). What it does is held to the lease of its
		// shard as this node holds it now, before the read.
		a.deps.Fence = actors.Pin(a.deps.Fence, a.id)
		a.loaded = false
		return
	case actor.SystemMessage, actor.AutoReceiveMessage:
		return
	}
	if !a.loaded {
		a.loaded = true
		if isCreate(msg) {
			a.state = nil
		} else {
			a.load()
		}
	}
	switch m := ctx.Message().(type) {
	case *Create:
		a.create(ctx, m)
	case *Get:
		if p, err := a.owned(m.Scope); err != nil {
			actors.ReplyError(ctx, err)
		} else {
			actors.Reply(ctx, &Reply{Post: p.Clone()})
		}
	case *Update:
		a.update(ctx, m)
	case *Delete:
		a.delete(ctx, m)
	default:
		a.receiveLifecycle(ctx)
	}
}

// load reads the committed state; it runs on activation and again after a restart.
func (a *Actor) load() {
	a.state = nil
	_ = a.deps.Store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(a.id)
		if err == nil {
			a.state = p
		}
		return nil
	})
}

func (a *Actor) owned(scope string) (*persistence.Post, error) {
	if a.state == nil {
		return nil, ErrNotFound
	}
	if a.state.Scope() != scope {
		return nil, ErrForbidden
	}
	return a.state, nil
}

// commit writes next durably, then makes it the actor's state. It serves requests (an edit), so
// a full commit queue refuses it (persistence.ErrBusy) rather than making the request wait.
func (a *Actor) commit(next *persistence.Post) error {
	// Encode here, outside the transaction that many actors share.
	raw, err := persistence.Encode(next)
	if err != nil {
		return err
	}
	if err := a.deps.tryUpdate(a.id, func(tx *persistence.Tx) error {
		return tx.PutPost(next, raw)
	}); err != nil {
		return err
	}
	a.state = next
	return nil
}

func (a *Actor) create(ctx actor.Context, m *Create) {
	if a.state != nil {
		actors.ReplyError(ctx, ErrExists)
		return
	}
	next, err := createPost(&a.deps, a.id, m)
	if err != nil {
		if errors.Is(err, ErrExists) {
			a.load()
		}
		actors.ReplyError(ctx, err)
		return
	}
	a.state = next
	actors.Reply(ctx, &Reply{Post: next})
}

// createPost commits the post m creates under id, unless a post id exists already (ErrExists).
func createPost(d *Deps, id string, m *Create) (*persistence.Post, error) {
	if err := Validate(m.Post); err != nil {
		return nil, err
	}
	next := m.Post
	next.ID = id
	next.Version = 1
	raw, err := persistence.Encode(next)
	if err != nil {
		return nil, err
	}
	// Read ahead on PostgreSQL (persistence.Store.UpdateAhead): the function sets nothing outside.
	if err := actors.TryUpdateAhead(d.Store, d.Fence, id, func(tx *persistence.Tx) error {
		if tx.HasPost(id) {
			return ErrExists
		}
		return tx.PutPost(next, raw)
	}); err != nil {
		return nil, err
	}
	return next, nil
}

func editable(op string, p *persistence.Post) error {
	if p.Status == persistence.PostDraft || p.Status == persistence.PostScheduled {
		return nil
	}
	if op == "updated" && (p.Status == persistence.PostFailed || p.Status == persistence.PostPartial) {
		return nil // what failed is fixed before it is published again (Edit)
	}
	return &NotEditableError{Op: op, Status: p.Status}
}

// Edit is the post cur as an update leaves it (nil fields unchanged), before the rules of a
// create (Validate). A failed or partial post may be edited so that what failed can be published
// again, but what went out stays as it went out: an account published on keeps its target as it
// is (its status, its link, and the text and media it was published with, pinned on the target
// when the post's own change), and cannot be removed; a changed target of such an account is
// refused. The other targets keep their failed status, and an account added is pending: a
// publish of the post sends to both (NewJob).
func Edit(cur *persistence.Post, content *string, targets []persistence.Target, media []string) (*persistence.Post, error) {
	if err := editable("updated", cur); err != nil {
		return nil, err
	}
	next := cur.Clone()
	if content != nil {
		next.Content = *content
	}
	if targets != nil {
		next.Targets = append([]persistence.Target(nil), targets...)
	}
	if media != nil {
		next.MediaIDs = append([]string(nil), media...)
	}
	if cur.Status != persistence.PostFailed && cur.Status != persistence.PostPartial {
		return next, nil
	}
	sent := map[string]persistence.Target{}
	for _, t := range cur.Targets {
		if t.Status != persistence.TargetFailed && t.Status != persistence.TargetPending {
			went := t
			if went.Content == nil {
				c := cur.Content
				went.Content = &c
			}
			if went.MediaIDs == nil {
				m := append([]string{}, cur.MediaIDs...)
				went.MediaIDs = &m
			}
			sent[t.AccountID] = went
		}
	}
	seen := map[string]bool{}
	for i, t := range next.Targets {
		went, ok := sent[t.AccountID]
		if !ok {
			if old := targetOf(cur, t.AccountID); old != nil {
				next.Targets[i].Status, next.Targets[i].Error = old.Status, old.Error
			} else {
				next.Targets[i].Status, next.Targets[i].Error = persistence.TargetPending, nil
			}
			continue
		}
		seen[t.AccountID] = true
		if targets != nil && !sameTarget(t, targetOf(cur, t.AccountID), cur) {
			return nil, &InvalidError{Field: "targets", Reason: "the " + t.Platform + " target was published already and cannot be changed; edit only what failed"}
		}
		next.Targets[i] = went
	}
	for acc, went := range sent {
		if !seen[acc] {
			return nil, &InvalidError{Field: "platforms", Reason: "the " + went.Platform + " account " + acc + " was published on already and cannot be removed; edit only what failed"}
		}
	}
	return next, nil
}

func targetOf(p *persistence.Post, account string) *persistence.Target {
	for i := range p.Targets {
		if p.Targets[i].AccountID == account {
			return &p.Targets[i]
		}
	}
	return nil
}

// sameTarget reports whether an edit's target t of a published account asks for what the stored
// target old already is: its own text and media (the post's counting as its own), its options.
func sameTarget(t persistence.Target, old *persistence.Target, cur *persistence.Post) bool {
	if old == nil {
		return false
	}
	if t.Content != nil && *t.Content != old.EffectiveContent(cur) {
		return false
	}
	if t.MediaIDs != nil && !slices.Equal(*t.MediaIDs, old.EffectiveMedia(cur)) {
		return false
	}
	return len(t.Options) == 0 || string(t.Options) == string(old.Options) || old.Options == nil && string(t.Options) == "{}"
}

func (a *Actor) update(ctx actor.Context, m *Update) {
	cur, err := a.owned(m.Scope)
	var next *persistence.Post
	if err == nil {
		next, err = Edit(cur, m.Content, m.Targets, m.MediaIDs)
	}
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	// The post as changed must pass the rules of a create: an edit that empties the content of a
	// post without media, or removes the media of a post without content, is refused.
	if err := Validate(next); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	next.UpdatedAt = a.deps.Now().UTC()
	next.Version++
	if err := a.commit(next); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	actors.Reply(ctx, &Reply{Post: next.Clone()})
}

func (a *Actor) delete(ctx actor.Context, m *Delete) {
	cur, err := a.owned(m.Scope)
	if err == nil && cur.Status != persistence.PostPendingApproval {
		// A post waiting for approval is deleted as a draft is.
		err = editable("deleted", cur)
	}
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	// post.deleted goes to the outbox in the same transaction as the deletion; its status is the
	// one the post had when it was deleted.
	ev, err := NewEvent(persistence.PostEventDeleted, cur, a.deps.Now())
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if err := a.deps.tryUpdate(a.id, func(tx *persistence.Tx) error {
		if cur.Status == persistence.PostScheduled && cur.ScheduledAt != nil {
			if err := tx.Unschedule(cur.ID, *cur.ScheduledAt); err != nil {
				return err
			}
		}
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
		return tx.DeletePost(cur)
	}); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.state = nil
	if a.deps.Events != nil {
		a.deps.Events.Notify()
	}
	a.campaignChanged(cur.CampaignID)
	actors.Reply(ctx, &Reply{Post: cur})
}

// IsNotEditable reports whether err refuses a change because of the post's status.
func IsNotEditable(err error) bool {
	var e *NotEditableError
	return errors.As(err, &e)
}
