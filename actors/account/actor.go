// Package account is the connected-account actor: one virtual actor per connected account,
// owning its OAuth tokens (sealed at rest), its rate budget and its network calls.
//
// The targets an account publishes wait in the store (persistence jobs_waiting), in the order of
// their jobs' creation, not in memory: the actor takes a few at a time, as many as its next
// batch of calls needs, into its queue, where they wait, in order, until the budget has room
// (never failing for lack of it). A backlog of any size thus costs the account the memory of one
// batch. The actor refreshes the token ahead of its expiry and once more on an
// auth-expired answer, retries transient failures with backoff and jitter a bounded number of
// times, fails permanent ones at once with the network's message, and never repeats blindly an
// attempt whose outcome is unknown: it looks the post up on the network first. Before every
// network call that may create a post, the attempt is recorded in bbolt; the job that receives
// the outcome deletes that record in the same transaction that stores the outcome, so that after
// a crash an attempt in flight is resolved rather than sent twice.
package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
)

// KindName labels the account actor in metrics.
const KindName = "account"

// Deps are what account actors need.
type Deps struct {
	Store    *persistence.Store
	Box      *secret.Box
	Adapters map[platforms.Platform]platforms.Adapter
	Budgets  *Budgets
	// Jobs take the account's reports (actors/publishing in Herald; nil: nobody takes them).
	Jobs    Jobs
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *Metrics
	// Concurrency bounds the account's calls in flight (default 1: one account publishes in
	// order, as networks expect of one user).
	Concurrency int
	// MaxRetries bounds the retries of a transient failure (default 3).
	MaxRetries int
	// Backoff is the first retry delay; it doubles, with full jitter (default 500ms).
	Backoff time.Duration
	// CallTimeout bounds one publish call, uploads included (default 10m).
	CallTimeout time.Duration
	// RefreshAhead refreshes a token that expires within it before using it (default 10m).
	RefreshAhead time.Duration
	IdleTimeout  time.Duration
	// ReadRules are the budgets of live reads per network and operation (default
	// DefaultReadRules; reads.go).
	ReadRules map[platforms.Platform]map[ReadOp][]Rule
	// ReadConcurrency bounds the account's live reads in flight (default 8).
	ReadConcurrency int
	// Media turns a post's media ids into what adapters upload (nil: a post with media fails,
	// for want of media storage).
	Media MediaResolver
	// Posts holds the posts whose jobs started last, by id, so that the accounts that take them
	// soon after need not read and decode them (nil: always read). A post's content, media and
	// owner never change once it has been published.
	Posts *actors.Recent[string, *persistence.PostContent]
	// Backlog counts the publishes in hand (job.Backlog; nil: not counted).
	Backlog Backlog
}

// Jobs take an account's reports: each goes to its job's actor.
type Jobs interface {
	Report(r *Report)
}

// Backlog is the job backlog as accounts tell it (job.Backlog): the publishes they hold ready to
// go, and the targets waiting in the store for accounts not held back by their budgets.
type Backlog interface {
	// Add counts, by delta, the publishes the account holds ready to go: taken from the store
	// and neither final nor waiting for the network's budget or a retry's backoff.
	Add(delta int)
	// Mark is taken before the account reads what waits for it, and given to Taken.
	Mark(account string) int64
	// Taken: the account took n targets from the store; noneLeft: nothing else waited for it
	// when it read.
	Taken(account string, n int, noneLeft bool, mark int64)
	// Held: the account's budget holds it back (true) or no longer does (false).
	Held(account string, held bool)
}

type noBacklog struct{}
type noJobs struct{}

func (noJobs) Report(*Report)                    {}
func (noBacklog) Add(int)                        {}
func (noBacklog) Mark(string) int64              { return 0 }
func (noBacklog) Taken(string, int, bool, int64) {}
func (noBacklog) Held(string, bool)              {}

// MediaResolver turns a user's media ids into what adapters upload.
type MediaResolver func(ctx context.Context, userID string, ids []string) ([]platforms.Media, error)

