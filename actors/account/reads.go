package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/platforms"
)

// Live reads: the network calls of analytics and the inbox (metrics of a publication, its
// comments, a reply to a comment, a like or a hide of a comment, the account's conversations, a
// conversation's messages, a direct message). They go through
// the account's actor like publishes, so that they spend the account's budget and use its
// current token, but they never wait in its publish queue and never block it:
//
//   - the call runs in a goroutine and its outcome comes back to the actor as a message;
//   - a read whose budget is spent is answered at once with *BudgetSpentError (a live request
//     does not wait for a window to reset);
//   - at most Deps.ReadConcurrency reads of one account are in flight; more wait for a slot,
//     until their deadline;
//   - an auth-expired answer refreshes the token once (sharing the refresh with publishes) and
//     repeats the call once; a token that cannot be refreshed answers *ReconnectError.
//
// Nothing is retried beyond that: a live request prefers a fast, honest "not read" to a slow
// answer.

// ReadOp is one kind of live call.
type ReadOp string

// The live calls.
const (
	OpMetrics      ReadOp = "metrics"  // platforms.Reader.Metrics
	OpComments     ReadOp = "comments" // platforms.Commenter.Comments
	OpReply        ReadOp = "reply"    // platforms.Commenter.Reply
	OpConversation ReadOp = "dm_read"  // platforms.Messenger.Conversation
	OpSendMessage  ReadOp = "dm_send"  // platforms.Messenger.SendMessage
	// OpConversations lists the account's conversations (platforms.ConversationLister).
	OpConversations ReadOp = "dm_list"
	// OpLike likes or, with Undo, unlikes a comment (platforms.Liker).
	OpLike ReadOp = "like"
	// OpHide hides or, with Undo, shows again a comment (platforms.Hider).
	OpHide ReadOp = "hide"
	// OpChoices reads what the account's options may be now (platforms.ChoiceReader): a TikTok
	// creator's privacy levels and interactions, Pinterest boards, YouTube categories and
	// playlists.
	OpChoices ReadOp = "choices"
)

// MetricsBatcher is implemented by adapters that read the metrics of many publications in few
// calls (the network's batch lookups). Publications the network does not find are left out of
// the map.
type MetricsBatcher interface {
	BatchMetrics(ctx context.Context, c platforms.Credentials, ids []string) (map[string]platforms.Metrics, error)
}

// metricsPerCall is how many publications one batch call of a network reads: X GET /2/tweets 100
// ids, Bluesky getPosts 25 URIs, YouTube videos.list 50 ids, TikTok video/query 20 ids.
var metricsPerCall = map[platforms.Platform]int{platforms.X: 100, platforms.Bluesky: 25, platforms.YouTube: 50, platforms.TikTok: 20}

// MetricsPerCall is how many publications' metrics one network call reads on p: 1 when the
// network has no batch read.
func MetricsPerCall(p platforms.Platform) int { return max(metricsPerCall[p], 1) }

// Read asks the account for one live call. Reply: *ReadReply; errors: ErrNotFound or
// ErrForbidden (the account), ErrReadUnsupported, *BudgetSpentError, *ReconnectError,
// ErrReadDeadline, platforms.ErrNotFound (the object read is not the account's), or the
// network's classified *platforms.Error.
type Read struct {
	Op ReadOp
	// Scope, when set, is the workspace the account must be in (persistence.Scope; else
	// ErrForbidden).
	Scope         string
	PublicationID string
	// PublicationIDs, with OpMetrics, reads many publications' metrics in batch calls
	// (ReadReply.Batch); ErrReadUnsupported when the adapter has no batch read. Each call of
	// MetricsPerCall publications spends one unit of the budget.
	PublicationIDs []string
	CommentID      string
	ConversationID string
	PeerID         string
	Text           string
	Media          []platforms.Media
	// Undo turns OpLike into an unlike and OpHide into an unhide.
	Undo bool
	// Deadline bounds the call, its wait for a slot and a token refresh (zero: Deps.CallTimeout).
	Deadline time.Time
}

