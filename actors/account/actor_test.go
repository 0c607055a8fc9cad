package account_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/persistence/storetest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
	"github.com/heraldhq/herald/platforms/sim"
)

type bundle struct {
	t       testing.TB
	store   *persistence.Store
	sim     *sim.Server
	dir     *actors.Directory
	budgets *account.Budgets
	metrics *account.Metrics
	reports chan *account.Report
	userID  string
	// stored counts the outcomes whose waiting entry the bundle removed, as a job would.
	stored sync.WaitGroup
	// restart builds the directory again on the same store, network and budgets, as after a
	// crash.
	restart func() *actors.Directory
	keep    *atomic.Bool
}

func setup(t testing.TB, rules map[platforms.Platform][]account.Rule) *bundle {
	t.Helper()
	return setupWith(t, options{rules: rules})
}

// options change what setupWith builds.
type options struct {
	rules map[platforms.Platform][]account.Rule
	// edit, when set, changes the adapters before the actors use them.
	edit func(registry.Adapters)
	// latency is what the simulator adds to every call.
	latency time.Duration
	// concurrency is the calls one account may have in flight (default 1).
	concurrency int
	// faults injects store failures (nil: none).
	faults *persistence.Faults
	// inHand counts the publishes in hand (Deps.Backlog's Add; nil: not counted).
	inHand func(int)
	// keepEntries leaves the waiting entries of reported outcomes in the store, as jobs that
	// have not stored them yet would.
	keepEntries *atomic.Bool
	// fence is the node's leases when several nodes share the store (nil: a single process).
	fence actors.Fence
	// posts are the posts kept for the accounts (Deps.Posts; nil: none).
	posts *actors.Recent[string, *persistence.PostContent]
}

func setupWith(t testing.TB, o options) *bundle {
	t.Helper()
	rules := o.rules
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{Faults: o.faults})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	s, err := sim.Start("127.0.0.1:0", sim.Options{FaultReset: 300 * time.Millisecond, TimeoutHold: 2 * time.Second, Latency: o.latency})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	cfgs := map[platforms.Platform]platforms.Config{}
	for _, p := range platforms.All {
		cfgs[p] = s.AdapterConfig(p)
	}
	key, err := secret.LoadKey(t.TempDir(), "")
	require.NoError(t, err)
	box, err := secret.NewBox(key)
	require.NoError(t, err)
	if rules == nil {
		rules = account.DefaultRules
	}
	b := &bundle{t: t, store: store, sim: s, budgets: account.NewBudgets(rules), metrics: account.NewMetrics(prometheus.NewRegistry()),
		reports: make(chan *account.Report, 1000), userID: uuid.NewString()}
	adapters := registry.New(cfgs)
	if o.edit != nil {
		o.edit(adapters)
	}
	t.Cleanup(b.stored.Wait)
	b.restart = func() *actors.Directory {
		sys := actors.NewSystem(prometheus.NewRegistry(), nil)
		t.Cleanup(sys.Shutdown)
		return actors.NewDirectory(sys, account.Kind(account.Deps{
			Store: store, Box: box, Adapters: adapters, Budgets: b.budgets, Metrics: b.metrics,
			Jobs: b, Backoff: 10 * time.Millisecond,
			Log: slog.New(slog.DiscardHandler), CallTimeout: time.Second, Concurrency: o.concurrency,
			Backlog: inHandCounter(o.inHand), Fence: o.fence, Posts: o.posts,
		}))
	}
	b.keep = o.keepEntries
	b.dir = b.restart()
	return b
}

// inHandCounter is a backlog that hears only the publishes in hand (nil: none).
type inHandCounter func(int)

func (f inHandCounter) Add(d int) {
	if f != nil {
		f(d)
	}
}
func (inHandCounter) Mark(string) int64              { return 0 }
func (inHandCounter) Taken(string, int, bool, int64) {}
func (inHandCounter) Held(string, bool)              {}

// Report takes an account's report as a job would: an outcome's waiting entry leaves the store
// (the bundle keeps attempt records, which a job deletes with the outcome).
func (b *bundle) Report(r *account.Report) {
	if r.Final && (b.keep == nil || !b.keep.Load()) {
		b.stored.Add(1)
		go func() {
			defer b.stored.Done()
			_ = b.store.Update(context.Background(), func(tx *persistence.Tx) error {
				return tx.StopWaiting(persistence.Waiting{AccountID: r.AccountID, JobID: r.JobID, Target: r.Target})
			})
		}()
	}
	b.reports <- r
}