func (d *Deps) defaults() {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics(nil)
	}
	if d.Concurrency <= 0 {
		d.Concurrency = 1
	}
	if d.MaxRetries < 0 {
		d.MaxRetries = 0
	} else if d.MaxRetries == 0 {
		d.MaxRetries = 3
	}
	if d.Backoff <= 0 {
		d.Backoff = 500 * time.Millisecond
	}
	if d.CallTimeout <= 0 {
		d.CallTimeout = 10 * time.Minute
	}
	if d.RefreshAhead <= 0 {
		d.RefreshAhead = 10 * time.Minute
	}
	if d.Jobs == nil {
		d.Jobs = noJobs{}
	}
	if d.ReadRules == nil {
		d.ReadRules = DefaultReadRules
	}
	if d.ReadConcurrency <= 0 {
		d.ReadConcurrency = 8
	}
	if d.Backlog == nil {
		d.Backlog = noBacklog{}
	}
}

// Kind returns the account actor kind.
func Kind(d Deps) actors.Kind {
	d.defaults()
	return actors.Kind{Name: KindName, IdleTimeout: d.IdleTimeout, New: func(id string) actor.Actor { return &Actor{id: id, deps: d} }}
}

// request is a target in the account's hands: taken from the store, not yet final.
type request struct {
	JobID  string
	Target int
	Post   platforms.Post
	// key is the target's jobs_waiting entry (persistence.Waiting.Key).
	key string
	// counted says the request counts in Deps.InHand.
	counted   bool
	retries   int
	refreshed bool      // the token was refreshed for it after an auth-expired answer
	resolved  bool      // a lookup found nothing once; another unknown outcome fails it
	holding   bool      // its failed call holds the lane until its lookup ends
	waitShown time.Time // the budget reset last announced to the job
}

// Actor is one connected account.
type Actor struct {
	id   string
	deps Deps

	acc     *persistence.Account // nil: no such account (or deleted)
	creds   platforms.Credentials
	adapter platforms.Adapter

	queue []*request
	// held are the requests the account took from the store and whose outcome it has not
	// reported, by entry key: in the queue, the lane, in flight, waiting for a retry or a lookup.
	// reported are the entries whose outcome was reported but may not be stored by their job yet:
	// a take passes over both, and forgets a reported entry once the store no longer holds it.
	// more says the store may hold entries the account has not taken; failing, when set, fails
	// the entries taken until the walk reaches the end of what waits (failWaiting).
	held       map[string]*request
	reported   map[string]bool
	more       bool
	heldBack   bool // the backlog was told the budget holds the account back
	failing    string
	rechecking bool // a recheck is coming (too many outcomes not yet stored)
	// told counts the requests at the queue's front already told that they wait for the budget
	// reset toldAt, so that a request arriving during a wait is told without re-reading the
	// whole queue. Prepending (queueFront) resets it.
	told   int
	toldAt time.Time
	// lane holds requests whose budget is reserved and whose attempt is recorded, for the
	// account's callers (lane.go). Attempts are recorded in batches (one commit for many
	// calls), ahead of the calls; a recorded attempt that was never sent is resolved by a lookup
	// after a crash, like any other.
	lane *lane
	// inflight counts the requests handed to the lane whose outcome has not come back.
	inflight int
	// callTime is the account's recent publishing call duration (a moving average), which sizes
	// the batches of attempts recorded ahead.
	callTime    time.Duration
	refreshing  bool
	refreshNext time.Time // no proactive refresh before (after a failed one)
	lookups     int
	retrying    int // retries waiting for their backoff
	waitUntil   time.Time
	waitTimer   *time.Timer
	deleting    *actor.PID
	pumpSent    bool      // a pumpSoon message is in the mailbox
	live        readState // live reads (reads.go)
	// storeWait holds the queue while the store cannot record attempts (a storeRetry is coming);
	// unsavedCreds says a.creds are tokens a network issued that the store could not take yet
	// (a saveCreds is coming). storeFailures counts the failed commits in a row.
	storeWait     bool
	unsavedCreds  bool
	storeFailures int
}

// Busy keeps the actor from passivating while it has work: its goroutines report to it.
// Entries waiting in the store keep it too: they are taken as its budget frees, which only the
// live actor knows.
func (a *Actor) Busy() bool {
	return a.inflight > 0 || len(a.queue) > 0 || a.refreshing || a.lookups > 0 || a.retrying > 0 || a.deleting != nil || a.live.busy() ||
		a.storeWait || a.unsavedCreds || len(a.held) > 0 || a.more || a.rechecking
}

