// Package campaign is the campaign actor: one virtual actor per campaign, a batch of up to a
// thousand posts submitted together (POST /v1/campaigns).
//
// A campaign is created without activating any actor (Creator): the campaign, every post and,
// when it publishes at once, every job are committed in one transaction, and the jobs are then
// started as a single publish starts its job; no post actor exists until a job hands its post an
// outcome. The incarnation serves what must not run twice at once for one campaign: Retry and
// Cancel, which ask the campaign's post actors (the owners of the posts) and therefore run one
// at a time, in arrival order, off the actor's goroutine. Reads (GET, lists, the stream) read
// the store directly.
package campaign

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
)

// KindName labels the campaign actor in metrics.
const KindName = "campaign"

// MaxPosts caps the posts of one campaign.
const MaxPosts = 1000

// Deps are what campaign actors need.
type Deps struct {
	Store *persistence.Store
	// Posts is the post directory: retries and cancels ask each post's actor.
	Posts actors.Router
	// Handoff starts committed jobs, as the post actor's does after a publish, and tells the
	// scheduler of newly scheduled times (nil: nobody hears).
	Handoff Handoff
	// Events is notified after events are committed to the outbox.
	Events *actors.Notifier
	// Changed tells the campaign's followers that it changed (nil: nobody follows).
	Changed func(campaignID string)
	Now     func() time.Time
	Log     *slog.Logger
	// IdleTimeout passivates idle campaign actors (default 2m).
	IdleTimeout time.Duration
	// AskTimeout bounds each post's answer during a retry or a cancel (default 10s).
	AskTimeout time.Duration
	// Parallel bounds the posts asked at once during a retry or a cancel (default 16).
	Parallel int
	// Fence, when several nodes share the store, is the campaign's shard lease: its writes
	// fence on it (nil: a single process).
	Fence actors.Fence
}

// Handoff is where a campaign hands on what it committed (actors/publishing in Herald): the jobs
// of the posts it publishes at once, the first time of those it schedules.
type Handoff interface {
	StartJob(j *persistence.Job, p *persistence.Post)
	Scheduled(at time.Time)
}

// Kind returns the campaign actor kind for an activation directory.
func Kind(d Deps) actors.Kind {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Handoff == nil {
		d.Handoff = post.NoHandoff{}
	}
	if d.AskTimeout <= 0 {
		d.AskTimeout = 10 * time.Second
	}
	if d.Parallel <= 0 {
		d.Parallel = 16
	}
	return actors.Kind{
		Name:        KindName,
		IdleTimeout: d.IdleTimeout,
		New:         func(id string) actor.Actor { return &Actor{id: id, deps: d} },
		Creator:     creator{d},
	}
}

type creator struct{ deps Deps }

func (creator) Creates(msg any) bool {
	_, ok := msg.(*Create)
	return ok
}

func (c creator) Create(id string, msg any) any {
	camp, err := commit(c.deps, id, msg.(*Create))
	if err != nil {
		return &actors.ErrorReply{Err: err}
	}
	return &CreateReply{Campaign: camp}
}

// staged is one post of a campaign being created, encoded outside the shared transaction.
type staged struct {
	post   *persistence.Post
	raw    []byte
	job    *persistence.Job
	jobRaw []byte
	event  *persistence.Event
}

