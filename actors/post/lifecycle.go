package post

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
)

// Publish creates a job for the post (creating the post first when Create is set). Draft and
// scheduled posts publish every target; failed and partial posts publish again only the targets
// that failed. Reply: *PublishReply.
type Publish struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
	// JobID is the new job's tracking id (UUIDv7), chosen by the caller.
	JobID  string
	Create *persistence.Post
	// Idempotency, when set, is stored in the same transaction as the job.
	Idempotency *Idempotency
	// Quota, when set, is the free plan's monthly post quota.
	Quota *Quota
	// Only, when set, publishes again only the failed targets it matches, and only a failed or
	// partial post (a campaign's retry); other posts are refused as not publishable.
	Only *Only
	// Hold, when set, holds a draft or scheduled post for approval instead of publishing it
	// (approval.go); the reply's Job is nil.
	Hold *Hold
}

// Only selects targets by connected account and platform; an empty field matches any.
type Only struct {
	AccountID string
	Platform  string
}

// Matches reports whether the target is selected.
func (o *Only) Matches(t persistence.Target) bool {
	return o == nil || ((o.AccountID == "" || o.AccountID == t.AccountID) && (o.Platform == "" || o.Platform == t.Platform))
}

// Idempotency is the answer stored for an Idempotency-Key.
type Idempotency struct {
	Key    []byte
	Record *persistence.IdempotencyRecord
	// Held, when set, builds the answer of a publish that the post is held for approval by, from
	// the post as held (its answer names what the hold made): it is stored in the hold's own
	// transaction and becomes Record, so that a crash can never keep the post without the answer
	// a retry with the same key must get.
	Held func(*persistence.Post) (*persistence.IdempotencyRecord, error) `json:"-"`
}

// errHeldCannotCross refuses to encode an Idempotency whose Held is set: a func cannot be sent
// to another node.
var errHeldCannotCross = errors.New("post: an Idempotency with Held cannot cross between nodes")

// MarshalJSON encodes the Idempotency for another node (cluster.Encode); one whose Held is set
// cannot be, and is refused rather than sent without it.
func (i *Idempotency) MarshalJSON() ([]byte, error) {
	if i.Held != nil {
		return nil, errHeldCannotCross
	}
	type plain Idempotency
	return json.Marshal((*plain)(i))
}

// Quota is a monthly post quota.
type Quota struct {
	Limit int    // the free plan's posts per month; 0: no plan quota
	Month string // "2006-01"
	// Workspace is the post's workspace's limits.posts_per_month; nil: none. Every accepted post
	// is counted in its workspace's usage (persistence.UsagePostsAccepted) either way.
	Workspace *int
}

// PublishReply carries the post and its new job as committed.
type PublishReply struct {
	Post *persistence.Post
	Job  *persistence.Job
}

// Schedule schedules the post at At (creating it first when Create is set); a scheduled post is
// moved to the new time. Each one records a post.scheduled event with the post. Reply: *Reply.
type Schedule struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
	At    time.Time
	// Zone is the IANA zone the time was given in, kept with the post ("" for none).
	Zone   string
	Create *persistence.Post
	Quota  *Quota
	// Hold, when set, holds the post for approval of this schedule instead (approval.go).
	Hold *Hold
}

// Fire is the scheduler's signal that the post's time At has come. JobID, when set, is the
// tracking id of the job to start (UUIDv7: the scheduler makes them in the order the posts were
// due). Lease is the scheduler's lease when it runs under one (several nodes): the job's commit
// fences on it, so that a scheduler that lost its lease starts nothing. Reply: *FireReply.
type Fire struct {
	At    time.Time
	JobID string
	Lease *persistence.Lease
}

// FireReply says what the post did with a Fire.
type FireReply struct {
	// JobID is the job started, "" when the entry was stale (rescheduled, deleted, published).
	JobID string
}

// Finish gives the post the outcome of one of its jobs. The post answers through
// Deps.Synced once the outcome is durable. A job whose final transaction wrote the outcome
// (Outcome) sends none.
type Finish struct{ Job *persistence.Job }

// NotPublishableError refuses to publish a post in its status.
type NotPublishableError struct{ Status string }

func (e *NotPublishableError) Error() string {
	switch e.Status {
	case persistence.PostPublishing:
		return "the post is being published; wait for its job to finish"
	case persistence.PostPublished:
		return "the post is already published on every platform"
	}
	return fmt.Sprintf("a %s post cannot be published", e.Status)
}

