package post

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
)

// Approvals. In a workspace that requires approval, a publish or schedule by someone who may not
// approve (an OAuth token, a key without posts:approve, an editor) carries a Hold: the post is
// checked as any publish or schedule is, then moves to pending_approval with the request kept
// (Post.Approval) instead of starting a job or taking a time. Nothing publishes a pending post:
// it is not in the schedule index, and only Approve carries its request out. Approve of a
// schedule whose time has passed (a late post) publishes it at once. Reject returns it to draft
// with the reason. Each move is recorded in the post's approval log and sent as an event
// (post.approval_requested, post.approved, post.rejected) in its transaction. The plan's quota is
// counted when the request is carried out, not when it is held.

// Hold makes a Publish or Schedule wait for approval; By names who asked (Approval.RequestedBy).
type Hold struct {
	By string
}

// Approve carries out the request of a pending_approval post: a publish starts a job (JobID), a
// schedule takes its time, or starts a job at once when its time has passed. Either Scope (the
// request's workspace) or Link (the SHA-256 of an approval link's token, which it uses up) is the
// authority. Reply: *ApproveReply.
type Approve struct {
	Scope string
	Link  []byte
	By    string
	JobID string
	Quota *Quota
}

// ApproveReply carries the post as committed and, for a publish, its job.
type ApproveReply struct {
	Post *persistence.Post
	Job  *persistence.Job // nil when the post was scheduled
}

// Reject returns a pending_approval post to draft with Reason; Scope or Link as for Approve.
// Reply: *Reply.
type Reject struct {
	Scope  string
	Link   []byte
	By     string
	Reason string
}

// SetApprovalLink gives a pending_approval post a new approval link (the SHA-256 of its token),
// which revokes the one before. Reply: *Reply.
type SetApprovalLink struct {
	Scope     string
	Hash      []byte
	ExpiresAt time.Time
}

// NotPendingError refuses an approval step for a post that is not waiting for approval.
type NotPendingError struct{ Status string }

func (e *NotPendingError) Error() string {
	return fmt.Sprintf("a %s post is not waiting for approval", e.Status)
}

// Why an approval link no longer works.
var (
	ErrLinkRevoked = errors.New("this approval link was replaced by a newer one or revoked")
	ErrLinkUsed    = errors.New("this approval link was already used")
	ErrLinkExpired = errors.New("this approval link has expired")
)

// MaxRejectionReason is the longest rejection reason kept, in bytes.
const MaxRejectionReason = 1000

// Late reports whether a pending post's requested time has passed.
func Late(p *persistence.Post, now time.Time) bool {
	a := p.Approval
	return p.Status == persistence.PostPendingApproval && a != nil && a.Action == persistence.ApprovalSchedule &&
		a.ScheduledAt != nil && !a.ScheduledAt.After(now)
}

// logStep appends a step to the post's approval log, keeping the latest MaxApprovalLog.
func logStep(p *persistence.Post, s persistence.ApprovalStep) {
	p.ApprovalLog = append(p.ApprovalLog, s)
	if n := len(p.ApprovalLog); n > persistence.MaxApprovalLog {
		p.ApprovalLog = append([]persistence.ApprovalStep(nil), p.ApprovalLog[n-persistence.MaxApprovalLog:]...)
	}
}

// holdable refuses a request to hold a post in a status that cannot be submitted (as a publish
// or schedule of it would be refused).
func holdable(p *persistence.Post, schedule bool) error {
	switch p.Status {
	case persistence.PostDraft, persistence.PostScheduled, persistence.PostPendingApproval:
		return nil
	}
	if schedule {
		return &NotSchedulableError{Status: p.Status}
	}
	return &NotPublishableError{Status: p.Status}
}

