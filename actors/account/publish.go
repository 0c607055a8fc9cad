package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// report sends a job what happened to one of its targets.
func (a *Actor) report(r *request, final, success bool, msg string, pub platforms.Publication) {
	a.reportStep(r, "", final, success, msg, pub)
}

// reportStep sends a job a step of the target's timeline (persistence.EventWaiting, ...). After
// the outcome the request leaves the account's hands; its entry stays in the store until the job
// stores the outcome, and is not taken again meanwhile.
func (a *Actor) reportStep(r *request, event string, final, success bool, msg string, pub platforms.Publication) {
	a.send(r, &Report{JobID: r.JobID, Target: r.Target, AccountID: a.id, Final: final, Success: success, Message: msg, Publication: pub, Event: event})
}

// send hands a report to the job; a final one takes the request out of the account's hands.
func (a *Actor) send(r *request, rep *Report) {
	if rep.Final && r.key != "" {
		a.trace("outcome reported", r, "success", rep.Success, "message", rep.Message)
		a.count(r, false)
		delete(a.held, r.key)
		a.reported[r.key] = sentReport{rep: rep, at: a.deps.Now()}
	}
	if a.drainJobs != nil {
		a.drainJobs[rep.JobID] = true
	}
	a.deps.Jobs.Report(rep)
}

// sentReport is an outcome the account reported whose job may not have stored it yet.
type sentReport struct {
	rep *Report
	at  time.Time
}

// reportAgainAfter is how long after an outcome's report the account sends it again when its
// shard is resumed and the job has not stored it: long enough that a job busy storing it is not
// sent it twice for nothing.
const reportAgainAfter = time.Second

// reportAgain sends again the outcomes reported longer than reportAgainAfter ago whose entries
// still wait in the store (Take.Resume): the report was lost on its way to its job or with the
// job's incarnation. The entries the store no longer holds are forgotten.
func (a *Actor) reportAgain() {
	if len(a.reported) == 0 {
		return
	}
	now := a.deps.Now()
	var gone []string
	var again []*Report
	err := a.deps.Store.View(func(tx *persistence.Tx) error {
		gone, again = gone[:0], again[:0]
		for key, s := range a.reported {
			switch {
			case !tx.IsWaiting(persistence.Waiting{AccountID: a.id, JobID: s.rep.JobID, Target: s.rep.Target}):
				gone = append(gone, key)
			case now.Sub(s.at) >= reportAgainAfter:
				again = append(again, s.rep)
			}
		}
		return nil
	})
	if err != nil {
		return // the next resume tries again
	}
	for _, key := range gone {
		delete(a.reported, key)
	}
	for _, rep := range again {
		a.deps.Jobs.Report(rep)
	}
	if len(again) > 0 {
		a.deps.Log.Info("an account reported again outcomes its jobs had not stored", "account_id", a.id, "count", len(again))
	}
}

// holdBack tells the backlog whether the account's budget holds back what waits for it.
func (a *Actor) holdBack(held bool) {
	if a.heldBack != held {
		a.heldBack = held
		a.deps.Backlog.Held(a.id, held)
	}
}

// count keeps a request's place in Deps.InHand true.
func (a *Actor) count(r *request, inHand bool) {
	if r.counted != inHand {
		r.counted = inHand
		if inHand {
			a.deps.Backlog.Add(1)
		} else {
			a.deps.Backlog.Add(-1)
		}
	}
}

// fail ends a request that cannot go on (stepFailed: a target whose post is published keeps it).
func (a *Actor) fail(r *request, msg string) { a.stepFailed(r, msg) }

// failWaiting fails every request no call has started for: those in the lane and in the queue,
// and those waiting in the store, which the account takes and fails at once until it has gone
// through them (or new credentials are stored). What is published afterwards is sent as usual.
func (a *Actor) failWaiting(msg string) {
	taken := a.lane.take()
	a.inflight = max(0, a.inflight-len(taken))
	for _, r := range append(taken, a.queue...) {
		a.fail(r, msg)
	}
	a.queue, a.told = nil, 0
	a.failing, a.more = msg, true
}

// maxUnstored bounds the outcomes an account has reported and their jobs may not have stored
// yet: their entries are still in the store, so the account waits for them before it takes more
// (recheckAfter later). Outcomes come at the pace of network calls, which the jobs store far
// faster; this only paces an account that fails what it takes without calling (a disconnected
// account, a refused token), so that it does not wake a backlog's worth of jobs at once.
const (
	maxUnstored  = 4 * maxBatch
	recheckAfter = 20 * time.Millisecond
)