// messages from the actor's own goroutines and timers
type (
	callDone struct {
		req      *request
		platform platforms.Platform // of the adapter that made the call
		res      platforms.Result
		err      error
		start    time.Time
		took     time.Duration // the call alone, without the wait for the actor to hear of it
	}
	refreshDone struct {
		creds  platforms.Credentials
		err    error
		forced bool
	}
	lookupDone struct {
		req   *request
		pub   platforms.Publication
		found bool
		err   error
	}
	revokeDone struct{}
	wake       struct{}
	// pumpSoon runs pump after the messages already in the mailbox: the publishes that arrive
	// together are recorded in one batch.
	pumpSoon struct{}
	retry    struct{ req *request }
	// storeRetry ends a wait for the store (storeWait); saveCreds stores unsaved credentials.
	storeRetry struct{}
	saveCreds  struct{}
	// recheck takes from the store again once outcomes reported meanwhile may be stored.
	recheck struct{}
)

// Receive handles the account's messages.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lane = newLane(&a.deps, ctx)
		if a.held == nil {
			a.held, a.reported = map[string]*request{}, map[string]bool{}
		}
		a.more = true // what waits in the store is taken by the first pump
		a.load()
		a.pump(ctx)
	case *actor.Stopped:
		// At shutdown: the calls handed to the lane that no caller has started are not started
		// now, since their outcome could no longer be heard. Their attempts are recorded, so the
		// next start looks them up and sends those it does not find. Calls already under way end
		// as the network answers; the next start looks those up too.
		a.lane.take()
		for _, r := range a.held {
			a.count(r, false)
		}
		a.holdBack(false)
	case *Take:
		a.more = true
		a.pumpLater(ctx)
	case *recheck:
		a.rechecking = false
		a.pump(ctx)
	case *Create:
		a.create(ctx, m)
	case *SetCredentials:
		a.setCredentials(ctx, m)
	case *Get:
		if a.acc == nil {
			actors.ReplyError(ctx, ErrNotFound)
			return
		}
		c := *a.acc
		actors.Reply(ctx, &Reply{Account: &c, Reconnect: a.reconnectReason(a.deps.Now())})
	case *Delete:
		a.delete(ctx, m)
	case *revokeDone:
		a.finishDelete(ctx)
	case *callDone:
		a.callDone(ctx, m)
	case *refreshDone:
		a.refreshDone(ctx, m)
	case *lookupDone:
		a.lookupDone(ctx, m)
	case readMessage:
		a.receiveRead(ctx, m)
	case *wake:
		a.waitUntil = time.Time{}
		a.pump(ctx)
	case *pumpSoon:
		a.pumpSent = false
		a.pump(ctx)
	case *storeRetry:
		a.storeWait = false
		a.pump(ctx)
	case *saveCreds:
		a.saveUnsavedCreds(ctx)
	case *retry:
		a.retrying = max(0, a.retrying-1)
		if a.acc == nil || a.deleting != nil {
			a.fail(m.req, "the connected account was disconnected before the post could be published")
			return
		}
		if a.failing != "" {
			a.fail(m.req, a.failing)
			return
		}
		a.count(m.req, true)
		a.queueFront(m.req)
		a.pump(ctx)
	}
}

func (a *Actor) load() {
	a.acc, a.adapter, a.creds = nil, nil, platforms.Credentials{}
	var acc *persistence.Account
	_ = a.deps.Store.View(func(tx *persistence.Tx) error {
		acc, _ = tx.Account(a.id)
		return nil
	})
	if acc == nil {
		return
	}
	a.acc = acc
	a.adapter = a.deps.Adapters[platforms.Platform(acc.Platform)]
	if len(acc.Secret) > 0 {
		if plain, err := a.deps.Box.Open(acc.Secret); err != nil {
			a.deps.Log.Error("cannot open the account's sealed credentials; it must be connected again", "account_id", a.id, "platform", acc.Platform, "error", err)
		} else if err := json.Unmarshal(plain, &a.creds); err != nil {
			a.deps.Log.Error("sealed credentials are not valid JSON", "account_id", a.id, "platform", acc.Platform, "error", err)
		}
	}
	if a.creds.RefreshToken != "" && !acc.Refreshes {
		// A record stored before it said whether Herald refreshes the token: say it now, so that
		// its token status follows the refresh token (best effort: the next refresh says it too).
		next := *acc
		applyTokens(&next, a.creds)
		if err := a.save(&next); err == nil {
			a.acc = &next
		}
	}
	a.lane.setCredentials(a.adapter, a.creds)
}