// NotSchedulableError refuses to schedule a post in its status.
type NotSchedulableError struct{ Status string }

func (e *NotSchedulableError) Error() string {
	return fmt.Sprintf("a %s post cannot be scheduled; only draft and scheduled posts can", e.Status)
}

// QuotaExceededError refuses a publish or schedule beyond the free plan's monthly posts.
type QuotaExceededError struct {
	Limit, Used int
	Month       string
	// Requested is how many posts the refused request needed, when more than one (a campaign).
	Requested int
	// OfWorkspace says the limit is the workspace's posts_per_month, not the plan's.
	OfWorkspace bool
}

func (e *QuotaExceededError) Error() string {
	msg := fmt.Sprintf("the free plan allows %d published or scheduled posts per calendar month (UTC); %d used in %s", e.Limit, e.Used, e.Month)
	if e.OfWorkspace {
		msg = fmt.Sprintf("the workspace's limits allow %d published or scheduled posts per calendar month (UTC); %d used in %s", e.Limit, e.Used, e.Month)
	}
	if e.Requested > 1 {
		msg += fmt.Sprintf(", and the campaign has %d posts", e.Requested)
	}
	return msg
}

// EventData is the data of a post lifecycle event, as webhooks deliver it.
type EventData struct {
	PostID    string          `json:"post_id"`
	Status    string          `json:"status"`
	Platforms []EventPlatform `json:"platforms"`
	// ScheduledAt is set on post.scheduled.
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"`
}

// EventPlatform is one target in an event.
type EventPlatform struct {
	Platform           string  `json:"platform"`
	Status             string  `json:"status"`
	ConnectedAccountID string  `json:"connected_account_id"`
	Error              *string `json:"error"`
}

// NewEvent builds the lifecycle event of a post's state.
func NewEvent(typ string, p *persistence.Post, now time.Time) (*persistence.Event, error) {
	d := EventData{PostID: p.ID, Status: p.Status, Platforms: []EventPlatform{}}
	if typ == "post.scheduled" {
		d.ScheduledAt = p.ScheduledAt
	}
	for _, t := range p.Targets {
		d.Platforms = append(d.Platforms, EventPlatform{Platform: t.Platform, Status: t.Status, ConnectedAccountID: t.AccountID, Error: t.Error})
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return &persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: typ, UserID: p.UserID, WorkspaceID: p.WorkspaceID, CreatedAt: now.UTC(), Data: raw}, nil
}

// receiveLifecycle handles the publishing and scheduling messages.
func (a *Actor) receiveLifecycle(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case *Publish:
		a.publish(ctx, m)
	case *Schedule:
		a.schedule(ctx, m)
	case *Fire:
		a.fire(ctx, m)
	case *Finish:
		a.finishJob(ctx, m)
	case *Took:
		a.took(m)
	case *Approve:
		a.approve(ctx, m)
	case *Reject:
		a.reject(ctx, m)
	case *SetApprovalLink:
		a.setLink(ctx, m)
	case *retryFinish:
		if m := a.unfinished; m != nil {
			a.unfinished = nil
			a.finishJob(ctx, m)
		}
	default:
		return false
	}
	return true
}

// countQuota counts the post against its quotas in tx, once per post: the free plan's (q.Limit)
// and its workspace's posts_per_month (q.Workspace).
func countQuota(tx *persistence.Tx, p *persistence.Post, q *Quota) error {
	if q == nil || p.QuotaCounted {
		return nil
	}
	if q.Limit > 0 {
		used := tx.QuotaUsed(p.UserID, q.Month)
		if used >= q.Limit {
			return &QuotaExceededError{Limit: q.Limit, Used: used, Month: q.Month}
		}
	}
	if q.Workspace != nil {
		used := tx.Usage(p.Scope(), q.Month).Get(persistence.UsagePostsAccepted, "")
		if used >= *q.Workspace {
			return &QuotaExceededError{Limit: *q.Workspace, Used: used, Month: q.Month, OfWorkspace: true}
		}
	}
	p.QuotaCounted = true
	if err := tx.AddUsage(p.Scope(), q.Month, persistence.UsagePostsAccepted, "", 1); err != nil {
		return err
	}
	if q.Limit <= 0 {
		return nil
	}
	return tx.AddQuota(p.UserID, q.Month, 1)
}