// commitHold moves cur to pending_approval with the request (a publish, or a schedule at *at),
// with its post.approval_requested event, and returns the post as committed. A scheduled post
// leaves the schedule index; a pending one's earlier request is replaced.
func commitHold(d Deps, cur *persistence.Post, creating bool, at *time.Time, by string, idem *Idempotency) (*persistence.Post, error) {
	now := d.Now().UTC()
	next := cur.Clone()
	action := persistence.ApprovalPublish
	if at != nil {
		action = persistence.ApprovalSchedule
		t := at.UTC()
		at = &t
	}
	next.Status, next.ScheduledAt = persistence.PostPendingApproval, at
	next.Approval = &persistence.Approval{Action: action, ScheduledAt: at, RequestedAt: now, RequestedBy: by}
	next.RejectionReason = nil
	logStep(next, persistence.ApprovalStep{Kind: persistence.ApprovalRequested, At: now, By: by})
	next.UpdatedAt = now
	next.Version++
	ev, err := NewEvent(persistence.PostEventApprovalRequested, next, now)
	if err != nil {
		return nil, err
	}
	raw, err := persistence.Encode(next)
	if err != nil {
		return nil, err
	}
	var answer *persistence.IdempotencyRecord
	if idem != nil && idem.Held != nil {
		if answer, err = idem.Held(next); err != nil {
			return nil, err
		}
	}
	if err := d.tryUpdate(cur.ID, func(tx *persistence.Tx) error {
		if creating && tx.HasPost(cur.ID) {
			return ErrExists
		}
		if answer != nil {
			if err := tx.ClaimIdempotency(idem.Key, answer); err != nil {
				return err
			}
		}
		if !creating && cur.Status == persistence.PostScheduled && cur.ScheduledAt != nil {
			if err := tx.Unschedule(cur.ID, *cur.ScheduledAt); err != nil {
				return err
			}
		}
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
		return tx.PutPost(next, raw)
	}); err != nil {
		return nil, err
	}
	if answer != nil {
		idem.Record = answer
	}
	if d.Events != nil {
		d.Events.Notify()
	}
	return next, nil
}

// createHeld is the Creator's Publish with Hold of a new post: committed pending, with no actor.
func createHeld(d Deps, id string, m *Publish) any {
	cur := m.Create.Clone()
	cur.ID = id
	cur.Status = persistence.PostDraft
	if err := Validate(cur); err != nil {
		return &actors.ErrorReply{Err: err}
	}
	p, err := commitHold(d, cur, true, nil, m.Hold.By, m.Idempotency)
	if err != nil {
		return &actors.ErrorReply{Err: err}
	}
	return &PublishReply{Post: p.Clone()}
}

// hold is a Publish or Schedule with Hold, for a post the actor holds (or creates, for a
// Schedule with Create).
func (a *Actor) hold(ctx actor.Context, cur *persistence.Post, creating bool, at *time.Time, by string, publishIdem *Idempotency) {
	publish := at == nil
	if err := holdable(cur, at != nil); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	next, err := commitHold(a.deps, cur, creating, at, by, publishIdem)
	if err != nil {
		if errors.Is(err, ErrExists) {
			a.load()
		}
		actors.ReplyError(ctx, err)
		return
	}
	a.state = next
	a.campaignChanged(next.CampaignID)
	if publish {
		actors.Reply(ctx, &PublishReply{Post: next.Clone()})
		return
	}
	actors.Reply(ctx, &Reply{Post: next.Clone()})
}

// pending returns the post an approval step acts on: by scope, or by an approval link, which
// must be the post's latest, unused and unexpired.
func (a *Actor) pending(scope string, link []byte) (*persistence.Post, error) {
	if link == nil {
		cur, err := a.owned(scope)
		if err != nil {
			return nil, err
		}
		if cur.Status != persistence.PostPendingApproval || cur.Approval == nil {
			return nil, &NotPendingError{Status: cur.Status}
		}
		return cur, nil
	}
	cur := a.state
	if cur == nil {
		return nil, ErrNotFound
	}
	l := cur.ApprovalLink
	switch {
	case l == nil || subtle.ConstantTimeCompare(l.Hash, link) != 1:
		return nil, ErrLinkRevoked
	case l.UsedAt != nil:
		return nil, ErrLinkUsed
	case !a.deps.Now().Before(l.ExpiresAt):
		return nil, ErrLinkExpired
	case cur.Status != persistence.PostPendingApproval || cur.Approval == nil:
		return nil, &NotPendingError{Status: cur.Status}
	}
	return cur, nil
}