// seal encodes and encrypts credentials.
func (a *Actor) seal(c platforms.Credentials) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return a.deps.Box.Seal(b), nil
}

func (a *Actor) save(next *persistence.Account) error {
	return a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(next) })
}

func (a *Actor) create(ctx actor.Context, m *Create) {
	if a.acc != nil {
		actors.ReplyError(ctx, ErrExists)
		return
	}
	next := *m.Account
	next.ID = a.id
	sealed, err := a.seal(m.Creds)
	if err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	next.Secret = sealed
	applyTokens(&next, m.Creds)
	if err := a.save(&next); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	a.acc, a.creds = &next, m.Creds
	a.adapter = a.deps.Adapters[platforms.Platform(next.Platform)]
	a.lane.setCredentials(a.adapter, a.creds)
	c := next
	actors.Reply(ctx, &Reply{Account: &c})
}

// setCredentials stores fresh tokens; a refresh token the network did not send again is kept.
func (a *Actor) setCredentials(ctx actor.Context, m *SetCredentials) {
	if a.acc == nil {
		actors.ReplyError(ctx, ErrNotFound)
		return
	}
	creds := keepRefreshToken(m.Creds, a.creds)
	next := *a.acc
	if m.Username != nil {
		next.Username = m.Username
	}
	if err := a.storeCreds(&next, creds); err != nil {
		actors.ReplyError(ctx, err)
		return
	}
	c := *a.acc
	actors.Reply(ctx, &Reply{Account: &c})
	a.pump(ctx)
}

func (a *Actor) storeCreds(next *persistence.Account, creds platforms.Credentials) error {
	sealed, err := a.seal(creds)
	if err != nil {
		return err
	}
	next.Secret = sealed
	next.IsActive = true
	applyTokens(next, creds)
	// Tokens that work again (a refresh that succeeded, or the account connected again) end a
	// need to reconnect.
	next.ReconnectAt, next.ReconnectReason = nil, ""
	if err := a.save(next); err != nil {
		return err
	}
	a.acc, a.creds = next, creds
	a.unsavedCreds = false
	a.failing = "" // tokens that work again: what waits is published again
	a.lane.setCredentials(a.adapter, a.creds)
	return nil
}

// storeFailed counts a commit the store could not make and returns the wait before the next try;
// the first failure of a streak is logged.
func (a *Actor) storeFailed(what string, err error) time.Duration {
	a.storeFailures++
	if a.storeFailures == 1 {
		a.deps.Log.Warn(what+" failed; it is retried until the store takes it", "account_id", a.id, "error", err)
	}
	return actors.StoreRetryDelay(a.storeFailures)
}

// saveUnsavedCreds stores the tokens a refresh gave that the store could not take then.
func (a *Actor) saveUnsavedCreds(ctx actor.Context) {
	if !a.unsavedCreds || a.acc == nil {
		a.unsavedCreds = false
		return
	}
	next := *a.acc
	if err := a.storeCreds(&next, a.creds); err != nil {
		actors.SendSelfAfter(ctx, a.storeFailed("storing refreshed credentials", err), &saveCreds{})
		return
	}
	a.storeFailures = 0
}

// keepRefreshToken never overwrites a stored refresh token with an empty one: a network that
// does not send it again keeps it, and its expiry with it.
func keepRefreshToken(next, old platforms.Credentials) platforms.Credentials {
	if next.RefreshToken == "" {
		next.RefreshToken = old.RefreshToken
	}
	if next.RefreshToken == old.RefreshToken && next.RefreshExpiresAt.IsZero() {
		next.RefreshExpiresAt = old.RefreshExpiresAt
	}
	return next
}