// NewJob builds the job of next's targets to publish and marks them publishing: every target of
// a draft or scheduled post, the failed ones (those only selects) of a failed or partial post,
// and of a published or partial post the published targets that still miss a step (a thread's
// part, a first comment: Target.Missing), which publish only what they miss (ResumeAttempts).
// next must be a copy the caller owns.
func NewJob(next *persistence.Post, jobID string, now time.Time, only *Only) (*persistence.Job, error) {
	republish := next.Status == persistence.PostFailed || next.Status == persistence.PostPartial || next.Status == persistence.PostPublished
	switch next.Status {
	case persistence.PostDraft, persistence.PostScheduled:
		if only != nil {
			return nil, &NotPublishableError{Status: next.Status}
		}
	case persistence.PostFailed, persistence.PostPartial, persistence.PostPublished:
	default:
		return nil, &NotPublishableError{Status: next.Status}
	}
	j := &persistence.Job{TrackingID: jobID, PostID: next.ID, UserID: next.UserID, WorkspaceID: next.WorkspaceID, Status: persistence.JobQueued, CreatedAt: now, CampaignID: next.CampaignID}
	for i := range next.Targets {
		t := &next.Targets[i]
		// A pending target of a failed or partial post is an account added by an edit (Edit).
		if republish && ((t.Status != persistence.TargetFailed && t.Status != persistence.TargetPending && !t.Missing()) || !only.Matches(*t)) {
			continue
		}
		t.Status, t.Error = persistence.TargetPublishing, nil
		j.Targets = append(j.Targets, persistence.JobTarget{Target: i, Platform: t.Platform, AccountID: t.AccountID, Phase: persistence.PhaseUploading, Message: "queued"})
	}
	if len(j.Targets) == 0 {
		return nil, &NotPublishableError{Status: next.Status}
	}
	next.Status = persistence.PostPublishing
	next.TrackingID = &jobID
	return j, nil
}

// ResumeAttempts are the attempt records that make a job's targets already published on their
// networks publish only the steps they miss: each starts at its first thread part without a
// publication (or its first comment), after what is published. They are Pending: no call was
// made for them, so the account sends the step without looking it up first.
func ResumeAttempts(p *persistence.Post, j *persistence.Job) []*persistence.Attempt {
	var out []*persistence.Attempt
	for _, jt := range j.Targets {
		if jt.Target >= len(p.Targets) {
			continue
		}
		t := &p.Targets[jt.Target]
		if !t.Missing() {
			continue // not published yet, or nothing missing: selected for another reason
		}
		done := []persistence.Step{{ID: t.PublicationID, URL: t.URL}}
		for _, part := range t.Thread {
			if part.PublicationID == "" {
				break
			}
			done = append(done, persistence.Step{ID: part.PublicationID, URL: part.URL, Ref: part.Ref})
		}
		out = append(out, &persistence.Attempt{JobID: j.TrackingID, Target: jt.Target, AccountID: t.AccountID, StartedAt: j.CreatedAt,
			Step: len(done), Done: done, Pending: true})
	}
	return out
}

func (a *Actor) publish(ctx actor.Context, m *Publish) {
	var cur *persistence.Post
	if m.Create != nil {
		if a.state != nil {
			actors.ReplyError(ctx, ErrExists)
			return
		}
		cur = m.Create.Clone()
		cur.ID = a.id
		if err := Validate(cur); err != nil {
			actors.ReplyError(ctx, err)
			return
		}
	} else {
		owned, err := a.owned(m.Scope)
		if err != nil {
			actors.ReplyError(ctx, err)
			return
		}
		cur = owned
	}
	if m.Hold != nil && m.Only == nil && cur.Status != persistence.PostFailed && cur.Status != persistence.PostPartial && cur.Status != persistence.PostPublished {
		a.hold(ctx, cur, m.Create != nil, nil, m.Hold.By, m.Idempotency)
		return
	}
	j, sj, err := a.startJob(jobCommit{cur: cur, jobID: m.JobID, quota: m.Quota, idem: m.Idempotency, creating: m.Create != nil, request: true, only: m.Only})
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	actors.Reply(ctx, &PublishReply{Post: sj.Clone(), Job: j.Clone()})
	a.deps.Handoff.StartJob(j.Clone(), sj.Clone())
}