// newJobID is a tracking id: a UUIDv7, so that jobs wait for their account in creation order.
func newJobID() string { return uuid.Must(uuid.NewV7()).String() }

// connect creates an account with simulator credentials.
func (b *bundle) connect(p platforms.Platform, handle string) string {
	b.t.Helper()
	creds, err := b.sim.NewAccount(p, handle)
	require.NoError(b.t, err)
	id := uuid.Must(uuid.NewV7()).String()
	_, err = actors.Ask[*account.Reply](context.Background(), b.dir.To(id), &account.Create{
		Account: &persistence.Account{UserID: b.userID, Platform: string(p), Username: &handle, IsActive: true, CreatedAt: time.Now().UTC(), NetworkUserID: creds.UserID},
		Creds:   creds,
	})
	require.NoError(b.t, err)
	return id
}

// final waits for the final report of each of n targets of job.
func (b *bundle) finals(job string, n int) map[int]*account.Report {
	b.t.Helper()
	out := map[int]*account.Report{}
	deadline := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case r := <-b.reports:
			if r.JobID == job && r.Final {
				out[r.Target] = r
			}
		case <-deadline:
			b.t.Fatalf("only %d of %d outcomes arrived", len(out), n)
		}
	}
	return out
}

// enqueue stores what a publish stores for one target of job on acct: its post, with text, and
// its job, whose target waits for the account in the store.
func (b *bundle) enqueue(acct, job string, target int, text string) {
	b.t.Helper()
	now := time.Now().UTC()
	p := &persistence.Post{ID: newJobID(), UserID: b.userID, Content: text, Status: persistence.PostPublishing, CreatedAt: now, UpdatedAt: now}
	j := &persistence.Job{TrackingID: job, PostID: p.ID, UserID: b.userID, Status: persistence.JobQueued, CreatedAt: now,
		Targets: []persistence.JobTarget{{Target: target, AccountID: acct, Phase: persistence.PhaseUploading, Message: "queued"}}}
	require.NoError(b.t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.PutPost(p, nil); err != nil {
			return err
		}
		return tx.PutJob(j)
	}))
}

// publish enqueues a target and tells its account.
func (b *bundle) publish(acct, job string, target int, text string) {
	b.t.Helper()
	b.enqueue(acct, job, target, text)
	b.dir.Send(acct, &account.Take{})
}

// waiting counts the targets waiting for acct in the store.
func (b *bundle) waiting(acct string) int {
	b.t.Helper()
	var n int
	require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
		ws, _ := tx.WaitingFor(acct, 1<<20, 0, nil)
		n = len(ws)
		return nil
	}))
	return n
}

func TestPublishesThroughTheNetwork(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, p := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.LinkedIn, platforms.Facebook, platforms.Threads} {
		acct := b.connect(p, "alice")
		job := newJobID()
		b.publish(acct, job, 0, "hello from Herald on "+string(p))
		r := b.finals(job, 1)[0]
		require.True(t, r.Success, "%s: %s", p, r.Message)
		require.NotEmpty(t, r.Publication.ID)
		recs := b.sim.Publications(p)
		require.Len(t, recs, 1)
		require.Equal(t, "hello from Herald on "+string(p), recs[0].Text)
	}
}