// ReadReply carries what the network answered; the field of the operation is set.
type ReadReply struct {
	Platform platforms.Platform
	Metrics  platforms.Metrics
	// Batch holds the metrics of a batch read, by publication id; a publication the network
	// does not find is absent.
	Batch    map[string]platforms.Metrics
	Comments []platforms.Comment
	Comment  platforms.Comment
	Messages []platforms.Message
	Message  platforms.Message
	// Conversations is the listing of OpConversations; Truncated says the network had more.
	Conversations []platforms.ConversationSummary
	Truncated     bool
	// Choices is the answer of OpChoices.
	Choices platforms.Choices
}

// ErrReadUnsupported means the account's network offers no such live call.
var ErrReadUnsupported = errors.New("account: the network offers no such live call")

// ErrReadDeadline means the read's deadline passed before its call could start.
var ErrReadDeadline = errors.New("account: the read's deadline passed before it could start")

// BudgetSpentError says that the account's budget for the operation is spent until RetryAt.
type BudgetSpentError struct {
	Platform platforms.Platform
	Op       ReadOp
	RetryAt  time.Time
}

func (e *BudgetSpentError) Error() string {
	return fmt.Sprintf("%s: the account's %s budget is spent until %s", e.Platform, e.Op, e.RetryAt.UTC().Format(time.RFC3339))
}

// ReconnectError says that the account's token is expired or refused by the network and could
// not be refreshed: the account must be connected again.
type ReconnectError struct {
	Platform platforms.Platform
	Reason   string
}

func (e *ReconnectError) Error() string {
	return fmt.Sprintf("%s: connect the account again: %s", e.Platform, e.Reason)
}

// readState is the account's live reads in progress.
type readState struct {
	inflight int
	waiting  []*pendingRead // budget spent, waiting for a call slot
	parked   []*pendingRead // waiting for a token refresh
}

func (s *readState) busy() bool {
	return s.inflight > 0 || len(s.waiting) > 0 || len(s.parked) > 0
}

type pendingRead struct {
	*Read
	sender    *actor.PID
	refreshed bool // the token was refreshed for it once already
	calls     int  // network calls it spends
}

// readDone is a read call's outcome, sent by its goroutine.
type readDone struct {
	r     *pendingRead
	reply *ReadReply
	err   error
}

// readMessage marks the messages handled here, so that the actor's Receive routes them all with
// one case.
type readMessage interface{ readMessage() }

func (*Read) readMessage()     {}
func (*readDone) readMessage() {}

// receiveRead handles a readMessage.
func (a *Actor) receiveRead(ctx actor.Context, m readMessage) {
	switch m := m.(type) {
	case *Read:
		a.read(ctx, m)
	case *readDone:
		a.readDone(ctx, m)
	}
}

func (a *Actor) read(ctx actor.Context, m *Read) {
	if err := a.owned(m.Scope); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	switch {
	case !supports(a.adapter, m.Op):
		actors.ReplyError(ctx, ErrReadUnsupported)
		return
	}
	platform := platforms.Platform(a.acc.Platform)
	r := &pendingRead{Read: m, sender: ctx.Sender(), calls: 1}
	if m.Op == OpMetrics && len(m.PublicationIDs) > 0 {
		if _, ok := a.adapter.(MetricsBatcher); !ok {
			actors.ReplyError(ctx, ErrReadUnsupported)
			return
		}
		per := MetricsPerCall(platform)
		r.calls = (len(m.PublicationIDs) + per - 1) / per
	}
	now := a.deps.Now()
	if reason := a.reconnectReason(now); reason != "" {
		if a.creds.AccessToken == "" {
			a.needReconnect(reason)
		}
		a.answer(ctx, r, nil, &ReconnectError{Platform: platform, Reason: reason})
		return
	}
	if !a.creds.ExpiresAt.IsZero() && !now.Before(a.creds.ExpiresAt) {
		// The token is expired: refresh it first.
		r.refreshed = true
		a.park(ctx, r, false)
		return
	}
	a.admit(ctx, r)
}

