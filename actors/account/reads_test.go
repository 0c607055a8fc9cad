package account_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/persistence/storetest"
	"github.com/heraldhq/herald/platforms"
)

// liveFake is an adapter whose live calls answer what the test says. It implements Reader,
// Commenter and Messenger; publishing is not used here.
type liveFake struct {
	platform platforms.Platform

	mu        sync.Mutex
	calls     map[string]int
	tokens    []string // the access token of each live call
	inflight  int
	maxFlight int
	// hold, when set, holds every live call until it is closed.
	hold chan struct{}
	// entered receives a value as each live call starts (when set).
	entered chan struct{}
	// errs are returned by the next live calls, in order.
	errs       []error
	refreshErr error
}

func newLiveFake(p platforms.Platform) *liveFake {
	return &liveFake{platform: p, calls: map[string]int{}}
}

func (f *liveFake) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *liveFake) begin(name string, c platforms.Credentials) error {
	f.mu.Lock()
	f.calls[name]++
	f.tokens = append(f.tokens, c.AccessToken)
	f.inflight++
	f.maxFlight = max(f.maxFlight, f.inflight)
	hold, entered := f.hold, f.entered
	var err error
	if len(f.errs) > 0 {
		err, f.errs = f.errs[0], f.errs[1:]
	}
	f.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	f.inflight--
	f.mu.Unlock()
	return err
}

func (f *liveFake) Platform() platforms.Platform  { return f.platform }
func (f *liveFake) Validate(platforms.Post) error { return nil }
func (f *liveFake) Publish(context.Context, platforms.Credentials, platforms.Post) (platforms.Result, error) {
	return platforms.Result{}, errors.New("not used")
}

func (f *liveFake) Refresh(_ context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["refresh"]++
	if f.refreshErr != nil {
		return c, f.refreshErr
	}
	c.AccessToken = "refreshed"
	c.ExpiresAt = time.Now().Add(time.Hour)
	return c, nil
}

func (f *liveFake) Revoke(context.Context, platforms.Credentials) error { return nil }
func (f *liveFake) Lookup(context.Context, platforms.Credentials, platforms.Post, time.Time) (platforms.Publication, bool, error) {
	return platforms.Publication{}, false, nil
}

func (f *liveFake) Metrics(_ context.Context, c platforms.Credentials, id string) (platforms.Metrics, error) {
	if err := f.begin("metrics", c); err != nil {
		return platforms.Metrics{}, err
	}
	n := int64(len(id))
	return platforms.Metrics{Likes: &n}, nil
}

func (f *liveFake) BatchMetrics(_ context.Context, c platforms.Credentials, ids []string) (map[string]platforms.Metrics, error) {
	if err := f.begin("batch", c); err != nil {
		return nil, err
	}
	out := map[string]platforms.Metrics{}
	for _, id := range ids {
		if id != "missing" {
			n := int64(len(id))
			out[id] = platforms.Metrics{Likes: &n}
		}
	}
	return out, nil
}

func (f *liveFake) Comments(_ context.Context, c platforms.Credentials, id string) ([]platforms.Comment, error) {
	if err := f.begin("comments", c); err != nil {
		return nil, err
	}
	return []platforms.Comment{{ID: "c1", PublicationID: id, Text: "hi"}}, nil
}

func (f *liveFake) Reply(_ context.Context, c platforms.Credentials, pub, comment, text string, _ []platforms.Media) (platforms.Comment, error) {
	if err := f.begin("reply", c); err != nil {
		return platforms.Comment{}, err
	}
	return platforms.Comment{ID: "r1", PublicationID: pub, ParentID: comment, Text: text, ByAccount: true}, nil
}

func (f *liveFake) Conversation(_ context.Context, c platforms.Credentials, id string) ([]platforms.Message, error) {
	if err := f.begin("dm_read", c); err != nil {
		return nil, err
	}
	return []platforms.Message{{ID: "m1", ConversationID: id}}, nil
}