// A post an account had to read from the store is kept for the post's other accounts: the
// second account publishes the post as kept, without reading it again (the test changes the
// stored text behind it, which Herald never does to a published post, to tell the two apart).
func TestAPostReadByOneAccountIsKeptForItsOthers(t *testing.T) {
	t.Parallel()
	posts := actors.NewRecent[string, *persistence.PostContent](16)
	b := setupWith(t, options{posts: posts})
	x, bsky := b.connect(platforms.X, "alice"), b.connect(platforms.Bluesky, "alice")
	now := time.Now().UTC()
	p := &persistence.Post{ID: newJobID(), UserID: b.userID, Content: "one post, two networks", Status: persistence.PostPublishing, CreatedAt: now, UpdatedAt: now}
	job := newJobID()
	j := &persistence.Job{TrackingID: job, PostID: p.ID, UserID: b.userID, Status: persistence.JobQueued, CreatedAt: now,
		Targets: []persistence.JobTarget{
			{Target: 0, AccountID: x, Phase: persistence.PhaseUploading, Message: "queued"},
			{Target: 1, AccountID: bsky, Phase: persistence.PhaseUploading, Message: "queued"},
		}}
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.PutPost(p, nil); err != nil {
			return err
		}
		return tx.PutJob(j)
	}))
	_, ok := posts.Get(p.ID)
	require.False(t, ok)

	b.dir.Send(x, &account.Take{})
	require.True(t, b.finals(job, 1)[0].Success)
	kept, ok := posts.Get(p.ID)
	require.True(t, ok, "the post the first account read is kept")
	require.Equal(t, "one post, two networks", kept.Content)

	changed := *p
	changed.Content = "changed behind Herald's back"
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(&changed, nil) }))
	b.dir.Send(bsky, &account.Take{})
	require.True(t, b.finals(job, 1)[1].Success)
	recs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, recs, 1)
	require.Equal(t, "one post, two networks", recs[0].Text)
}

func TestContentRulesSpendNoBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.X, "bob")
	job := newJobID()
	b.publish(acct, job, 0, strings.Repeat("a", 300))
	r := b.finals(job, 1)[0]
	require.False(t, r.Success)
	require.Contains(t, r.Message, "280")
	require.Equal(t, 100, b.budgets.Remaining(platforms.X, acct, time.Now()), "no budget spent")
	ig := b.connect(platforms.Instagram, "bob")
	job2 := newJobID()
	b.publish(ig, job2, 0, "no media")
	r = b.finals(job2, 1)[0]
	require.False(t, r.Success)
	require.Empty(t, b.sim.Publications(""))
}

// More posts than the budget allows in a window: zero 429s, every post published in order once
// the budget resets.
func TestBudgetWaitsInsteadOfTripping(t *testing.T) {
	t.Parallel()
	const limit, window, posts = 3, 700 * time.Millisecond, 8
	b := setup(t, map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: limit, Window: window, Cost: 1}}})
	b.sim.SetLimit(platforms.X, "tweets", sim.Limit{Count: limit, Window: window})
	acct := b.connect(platforms.X, "carol")
	job := newJobID()
	for i := 0; i < posts; i++ {
		b.publish(acct, job, i, fmt.Sprintf("post %d", i))
	}
	waits := 0
	got := 0
	deadline := time.After(20 * time.Second)
	for got < posts {
		select {
		case r := <-b.reports:
			if r.Final {
				require.True(t, r.Success, r.Message)
				got++
			} else if strings.HasPrefix(r.Message, "waiting for rate budget until ") {
				waits++
			}
		case <-deadline:
			t.Fatal("not every post was published")
		}
	}
	require.Positive(t, waits, "the job hears that a post waits for budget")
	recs := b.sim.Publications(platforms.X)
	require.Len(t, recs, posts)
	for i, r := range recs {
		require.Equal(t, fmt.Sprintf("post %d", i), r.Text, "published in order")
	}
	require.Equal(t, 0.0, testutil.ToFloat64(b.metrics.RateLimited.WithLabelValues("twitter_x")), "no 429 from the network")
}