// commit stores a new campaign (Create) and starts what it publishes.
func commit(d Deps, id string, m *Create) (*persistence.Campaign, error) {
	if len(m.Posts) == 0 || len(m.Posts) > MaxPosts {
		return nil, errors.New("campaign: a campaign has 1 to 1000 posts")
	}
	now := d.Now().UTC()
	camp := *m.Campaign
	camp.ID, camp.Posts, camp.Version = id, len(m.Posts), 1
	held := m.Hold != nil && camp.Publish != persistence.CampaignDraft
	counted := m.Quota != nil && camp.Publish != persistence.CampaignDraft && !held
	rows := make([]staged, len(m.Posts))
	var first time.Time
	for i, p := range m.Posts {
		p.CampaignID, p.UserID, p.WorkspaceID, p.Status, p.Version = id, camp.UserID, camp.WorkspaceID, persistence.PostDraft, 1
		p.CreatedAt, p.UpdatedAt = now, now
		if err := post.Validate(p); err != nil {
			return nil, err
		}
		s := staged{post: p}
		switch {
		case held:
			if err := holdPost(&s, camp.Publish, m.Hold.By, now); err != nil {
				return nil, err
			}
		case camp.Publish == persistence.CampaignNow:
			if i >= len(m.JobIDs) {
				return nil, errors.New("campaign: a job id is missing")
			}
			p.ScheduledAt = nil
			j, err := post.NewJob(p, m.JobIDs[i], now, nil)
			if err != nil {
				return nil, err
			}
			s.job = j
		case camp.Publish == persistence.CampaignSchedule:
			if p.ScheduledAt == nil {
				return nil, errors.New("campaign: a scheduled post has no time")
			}
			at := p.ScheduledAt.UTC()
			p.Status, p.ScheduledAt = persistence.PostScheduled, &at
			if first.IsZero() || at.Before(first) {
				first = at
			}
			ev, err := post.NewEvent(persistence.PostEventScheduled, p, now)
			if err != nil {
				return nil, err
			}
			s.event = ev
		case camp.Publish == persistence.CampaignDraft:
			p.ScheduledAt = nil
		default:
			return nil, errors.New("campaign: unknown publish mode " + camp.Publish)
		}
		p.QuotaCounted = counted
		var err error
		if s.raw, err = persistence.Encode(p); err != nil {
			return nil, err
		}
		if s.job != nil {
			if s.jobRaw, err = persistence.Encode(s.job); err != nil {
				return nil, err
			}
		}
		rows[i] = s
	}
	err := actors.Update(context.Background(), d.Store, d.Fence, id, func(tx *persistence.Tx) error {
		if tx.HasCampaign(id) {
			return ErrExists
		}
		if counted {
			if m.Quota.Limit > 0 {
				used := tx.QuotaUsed(camp.UserID, m.Quota.Month)
				if used+len(rows) > m.Quota.Limit {
					return &post.QuotaExceededError{Limit: m.Quota.Limit, Used: used, Month: m.Quota.Month, Requested: len(rows)}
				}
				if err := tx.AddQuota(camp.UserID, m.Quota.Month, len(rows)); err != nil {
					return err
				}
			}
			used := tx.Usage(camp.Scope(), m.Quota.Month).Get(persistence.UsagePostsAccepted, "")
			if m.Quota.Workspace != nil && used+len(rows) > *m.Quota.Workspace {
				return &post.QuotaExceededError{Limit: *m.Quota.Workspace, Used: used, Month: m.Quota.Month, Requested: len(rows), OfWorkspace: true}
			}
			if err := tx.AddUsage(camp.Scope(), m.Quota.Month, persistence.UsagePostsAccepted, "", len(rows)); err != nil {
				return err
			}
		}
		if err := tx.PutCampaign(&camp); err != nil {
			return err
		}
		for _, s := range rows {
			if s.job != nil {
				if err := tx.PutJobEncoded(s.job, s.jobRaw); err != nil {
					return err
				}
			}
			if s.post.Status == persistence.PostScheduled {
				if err := tx.Schedule(s.post.ID, *s.post.ScheduledAt); err != nil {
					return err
				}
			}
			if s.event != nil {
				if err := tx.AppendEvent(s.event); err != nil {
					return err
				}
			}
			if err := tx.PutPost(s.post, s.raw); err != nil {
				return err
			}
		}
		if m.Idempotency != nil {
			return tx.ClaimIdempotency(m.Idempotency.Key, m.Idempotency.Record)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, s := range rows {
		if s.job != nil {
			d.Handoff.StartJob(s.job.Clone(), s.post.Clone())
		}
	}
	if !first.IsZero() {
		if d.Events != nil {
			d.Events.Notify()
		}
		d.Handoff.Scheduled(first)
	}
	return &camp, nil
}

// holdPost makes a staged post of a held campaign wait for approval of its request (publish
// now, or schedule at its time), with its post.approval_requested event.
func holdPost(s *staged, mode, by string, now time.Time) error {
	p := s.post
	req := &persistence.Approval{Action: persistence.ApprovalPublish, RequestedAt: now, RequestedBy: by}
	switch mode {
	case persistence.CampaignNow:
		p.ScheduledAt = nil
	case persistence.CampaignSchedule:
		if p.ScheduledAt == nil {
			return errors.New("campaign: a scheduled post has no time")
		}
		at := p.ScheduledAt.UTC()
		p.ScheduledAt = &at
		req.Action, req.ScheduledAt = persistence.ApprovalSchedule, &at
	default:
		return errors.New("campaign: unknown publish mode " + mode)
	}
	p.Status, p.Approval = persistence.PostPendingApproval, req
	p.ApprovalLog = []persistence.ApprovalStep{{Kind: persistence.ApprovalRequested, At: now, By: by}}
	ev, err := post.NewEvent(persistence.PostEventApprovalRequested, p, now)
	if err != nil {
		return err
	}
	s.event = ev
	return nil
}

// Actor is one campaign.
type Actor struct {
	id    string
	deps  Deps
	state *persistence.Campaign // nil: no such campaign
	// loaded tells whether state reflects the store (read on the first message after a start).
	loaded bool
	// running is set while a retry or a cancel runs; waiting holds the ones that arrived meanwhile.
	running bool
	waiting []request
	// stop ends the running operation's requests when the incarnation stops (shutdown).
	stop context.CancelFunc
}

type request struct {
	msg    any
	sender *actor.PID
}

// opDone ends a retry or a cancel: its reply, and the campaign as the operation left it.
type opDone struct {
	req     request
	reply   any
	state   *persistence.Campaign
	changed bool
}

// Busy keeps a campaign whose retry or cancel runs from passivating.
func (a *Actor) Busy() bool { return a.running || len(a.waiting) > 0 }

// Stale reports whether the campaign's incarnation activated under a lease of its shard this node no
// longer holds (actors.Pin): the directory hands its messages to a fresh incarnation.
func (a *Actor) Stale() bool { return actors.StaleFence(a.deps.Fence) }

// Receive handles the campaign's messages.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// The state is read lazily; what the campaign does is held to the lease of its shard as
		// this node holds it now, before the read.
		a.deps.Fence = actors.Pin(a.deps.Fence, a.id)
		a.loaded = false
		return
	case *actor.Stopped:
		if a.stop != nil {
			a.stop()
		}
		return
	case actor.SystemMessage, actor.AutoReceiveMessage:
		return
	case *opDone:
		a.finish(ctx, m)
		return
	}
	if !a.loaded {
		a.loaded = true
		a.load()
	}
	switch m := ctx.Message().(type) {
	case *Create:
		// A creation reaching a live incarnation (the id was asked about before it existed).
		if a.state != nil {
			actors.ReplyError(ctx, ErrExists)
			return
		}
		camp, err := commit(a.deps, a.id, m)
		if err != nil {
			actors.ReplyError(ctx, err)
			return
		}
		a.state = camp
		actors.Reply(ctx, &CreateReply{Campaign: camp})
	case *Retry, *Cancel:
		a.waiting = append(a.waiting, request{msg: m, sender: ctx.Sender()})
		a.next(ctx)
	}
}

func (a *Actor) load() {
	a.state = nil
	_ = a.deps.Store.View(func(tx *persistence.Tx) error {
		if c, err := tx.Campaign(a.id); err == nil {
			a.state = c
		}
		return nil
	})
}

// next starts the first waiting operation, unless one runs.
func (a *Actor) next(ctx actor.Context) {
	for !a.running && len(a.waiting) > 0 {
		r := a.waiting[0]
		a.waiting = a.waiting[1:]
		user := ""
		switch m := r.msg.(type) {
		case *Retry:
			user = m.Scope
		case *Cancel:
			user = m.Scope
		}
		if a.state == nil || a.state.Scope() != user {
			a.reply(ctx, r.sender, &actors.ErrorReply{Err: ErrNotFound})
			continue
		}
		a.running = true
		c := *a.state
		self, root := ctx.Self(), ctx.ActorSystem().Root
		opCtx, stop := context.WithCancel(context.Background())
		a.stop = stop
		go func() {
			defer stop()
			done := &opDone{req: r}
			switch m := r.msg.(type) {
			case *Retry:
				done.reply = a.retry(opCtx, &c, m)
			case *Cancel:
				done.reply, done.state, done.changed = a.cancel(opCtx, &c, m)
			}
			root.Send(self, done)
		}()
	}
}

func (a *Actor) finish(ctx actor.Context, m *opDone) {
	a.running, a.stop = false, nil
	if m.changed {
		a.state = m.state
	}
	a.reply(ctx, m.req.sender, m.reply)
	a.next(ctx)
}

func (a *Actor) reply(ctx actor.Context, to *actor.PID, msg any) {
	if to != nil {
		ctx.Send(to, msg)
	}
}

// each runs fn for every id, at most Parallel at once; once ctx ends, the ids not yet started
// are left.
func (a *Actor) each(ctx context.Context, ids []string, fn func(i int, id string)) {
	sem := make(chan struct{}, a.deps.Parallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i, id)
		}()
	}
	wg.Wait()
}