// startJob commits the post's move to publishing with its new job (and the quota, the schedule
// index and the idempotency answer) in one transaction, and makes it the actor's state.
func (a *Actor) startJob(c jobCommit) (*persistence.Job, *persistence.Post, error) {
	j, next, err := commitJob(a.deps, c)
	if err != nil {
		return nil, nil, err
	}
	a.state = next
	return j, next, nil
}

// createAndPublish is the Creator's Publish of a new post: the post and its job are committed
// and the job started without activating the post's actor, which the job's outcome activates
// later (Finish). A publishing post has nothing to do until then, and an incarnation kept for it
// would hold memory for every job in hand.
func createAndPublish(d Deps, id string, m *Publish) any {
	if m.Hold != nil {
		return createHeld(d, id, m)
	}
	cur := m.Create.Clone()
	cur.ID = id
	j, sj, err := commitJob(d, jobCommit{cur: cur, jobID: m.JobID, quota: m.Quota, idem: m.Idempotency, creating: true, request: true, only: m.Only, keep: true})
	if err != nil {
		return &actors.ErrorReply{Err: err}
	}
	// The job and post commitJob returned are this call's alone: the handoff takes them as they
	// are (it only reads them), the reply its own copies.
	d.Handoff.StartJob(j, sj)
	return &PublishReply{Post: sj.Clone(), Job: j.Clone()}
}

// jobCommit is what commitJob commits: the post as it is (cur) and its new job's id, with the
// request's quota, idempotency answer and targets to retry (only) when it has them.
type jobCommit struct {
	cur   *persistence.Post
	jobID string
	quota *Quota
	idem  *Idempotency
	only  *Only
	// creating: the post is new, and committing refuses it if it exists (ErrExists).
	creating bool
	// request: a client waits, and a full commit queue refuses it (persistence.ErrBusy); a
	// scheduled post's time (false) waits for room.
	request bool
	// events are appended in the same transaction (an approval's post.approved).
	events []*persistence.Event
	// keep: the job and post committed are the caller's alone, never changed (a post created
	// and published at once, which no actor holds): they go to Deps.Keep once committed.
	keep bool
	// fired: the scheduler fired the post, and the commit refuses with errNotDue unless its
	// schedule entry is still in the store (another fire took it first). fence is the
	// scheduler's lease the commit fences on (nil: none).
	fired bool
	fence *persistence.Lease
}

// errNotDue refuses a fire whose schedule entry is gone from the store: whatever the post's
// incarnation believes, the entry fired once already. In one transaction with the job's commit
// (serializable on PostgreSQL), two fires of one entry never both start a job, even from two
// incarnations of the post on two nodes during a hand-over.
var errNotDue = errors.New("post: the schedule entry fired already")