// Posts that arrive one by one while the budget is spent wait in the store; the account takes only
// its next batch, and each post it took is told once that it waits, with the same reset time,
// however long the backlog grows.
func TestOnlyTheNextBatchWaitsInMemoryAndIsToldOnce(t *testing.T) {
	t.Parallel()
	const posts = 300
	b := setup(t, map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}})
	acct := b.connect(platforms.X, "erin")
	job := newJobID()
	b.publish(acct, job, 0, "post 0")
	r := b.finals(job, 1)[0]
	require.True(t, r.Success, r.Message)
	told := map[int]int{}
	var until string
	for i := 1; i < posts; i++ {
		b.publish(acct, job, i, fmt.Sprintf("post %d", i))
	}
	collect := func(r *account.Report) {
		require.False(t, r.Final, "only the first post fits the budget: %s", r.Message)
		if at, ok := strings.CutPrefix(r.Message, "waiting for rate budget until "); ok {
			require.True(t, until == "" || until == at, "one reset time: %s and %s", until, at)
			until = at
			told[r.Target]++
		}
	}
	select {
	case r := <-b.reports:
		collect(r)
	case <-time.After(20 * time.Second):
		t.Fatal("no post was told that it waits")
	}
	// The account answers a Get after the messages before it: every Take has been handled.
	_, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Get{})
	require.NoError(t, err)
	for done := false; !done; {
		select {
		case r := <-b.reports:
			collect(r)
		case <-time.After(200 * time.Millisecond):
			done = true
		}
	}
	require.LessOrEqual(t, len(told), 65, "the account holds its next batch, not the backlog")
	for target, n := range told {
		require.Equal(t, 1, n, "target %d told %d times", target, n)
		require.Less(t, target, 66, "the first posts are taken first")
	}
	require.Equal(t, posts-1, b.waiting(acct), "the backlog waits in the store")
}

// BenchmarkPublishWhileWaiting measures one post arriving at an account whose budget is spent,
// behind every post that arrived before it (its store write and the account's answer): the cost
// must not grow with the backlog.
func BenchmarkPublishWhileWaiting(b *testing.B) {
	bb := setup(b, map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}})
	acct := bb.connect(platforms.X, "frank")
	job := newJobID()
	bb.publish(acct, job, 0, "fits the budget")
	bb.finals(job, 1)
	bb.reports = make(chan *account.Report, b.N+1)
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		bb.publish(acct, job, i, "waits")
	}
	_, err := actors.Ask[*account.Reply](context.Background(), bb.dir.To(acct), &account.Get{})
	require.NoError(b, err)
}

func TestExpiredTokenIsRefreshedAndRetriedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, p := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.LinkedIn, platforms.YouTube, platforms.TikTok, platforms.Pinterest} {
		acct := b.connect(p, "dave")
		require.NoError(t, b.sim.InjectFault(p, sim.FaultExpireTokens, 1))
		job := newJobID()
		post := "after refresh on " + string(p)
		if p == platforms.YouTube || p == platforms.TikTok || p == platforms.Pinterest {
			continue // these need media; their refresh is covered by their adapters' conformance tests
		}
		b.publish(acct, job, 0, post)
		r := b.finals(job, 1)[0]
		require.True(t, r.Success, "%s: %s", p, r.Message)
		require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.Refreshes.WithLabelValues(string(p), "ok")), p)
		reply, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Get{})
		require.NoError(t, err)
		require.True(t, reply.Account.TokenExpiresAt.After(time.Now()), "token_expires_at follows the refresh")
	}
}

func TestUnknownOutcomesAreLookedUpNotRepeated(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, p := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.Threads} {
		acct := b.connect(p, "erin")
		require.NoError(t, b.sim.InjectFault(p, sim.FaultPostThenError, 1))
		job := newJobID()
		b.publish(acct, job, 0, "exactly once on "+string(p))
		r := b.finals(job, 1)[0]
		require.True(t, r.Success, "%s: %s", p, r.Message)
		require.Len(t, b.sim.Publications(p), 1, "%s: no duplicate", p)
		require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.UnknownOutcome.WithLabelValues(string(p), "found")))
	}
}

func TestTransientFailuresAreRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.X, "frank")
	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultError5xx, 2))
	job := newJobID()
	b.publish(acct, job, 0, "through two outages")
	r := b.finals(job, 1)[0]
	require.True(t, r.Success, r.Message)
	require.Len(t, b.sim.Publications(platforms.X), 1)

	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultError5xx, 20))
	job2 := newJobID()
	b.publish(acct, job2, 0, "through a long outage")
	r = b.finals(job2, 1)[0]
	require.False(t, r.Success, "retries are bounded")
	require.Len(t, b.sim.Publications(platforms.X), 1)
	b.sim.Reset()
}

func TestNetworkRateLimitWaitsForReset(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.Bluesky, "gina")
	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultRateLimit, 1))
	job := newJobID()
	b.publish(acct, job, 0, "after the 429")
	r := b.finals(job, 1)[0]
	require.True(t, r.Success, r.Message)
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.RateLimited.WithLabelValues("bluesky")))
	require.Len(t, b.sim.Publications(platforms.Bluesky), 1)
}