// retry publishes again the selected failed targets of the campaign's posts. It runs off the
// actor's goroutine and only asks the post actors, which refuse a post that is publishing: a
// target is never published twice at once, whatever else asks.
func (a *Actor) retry(ctx context.Context, c *persistence.Campaign, m *Retry) *RetryReply {
	var ids []string
	_ = a.deps.Store.View(func(tx *persistence.Tx) error {
		for _, cp := range tx.CampaignPosts(c.ID) {
			if cp.Status != persistence.PostFailed && cp.Status != persistence.PostPartial {
				continue
			}
			p, err := tx.Post(cp.PostID)
			if err != nil {
				continue
			}
			if slices.ContainsFunc(p.Targets, func(t persistence.Target) bool {
				return t.Status == persistence.TargetFailed && m.Only.Matches(t)
			}) {
				ids = append(ids, p.ID)
			}
		}
		return nil
	})
	retried := make([]*Retried, len(ids))
	skipped := make([]*Skipped, len(ids))
	a.each(ctx, ids, func(i int, id string) {
		jobID := uuid.Must(uuid.NewV7()).String()
		only := m.Only
		r, err := actors.AskWithin[*post.PublishReply](ctx, a.deps.AskTimeout, a.deps.Posts.To(id),
			&post.Publish{Scope: m.Scope, JobID: jobID, Only: &only, Quota: m.Quota})
		if err != nil {
			skipped[i] = &Skipped{PostID: id, Reason: reason(err)}
			return
		}
		retried[i] = &Retried{PostID: id, TrackingID: jobID, Targets: len(r.Job.Targets)}
	})
	out := &RetryReply{Retried: []Retried{}, Skipped: []Skipped{}}
	for i := range ids {
		if retried[i] != nil {
			out.Retried = append(out.Retried, *retried[i])
		}
		if skipped[i] != nil {
			out.Skipped = append(out.Skipped, *skipped[i])
		}
	}
	return out
}