// commitJob commits the post's move to publishing with its new job (and the quota, the schedule
// index and the idempotency answer) in one transaction, and returns the job and the post as
// committed. For a request (request true), a full commit queue refuses it (persistence.ErrBusy);
// a scheduled post's time waits for room.
func commitJob(d Deps, c jobCommit) (*persistence.Job, *persistence.Post, error) {
	cur, jobID, q, idem, creating, request, only := c.cur, c.jobID, c.quota, c.idem, c.creating, c.request, c.only
	now := d.Now().UTC()
	next := cur.Clone()
	wasScheduled := cur.Status == persistence.PostScheduled && cur.ScheduledAt != nil
	j, err := NewJob(next, jobID, now, only)
	if err != nil {
		return nil, nil, err
	}
	next.UpdatedAt = now
	next.Version++
	// A request under a quota is counted in the transaction, or refused there: the post is
	// encoded counted here, outside the commit, as it can only be stored counted.
	counted := next.QuotaCounted
	if q != nil {
		next.QuotaCounted = true
	}
	raw, err := persistence.Encode(next)
	if err != nil {
		return nil, nil, err
	}
	jobRaw, err := persistence.Encode(j)
	if err != nil {
		return nil, nil, err
	}
	// Read ahead on PostgreSQL (persistence.Store.UpdateAhead): the function sets nothing outside
	// (the quota is counted on a copy of its own).
	write := func(fn func(*persistence.Tx) error) error { return actors.TryUpdateAhead(d.Store, d.Fence, cur.ID, fn) }
	if !request {
		write = func(fn func(*persistence.Tx) error) error {
			return actors.UpdateAhead(context.Background(), d.Store, d.Fence, cur.ID, fn)
		}
	}
	if err := write(func(tx *persistence.Tx) error {
		if creating {
			if tx.HasPost(cur.ID) {
				return ErrExists
			}
		}
		// countQuota reads the post's owner and scope and sets QuotaCounted on a copy of its
		// own: the function may run again (a replayed batch), and next is stored as encoded.
		uncounted := *next
		uncounted.QuotaCounted = counted
		if err := countQuota(tx, &uncounted, q); err != nil {
			return err
		}
		if c.fence != nil {
			if err := tx.Fence(*c.fence); err != nil {
				return err
			}
		}
		if c.fired && (!wasScheduled || !tx.IsScheduled(cur.ID, *cur.ScheduledAt)) {
			return errNotDue
		}
		if wasScheduled {
			if err := tx.Unschedule(cur.ID, *cur.ScheduledAt); err != nil {
				return err
			}
		}
		if idem != nil && idem.Record != nil {
			if err := tx.ClaimIdempotency(idem.Key, idem.Record); err != nil {
				return err
			}
		}
		for _, ev := range c.events {
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
		}
		for _, att := range ResumeAttempts(cur, j) {
			if err := tx.PutAttempt(att); err != nil {
				return err
			}
		}
		if err := tx.PutJobEncoded(j, jobRaw); err != nil {
			return err
		}
		return tx.PutPost(next, raw)
	}); err != nil {
		return nil, nil, err
	}
	if c.keep && d.Keep != nil {
		d.Keep(&Committed{Job: j, JobRaw: jobRaw, Post: next, PostRaw: raw})
	}
	return j, next, nil
}

func (a *Actor) schedule(ctx actor.Context, m *Schedule) {
	var cur *persistence.Post
	if m.Create != nil {
		if a.state != nil {
			actors.ReplyError(ctx, ErrExists)
			return
		}
		cur = m.Create.Clone()
		cur.ID = a.id
		cur.Status = persistence.PostDraft
		if err := Validate(cur); err != nil {
			actors.ReplyError(ctx, err)
			return
		}
	} else {
		owned, err := a.owned(m.Scope)
		if err != nil {
			actors.ReplyError(ctx, err)
			return
		}
		cur = owned
	}
	if m.Hold != nil {
		cur = cur.Clone()
		cur.ScheduledZone = m.Zone
		a.hold(ctx, cur, m.Create != nil, &m.At, m.Hold.By, nil)
		return
	}
	if cur.Status != persistence.PostDraft && cur.Status != persistence.PostScheduled {
		actors.ReplyError(ctx, &NotSchedulableError{Status: cur.Status})
		return
	}
	now := a.deps.Now().UTC()
	next := cur.Clone()
	at := m.At.UTC()
	next.Status, next.ScheduledAt, next.ScheduledZone = persistence.PostScheduled, &at, m.Zone
	next.UpdatedAt = now
	next.Version++
	// Every schedule through the API is a post.scheduled (the spec's event table), a new time
	// for an already scheduled post included: its receivers learn the new time.
	ev, err := NewEvent("post.scheduled", next, now)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	err = a.deps.tryUpdate(a.id, func(tx *persistence.Tx) error {
		if m.Create != nil {
			if tx.HasPost(cur.ID) {
				return ErrExists
			}
		}
		n := next.Clone()
		if err := countQuota(tx, n, m.Quota); err != nil {
			return err
		}
		if cur.Status == persistence.PostScheduled && cur.ScheduledAt != nil && m.Create == nil {
			if err := tx.Unschedule(cur.ID, *cur.ScheduledAt); err != nil {
				return err
			}
		}
		if err := tx.Schedule(n.ID, at); err != nil {
			return err
		}
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
		return tx.PutPost(n, nil)
	})
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	if m.Quota != nil {
		next.QuotaCounted = true
	}
	a.state = next
	actors.Reply(ctx, &Reply{Post: next.Clone()})
	if a.deps.Events != nil {
		a.deps.Events.Notify()
	}
	a.deps.Handoff.Scheduled(at)
}