func (f *liveFake) SendMessage(_ context.Context, c platforms.Credentials, id, _, text string, _ []platforms.Media) (platforms.Message, error) {
	if err := f.begin("dm_send", c); err != nil {
		return platforms.Message{}, err
	}
	return platforms.Message{ID: "m2", ConversationID: id, Text: text}, nil
}

// publishOnly is an adapter with no live calls.
type publishOnly struct{ p platforms.Platform }

func (a publishOnly) Platform() platforms.Platform { return a.p }
func (publishOnly) Validate(platforms.Post) error  { return nil }
func (publishOnly) Publish(context.Context, platforms.Credentials, platforms.Post) (platforms.Result, error) {
	return platforms.Result{}, errors.New("not used")
}
func (publishOnly) Refresh(_ context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	return c, nil
}
func (publishOnly) Revoke(context.Context, platforms.Credentials) error { return nil }
func (publishOnly) Lookup(context.Context, platforms.Credentials, platforms.Post, time.Time) (platforms.Publication, bool, error) {
	return platforms.Publication{}, false, nil
}

type readBundle struct {
	t       *testing.T
	dir     *actors.Directory
	budgets *account.Budgets
	fake    *liveFake
	userID  string
}

func setupReads(t *testing.T, rules map[platforms.Platform]map[account.ReadOp][]account.Rule, concurrency int) *readBundle {
	t.Helper()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	key, err := secret.LoadKey(t.TempDir(), "")
	require.NoError(t, err)
	box, err := secret.NewBox(key)
	require.NoError(t, err)
	b := &readBundle{t: t, budgets: account.NewBudgets(account.DefaultRules), fake: newLiveFake(platforms.X), userID: uuid.NewString()}
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	adapters := map[platforms.Platform]platforms.Adapter{
		platforms.X:        b.fake,
		platforms.LinkedIn: publishOnly{platforms.LinkedIn},
	}
	b.dir = actors.NewDirectory(sys, account.Kind(account.Deps{
		Store: store, Box: box, Adapters: adapters, Budgets: b.budgets, Metrics: account.NewMetrics(prometheus.NewRegistry()),
		Log: slog.New(slog.DiscardHandler), CallTimeout: 5 * time.Second,
		ReadRules: rules, ReadConcurrency: concurrency,
	}))
	return b
}

func (b *readBundle) connect(p platforms.Platform, creds platforms.Credentials) string {
	b.t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	handle := "alice"
	_, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(id), &account.Create{
		Account: &persistence.Account{UserID: b.userID, Platform: string(p), Username: &handle, IsActive: true, CreatedAt: time.Now().UTC()},
		Creds:   creds,
	})
	require.NoError(b.t, err)
	return id
}

func (b *readBundle) read(acct string, m *account.Read) (*account.ReadReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if m.Scope == "" {
		m.Scope = b.userID
	}
	return actors.Ask[*account.ReadReply](ctx, b.dir.To(acct), m)
}

var goodCreds = platforms.Credentials{AccessToken: "tok", RefreshToken: "ref", ExpiresAt: time.Now().Add(time.Hour), UserID: "u1"}