func TestPermanentFailureCarriesTheNetworkMessage(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.X, "hank")
	job := newJobID()
	b.publish(acct, job, 0, "same words twice")
	require.True(t, b.finals(job, 1)[0].Success)
	job2 := newJobID()
	b.publish(acct, job2, 0, "same words twice")
	r := b.finals(job2, 1)[0]
	require.False(t, r.Success)
	require.Contains(t, strings.ToLower(r.Message), "duplicate")
}

func TestDeleteWhileWaitingForBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}})
	acct := b.connect(platforms.X, "ivy")
	job := newJobID()
	b.publish(acct, job, 0, "first")
	b.publish(acct, job, 1, "second waits an hour")
	out := map[int]*account.Report{}
	for waiting := false; !waiting || out[0] == nil; {
		r := <-b.reports
		if r.Final {
			out[r.Target] = r
		}
		waiting = waiting || (!r.Final && r.Target == 1 && strings.HasPrefix(r.Message, "waiting for rate budget"))
	}
	_, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Delete{Scope: "someone else"})
	require.ErrorIs(t, err, account.ErrForbidden)
	_, err = actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Delete{Scope: b.userID})
	require.NoError(t, err)
	for k, v := range b.finals(job, 2-len(out)) {
		out[k] = v
	}
	require.True(t, out[0].Success)
	require.False(t, out[1].Success)
	require.Contains(t, out[1].Message, "disconnected")
	require.Len(t, b.sim.Revocations(), 1, "the token was revoked at the network")
	_, err = actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Get{})
	require.ErrorIs(t, err, account.ErrNotFound)
	job3 := newJobID()
	b.publish(acct, job3, 0, "after deletion")
	require.Contains(t, b.finals(job3, 1)[0].Message, "disconnected")
}

// lateAnswer is an adapter whose publishes reach the network at once but whose answers are held
// until the test lets them through.
type lateAnswer struct {
	platforms.Adapter
	sent    chan struct{}
	release chan struct{}
}

func (l *lateAnswer) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	res, err := l.Adapter.Publish(ctx, c, p)
	l.sent <- struct{}{}
	<-l.release
	return res, err
}

// A call the network answered after the account was disconnected keeps its outcome: the post it
// created is reported published, so that nobody publishes it again.
func TestCallAnsweredAfterDeleteKeepsItsOutcome(t *testing.T) {
	t.Parallel()
	late := &lateAnswer{sent: make(chan struct{}, 1), release: make(chan struct{})}
	b := setupWith(t, options{edit: func(a registry.Adapters) {
		late.Adapter = a[platforms.X]
		a[platforms.X] = late
	}})
	acct := b.connect(platforms.X, "jon")
	job := newJobID()
	b.publish(acct, job, 0, "created on the network, answered late")
	select {
	case <-late.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the publish never reached the network")
	}
	_, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Delete{Scope: b.userID})
	require.NoError(t, err)
	close(late.release)
	r := b.finals(job, 1)[0]
	require.True(t, r.Success, r.Message)
	require.NotEmpty(t, r.Publication.ID)
	require.Contains(t, r.Message, "disconnected afterwards")
	pubs := b.sim.Publications(platforms.X)
	require.Len(t, pubs, 1)
	require.Equal(t, r.Publication.ID, pubs[0].ID)
}

// An account records attempts ahead of its calls only as far as hiding a commit needs: with
// network calls of 100 ms, one call ahead, not a batch of 64 that a crash would leave to be
// looked up one by one.
func TestAttemptsAheadFollowTheCallTime(t *testing.T) {
	t.Parallel()
	b := setupWith(t, options{latency: 100 * time.Millisecond})
	acct := b.connect(platforms.X, "kim")
	job := newJobID()
	const n = 12
	for i := range n {
		b.publish(acct, job, i, fmt.Sprintf("post %d of a slow network", i))
	}
	recorded := func() int {
		c := 0
		require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
			for i := range n {
				if _, err := tx.Attempt(job, i); err == nil {
					c++
				}
			}
			return nil
		}))
		return c
	}
	// The reports of this bundle delete no attempt: recorded = finished + in flight + ahead.
	most := 0
	for finished := 0; finished < n; {
		select {
		case r := <-b.reports:
			if r.JobID == job && r.Final {
				require.True(t, r.Success, r.Message)
				finished++
				if c := recorded(); c-finished > most {
					most = c - finished
				}
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d posts published", finished, n)
		}
	}
	require.LessOrEqual(t, most, 3, "attempts recorded beyond the finished calls")
	require.Len(t, b.sim.Publications(platforms.X), n)
}