// take tops the queue up to n requests from the store, in the store's order, passing over the
// entries the account holds or has reported. It reads each entry's post and resolves its media;
// an entry that cannot be published (its post gone, its media unusable, the account gone or its
// token refused) fails at once, and one whose attempt was recorded (a call that may have reached
// the network before a crash, or before the account passivated) is looked up, never sent again
// blindly.
func (a *Actor) take(ctx actor.Context, n int) {
	if !a.more || n <= 0 {
		return
	}
	paced := len(a.reported) >= maxUnstored+a.deps.Concurrency
	if paced {
		n = 0 // the walk only forgets what the jobs stored meanwhile
	}
	type taken struct {
		w    persistence.Waiting
		post *persistence.PostContent
		att  *persistence.Attempt
	}
	var got []taken
	var last string
	stored := map[string]bool{}
	mark := a.deps.Backlog.Mark(a.id)
	// Read ahead on PostgreSQL (persistence.Store.ViewAhead): what the function sets outside it
	// is set afresh by each run.
	err := a.deps.Store.ViewAhead(func(tx *persistence.Tx) error {
		got, last = got[:0], ""
		clear(stored)
		ws, more := tx.WaitingFor(a.id, n, len(a.held)+len(a.reported), func(key string) bool {
			last = key
			if _, ok := a.reported[key]; ok {
				stored[key] = true
				return true
			}
			return a.held[key] != nil
		})
		a.more = more
		for _, w := range ws {
			t := taken{w: w}
			if p, ok := a.deps.Posts.Get(w.PostID); ok && w.PostID != "" {
				t.post = p
			} else if w.PostID != "" {
				// Kept for the post's other accounts, which take it about as soon (a post's
				// content never changes once published).
				if t.post, _ = tx.PostContent(w.PostID); t.post != nil {
					a.deps.Posts.Put(w.PostID, t.post)
				}
			}
			t.att, _ = tx.Attempt(w.JobID, w.Target)
			got = append(got, t)
		}
		return nil
	})
	if err == nil {
		a.deps.Backlog.Taken(a.id, len(got), !a.more, mark)
	}
	if err != nil {
		// Nothing taken: the store could not be read. Try again shortly.
		a.more = true
		if !a.rechecking {
			a.rechecking = true
			actors.SendSelfAfter(ctx, a.storeFailed("reading the publishes waiting for the account", err), &recheck{})
		}
		return
	}
	// Reported entries the walk passed without finding are stored by their jobs: forget them.
	for key := range a.reported {
		if !stored[key] && (!a.more || key < last) {
			delete(a.reported, key)
		}
	}
	if paced && a.more && !a.rechecking {
		a.rechecking = true
		actors.SendSelfAfter(ctx, recheckAfter, &recheck{})
	}
	for _, t := range got {
		r := &request{JobID: t.w.JobID, Target: t.w.Target, key: t.w.Key()}
		a.held[r.key] = r
		var thread []persistence.ThreadPart
		var comment *persistence.FirstComment
		if t.post != nil {
			thread, comment = t.post.Steps(t.w.Target)
			// What an earlier run published stays known whatever happens next.
			if comment != nil {
				r.comment = &persistence.FirstComment{Content: comment.Content, Status: persistence.CommentPending}
			}
			r.parts = make([]platforms.Post, len(thread)) // counted by resume; filled by prepareSteps
			if t.att != nil {
				r.resume(t.att)
			}
		}
		switch {
		case a.acc == nil || a.deleting != nil:
			a.fail(r, "the connected account was disconnected; connect it again and publish again")
			continue
		case a.failing != "":
			a.fail(r, a.failing)
			continue
		case a.adapter == nil:
			a.fail(r, fmt.Sprintf("Herald has no adapter for %s", a.acc.Platform))
			continue
		case t.post == nil:
			a.fail(r, "the post no longer exists")
			continue
		}
		text, mediaIDs, own := t.post.Of(t.w.Target)
		opts, err := a.options(own)
		if err != nil {
			a.fail(r, err.Error())
			continue
		}
		r.Post = platforms.Post{Text: text, Options: opts}
		if len(mediaIDs) > 0 {
			media, err := a.media(persistence.Scope(t.post.UserID, t.post.WorkspaceID), mediaIDs, "the post's media")
			if err != nil {
				a.fail(r, err.Error())
				continue
			}
			r.Post.Media = media
		}
		if err := a.adapter.Validate(r.Post); err != nil {
			a.fail(r, errorMessage(err))
			continue
		}
		if len(thread) > 0 || comment != nil {
			if err := a.prepareSteps(r, persistence.Scope(t.post.UserID, t.post.WorkspaceID), thread, comment); err != nil {
				a.fail(r, err.Error())
				continue
			}
		}
		a.count(r, true)
		if t.att != nil && !t.att.Pending {
			// The call may have reached the network: look, don't resend. After a takeover of the
			// account's shard, the old owner's call may still be under way until its lease's
			// expiry plus the call time-out: the lookup waits until then.
			var wait time.Duration
			if a.deps.Fence != nil {
				if at := a.deps.Fence.NotBefore(a.id); !at.IsZero() {
					wait = time.Until(at)
				}
			}
			a.trace("attempt in doubt taken", r, "started_at", t.att.StartedAt)
			a.startLookupAfter(ctx, r, t.att.StartedAt, wait)
			continue
		}
		a.trace("taken", r, "attempt_pending", t.att != nil)
		a.queue = append(a.queue, r)
	}
	if !a.more {
		a.failing = "" // every entry that waited when the account failed is failed
	}
}