func (a *Actor) fire(ctx actor.Context, m *Fire) {
	cur := a.state
	if cur == nil || cur.Status != persistence.PostScheduled || cur.ScheduledAt == nil || !cur.ScheduledAt.Equal(m.At.UTC()) {
		// A stale entry (the post was rescheduled, deleted or published): drop it.
		_ = a.deps.update(a.id, func(tx *persistence.Tx) error { return tx.Unschedule(a.id, m.At) })
		actors.Reply(ctx, &FireReply{})
		return
	}
	jobID := m.JobID
	if jobID == "" {
		jobID = uuid.Must(uuid.NewV7()).String()
	}
	j, sj, err := a.startJob(jobCommit{cur: cur, jobID: jobID, fired: true, fence: m.Lease})
	if errors.Is(err, errNotDue) {
		// Another fire of the entry started the job since this incarnation read the post: it
		// reads the post again at its next message.
		a.loaded = false
		actors.Reply(ctx, &FireReply{})
		return
	}
	if err != nil {
		var np *NotPublishableError
		if errors.As(err, &np) {
			_ = a.deps.update(a.id, func(tx *persistence.Tx) error { return tx.Unschedule(a.id, m.At) })
			actors.Reply(ctx, &FireReply{})
			return
		}
		actors.ReplyError(ctx, err)
		return
	}
	actors.Reply(ctx, &FireReply{JobID: j.TrackingID})
	a.deps.Handoff.StartJob(j.Clone(), sj.Clone())
}

// syncSteps gives a post's target what its job's target published in steps: the post on its
// network (also when a later step failed), each thread part and the first comment's outcome.
func syncSteps(pt *persistence.Target, t persistence.JobTarget) {
	if t.PublicationID != "" {
		pt.PublicationID, pt.URL = t.PublicationID, t.URL
	}
	for k, s := range t.Parts {
		if k < len(pt.Thread) {
			pt.Thread[k].PublicationID, pt.Thread[k].URL, pt.Thread[k].Ref = s.ID, s.URL, s.Ref
		}
	}
	if t.Comment != nil && pt.FirstComment != nil {
		pt.FirstComment.Status, pt.FirstComment.PublicationID, pt.FirstComment.URL, pt.FirstComment.Error =
			t.Comment.Status, t.Comment.PublicationID, t.Comment.URL, t.Comment.Error
	}
}

// finishJob takes a job's outcome: target statuses and errors, the post's status, and the
// post.published or post.failed event, in one transaction. A repeated Finish changes nothing. An
// outcome the store could not commit is taken again after a wait, until it can. A job usually
// writes its outcome with its post's in its own final transaction (Outcome); Finish is for the
// jobs that could not (a start-up hands on those a stop left finished but not taken).
func (a *Actor) finishJob(ctx actor.Context, m *Finish) {
	j := m.Job
	o, err := NewOutcome(a.state, j, a.deps.Now())
	if err != nil {
		a.deps.Log.Error("building a post's outcome failed", "post_id", a.id, "job_id", j.TrackingID, "error", err)
		return
	}
	if o == nil {
		a.deps.Handoff.Synced(j.TrackingID, false)
		return
	}
	if err := a.deps.update(a.id, func(tx *persistence.Tx) error {
		if err := tx.SettleJob(j.TrackingID); err != nil {
			return err
		}
		return o.Write(tx)
	}); err != nil {
		a.storeFailures++
		if a.storeFailures == 1 {
			a.deps.Log.Warn("storing a post's outcome failed; it is retried until the store takes it", "post_id", a.id, "job_id", j.TrackingID, "error", err)
		}
		a.unfinished = m
		actors.SendSelfAfter(ctx, actors.StoreRetryDelay(a.storeFailures), &retryFinish{})
		return
	}
	a.storeFailures = 0
	a.state = o.Post
	if a.deps.Events != nil {
		a.deps.Events.Notify()
	}
	a.campaignChanged(o.Post.CampaignID)
	a.deps.Handoff.Synced(j.TrackingID, true)
}

// Outcome is a final job's outcome as its post takes it: the post with its targets' statuses,
// errors and links and its own status, its post.published or post.failed event, and its usage
// counts, written in one transaction (Write): the post actor's (Finish), or the job's own final
// one, which saves the post's activation and a commit.
//
// A job's final transaction may write its post without the post's actor because nothing else
// writes a post that is publishing: every request that would change it (an edit, a delete, a
// schedule, a publish, a hold) is refused in that status, so the post the job read before its
// commit is the post as stored when it commits.
type Outcome struct {
	// Post is the post as it takes the outcome.
	Post *persistence.Post
	raw  []byte
	// expect, when set, is the bytes the post was kept as when the outcome was built on it
	// without reading it: Write is refused (persistence.ErrChanged) unless the store holds them.
	expect []byte
	event  *persistence.Event
	// settled are the targets the job decided.
	settled []int
	now     time.Time
}