// counting counts an adapter's publishes in flight.
type counting struct {
	platforms.Adapter
	now, most atomic.Int64
}

func (c *counting) Publish(ctx context.Context, cr platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	n := c.now.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	defer c.now.Add(-1)
	return c.Adapter.Publish(ctx, cr, p)
}

// An account allowed N calls at once has N in flight, however its posts arrive: one by one,
// each while the calls before it are still on their way.
func TestConcurrentAccountFillsItsCallers(t *testing.T) {
	t.Parallel()
	c := &counting{}
	const n = 16
	b := setupWith(t, options{latency: time.Second, concurrency: n, edit: func(a registry.Adapters) {
		c.Adapter = a[platforms.X]
		a[platforms.X] = c
	}})
	acct := b.connect(platforms.X, "lea")
	job := newJobID()
	for i := range n {
		b.publish(acct, job, i, fmt.Sprintf("post %d arriving alone", i))
		time.Sleep(5 * time.Millisecond)
	}
	for _, r := range b.finals(job, n) {
		require.True(t, r.Success, r.Message)
	}
	require.Equal(t, int64(n), c.most.Load(), "calls in flight at once")
}

// After a crash, an attempt recorded before the network call is resolved by looking the post
// up: a post that exists is reported published, not sent again.
func TestResumeResolvesARecordedAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.X, "jack")
	job := newJobID()
	b.publish(acct, job, 0, "sent before the crash")
	require.True(t, b.finals(job, 1)[0].Success)
	b.stored.Wait()
	// The job never stored that outcome: the target still waits in the store and its attempt
	// record is still there, as after a crash.
	b.enqueue(acct, job, 0, "sent before the crash")
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		_, err := tx.Attempt(job, 0)
		return err
	}))
	b.dir = b.restart()
	b.dir.Send(acct, &account.Take{})
	r := b.finals(job, 1)[0]
	require.True(t, r.Success, r.Message)
	require.Contains(t, r.Message, "confirmed by looking the post up")
	require.Len(t, b.sim.Publications(platforms.X), 1, "not sent twice")
}

// One account sends its posts in the order they came, each once, while its calls follow one
// another without the actor between them (lane.go): a rate limit and an unknown outcome on the
// way hold the calls behind them until they are resolved.
func TestOneAccountPublishesInOrderThroughFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	acct := b.connect(platforms.Bluesky, "kim")
	job := newJobID()
	const n = 150
	for i := range n {
		b.publish(acct, job, i, fmt.Sprintf("in order %03d", i))
	}
	seen, injected := 0, 0
	out := map[int]*account.Report{}
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case r := <-b.reports:
			if r.JobID != job || !r.Final {
				continue
			}
			out[r.Target] = r
			seen++
			if seen == 40 && injected == 0 {
				require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultRateLimit, 1))
				injected++
			}
			if seen == 90 && injected == 1 {
				require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultPostThenError, 1))
				injected++
			}
		case <-deadline:
			t.Fatalf("only %d of %d outcomes arrived", len(out), n)
		}
	}
	for i, r := range out {
		require.True(t, r.Success, "post %d: %s", i, r.Message)
	}
	recs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, recs, n, "each post once")
	for i, rec := range recs {
		require.Equal(t, fmt.Sprintf("in order %03d", i), rec.Text)
	}
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.RateLimited.WithLabelValues("bluesky")))
	require.Equal(t, 1.0, testutil.ToFloat64(b.metrics.UnknownOutcome.WithLabelValues("bluesky", "found")))
}