func TestReadsAnswerThroughTheActor(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 0)
	acct := b.connect(platforms.X, goodCreds)

	r, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "12345"})
	require.NoError(t, err)
	require.Equal(t, platforms.X, r.Platform)
	require.EqualValues(t, 5, *r.Metrics.Likes)
	require.Nil(t, r.Metrics.Views)

	r, err = b.read(acct, &account.Read{Op: account.OpComments, PublicationID: "p"})
	require.NoError(t, err)
	require.Len(t, r.Comments, 1)
	r, err = b.read(acct, &account.Read{Op: account.OpReply, PublicationID: "p", CommentID: "c1", Text: "thanks"})
	require.NoError(t, err)
	require.Equal(t, "thanks", r.Comment.Text)
	r, err = b.read(acct, &account.Read{Op: account.OpConversation, ConversationID: "dm1"})
	require.NoError(t, err)
	require.Len(t, r.Messages, 1)
	r, err = b.read(acct, &account.Read{Op: account.OpSendMessage, ConversationID: "dm1", Text: "hello"})
	require.NoError(t, err)
	require.Equal(t, "hello", r.Message.Text)

	// Another user's account, an unknown account, a network without the call.
	_, err = b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1", Scope: uuid.NewString()})
	require.ErrorIs(t, err, account.ErrForbidden)
	_, err = b.read(uuid.NewString(), &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorIs(t, err, account.ErrNotFound)
	li := b.connect(platforms.LinkedIn, goodCreds)
	_, err = b.read(li, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorIs(t, err, account.ErrReadUnsupported)
	// A reply to a network's not-found answer is passed on as such.
	b.fake.mu.Lock()
	b.fake.errs = []error{platforms.ErrNotFound}
	b.fake.mu.Unlock()
	_, err = b.read(acct, &account.Read{Op: account.OpConversation, ConversationID: "other"})
	require.ErrorIs(t, err, platforms.ErrNotFound)
}

func TestBatchMetricsSpendOneUnitPerCall(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 0)
	acct := b.connect(platforms.X, goodCreds)
	ids := make([]string, 150)
	for i := range ids {
		ids[i] = fmt.Sprintf("%d", 1000+i)
	}
	ids[7] = "missing"
	r, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationIDs: ids})
	require.NoError(t, err)
	require.Len(t, r.Batch, 149, "what the network does not find is absent")
	require.EqualValues(t, 4, *r.Batch["1000"].Likes)
	require.Equal(t, 1, b.fake.count("batch"))
	require.Equal(t, 0, b.fake.count("metrics"))
	rules := account.DefaultReadRules[platforms.X][account.OpMetrics]
	require.Equal(t, 900-2, b.budgets.RemainingOp(platforms.X, acct, rules, time.Now()), "150 ids are two calls of 100")
	require.Equal(t, 100, account.MetricsPerCall(platforms.X))
	require.Equal(t, 1, account.MetricsPerCall(platforms.Pinterest))

	li := b.connect(platforms.LinkedIn, goodCreds)
	_, err = b.read(li, &account.Read{Op: account.OpMetrics, PublicationIDs: ids})
	require.ErrorIs(t, err, account.ErrReadUnsupported)
}

func TestSpentBudgetAnswersAtOnce(t *testing.T) {
	t.Parallel()
	rules := map[platforms.Platform]map[account.ReadOp][]account.Rule{
		platforms.X: {account.OpMetrics: {{Name: "read:lookup", Limit: 2, Window: time.Hour, Cost: 1}}},
	}
	b := setupReads(t, rules, 0)
	acct := b.connect(platforms.X, goodCreds)
	for range 2 {
		_, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
		require.NoError(t, err)
	}
	start := time.Now()
	_, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	var spent *account.BudgetSpentError
	require.ErrorAs(t, err, &spent)
	require.Equal(t, account.OpMetrics, spent.Op)
	require.True(t, spent.RetryAt.After(start.Add(59*time.Minute)), "the window reopens in an hour: %s", spent.RetryAt)
	require.Equal(t, 2, b.fake.count("metrics"), "nothing was sent for the refused read")
	require.Equal(t, 0, b.budgets.RemainingOp(platforms.X, acct, rules[platforms.X][account.OpMetrics], time.Now()))
	// An operation without rules is not limited.
	_, err = b.read(acct, &account.Read{Op: account.OpComments, PublicationID: "1"})
	require.NoError(t, err)
}