// applyTokens copies what the API reports of the credentials onto the account record: the
// access token's expiry, whether Herald renews it (it holds a refresh token), and until when.
func applyTokens(next *persistence.Account, c platforms.Credentials) {
	next.TokenExpiresAt, next.RefreshExpiresAt = nil, nil
	if !c.ExpiresAt.IsZero() {
		exp := c.ExpiresAt.UTC()
		next.TokenExpiresAt = &exp
	}
	next.Refreshes = c.RefreshToken != ""
	if next.Refreshes && !c.RefreshExpiresAt.IsZero() {
		exp := c.RefreshExpiresAt.UTC()
		next.RefreshExpiresAt = &exp
	}
}

// needReconnect records, durably, that the account's token cannot be renewed and why, so that
// the API reports it expired until the account is connected again (storeCreds clears it). The
// first reason is kept.
func (a *Actor) needReconnect(reason string) {
	if a.acc == nil || a.acc.ReconnectAt != nil {
		return
	}
	next := *a.acc
	at := a.deps.Now().UTC()
	next.ReconnectAt, next.ReconnectReason = &at, reason
	if err := a.save(&next); err != nil {
		a.deps.Log.Error("recording that the account must be connected again failed", "account_id", a.id, "platform", next.Platform, "error", err)
		return
	}
	a.acc = &next
	a.deps.Log.Warn("the account must be connected again", "account_id", a.id, "platform", next.Platform, "reason", reason)
}

func (a *Actor) delete(ctx actor.Context, m *Delete) {
	switch {
	case a.acc == nil:
		actors.ReplyError(ctx, ErrNotFound)
		return
	case a.acc.UserID != m.UserID:
		actors.ReplyError(ctx, ErrForbidden)
		return
	case a.deleting != nil:
		actors.ReplyError(ctx, ErrNotFound)
		return
	}
	a.deleting = ctx.Sender()
	a.failWaiting("the connected account was disconnected before the post could be published")
	adapter, creds, platform := a.adapter, a.creds, a.acc.Platform
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		if adapter != nil && creds.AccessToken != "" {
			c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			start := time.Now()
			err := adapter.Revoke(c, creds)
			cancel()
			a.observeCall(platform, "revoke", start, err)
		}
		root.Send(self, &revokeDone{})
	}()
}

func (a *Actor) finishDelete(ctx actor.Context) {
	sender := a.deleting
	a.deleting = nil
	gone := a.acc
	err := a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.DeleteAccount(gone) })
	if err != nil {
		ctx.Send(sender, &actors.ErrorReply{Err: err})
		return
	}
	a.deps.Store.ForgetAccount(gone.UserID, gone.ID)
	a.acc, a.creds, a.adapter = nil, platforms.Credentials{}, nil
	a.lane.setCredentials(nil, a.creds)
	ctx.Send(sender, &Reply{Account: gone})
	a.more = true
	a.pump(ctx) // what still waits in the store fails: the account is gone
}

// report sends a job what happened to one of its targets.
func (a *Actor) report(r *request, final, success bool, msg string, pub platforms.Publication) {
	a.reportStep(r, "", final, success, msg, pub)
}