// media resolves a post's (or a thread part's, what) media; ErrNoMediaStorage on a Herald that
// stores none.
func (a *Actor) media(userID string, ids []string, what string) ([]platforms.Media, error) {
	if a.deps.Media == nil {
		return nil, ErrNoMediaStorage
	}
	media, err := a.deps.Media(context.Background(), userID, ids)
	if err != nil && !errors.Is(err, ErrNoMediaStorage) {
		return nil, fmt.Errorf("%s could not be read: %w", what, err)
	}
	return media, err
}

// options are a target's network options as the network receives them: its own laid over the
// account's defaults as they are now (the same merge the API's check made when it accepted the
// post). nil when neither gives any.
func (a *Actor) options(own json.RawMessage) (platforms.Options, error) {
	merged, err := platforms.MergeOptions(a.acc.DefaultOptions, own)
	if err != nil || len(merged) == 0 {
		return nil, err
	}
	o, fe := platforms.DecodeOptions(platforms.Platform(a.acc.Platform), merged)
	if fe != nil {
		return nil, fmt.Errorf("the target's options no longer fit %s: %s", platforms.Platform(a.acc.Platform).Name(), fe.Error())
	}
	return o, nil
}

// pumpLater runs pump once the mailbox's waiting messages are handled.
func (a *Actor) pumpLater(ctx actor.Context) {
	if !a.pumpSent {
		a.pumpSent = true
		ctx.Send(ctx.Self(), &pumpSoon{})
	}
}

// queueFront puts requests back at the queue's front, ahead of the ones that waited behind them.
func (a *Actor) queueFront(rs ...*request) {
	a.queue = append(rs, a.queue...)
	a.told = 0
}

// needsRefresh reports whether the token should be refreshed before the next call.
func (a *Actor) needsRefresh(now time.Time) bool {
	c := a.creds
	return !c.ExpiresAt.IsZero() && c.ExpiresAt.Sub(now) < a.deps.RefreshAhead && now.After(a.refreshNext)
}

// Attempts are recorded ahead of the calls, in batches, so that the callers never wait for a
// commit between two calls. A batch holds the calls of about lead (at the account's recent call
// duration and concurrency), between 1 and maxBatch of them, plus one for each free call slot
// (those start at once), and the next batch is recorded when the lane holds less than half of
// one or a call slot is free. Every recorded attempt that a crash leaves unsent is looked up on
// the network at the next start (a read the network counts), so the lane holds no more than it
// needs to hide the commit: at zero latency 64 calls, at 100 ms per call one.
const (
	maxBatch = 64
	lead     = 50 * time.Millisecond
)

// batchSize is how many attempts the next batch records.
func (a *Actor) batchSize() int {
	if a.callTime <= 0 {
		return 1 // no call measured yet
	}
	n := int(time.Duration(a.deps.Concurrency) * lead / a.callTime)
	return max(1, min(n, maxBatch))
}

