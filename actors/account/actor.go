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
	"log/slog"
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
	// StepRules are what a thread's part or a first comment spends where the network does not
	// count it as a post (default DefaultStepRules; steps.go).
	StepRules map[platforms.Platform][]Rule
	// ReadConcurrency bounds the account's live reads in flight (default 8).
	ReadConcurrency int
	// Media turns a post's media ids into what adapters upload (nil: a post with media fails,
	// for want of media storage).
	Media MediaResolver
	// Posts holds the posts whose jobs started last, by id, so that the accounts that take them
	// soon after need not read and decode them (nil: always read); a post an account had to read
	// is put there too, for the post's other accounts. A post's content, media and owner never
	// change once it has been published.
	Posts *actors.Recent[string, *persistence.PostContent]
	// Backlog counts the publishes in hand (job.Backlog; nil: not counted).
	Backlog Backlog
	// Fence, when several nodes share the store, is the account's shard lease: its writes fence
	// on it, and it calls a network only while the lease is trusted (nil: a single process).
	Fence actors.Fence
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
	if d.StepRules == nil {
		d.StepRules = DefaultStepRules
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
	// parts and comment are the target's steps after the post (steps.go); step is the call it
	// makes next, done what its steps created so far (the post, then each part).
	parts   []platforms.Post
	comment *persistence.FirstComment
	step    int
	done    []persistence.Step
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
	// reported are the entries whose outcome was reported but may not be stored by their job yet,
	// with the report and when it was sent (Take.Resume sends it again): a take passes over both,
	// and forgets a reported entry once the store no longer holds it.
	// more says the store may hold entries the account has not taken; failing, when set, fails
	// the entries taken until the walk reaches the end of what waits (failWaiting).
	held       map[string]*request
	reported   map[string]sentReport
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
	// drainer, when set, is waiting for the account to finish its calls in flight (Drain):
	// nothing new starts meanwhile. fenced says a write was refused because the account's
	// shard moved to another node, or an untrusted account has nothing left on its way: the
	// incarnation ends after the message in hand (Stale) and handles nothing but its stop.
	drainer  *actor.PID
	draining bool
	// drainStarted is closed when a drain begins: a lookup waiting out a takeover's doubt
	// ends its wait then (lookup.go).
	drainStarted chan struct{}
	// untrusted says a call or refresh found the node no longer trusting the account's shard:
	// nothing new starts, and the actor stops once its calls in flight came back (or a drain
	// that waits for them answers).
	untrusted bool
	// drainJobs are the jobs reported to since the drain began.
	drainJobs map[string]bool
	fenced    bool
	// debug says the log takes the trace lines of the account's targets (trace.go).
	debug bool
}

// Busy keeps the actor from passivating while it has work: its goroutines report to it.
// Entries waiting in the store keep it too: they are taken as its budget frees, which only the
// live actor knows.
func (a *Actor) Busy() bool {
	return a.inflight > 0 || len(a.queue) > 0 || a.refreshing || a.lookups > 0 || a.retrying > 0 || a.deleting != nil || a.live.busy() ||
		a.storeWait || a.unsavedCreds || len(a.held) > 0 || a.more || a.rechecking
}

// Stale reports whether the account's incarnation activated under a lease of its shard this node no
// longer holds (actors.Pin), or that ended itself (a write was fenced, or a call found the shard
// untrusted and nothing is on its way): the directory stops it and hands its messages to a
// fresh incarnation.
func (a *Actor) Stale() bool { return a.fenced || actors.StaleFence(a.deps.Fence) }

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
	if a.fenced {
		// Ended (below), the incarnation handles nothing but its stop: the directory hands what
		// is sent to it from outside to a fresh incarnation (a Drain is answered there), and a
		// call that comes back now is looked up by whoever acts for the account next.
		if _, ok := ctx.Message().(*actor.Stopped); ok {
			a.receive(ctx)
		}
		return
	}
	a.receive(ctx)
	if a.untrusted && a.drainer == nil && a.inflight == 0 && a.lookups == 0 {
		// Nothing of the account is on its way any more: it stops here.
		a.fenced = true
	}
	if a.fenced {
		// The shard moved: this node may no longer act for the account. Nothing not yet started
		// starts; the new owner takes what waits from the store. The incarnation ends by
		// reporting Stale, never with ctx.Stop, which would drop a Drain already in its mailbox
		// and leave the hand-off waiting for its answer (actors.Stale).
		a.lane.take()
		a.drained(ctx)
		return
	}
	if a.drainer != nil && a.inflight == 0 && a.lookups == 0 {
		a.drained(ctx)
	}
}

// drained answers a Drain once nothing is in flight.
func (a *Actor) drained(ctx actor.Context) {
	if a.drainer != nil {
		reports := make([]*Report, 0, len(a.reported))
		for _, s := range a.reported {
			reports = append(reports, s.rep)
			a.drainJobs[s.rep.JobID] = true
		}
		jobs := make([]string, 0, len(a.drainJobs))
		for id := range a.drainJobs {
			jobs = append(jobs, id)
		}
		ctx.Send(a.drainer, &Drained{Jobs: jobs, Reports: reports})
		a.drainer, a.drainJobs = nil, nil
	}
}

// update is the account's write, fenced on its shard's lease when several nodes share the
// store; a fenced write stops the actor (Receive).
func (a *Actor) update(fn func(*persistence.Tx) error) error {
	err := actors.Update(context.Background(), a.deps.Store, a.deps.Fence, a.id, fn)
	if errors.Is(err, persistence.ErrFenced) {
		a.fenced = true
	}
	return err
}

func (a *Actor) receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// Everything the account writes and calls is held to the lease of its shard as this
		// node holds it now, before it reads its state.
		a.deps.Fence = actors.Pin(a.deps.Fence, a.id)
		a.debug = a.deps.Log.Enabled(context.Background(), slog.LevelDebug) // trace.go
		a.drainStarted = make(chan struct{})
		a.lane = newLane(&a.deps, ctx, a.id)
		if a.held == nil {
			a.held, a.reported = map[string]*request{}, map[string]sentReport{}
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
			a.trace("stopped holding a target", r)
		}
		a.holdBack(false)
	case *Take:
		if m.Resume {
			a.reportAgain()
		}
		a.more = true
		a.pumpLater(ctx)
	case *Drain:
		a.drain(ctx)
	case *recheck:
		a.rechecking = false
		a.pump(ctx)
	case *Create:
		a.create(ctx, m)
	case *SetDefaults:
		a.setDefaults(ctx, m)
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
		next := *a.acc
		applyTokens(&next, a.creds)
		if err := a.save(&next); err == nil {
			a.acc = &next
		}
	}
	if d := platforms.ConnectDefaults(platforms.Platform(acc.Platform), a.creds.Extra); len(a.acc.DefaultOptions) == 0 && d != nil {
		// A record stored before accounts had default options: what its connection chose (a
		// Pinterest board, a privacy) becomes its defaults (best effort: tried at every start).
		next := *a.acc
		next.DefaultOptions = d
		if err := a.save(&next); err == nil {
			a.acc = &next
		}
	}
	a.lane.setCredentials(a.adapter, a.creds)
}