// NewOutcome builds the outcome post cur takes from its final job j at now; nil when it takes
// none: no post, one whose latest job is another, or one that took this job's outcome already.
func NewOutcome(cur *persistence.Post, j *persistence.Job, now time.Time) (*Outcome, error) {
	if !takes(cur, j) {
		return nil, nil // no outcome to take is no error
	}
	return newOutcome(cur.Clone(), j, now)
}

// takes reports whether post cur takes the outcome of its final job j.
func takes(cur *persistence.Post, j *persistence.Job) bool {
	return cur != nil && cur.FinishedJob != j.TrackingID && cur.TrackingID != nil && *cur.TrackingID == j.TrackingID
}

// newOutcome is NewOutcome on a post the caller hands over (it becomes the outcome's post).
func newOutcome(next *persistence.Post, j *persistence.Job, now time.Time) (*Outcome, error) {
	if !takes(next, j) {
		return nil, nil
	}
	now = now.UTC()
	settled := make([]int, 0, len(j.Targets))
	for _, t := range j.Targets {
		if t.Target >= len(next.Targets) {
			continue
		}
		settled = append(settled, t.Target)
		pt := &next.Targets[t.Target]
		syncSteps(pt, t)
		switch t.Phase {
		case persistence.PhaseSuccess:
			if pt.Status != persistence.TargetPublished || pt.PublishedAt == nil {
				pt.PublishedAt = &now
			}
			pt.Status, pt.Error, pt.PublicationID, pt.URL = persistence.TargetPublished, nil, t.PublicationID, t.URL
		default:
			msg := t.Message
			pt.Status, pt.Error = persistence.TargetFailed, &msg
		}
	}
	published, failed := 0, 0
	for _, t := range next.Targets {
		switch t.Status {
		case persistence.TargetPublished:
			published++
		case persistence.TargetFailed:
			failed++
		}
	}
	typ := "post.published"
	switch {
	case published == 0:
		next.Status, typ = persistence.PostFailed, "post.failed"
	case failed > 0:
		next.Status = persistence.PostPartial
	default:
		next.Status = persistence.PostPublished
	}
	next.FinishedJob = j.TrackingID
	next.UpdatedAt = now
	next.Version++
	ev, err := NewEvent(typ, next, now)
	if err != nil {
		return nil, err
	}
	// Encoded here, outside the transaction that many writers share.
	raw, err := persistence.Encode(next)
	if err != nil {
		return nil, err
	}
	return &Outcome{Post: next, raw: raw, event: ev, settled: settled, now: now}, nil
}

// ReadOutcome reads the post of the final job j and builds the outcome it takes at now, for the
// job's final transaction; nil when it takes none or its record could not be read (the job then
// hands the outcome to the post's actor, Finish, which decides).
func ReadOutcome(store *persistence.Store, j *persistence.Job, now time.Time) *Outcome {
	return ReadOutcomeKept(store, j, now, nil)
}

// ReadOutcomeKept is ReadOutcome with the post kept as its job was committed (Deps.Keep; nil:
// none): the outcome is built on a copy of it without reading the store, and its Write holds
// only if the store has the post as it was kept still (persistence.Tx.PostStoredAs, in the
// job's final transaction); otherwise the write is refused with persistence.ErrChanged and the
// post's actor takes the outcome (job.Handoff.Finish), reading the post.
func ReadOutcomeKept(store *persistence.Store, j *persistence.Job, now time.Time, kept *Committed) *Outcome {
	if KeptFor(j, kept) {
		o, err := newOutcome(kept.Post.Clone(), j, now) // shared: the outcome changes its own copy
		if err != nil || o == nil {
			return nil
		}
		o.expect = kept.PostRaw
		return o
	}
	// The post is read for this outcome alone: it becomes the outcome's post.
	var o *Outcome
	if err := store.View(func(tx *persistence.Tx) error {
		var err error
		o, err = ReadOutcomeIn(tx, j, now)
		return err
	}); err != nil {
		return nil
	}
	return o
}