// reconnectReason is the rule, decided before any network call, of an account that must be
// connected again: Herald holds no usable token, or the token is expired and a refresh failed a
// moment ago (none is running). "" when a call may go ahead (an expired token is refreshed
// first). A read answers *ReconnectError with this reason, and Get reports it (Reply.Reconnect),
// so that a listing tells what a read would, without calling the network.
func (a *Actor) reconnectReason(now time.Time) string {
	switch {
	case a.acc != nil && a.acc.ReconnectAt != nil:
		if a.acc.ReconnectReason != "" {
			return a.acc.ReconnectReason
		}
		return "the network refused the token refresh"
	case a.creds.AccessToken == "":
		return "Herald holds no usable token for the account"
	case !a.creds.ExpiresAt.IsZero() && !now.Before(a.creds.ExpiresAt) && !a.refreshing && now.Before(a.refreshNext):
		return "the token is expired and could not be refreshed"
	}
	return ""
}

// admit spends the read's budget and starts it, or queues it for a call slot.
func (a *Actor) admit(ctx actor.Context, r *pendingRead) {
	platform := platforms.Platform(a.acc.Platform)
	now := a.deps.Now()
	if !r.Deadline.IsZero() && !now.Before(r.Deadline) {
		a.answer(ctx, r, nil, ErrReadDeadline)
		return
	}
	if ok, at := a.deps.Budgets.reserveOp(platform, a.id, r.Op, a.deps.ReadRules[platform][r.Op], r.calls, now); !ok {
		a.answer(ctx, r, nil, &BudgetSpentError{Platform: platform, Op: r.Op, RetryAt: at})
		return
	}
	if a.live.inflight >= a.deps.ReadConcurrency {
		a.live.waiting = append(a.live.waiting, r)
		return
	}
	a.startRead(ctx, r)
}

// park holds a read until a token refresh ends, starting one when none runs.
func (a *Actor) park(ctx actor.Context, r *pendingRead, forced bool) {
	a.live.parked = append(a.live.parked, r)
	if !a.refreshing {
		a.startRefresh(ctx, forced)
	}
}

// resumeReads runs after every token refresh: parked reads go again with the new token, or are
// answered that the account must be connected again.
func (a *Actor) resumeReads(ctx actor.Context, m *refreshDone) {
	parked := a.live.parked
	a.live.parked = nil
	for _, r := range parked {
		if a.acc == nil {
			a.answer(ctx, r, nil, ErrNotFound)
			continue
		}
		if m.err != nil {
			a.answer(ctx, r, nil, &ReconnectError{Platform: platforms.Platform(a.acc.Platform), Reason: "the token refresh failed: " + errorMessage(m.err)})
			continue
		}
		a.admit(ctx, r)
	}
}

func (a *Actor) startRead(ctx actor.Context, r *pendingRead) {
	a.live.inflight++
	adapter, creds := a.adapter, a.creds
	platform := a.acc.Platform
	deadline := r.Deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(a.deps.CallTimeout)
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		c, cancel := context.WithDeadline(context.Background(), deadline)
		c = a.gated(c)
		start := time.Now()
		reply, err := call(c, adapter, creds, r.Read)
		cancel()
		a.observeCall(platform, string(r.Op), start, err)
		root.Send(self, &readDone{r: r, reply: reply, err: err})
	}()
}