// observeCallTime folds one call's duration into the account's recent call duration.
func (a *Actor) observeCallTime(d time.Duration) {
	if a.callTime <= 0 {
		a.callTime = d
		return
	}
	a.callTime += (d - a.callTime) / 8
}

// pump keeps the lane filled from the queue as far as the budget allows: budget reserved and
// attempts recorded for a batch in one commit, then the batch handed to the callers, in order.
func (a *Actor) pump(ctx actor.Context) {
	if a.deleting != nil || a.storeWait || a.draining || a.fenced || a.untrusted {
		return
	}
	if a.acc == nil || a.failing != "" {
		// Nothing can be published: what waits in the store fails, a batch at a time.
		a.take(ctx, maxBatch)
		if a.more && !a.rechecking {
			a.pumpLater(ctx)
		}
		return
	}
	platform := platforms.Platform(a.acc.Platform)
	for !a.refreshing {
		// Requests for free call slots start at once; only those beyond them wait ahead.
		pending, free := a.lane.load()
		size := a.batchSize()
		if free == 0 && pending >= max(1, size/2) {
			return
		}
		size = min(size+free, maxBatch)
		if len(a.queue) < size {
			a.take(ctx, size-len(a.queue))
			if a.acc == nil || a.failing != "" {
				return
			}
		}
		if len(a.queue) == 0 {
			return
		}
		now := a.deps.Now()
		if a.needsRefresh(now) {
			// The token is refreshed between calls: the lane runs dry first.
			if a.inflight == 0 {
				a.startRefresh(ctx, false)
			}
			return
		}
		var batch []*request
		var retryAt time.Time
		for len(batch) < size && len(batch) < len(a.queue) {
			ok, at := a.reserve(platform, a.queue[len(batch)], now)
			if !ok {
				retryAt = at
				break
			}
			batch = append(batch, a.queue[len(batch)])
		}
		if len(batch) == 0 {
			a.deps.Metrics.BudgetWaits.WithLabelValues(string(platform)).Inc()
			from := 0
			if retryAt.Equal(a.toldAt) {
				from = min(a.told, len(a.queue))
			}
			for _, r := range a.queue[from:] {
				a.count(r, false) // it waits for the network's budget
				if !r.waitShown.Equal(retryAt) {
					r.waitShown = retryAt
					a.reportStep(r, persistence.EventWaiting, false, false, "waiting for rate budget until "+retryAt.UTC().Format(time.RFC3339), platforms.Publication{})
				}
			}
			a.told, a.toldAt = len(a.queue), retryAt
			a.holdBack(true)
			a.armWake(ctx, retryAt)
			return
		}
		a.holdBack(false)
		a.queue = a.queue[len(batch):]
		a.told = max(0, a.told-len(batch))
		for _, r := range batch {
			a.count(r, true)
		}
		a.deps.Metrics.BudgetLeft.WithLabelValues(string(platform)).Set(float64(a.deps.Budgets.Remaining(platform, a.id, now)))
		err := a.update(func(tx *persistence.Tx) error {
			for _, r := range batch {
				if err := tx.PutAttempt(r.attempt(a.id, now)); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, persistence.ErrFenced) {
			// The shard moved to another node: nothing was recorded or sent, and the new owner
			// takes these targets from the store. The actor stops (Receive).
			for _, r := range batch {
				a.refund(platform, r)
			}
			a.queueFront(batch...)
			return
		}
		if errors.Is(err, persistence.ErrWriteFailed) {
			// The store cannot write: nothing was sent, so the batch waits at the queue's front,
			// in order, and is tried again once the store may take it.
			for _, r := range batch {
				a.refund(platform, r)
			}
			a.queueFront(batch...)
			a.storeWait = true
			actors.SendSelfAfter(ctx, a.storeFailed("recording publish attempts", err), &storeRetry{})
			return
		}
		if err != nil {
			for _, r := range batch {
				a.refund(platform, r)
				a.fail(r, "Herald could not record the attempt: "+err.Error())
			}
			continue
		}
		a.storeFailures = 0
		for _, r := range batch {
			if !r.waitShown.IsZero() {
				// The job last heard that this target waits for budget: say it no longer does.
				// Otherwise its phase is already platform_uploading, and the outcome follows.
				a.report(r, false, false, "publishing to "+string(platform), platforms.Publication{})
			}
		}
		for _, r := range batch {
			a.trace("attempt recorded", r)
		}
		a.inflight += len(batch)
		a.lane.push(batch)
	}
}

// unready returns requests whose calls have not started to the queue's front, giving back their
// budget and forgetting their attempts (nothing was sent for them).
func (a *Actor) unready() {
	back := a.lane.take()
	if len(back) == 0 {
		return
	}
	a.inflight = max(0, a.inflight-len(back))
	platform := platforms.Platform(a.acc.Platform)
	err := a.update(func(tx *persistence.Tx) error {
		for _, r := range back {
			if r.step > 0 {
				continue // its record keeps what the steps before it published (forgetAttempt)
			}
			if err := tx.DeleteAttempt(r.JobID, r.Target); err != nil {
				return err
			}
		}
		return nil
	})
	for _, r := range back {
		a.trace("attempt undone before its call", r, "error", err)
		a.refund(platform, r)
	}
	a.queueFront(back...)
}

func (a *Actor) armWake(ctx actor.Context, at time.Time) {
	if !a.waitUntil.IsZero() && !at.Before(a.waitUntil) {
		return
	}
	if a.waitTimer != nil {
		a.waitTimer.Stop()
	}
	a.waitUntil = at
	self, root := ctx.Self(), ctx.ActorSystem().Root
	a.waitTimer = time.AfterFunc(time.Until(at), func() { root.Send(self, &wake{}) })
}

func (a *Actor) observeCall(platform, endpoint string, start time.Time, err error) {
	outcome := "ok"
	if err != nil {
		outcome = platforms.KindOf(err).String()
	}
	a.deps.Metrics.Calls.WithLabelValues(platform, endpoint, outcome).Inc()
	a.deps.Metrics.CallSeconds.WithLabelValues(platform, endpoint).Observe(time.Since(start).Seconds())
}

func errorMessage(err error) string {
	var pe *platforms.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return fmt.Sprintf("%s: %s", pe.Platform, pe.Message)
	}
	return err.Error()
}

// callDone takes a call's outcome. A failed call held the lane (lane.go); it is released once
// the failure is handled, except while the post is looked up (lookupDone releases it), so that
// a post whose outcome is unknown is resolved before the ones behind it are sent.
func (a *Actor) callDone(ctx actor.Context, m *callDone) {
	a.inflight = max(0, a.inflight-1)
	r := m.req
	if a.acc == nil {
		// The account was disconnected while the call was on its way. What the network answered
		// still stands: a post it created exists, and saying otherwise would invite publishing it
		// twice.
		a.lane.release()
		if r.steps() > 1 && (r.step > 0 || m.err == nil) {
			if m.err == nil {
				r.advance(m.res.Publication)
			}
			if r.step == r.steps() {
				a.final(r, "", true, fmt.Sprintf("published to %s (the connected account was disconnected afterwards)", m.platform))
				return
			}
			if m.err != nil && platforms.KindOf(m.err) == platforms.Unknown {
				a.fail(r, fmt.Sprintf("outcome unknown: %s; the connected account was disconnected before Herald could check whether %s exists on %s", errorMessage(m.err), r.stepName(), m.platform))
				return
			}
			a.fail(r, "the connected account was disconnected before "+r.stepName()+" could be published")
			return
		}
		switch {
		case m.err == nil:
			a.report(r, true, true, fmt.Sprintf("published to %s (the connected account was disconnected afterwards)", m.platform), m.res.Publication)
		case platforms.KindOf(m.err) == platforms.Unknown:
			a.fail(r, fmt.Sprintf("outcome unknown: %s; the connected account was disconnected before Herald could check whether the post exists on %s", errorMessage(m.err), m.platform))
		default:
			a.fail(r, "the connected account was disconnected while the post was being published: "+errorMessage(m.err))
		}
		return
	}
	a.trace("call done", r, "started", m.start, "took", m.took, "error", m.err)
	if errors.Is(m.err, errUntrusted) {
		// Not sent: this node no longer trusts its lease of the account's shard (it is handing it
		// off, or lost it). The lane stays held; the request goes back to the queue with its
		// attempt forgotten (refused by the fence if the shard moved: then the next owner looks
		// it up and finds nothing). The calls still on their way come back and are reported
		// before the actor stops (Receive), so that none is left in doubt needlessly.
		a.untrusted = true
		a.forgetAttempt(r)
		a.queueFront(r)
		return
	}
	platform := platforms.Platform(a.acc.Platform)
	a.observeCall(string(platform), "publish", m.start, m.err)
	publishRules := a.stepRules(r) == nil
	if publishRules {
		a.deps.Budgets.Sent(platform, a.id, m.start)
	}
	now := a.deps.Now()
	a.observeCallTime(m.took)
	if m.err == nil {
		if publishRules {
			a.deps.Budgets.Observe(platform, a.id, m.res.Rate, now)
		}
		a.stepDone(r, m.res.Publication, "")
		a.pumpLater(ctx)
		return
	}
	var pe *platforms.Error
	errors.As(m.err, &pe)
	switch platforms.KindOf(m.err) {
	case platforms.RateLimited:
		// Nothing was created. Wait for the network's reset and try again, in order.
		a.deps.Metrics.RateLimited.WithLabelValues(string(platform)).Inc()
		until := now.Add(time.Minute)
		if pe != nil && !pe.ResetAt.IsZero() {
			until = pe.ResetAt
		}
		perPlatform := false
		for _, rule := range a.deps.Budgets.Rules(platform) {
			perPlatform = perPlatform || rule.PerPlatform
		}
		a.deps.Budgets.Block(platform, a.id, until, perPlatform)
		a.forgetAttempt(r)
		a.unready()
		a.queueFront(r)
	case platforms.AuthExpired:
		a.forgetAttempt(r)
		if r.refreshed {
			a.needReconnect(fmt.Sprintf("%s refused the token even after a refresh (%s)", platform, errorMessage(m.err)))
			a.fail(r, fmt.Sprintf("%s refused the token even after a refresh; connect the account again (%s)", platform, errorMessage(m.err)))
			break
		}
		r.refreshed = true
		a.unready()
		a.queueFront(r)
		a.startRefresh(ctx, true)
		a.lane.release() // empty; nothing is handed to it before the refresh ends
		return
	case platforms.Transient:
		a.forgetAttempt(r)
		if r.retries >= a.deps.MaxRetries {
			a.fail(r, fmt.Sprintf("%s failed %d times: %s", platform, r.retries+1, errorMessage(m.err)))
			break
		}
		r.retries++
		d := a.deps.Backoff << (r.retries - 1)
		d = d/2 + rand.N(d/2+1) // jitter
		a.reportStep(r, persistence.EventRetrying, false, false, fmt.Sprintf("retrying in %s (attempt %d of %d) after: %s",
			d.Round(time.Millisecond), r.retries+1, a.deps.MaxRetries+1, errorMessage(m.err)), platforms.Publication{})
		self, root := ctx.Self(), ctx.ActorSystem().Root
		a.retrying++
		a.count(r, false) // it waits for its backoff
		time.AfterFunc(d, func() { root.Send(self, &retry{req: r}) })
		a.lane.release()
		a.pump(ctx)
		return
	case platforms.Unknown:
		if r.resolved {
			a.deps.Metrics.UnknownOutcome.WithLabelValues(string(platform), "unresolved").Inc()
			a.fail(r, "outcome unknown: "+errorMessage(m.err)+"; the post may exist on the network, check before publishing again")
			break
		}
		r.holding = true
		a.startLookup(ctx, r, m.start)
		return
	default: // Permanent, Invalid
		a.fail(r, errorMessage(m.err))
	}
	a.lane.release()
	a.pump(ctx)
}

// forgetAttempt removes the attempt record of a call that created nothing. A later step's record
// stays: it holds what the steps before it published, and the lookup a crash would make of its
// step finds nothing, so the step is sent again.
func (a *Actor) forgetAttempt(r *request) {
	if r.step > 0 {
		return
	}
	err := a.update(func(tx *persistence.Tx) error { return tx.DeleteAttempt(r.JobID, r.Target) })
	a.trace("attempt forgotten", r, "error", err)
}

// drain stops new work and answers once nothing is in flight (Receive sends the answer).
func (a *Actor) drain(ctx actor.Context) {
	if ctx.Sender() == nil {
		return
	}
	if !a.draining {
		close(a.drainStarted)
	}
	a.drainer, a.draining = ctx.Sender(), true
	if a.drainJobs == nil {
		a.drainJobs = map[string]bool{}
	}
	if a.acc != nil {
		a.unready()
	}
}