// settle builds the post as an approval step leaves it: its request cleared, the step logged, and
// the link that authorised it (if one did) used up.
func settle(cur *persistence.Post, kind, by, reason string, link bool, now time.Time) *persistence.Post {
	next := cur.Clone()
	next.Approval = nil
	next.Status, next.ScheduledAt, next.ScheduledZone = persistence.PostDraft, nil, ""
	logStep(next, persistence.ApprovalStep{Kind: kind, At: now, By: by, Reason: reason})
	if link && next.ApprovalLink != nil {
		next.ApprovalLink.UsedAt = &now
	}
	return next
}

func (a *Actor) approve(ctx actor.Context, m *Approve) {
	cur, err := a.pending(m.Scope, m.Link)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	now := a.deps.Now().UTC()
	req := *cur.Approval
	draft := settle(cur, persistence.ApprovalApproved, m.By, "", m.Link != nil, now)
	ev, err := NewEvent(persistence.PostEventApproved, draft, now)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if req.Action == persistence.ApprovalSchedule && req.ScheduledAt != nil && req.ScheduledAt.After(now) {
		draft.ScheduledZone = cur.ScheduledZone // the zone the schedule was asked in
		a.approveSchedule(ctx, draft, *req.ScheduledAt, m.Quota, ev)
		return
	}
	// A publish, or a schedule whose time has passed while it waited: published now.
	j, sj, err := a.startJob(jobCommit{cur: draft, jobID: m.JobID, quota: m.Quota, request: true, events: []*persistence.Event{ev}})
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if a.deps.Events != nil {
		a.deps.Events.Notify()
	}
	a.campaignChanged(sj.CampaignID)
	actors.Reply(ctx, &ApproveReply{Post: sj.Clone(), Job: j.Clone()})
	a.deps.Handoff.StartJob(j.Clone(), sj.Clone())
}

// approveSchedule schedules an approved post (draft: the post as the approval leaves it) at its
// requested time, with post.approved and post.scheduled.
func (a *Actor) approveSchedule(ctx actor.Context, draft *persistence.Post, at time.Time, q *Quota, approved *persistence.Event) {
	now := a.deps.Now().UTC()
	next := draft
	next.Status, next.ScheduledAt = persistence.PostScheduled, &at
	next.UpdatedAt = now
	next.Version++
	ev, err := NewEvent(persistence.PostEventScheduled, next, now)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if err := a.deps.tryUpdate(a.id, func(tx *persistence.Tx) error {
		n := next.Clone()
		if err := countQuota(tx, n, q); err != nil {
			return err
		}
		if err := tx.Schedule(n.ID, at); err != nil {
			return err
		}
		if err := tx.AppendEvent(approved); err != nil {
			return err
		}
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
		return tx.PutPost(n, nil)
	}); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if q != nil {
		next.QuotaCounted = true
	}
	a.state = next
	if a.deps.Events != nil {
		a.deps.Events.Notify()
	}
	a.campaignChanged(next.CampaignID)
	actors.Reply(ctx, &ApproveReply{Post: next.Clone()})
	a.deps.Handoff.Scheduled(at)
}

func (a *Actor) reject(ctx actor.Context, m *Reject) {
	cur, err := a.pending(m.Scope, m.Link)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	now := a.deps.Now().UTC()
	next := settle(cur, persistence.ApprovalRejected, m.By, m.Reason, m.Link != nil, now)
	reason := m.Reason
	next.RejectionReason = &reason
	next.UpdatedAt = now
	next.Version++
	ev, err := NewEvent(persistence.PostEventRejected, next, now)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if err := a.deps.tryUpdate(a.id, func(tx *persistence.Tx) error {
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
		return tx.PutPost(next, nil)
	}); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.state = next
	if a.deps.Events != nil {
		a.deps.Events.Notify()
	}
	a.campaignChanged(next.CampaignID)
	actors.Reply(ctx, &Reply{Post: next.Clone()})
}

func (a *Actor) setLink(ctx actor.Context, m *SetApprovalLink) {
	cur, err := a.pending(m.Scope, nil)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	next := cur.Clone()
	next.ApprovalLink = &persistence.ApprovalLink{Hash: bytes.Clone(m.Hash), ExpiresAt: m.ExpiresAt.UTC()}
	next.Version++
	if err := a.commit(next); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	actors.Reply(ctx, &Reply{Post: next.Clone()})
}