func TestNetworkRateLimitSpendsTheReadBudget(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 0)
	acct := b.connect(platforms.X, goodCreds)
	reset := time.Now().Add(10 * time.Minute)
	b.fake.mu.Lock()
	b.fake.errs = []error{&platforms.Error{Kind: platforms.RateLimited, Platform: platforms.X, Status: 429, ResetAt: reset}}
	b.fake.mu.Unlock()
	_, err := b.read(acct, &account.Read{Op: account.OpComments, PublicationID: "1"})
	var spent *account.BudgetSpentError
	require.ErrorAs(t, err, &spent)
	require.True(t, spent.RetryAt.Equal(reset))
	_, err = b.read(acct, &account.Read{Op: account.OpComments, PublicationID: "1"})
	require.ErrorAs(t, err, &spent)
	require.Equal(t, 1, b.fake.count("comments"), "the next read was not sent")
	// Other operations have their own limits.
	_, err = b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.NoError(t, err)
}

func TestAuthExpiredRefreshesOnceAndRepeats(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 0)
	acct := b.connect(platforms.X, goodCreds)
	b.fake.mu.Lock()
	b.fake.errs = []error{&platforms.Error{Kind: platforms.AuthExpired, Platform: platforms.X, Status: 401}}
	b.fake.mu.Unlock()
	_, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.NoError(t, err)
	require.Equal(t, 1, b.fake.count("refresh"))
	require.Equal(t, []string{"tok", "refreshed"}, b.fake.tokens, "repeated once with the refreshed token")

	// A token refused even after a refresh: connect again.
	b.fake.mu.Lock()
	refused := &platforms.Error{Kind: platforms.AuthExpired, Platform: platforms.X, Status: 401}
	b.fake.errs = []error{refused, refused}
	b.fake.mu.Unlock()
	_, err = b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	var rc *account.ReconnectError
	require.ErrorAs(t, err, &rc)
	require.Equal(t, 2, b.fake.count("refresh"))
	require.Equal(t, 4, b.fake.count("metrics"))
}