// While the store cannot record attempts, nothing is sent to the network and nothing fails: the
// publishes wait, in order, and go out once the store takes their attempts, each once.
func TestPublishesWaitWhileTheStoreCannotRecordAttempts(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	b := setupWith(t, options{faults: faults})
	acct := b.connect(platforms.Bluesky, "alice")
	job := newJobID()
	for i := range 3 {
		b.enqueue(acct, job, i, fmt.Sprintf("post %d", i))
	}
	faults.FailCommits(syscall.ENOSPC)
	b.dir.Send(acct, &account.Take{})
	deadline := time.Now().Add(10 * time.Second)
	for faults.Injected() < 4 { // the first try and three retries
		require.True(t, time.Now().Before(deadline), "the account retries recording its attempts")
		time.Sleep(5 * time.Millisecond)
	}
	require.Empty(t, b.sim.Publications(platforms.Bluesky), "nothing is sent before its attempt is recorded")
	for len(b.reports) > 0 {
		require.False(t, (<-b.reports).Final, "no publish fails because the store cannot write")
	}
	faults.ClearCommits()
	for i, r := range b.finals(job, 3) {
		require.True(t, r.Success, "target %d: %s", i, r.Message)
	}
	recs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, recs, 3, "each post once")
	for i, rec := range recs {
		require.Equal(t, fmt.Sprintf("post %d", i), rec.Text, "in order")
	}
}

// The publishes in hand (the job backlog) are those an account took from the store and could
// send now: not those waiting for the budget, nor the backlog left in the store, nor any once the
// account stopped.
func TestInHandCountsThePublishesReadyToGo(t *testing.T) {
	t.Parallel()
	var inHand atomic.Int64
	late := &lateAnswer{sent: make(chan struct{}, 1), release: make(chan struct{})}
	b := setupWith(t, options{
		rules:  map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}},
		inHand: func(d int) { inHand.Add(int64(d)) },
		edit: func(a registry.Adapters) {
			late.Adapter = a[platforms.Bluesky]
			a[platforms.Bluesky] = late
		}})
	counts := func(acct string, want int64) {
		t.Helper()
		// A Get is answered after the messages before it.
		_, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Get{})
		require.NoError(t, err)
		require.Equal(t, want, inHand.Load())
	}
	x := b.connect(platforms.X, "nia")
	job := newJobID()
	b.publish(x, job, 0, "fits the budget")
	require.True(t, b.finals(job, 1)[0].Success)
	counts(x, 0)
	for i := 1; i <= 100; i++ {
		b.publish(x, job, i, fmt.Sprintf("waits %d", i))
	}
	for r := range b.reports {
		if strings.HasPrefix(r.Message, "waiting for rate budget") {
			break
		}
	}
	counts(x, 0) // waiting for the budget, and the rest in the store

	bsky := b.connect(platforms.Bluesky, "nia")
	held := newJobID()
	b.publish(bsky, held, 0, "answered late")
	<-late.sent
	counts(bsky, 1)
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.dir.Stop(stop))
	require.Equal(t, int64(0), inHand.Load(), "a stopped account holds nothing")
	close(late.release)
}

// An account that can publish nothing (here, deleted) fails what waits for it in the store, a
// batch at a time, never more than a bounded number ahead of the jobs that store the outcomes.
func TestFailingTheBacklogKeepsPaceWithTheJobs(t *testing.T) {
	t.Parallel()
	keep := &atomic.Bool{}
	b := setupWith(t, options{keepEntries: keep,
		rules: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	b.reports = make(chan *account.Report, 2000)
	x := b.connect(platforms.X, "oli")
	job := newJobID()
	const n = 600
	for i := range n {
		b.enqueue(x, job, i, fmt.Sprintf("never sent %d", i))
	}
	keep.Store(true) // the jobs are slow to store the outcomes
	_, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(x), &account.Delete{Scope: b.userID})
	require.NoError(t, err)
	failed := map[int]bool{}
	collect := func(until time.Duration) {
		for deadline := time.After(until); ; {
			select {
			case r := <-b.reports:
				if r.Final {
					require.False(t, r.Success)
					require.Contains(t, r.Message, "disconnected")
					failed[r.Target] = true
				}
			case <-deadline:
				return
			}
		}
	}
	collect(300 * time.Millisecond)
	first := len(failed)
	require.Positive(t, first)
	require.Less(t, first, n, "the account waits for the jobs to store what it reported")
	// The jobs store the outcomes: the account goes on.
	keep.Store(false)
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		for i := range failed {
			if err := tx.StopWaiting(persistence.Waiting{AccountID: x, JobID: job, Target: i}); err != nil {
				return err
			}
		}
		return nil
	}))
	for deadline := time.Now().Add(20 * time.Second); len(failed) < n && time.Now().Before(deadline); {
		collect(50 * time.Millisecond)
	}
	require.Len(t, failed, n, "every waiting publish failed once")
	require.Eventually(t, func() bool { return b.waiting(x) == 0 }, 10*time.Second, 10*time.Millisecond)
}