// reason says why a post was not published again or not cancelled.
func reason(err error) string {
	var np *post.NotPublishableError
	var ne *post.NotEditableError
	switch {
	case errors.As(err, &np):
		return np.Error()
	case errors.As(err, &ne):
		return ne.Error()
	case errors.Is(err, actors.ErrTimeout):
		return "the post did not answer in time; retry again"
	case errors.Is(err, post.ErrNotFound):
		return "the post no longer exists"
	}
	return "the post could not be published again: " + strings.TrimPrefix(err.Error(), "actors: ")
}

// cancel deletes the campaign's draft and scheduled posts through their actors, then removes the
// campaign if it has no post left, or marks it cancelled.
func (a *Actor) cancel(ctx context.Context, c *persistence.Campaign, m *Cancel) (any, *persistence.Campaign, bool) {
	var open []string
	_ = a.deps.Store.View(func(tx *persistence.Tx) error {
		for _, cp := range tx.CampaignPosts(c.ID) {
			if cp.Status == persistence.PostDraft || cp.Status == persistence.PostScheduled || cp.Status == persistence.PostPendingApproval {
				open = append(open, cp.PostID)
			}
		}
		return nil
	})
	deleted := make([]bool, len(open))
	a.each(ctx, open, func(i int, id string) {
		// A post that moved on meanwhile (the scheduler fired it) is refused, and kept.
		_, err := actors.AskWithin[*post.Reply](ctx, a.deps.AskTimeout, a.deps.Posts.To(id), &post.Delete{Scope: m.Scope})
		deleted[i] = err == nil
		if err != nil && !post.IsNotEditable(err) && !errors.Is(err, post.ErrNotFound) {
			a.deps.Log.Warn("cancelling a campaign's post failed", "campaign_id", c.ID, "post_id", id, "error", err)
		}
	})
	out := &CancelReply{Cancelled: []string{}, Kept: []Kept{}}
	for i, id := range open {
		if deleted[i] {
			out.Cancelled = append(out.Cancelled, id)
		}
	}
	next := *c
	err := actors.Update(ctx, a.deps.Store, a.deps.Fence, c.ID, func(tx *persistence.Tx) error {
		out.Kept = out.Kept[:0]
		for _, cp := range tx.CampaignPosts(c.ID) {
			out.Kept = append(out.Kept, Kept{PostID: cp.PostID, Status: cp.Status})
		}
		if len(out.Kept) == 0 {
			out.Removed = true
			return tx.DeleteCampaign(c)
		}
		out.Removed = false
		n := *c
		if n.CancelledAt == nil {
			at := a.deps.Now().UTC()
			n.CancelledAt = &at
		}
		n.Version++
		next = n
		return tx.PutCampaign(&n)
	})
	if err != nil {
		a.deps.Log.Error("storing a campaign's cancellation failed", "campaign_id", c.ID, "error", err)
		return &actors.ErrorReply{Err: err}, nil, false
	}
	if a.deps.Changed != nil {
		a.deps.Changed(c.ID)
	}
	if out.Removed {
		return out, nil, true
	}
	return out, &next, true
}