func TestExpiredTokenIsRefreshedFirstOrReported(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 0)
	expired := goodCreds
	expired.ExpiresAt = time.Now().Add(-time.Minute)
	acct := b.connect(platforms.X, expired)
	_, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.NoError(t, err)
	require.Equal(t, []string{"refreshed"}, b.fake.tokens, "the expired token was never sent")

	// A refresh that fails: the read answers that the account must be connected again, and so
	// does the next one, without another refresh for a while.
	b.fake.mu.Lock()
	b.fake.refreshErr = &platforms.Error{Kind: platforms.Permanent, Platform: platforms.X, Status: 400, Message: "invalid_grant"}
	b.fake.mu.Unlock()
	dead := b.connect(platforms.X, expired)
	var rc *account.ReconnectError
	_, err = b.read(dead, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorAs(t, err, &rc)
	_, err = b.read(dead, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorAs(t, err, &rc)
	require.Equal(t, 2, b.fake.count("refresh"))

	// No token at all.
	none := b.connect(platforms.X, platforms.Credentials{})
	_, err = b.read(none, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorAs(t, err, &rc)
}

// Get tells, without a network call, whether a read would answer that the account must be
// connected again: the rule the analytics and inbox account listings show.
func TestGetTellsWhetherTheAccountMustBeConnectedAgain(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 0)
	get := func(acct string) string {
		t.Helper()
		r, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Get{})
		require.NoError(t, err)
		return r.Reconnect
	}
	require.Empty(t, get(b.connect(platforms.X, goodCreds)))
	expired := goodCreds
	expired.ExpiresAt = time.Now().Add(-time.Minute)
	require.Empty(t, get(b.connect(platforms.X, expired)), "an expired token is refreshed by the next read")
	require.Contains(t, get(b.connect(platforms.X, platforms.Credentials{})), "no usable token")

	b.fake.mu.Lock()
	b.fake.refreshErr = &platforms.Error{Kind: platforms.Permanent, Platform: platforms.X, Status: 400, Message: "invalid_grant"}
	b.fake.mu.Unlock()
	dead := b.connect(platforms.X, expired)
	_, err := b.read(dead, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	var rc *account.ReconnectError
	require.ErrorAs(t, err, &rc)
	reason := get(dead)
	_, err = b.read(dead, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorAs(t, err, &rc)
	require.Equal(t, rc.Reason, reason, "Get says what the next read says")
	require.Equal(t, 1, b.fake.count("refresh"), "Get makes no call")
	require.Zero(t, b.fake.count("metrics"))

	// A token the network refuses, whose refresh fails: connect again, and Get says so.
	refused := b.connect(platforms.X, goodCreds)
	b.fake.mu.Lock()
	b.fake.errs = []error{&platforms.Error{Kind: platforms.AuthExpired, Platform: platforms.X, Status: 401}}
	b.fake.mu.Unlock()
	_, err = b.read(refused, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorAs(t, err, &rc)
	require.NotEmpty(t, get(refused))
	calls := b.fake.count("metrics")
	_, err = b.read(refused, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
	require.ErrorAs(t, err, &rc)
	require.Equal(t, calls, b.fake.count("metrics"), "the refused token is not sent again for a while")
}

func TestReadsAreBoundedPerAccountAndNeverBlockTheActor(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 2)
	acct := b.connect(platforms.X, goodCreds)
	hold := make(chan struct{})
	entered := make(chan struct{}, 10)
	b.fake.mu.Lock()
	b.fake.hold, b.fake.entered = hold, entered
	b.fake.mu.Unlock()
	const n = 5
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
			errs <- err
		}()
	}
	<-entered
	<-entered
	// Two calls are held; the actor still answers other messages at once.
	_, err := actors.Ask[*account.Reply](context.Background(), b.dir.To(acct), &account.Get{})
	require.NoError(t, err)
	close(hold)
	for range n {
		require.NoError(t, <-errs)
	}
	b.fake.mu.Lock()
	defer b.fake.mu.Unlock()
	require.Equal(t, 2, b.fake.maxFlight, "at most ReadConcurrency calls in flight")
	require.Equal(t, n, b.fake.calls["metrics"])
}

func TestReadDeadlineWhileWaitingForASlot(t *testing.T) {
	t.Parallel()
	b := setupReads(t, nil, 1)
	acct := b.connect(platforms.X, goodCreds)
	hold := make(chan struct{})
	entered := make(chan struct{}, 10)
	b.fake.mu.Lock()
	b.fake.hold, b.fake.entered = hold, entered
	b.fake.mu.Unlock()
	first := make(chan error, 1)
	go func() {
		_, err := b.read(acct, &account.Read{Op: account.OpMetrics, PublicationID: "1"})
		first <- err
	}()
	<-entered
	// A second read waits for the slot past its deadline: it is answered, never sent.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		_, err := actors.Ask[*account.ReadReply](ctx, b.dir.To(acct), &account.Read{Op: account.OpMetrics, PublicationID: "2", Scope: b.userID, Deadline: time.Now().Add(-time.Millisecond)})
		second <- err
	}()
	require.ErrorIs(t, <-second, account.ErrReadDeadline)
	close(hold)
	require.NoError(t, <-first)
	require.Equal(t, 1, b.fake.count("metrics"))
}

func TestYouTubeRepliesShareTheProjectUnits(t *testing.T) {
	t.Parallel()
	budgets := account.NewBudgets(account.DefaultRules)
	now := time.Now()
	replies := account.DefaultReadRules[platforms.YouTube][account.OpReply]
	lists := account.DefaultReadRules[platforms.YouTube][account.OpComments]
	require.Equal(t, 6, budgets.Remaining(platforms.YouTube, "a", now), "10,000 units: six uploads of 1,600")
	require.Equal(t, 200, budgets.RemainingOp(platforms.YouTube, "a", replies, now))
	// One upload leaves 8,400 units: 168 replies or 8,400 lists, for every account of the project.
	ok, _ := budgets.Reserve(platforms.YouTube, "a", now)
	require.True(t, ok)
	require.Equal(t, 168, budgets.RemainingOp(platforms.YouTube, "b", replies, now))
	require.Equal(t, 8400, budgets.RemainingOp(platforms.YouTube, "b", lists, now))
}