// call makes the adapter call of a read.
func call(ctx context.Context, adapter platforms.Adapter, c platforms.Credentials, r *Read) (*ReadReply, error) {
	out := &ReadReply{Platform: adapter.Platform()}
	var err error
	switch r.Op {
	case OpMetrics:
		if len(r.PublicationIDs) > 0 {
			out.Batch, err = adapter.(MetricsBatcher).BatchMetrics(ctx, c, r.PublicationIDs)
			break
		}
		out.Metrics, err = adapter.(platforms.Reader).Metrics(ctx, c, r.PublicationID)
	case OpComments:
		out.Comments, err = adapter.(platforms.Commenter).Comments(ctx, c, r.PublicationID)
	case OpReply:
		out.Comment, err = adapter.(platforms.Commenter).Reply(ctx, c, r.PublicationID, r.CommentID, r.Text, r.Media)
	case OpConversation:
		out.Messages, err = adapter.(platforms.Messenger).Conversation(ctx, c, r.ConversationID)
	case OpSendMessage:
		out.Message, err = adapter.(platforms.Messenger).SendMessage(ctx, c, r.ConversationID, r.PeerID, r.Text, r.Media)
	case OpConversations:
		out.Conversations, out.Truncated, err = adapter.(platforms.ConversationLister).Conversations(ctx, c)
	case OpLike:
		err = adapter.(platforms.Liker).LikeComment(ctx, c, r.PublicationID, r.CommentID, !r.Undo)
	case OpHide:
		err = adapter.(platforms.Hider).HideComment(ctx, c, r.PublicationID, r.CommentID, !r.Undo)
	case OpChoices:
		out.Choices, err = adapter.(platforms.ChoiceReader).Choices(ctx, c)
	default:
		err = ErrReadUnsupported
	}
	return out, err
}

func supports(adapter platforms.Adapter, op ReadOp) bool {
	if adapter == nil {
		return false
	}
	switch op {
	case OpMetrics:
		_, ok := adapter.(platforms.Reader)
		return ok
	case OpComments, OpReply:
		_, ok := adapter.(platforms.Commenter)
		return ok
	case OpConversation, OpSendMessage:
		_, ok := adapter.(platforms.Messenger)
		return ok
	case OpConversations:
		_, ok := adapter.(platforms.ConversationLister)
		return ok
	case OpLike:
		_, ok := adapter.(platforms.Liker)
		return ok
	case OpHide:
		_, ok := adapter.(platforms.Hider)
		return ok
	case OpChoices:
		_, ok := adapter.(platforms.ChoiceReader)
		return ok
	}
	return false
}

func (a *Actor) readDone(ctx actor.Context, m *readDone) {
	a.live.inflight = max(0, a.live.inflight-1)
	defer a.nextReads(ctx)
	r := m.r
	if a.acc == nil {
		a.answer(ctx, r, nil, ErrNotFound)
		return
	}
	platform := platforms.Platform(a.acc.Platform)
	if m.err == nil {
		a.answer(ctx, r, m.reply, nil)
		return
	}
	switch platforms.KindOf(m.err) {
	case platforms.AuthExpired:
		if r.refreshed {
			a.needReconnect(fmt.Sprintf("%s refused the token even after a refresh (%s)", platform, errorMessage(m.err)))
			a.answer(ctx, r, nil, &ReconnectError{Platform: platform, Reason: string(platform) + " refused the token even after a refresh"})
			return
		}
		// Refused before anything was done: refresh once and repeat.
		r.refreshed = true
		a.park(ctx, r, true)
		return
	case platforms.RateLimited:
		a.deps.Metrics.RateLimited.WithLabelValues(string(platform)).Inc()
		until := a.deps.Now().Add(time.Minute)
		var pe *platforms.Error
		if errors.As(m.err, &pe) && !pe.ResetAt.IsZero() {
			until = pe.ResetAt
		}
		a.deps.Budgets.exhaustOp(platform, a.id, a.deps.ReadRules[platform][r.Op], until)
		a.answer(ctx, r, nil, &BudgetSpentError{Platform: platform, Op: r.Op, RetryAt: until})
		return
	}
	a.answer(ctx, r, nil, m.err)
}

// nextReads starts the reads waiting for a slot, answering those whose deadline passed.
func (a *Actor) nextReads(ctx actor.Context) {
	if a.acc == nil || a.deleting != nil {
		for _, r := range a.live.waiting {
			a.answer(ctx, r, nil, ErrNotFound)
		}
		a.live.waiting = nil
		return
	}
	now := a.deps.Now()
	for a.live.inflight < a.deps.ReadConcurrency && len(a.live.waiting) > 0 {
		r := a.live.waiting[0]
		a.live.waiting = a.live.waiting[1:]
		if !r.Deadline.IsZero() && !now.Before(r.Deadline) {
			p := platforms.Platform(a.acc.Platform)
			a.deps.Budgets.refundOp(p, a.id, a.deps.ReadRules[p][r.Op], r.calls)
			a.answer(ctx, r, nil, ErrReadDeadline)
			continue
		}
		a.startRead(ctx, r)
	}
}