// A stopped account (Herald shutting down) starts no more calls: those recorded ahead of its
// callers stay recorded, for the next start to look up, and only the call under way at the stop
// ends.
func TestStoppedAccountStartsNoCall(t *testing.T) {
	t.Parallel()
	c := &counting{}
	var started atomic.Int64
	b := setupWith(t, options{latency: 5 * time.Millisecond, edit: func(a registry.Adapters) {
		c.Adapter = a[platforms.X]
		a[platforms.X] = &startCounting{Adapter: c, started: &started}
	}})
	acct := b.connect(platforms.X, "stop")
	job := uuid.NewString()
	const n = 200
	for i := range n {
		b.publish(acct, job, i, fmt.Sprintf("post %d before a shutdown", i))
	}
	reported := 0
	for reported < 20 {
		select {
		case r := <-b.reports:
			if r.Final {
				reported++
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d outcomes", reported)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.dir.Stop(ctx))
	// Calls started before the stop may end unheard (an answer that comes once the actor stopped
	// is not taken; the next start looks the post up): what the stop promises is that none starts
	// after it.
	atStop := started.Load()
	deadline := time.Now().Add(10 * time.Second)
	for c.now.Load() > 0 {
		require.True(t, time.Now().Before(deadline), "the call under way did not end")
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // ten calls' time for a caller that would go on
	require.Equal(t, atStop, started.Load(), "no call starts after the stop")
	require.GreaterOrEqual(t, atStop, int64(reported), "every reported outcome was a call")
	require.Less(t, atStop, int64(n))
}

// startCounting counts the publishing calls started.
type startCounting struct {
	platforms.Adapter
	started *atomic.Int64
}

func (s *startCounting) Publish(ctx context.Context, cr platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	s.started.Add(1)
	return s.Adapter.Publish(ctx, cr, p)
}

// An outcome whose job has not stored it a while after its report (the report was lost with a
// node that died) is reported again when the account's shard is resumed (Take.Resume), never
// sent to the network again; one the job stored is not.
func TestAnOutcomeNotStoredIsReportedAgainOnResume(t *testing.T) {
	t.Parallel()
	keep := &atomic.Bool{}
	keep.Store(true) // the report is lost: its entry stays in the store
	b := setupWith(t, options{keepEntries: keep})
	x := b.connect(platforms.X, "rhea")
	job := newJobID()
	b.publish(x, job, 0, "reported again")
	first := b.finals(job, 1)[0]
	require.True(t, first.Success)

	none := func(what string) {
		t.Helper()
		select {
		case r := <-b.reports:
			t.Fatalf("%s: a report came: %+v", what, r)
		case <-time.After(300 * time.Millisecond):
		}
	}
	// Just reported: its job may be storing it now.
	b.dir.Send(x, &account.Take{Resume: true})
	none("a resume right after the report")
	time.Sleep(time.Second)
	// A take that is not a resume (a new job) does not report it again.
	b.dir.Send(x, &account.Take{})
	none("a take")
	b.dir.Send(x, &account.Take{Resume: true})
	again := b.finals(job, 1)[0]
	require.Equal(t, first, again, "the same outcome, reported again")
	none("after the report again")

	// The job stores it: the next resume forgets it.
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		return tx.StopWaiting(persistence.Waiting{AccountID: x, JobID: job, Target: 0})
	}))
	time.Sleep(time.Second)
	b.dir.Send(x, &account.Take{Resume: true})
	none("a resume once the outcome is stored")
	n := 0
	for _, p := range b.sim.Publications(platforms.X) {
		if p.Text == "reported again" {
			n++
		}
	}
	require.Equal(t, 1, n, "published once")
}