// KeptFor reports whether kept holds the post of the final job j as committed, for
// ReadOutcomeKept to build its outcome on without reading it.
func KeptFor(j *persistence.Job, kept *Committed) bool {
	return kept != nil && kept.Post != nil && kept.Post.ID == j.PostID && kept.PostRaw != nil
}

// ReadOutcomeIn is ReadOutcome reading the post in tx: nil (and no error) when the post takes
// no outcome from j. In the job's final transaction itself, the post is read and encoded there,
// which suits a store that reads ahead (persistence.Store.ReadsAhead): the read is a row of a
// statement the commit sends anyway, instead of a read of its own.
func ReadOutcomeIn(tx *persistence.Tx, j *persistence.Job, now time.Time) (*Outcome, error) {
	cur, err := tx.Post(j.PostID)
	if err != nil {
		return nil, err
	}
	return newOutcome(cur, j, now)
}

// Write stores the outcome in tx: the outbox event, the post, its usage counts, and the
// campaign's campaign.completed when the post was its last open one. The job's settlement
// (persistence.Tx.SettleJob, or the job stored synced) is the caller's.
//
// Built on a kept post, it is refused with persistence.ErrChanged unless the store holds that
// post still; the check does not end it early, so that on PostgreSQL a probe of the transaction
// (persistence.Store.UpdateAhead) notes every row it reads at once.
func (o *Outcome) Write(tx *persistence.Tx) error {
	held := o.expect == nil || tx.PostStoredAs(o.Post.ID, o.expect)
	err := o.write(tx)
	if !held {
		return persistence.ErrChanged
	}
	return err
}

func (o *Outcome) write(tx *persistence.Tx) error {
	if err := tx.AppendEvent(o.event); err != nil {
		return err
	}
	if err := tx.PutPost(o.Post, o.raw); err != nil {
		return err
	}
	if err := tx.CountOutcome(o.Post, o.now.Format("2006-01"), o.settled); err != nil {
		return err
	}
	return campaignCompleted(tx, o.Post.CampaignID, o.now)
}

// Took tells a live post actor that its job's final transaction stored the post as Post
// (Outcome): the actor's state becomes it. An actor that is not live reads it when activated.
type Took struct{ Post *persistence.Post }

// took makes a committed outcome the actor's state, unless its state is newer.
func (a *Actor) took(m *Took) {
	if a.state == nil || a.state.Version < m.Post.Version {
		a.state = m.Post
	}
}

// CampaignData is the data of a campaign.completed event.
type CampaignData struct {
	CampaignID string  `json:"campaign_id"`
	Name       *string `json:"name"`
	// Posts is how many posts the campaign has; Totals how many of them have each status.
	Posts  int            `json:"posts"`
	Totals map[string]int `json:"totals"`
}

// CampaignTotals are a campaign's posts per status, every status named.
func CampaignTotals(c persistence.CampaignCounts) map[string]int {
	out := make(map[string]int, len(persistence.PostStatuses))
	for _, s := range persistence.PostStatuses {
		out[s] = c.Of(s)
	}
	return out
}

// campaignCompleted adds campaign.completed to the outbox, in the transaction that stored a
// post's outcome, when that outcome leaves none of the campaign's posts scheduled or publishing.
// It is sent each time a campaign's last open post takes its outcome: once when it first
// completes, and again after each retry completes.
func campaignCompleted(tx *persistence.Tx, campaignID string, now time.Time) error {
	if campaignID == "" {
		return nil
	}
	counts := tx.CampaignCounts(campaignID)
	if counts.Open() > 0 {
		return nil
	}
	c, err := tx.Campaign(campaignID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	d := CampaignData{CampaignID: c.ID, Posts: counts.Total(), Totals: CampaignTotals(counts)}
	if c.Name != "" {
		d.Name = &c.Name
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return tx.AppendEvent(&persistence.Event{ID: uuid.Must(uuid.NewV7()).String(), Type: persistence.CampaignEventCompleted, UserID: c.UserID, WorkspaceID: c.WorkspaceID, CreatedAt: now.UTC(), Data: raw})
}

// campaignChanged tells the campaign's followers that one of its posts changed.
func (a *Actor) campaignChanged(id string) {
	if id != "" && a.deps.Campaigns != nil {
		a.deps.Campaigns.Notify(id)
	}
}