// answer replies to a read's sender.
func (a *Actor) answer(ctx actor.Context, r *pendingRead, reply *ReadReply, err error) {
	if r.sender == nil {
		return
	}
	if err != nil {
		ctx.Send(r.sender, &actors.ErrorReply{Err: err})
		return
	}
	ctx.Send(r.sender, reply)
}

// effective returns a read rule as it applies: a rule sharing a publish rule's name takes that
// rule's configured limit and window (its own cost stays).
func (b *Budgets) effective(p platforms.Platform, r Rule) Rule {
	for _, pr := range b.rules[p] {
		if pr.Name == r.Name {
			r.Limit, r.Window, r.PerPlatform = pr.Limit, pr.Window, pr.PerPlatform
			r.Cost = min(r.Cost, r.Limit)
		}
	}
	return r
}

// reserveOp spends n live calls' rules for account on p at now; when any has no room for all n,
// it spends nothing and returns when the tightest reopens. A reply honours a block the network
// imposed on the account's publishes (it is the same kind of write on X and Bluesky).
func (b *Budgets) reserveOp(p platforms.Platform, account string, op ReadOp, rules []Rule, n int, now time.Time) (ok bool, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if op == OpReply {
		for _, key := range []string{account, "platform:" + string(p)} {
			if until, blocked := b.blocked[key]; blocked && now.Before(until) {
				return false, until
			}
		}
	}
	ws := make([]*window, len(rules))
	eff := make([]Rule, len(rules))
	for i, r := range rules {
		r = b.effective(p, r)
		eff[i] = r
		k := windowKey{r.Name, scopeOf(r, p, account)}
		w := b.windows[k]
		if w == nil || !now.Before(w.end) {
			w = &window{start: now, end: now.Add(r.Window + b.margin(r.Window))}
			b.windows[k] = w
		}
		if w.used+n*r.Cost > r.Limit && w.end.After(retryAt) {
			retryAt = w.end
		}
		ws[i] = w
	}
	if !retryAt.IsZero() {
		return false, retryAt
	}
	for i, r := range eff {
		ws[i].used += n * r.Cost
	}
	if b.shared != nil && anyShared(eff) {
		b.mu.Unlock()
		ok, retryAt := b.takeShared(p, eff, n, now)
		b.mu.Lock()
		if !ok {
			b.refund(p, account, eff, n)
		}
		return ok, retryAt
	}
	return true, time.Time{}
}

// refundOp gives back a reservation of n calls that never started.
func (b *Budgets) refundOp(p platforms.Platform, account string, rules []Rule, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	eff := make([]Rule, len(rules))
	for i, r := range rules {
		eff[i] = b.effective(p, r)
	}
	b.returnShared(p, eff, n)
	b.refund(p, account, eff, n)
}

// exhaustOp marks a live call's rules spent until the network's reset (it answered 429).
func (b *Budgets) exhaustOp(p platforms.Platform, account string, rules []Rule, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range rules {
		r = b.effective(p, r)
		k := windowKey{r.Name, scopeOf(r, p, account)}
		w := b.windows[k]
		if w == nil {
			w = &window{start: until, end: until}
			b.windows[k] = w
		}
		w.used = r.Limit
		if until.After(w.end) {
			w.end = until
		}
	}
}

// RemainingOp reports the calls of op left now for the account on p (the tightest rule); -1
// when no rule limits it.
func (b *Budgets) RemainingOp(p platforms.Platform, account string, rules []Rule, now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := -1
	for _, r := range rules {
		r = b.effective(p, r)
		room := r.Limit
		if w := b.windows[windowKey{r.Name, scopeOf(r, p, account)}]; w != nil && now.Before(w.end) {
			room = r.Limit - w.used
		}
		room = b.sharedRoom(p, r, room, now)
		if n := max(room, 0) / max(r.Cost, 1); left < 0 || n < left {
			left = n
		}
	}
	return left
}