// reportStep sends a job a step of the target's timeline (persistence.EventWaiting, ...). After
// the outcome the request leaves the account's hands; its entry stays in the store until the job
// stores the outcome, and is not taken again meanwhile.
func (a *Actor) reportStep(r *request, event string, final, success bool, msg string, pub platforms.Publication) {
	if final && r.key != "" {
		a.count(r, false)
		delete(a.held, r.key)
		a.reported[r.key] = true
	}
	a.deps.Jobs.Report(&Report{JobID: r.JobID, Target: r.Target, AccountID: a.id, Final: final, Success: success, Message: msg, Publication: pub, Event: event})
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

func (a *Actor) fail(r *request, msg string) { a.report(r, true, false, msg, platforms.Publication{}) }

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
	err := a.deps.Store.View(func(tx *persistence.Tx) error {
		got, last = got[:0], ""
		clear(stored)
		ws, more := tx.WaitingFor(a.id, n, func(key string) bool {
			last = key
			if a.reported[key] {
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
				t.post, _ = tx.PostContent(w.PostID)
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
		r.Post = platforms.Post{Text: t.post.Content}
		if len(t.post.MediaIDs) > 0 {
			var media []platforms.Media
			err := ErrNoMediaStorage
			if a.deps.Media != nil {
				media, err = a.deps.Media(context.Background(), t.post.UserID, t.post.MediaIDs)
			}
			if errors.Is(err, ErrNoMediaStorage) {
				a.fail(r, err.Error())
				continue
			}
			if err != nil {
				a.fail(r, "the post's media could not be read: "+err.Error())
				continue
			}
			r.Post.Media = media
		}
		if err := a.adapter.Validate(r.Post); err != nil {
			a.fail(r, errorMessage(err))
			continue
		}
		a.count(r, true)
		if t.att != nil {
			// The call may have reached the network: look, don't resend.
			a.startLookup(ctx, r, t.att.StartedAt)
			continue
		}
		a.queue = append(a.queue, r)
	}
	if !a.more {
		a.failing = "" // every entry that waited when the account failed is failed
	}
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
	if a.deleting != nil || a.storeWait {
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
			ok, at := a.deps.Budgets.Reserve(platform, a.id, now)
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
		err := a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error {
			for _, r := range batch {
				if err := tx.PutAttempt(&persistence.Attempt{JobID: r.JobID, Target: r.Target, AccountID: a.id, StartedAt: now.UTC()}); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, persistence.ErrWriteFailed) {
			// The store cannot write: nothing was sent, so the batch waits at the queue's front,
			// in order, and is tried again once the store may take it.
			for range batch {
				a.deps.Budgets.Refund(platform, a.id)
			}
			a.queueFront(batch...)
			a.storeWait = true
			actors.SendSelfAfter(ctx, a.storeFailed("recording publish attempts", err), &storeRetry{})
			return
		}
		if err != nil {
			for _, r := range batch {
				a.deps.Budgets.Refund(platform, a.id)
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
	_ = a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		for _, r := range back {
			if err := tx.DeleteAttempt(r.JobID, r.Target); err != nil {
				return err
			}
		}
		return nil
	})
	for range back {
		a.deps.Budgets.Refund(platform, a.id)
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
	platform := platforms.Platform(a.acc.Platform)
	a.observeCall(string(platform), "publish", m.start, m.err)
	a.deps.Budgets.Sent(platform, a.id, m.start)
	now := a.deps.Now()
	a.observeCallTime(m.took)
	if m.err == nil {
		a.deps.Budgets.Observe(platform, a.id, m.res.Rate, now)
		a.report(r, true, true, "published to "+string(platform), m.res.Publication)
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

// forgetAttempt removes the attempt record of a call that created nothing.
func (a *Actor) forgetAttempt(r *request) {
	_ = a.deps.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.DeleteAttempt(r.JobID, r.Target) })
}

func (a *Actor) startLookup(ctx actor.Context, r *request, since time.Time) {
	a.lookups++
	adapter, creds, retries, backoff := a.adapter, a.creds, a.deps.MaxRetries, a.deps.Backoff
	platform := a.acc.Platform
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		var pub platforms.Publication
		var found bool
		var err error
		// A lookup is a read: transient failures are retried with backoff.
		for i := 0; ; i++ {
			c, cancel := context.WithTimeout(context.Background(), time.Minute)
			start := time.Now()
			pub, found, err = adapter.Lookup(c, creds, r.Post, since.Add(-2*time.Minute))
			cancel()
			a.observeCall(platform, "lookup", start, err)
			if err == nil || !platforms.IsRetryable(err) || i >= retries {
				break
			}
			d := backoff << i
			time.Sleep(d/2 + rand.N(d/2+1))
		}
		root.Send(self, &lookupDone{req: r, pub: pub, found: found, err: err})
	}()
}

func (a *Actor) lookupDone(ctx actor.Context, m *lookupDone) {
	a.lookups = max(0, a.lookups-1)
	r := m.req
	if r.holding {
		r.holding = false
		a.lane.release()
	}
	if a.acc == nil {
		a.fail(r, "the connected account was disconnected while the post's outcome was being checked")
		return
	}
	platform := a.acc.Platform
	switch {
	case m.err == nil && m.found:
		a.deps.Metrics.UnknownOutcome.WithLabelValues(platform, "found").Inc()
		a.reportStep(r, persistence.EventResolved, true, true, "published to "+platform+" (confirmed by looking the post up)", m.pub)
	case m.err == nil:
		// The network has no such post: the attempt created nothing, so sending it again is
		// not blind. A second unknown outcome fails.
		a.deps.Metrics.UnknownOutcome.WithLabelValues(platform, "not_found").Inc()
		a.reportStep(r, persistence.EventResolved, false, false, "the outcome was unknown and the post is not on "+platform+": it is sent again", platforms.Publication{})
		r.resolved = true
		a.forgetAttempt(r)
		a.unready() // what was handed to the lane meanwhile goes after it
		a.queueFront(r)
	default:
		a.deps.Metrics.UnknownOutcome.WithLabelValues(platform, "unresolved").Inc()
		reason := errorMessage(m.err)
		if errors.Is(m.err, platforms.ErrLookupUnsupported) {
			reason = platform + " offers no way to look the post up"
		}
		a.fail(r, "outcome unknown: the network did not confirm the post and "+reason+"; check the account before publishing again")
	}
	a.pump(ctx)
}

func (a *Actor) startRefresh(ctx actor.Context, forced bool) {
	a.refreshing = true
	adapter, creds := a.adapter, a.creds
	platform := a.acc.Platform
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		next, err := adapter.Refresh(c, creds)
		cancel()
		a.observeCall(platform, "refresh", start, err)
		root.Send(self, &refreshDone{creds: next, err: err, forced: forced})
	}()
}

func (a *Actor) refreshDone(ctx actor.Context, m *refreshDone) {
	a.refreshing = false
	defer a.resumeReads(ctx, m)
	if a.acc == nil {
		return
	}
	platform := a.acc.Platform
	now := a.deps.Now()
	if m.err == nil {
		creds := keepRefreshToken(m.creds, a.creds)
		if creds.UserID == "" {
			creds.UserID = a.creds.UserID
		}
		if creds.Extra == nil {
			creds.Extra = a.creds.Extra
		}
		next := *a.acc
		if err := a.storeCreds(&next, creds); err != nil {
			// The network issued these tokens and may have retired the old ones: use them, and
			// store them once the store can take them.
			a.creds, a.unsavedCreds = creds, true
			a.lane.setCredentials(a.adapter, a.creds)
			actors.SendSelfAfter(ctx, a.storeFailed("storing refreshed credentials", err), &saveCreds{})
		}
		a.deps.Metrics.Refreshes.WithLabelValues(platform, "ok").Inc()
		a.pump(ctx)
		return
	}
	a.deps.Metrics.Refreshes.WithLabelValues(platform, platforms.KindOf(m.err).String()).Inc()
	a.refreshNext = now.Add(5 * time.Minute)
	kind := platforms.KindOf(m.err)
	if kind == platforms.Permanent || kind == platforms.AuthExpired {
		// The network refused the refresh (revoked, consent withdrawn, refresh token expired):
		// the token cannot be renewed until the account is connected again.
		a.needReconnect(fmt.Sprintf("%s refused the token refresh (%s)", platform, errorMessage(m.err)))
	}
	if m.forced {
		// The network refused the access token itself: it no longer works. Fail what needed it,
		// and hold the token as expired, so that reads answer that the account must be connected
		// again (reconnectReason) until the next refresh may be tried.
		next := *a.acc
		expired := now.UTC()
		if a.creds.ExpiresAt.IsZero() || a.creds.ExpiresAt.After(expired) {
			a.creds.ExpiresAt = expired
		}
		if next.TokenExpiresAt == nil || next.TokenExpiresAt.After(expired) {
			next.TokenExpiresAt = &expired
			if err := a.save(&next); err == nil {
				a.acc = &next
			}
		}
		a.failWaiting(fmt.Sprintf("%s token refresh failed (%s); connect the account again", platform, errorMessage(m.err)))
		a.pumpLater(ctx)
		return
	}
	a.pump(ctx)
}
