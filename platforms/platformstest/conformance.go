package platformstest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// Adapter describes one adapter to the conformance suite that Run runs: how to build it, how to
// connect an account on the simulator, and what each case expects of the network. A case that
// does not apply to a network says why in its NotApplicable; a case left empty fails the suite,
// so that no case is skipped without a word.
type Adapter struct {
	Platform platforms.Platform
	// New builds the adapter from a configuration: the simulator's, or one pointing at a fake
	// server (FakeConfig).
	New func(cfg platforms.Config) platforms.Adapter
	// Options adjusts the simulator's options before it starts (nil: the case's as they are).
	Options func(o *sim.Options)
	// Account connects an account on the simulator with the adapter a (NewAccount, a login or
	// the OAuth flow).
	Account func(t *testing.T, srv *sim.Server, a platforms.Adapter) platforms.Credentials
	// FakeConfig points the adapter at a fake server at url (nil: BaseURL only).
	FakeConfig func(url string) platforms.Config
	// FakeCreds and FakePost are the account and a post the network takes, for the calls made to
	// fake servers (the refused connection, garbage answers, Validate's publish).
	FakeCreds platforms.Credentials
	FakePost  platforms.Post
	// PostOptions, when set, are the options every post to the account needs (a Pinterest
	// board), given to each post of the cases that has none.
	PostOptions func(c platforms.Credentials) platforms.Options

	// ServerError injects a 5xx before each step; Timeout a call held and dropped.
	ServerError Faults
	Timeout     Faults
	// Refused publishes FakePost to a port nobody listens on: Transient.
	Refused Refused
	// Garbage answers with bodies that are not what the network sends.
	Garbage Garbage
	// PostThenError creates the post and loses the answer; Lookup finds it.
	PostThenError Lookup
	// Refresh expires the tokens, refreshes, and publishes again.
	Refresh Refresh
	// Validate checks the network's content rules without a call.
	Validate Validate
	// Revoke revokes the account's tokens at the network.
	Revoke Revoke
	// RateLimit injects a refusal for a limit, then runs a simulator window out.
	RateLimit RateLimit
	// ProcessingFails publishes a video the network fails to process.
	ProcessingFails ProcessingFails
	// Thread publishes a thread (run for every adapter that is a platforms.Threader).
	Thread Thread
	// FirstComment comments on a post (run for every adapter that is a platforms.FirstCommenter).
	FirstComment FirstComment
}

// PostFunc makes a post for one test (media it needs served for the test's duration).
type PostFunc func(t *testing.T) platforms.Post

// Text is a text-only post.
func Text(s string) PostFunc {
	return func(*testing.T) platforms.Post { return platforms.Post{Text: s} }
}

// Numbered is a text-only post whose text is prefix and a number, new on every call (networks
// refuse a duplicate).
func Numbered(prefix string) PostFunc {
	var n atomic.Int64
	return func(*testing.T) platforms.Post {
		return platforms.Post{Text: fmt.Sprintf("%s %d", prefix, n.Add(1))}
	}
}

// Faults is a fault case: before each step the simulator is told to fail the next call.
type Faults struct {
	NotApplicable string
	// Hold is how long the simulator holds a timed-out call before dropping the connection;
	// ClientTimeout bounds the adapter's HTTP client (0: 5 s).
	Hold, ClientTimeout time.Duration
	Steps               []Step
}

// Step is one call under a fault: a publish of Post, or a lookup of it when Lookup is set.
type Step struct {
	Name   string
	Post   PostFunc
	Lookup bool
	Want   platforms.Kind
}

// Refused is the refused-connection case; it publishes Adapter.FakePost.
type Refused struct {
	NotApplicable string
}

// Garbage is the garbage-answer case.
type Garbage struct {
	NotApplicable string
	// Serve, when set, is a fake network that answers the call creating the post with ans and
	// every other call as the network does; nil: every call gets ans.
	Serve func(ans Answer) http.Handler
	// Answers are answers to the creating call: publishing FakePost fails with Want.
	Answers []Answer
	// Checks are further calls against fake networks.
	Checks []Check
}

// Answer is one fake answer and the kind it must be classified as.
type Answer struct {
	Status int
	Body   string
	Want   platforms.Kind
	// ResetIn, when set, is how far ahead the error's ResetAt must be (within 5 s).
	ResetIn time.Duration
}

// Check is one call against a fake network and the kinds its error may have.
type Check struct {
	Name string
	// Serve is the fake network at base; nil: every call is answered 200 "not json".
	Serve func(base string) http.Handler
	Call  func(ctx context.Context, a platforms.Adapter) error
	Want  []platforms.Kind
	// Is, when set, is an error the call's error must match.
	Is error
}

// Lookup is the post-then-error case: the network creates the post and the answer is lost.
type Lookup struct {
	NotApplicable string
	// Others are published first, so that the lookup has to tell posts apart.
	Others []PostFunc
	// Post is published under the fault (Unknown), then found by Lookup.
	Post PostFunc
	// Missing is never published: Lookup does not find it.
	Missing PostFunc
	// Another, when set, connects a second account, whose Lookup does not find the post.
	Another func(t *testing.T, srv *sim.Server, a platforms.Adapter) platforms.Credentials
	// More checks what else the network's lookup promises.
	More func(t *testing.T, srv *sim.Server, a platforms.Adapter, c platforms.Credentials, post platforms.Post, since time.Time, pub platforms.Publication)
}

// OldRefresh is what refreshing again with the credentials before a refresh gives.
type OldRefresh int

const (
	// OldRefreshUnchecked leaves it unchecked.
	OldRefreshUnchecked OldRefresh = iota
	// OldRefreshWorks: the old refresh token still works (not rotated, or a grace period).
	OldRefreshWorks
	// OldRefreshRefused: the old refresh token was single use (Permanent).
	OldRefreshRefused
)

// Refresh is the refresh-and-retry case.
type Refresh struct {
	NotApplicable string
	// Post is published before (AuthExpired) and after the refresh.
	Post PostFunc
	// ExpireAll expires every token (the fault's count 0) rather than the next call's.
	ExpireAll bool
	// Code, when set, is the network's code on the AuthExpired error.
	Code string
	// Rotates says the network answers with a new refresh token.
	Rotates bool
	Old     OldRefresh
	// Lifetime, when set, is how long the fresh access token lives at least; else it only has
	// to end in the future or never.
	Lifetime time.Duration
	// Refused makes credentials (from the account's) whose refresh the network refuses:
	// Permanent, the account must reconnect.
	Refused func(c platforms.Credentials) []platforms.Credentials
	// More checks what else the network's refresh promises.
	More func(t *testing.T, old, fresh platforms.Credentials)
}

// Revoke is the revocation case.
type Revoke struct {
	NotApplicable string
	// NoOp says the network offers no revocation: Revoke succeeds and sends nothing.
	NoOp bool
	// Post is published after the revocation: AuthExpired, with Code when set.
	Post PostFunc
	Code string
}

// RateLimit is the rate-limit case. Publishing Post under an injected limit is RateLimited with
// Code and a ResetAt within Reset; then, on a simulator started with Options whose window named
// Window is set to Limit, Passes posts go out and the next is RateLimited with a ResetAt within
// Exhausted. Nothing refused is published.
type RateLimit struct {
	NotApplicable string
	Post          PostFunc
	Code          string
	Reset         Within
	Options       sim.Options
	// Window, when set, is the simulator's window publishing spends, set to Limit.
	Window string
	Limit  sim.Limit
	// Passes is how many posts the run-out window lets through (0: one).
	Passes    int
	Exhausted Within
	// ResetAt, when set, is the exact reset the network promises for both refusals.
	ResetAt func(now time.Time) time.Time
	// ReportsRate says the last post let through reports the window spent: Remaining 0 (and
	// Limit the window's count when Window is set), with the reset the refusal then gives.
	ReportsRate bool
	// More checks what else the network's limits promise, on the run-out simulator.
	More func(t *testing.T, srv *sim.Server, a platforms.Adapter, c platforms.Credentials)
}

// Within bounds a reset from the time of the call: at least Min, at most Max (zero: no bound).
type Within struct{ Min, Max time.Duration }

func (w Within) check(t *testing.T, before time.Time, reset time.Time) {
	t.Helper()
	if w.Min != 0 || w.Max != 0 {
		require.False(t, reset.Before(before.Add(w.Min)), "reset %s is less than %s away", reset, w.Min)
	}
	if w.Max != 0 {
		require.False(t, reset.After(time.Now().Add(w.Max)), "reset %s is more than %s away", reset, w.Max)
	}
}

// ProcessingFails is the failed-processing case: Post carries a video that begins with
// sim.ProcessingFailureMarker (FailingVideo); publishing it is Permanent, with Code and a message
// containing Contains when set, and publishes nothing unless Kept.
type ProcessingFails struct {
	NotApplicable string
	Post          PostFunc
	Code          string
	Contains      string
	// Kept says the network keeps the post whose media it failed to process (a YouTube video
	// exists once uploaded, whatever its processing).
	Kept bool
}

// FailingVideo is video bytes the simulator fails to process.
func FailingVideo(t *testing.T) []byte {
	return append([]byte(sim.ProcessingFailureMarker), RandomBytes(t, 100)...)
}

// Validate is the content-rules case.
type Validate struct {
	NotApplicable string
	Cases         []ValidateCase
}

// ValidateCase is one post and whether the network takes it; Contains, when set, is in the
// error's message.
type ValidateCase struct {
	Name     string
	Post     platforms.Post
	OK       bool
	Contains string
}

// Run runs the conformance suite on one adapter, a subtest a case.
func Run(t *testing.T, c Adapter) {
	t.Helper()
	require.NotNil(t, c.New)
	require.NotNil(t, c.Account)
	for _, cs := range []struct {
		name, na string
		empty    bool
		run      func(t *testing.T)
	}{
		{"ServerError", c.ServerError.NotApplicable, len(c.ServerError.Steps) == 0, func(t *testing.T) { c.faults(t, sim.FaultError5xx, c.ServerError) }},
		{"Timeout", c.Timeout.NotApplicable, len(c.Timeout.Steps) == 0, func(t *testing.T) { c.faults(t, sim.FaultTimeout, c.Timeout) }},
		{"RefusedConnection", c.Refused.NotApplicable, c.FakePost.Text == "" && len(c.FakePost.Media) == 0, c.refused},
		{"GarbageAnswers", c.Garbage.NotApplicable, len(c.Garbage.Answers)+len(c.Garbage.Checks) == 0, c.garbage},
		{"PostThenErrorThenLookup", c.PostThenError.NotApplicable, c.PostThenError.Post == nil, c.postThenError},
		{"RefreshAndRetry", c.Refresh.NotApplicable, c.Refresh.Post == nil, c.refresh},
		{"Validate", c.Validate.NotApplicable, len(c.Validate.Cases) == 0, c.validate},
		{"Revoke", c.Revoke.NotApplicable, !c.Revoke.NoOp && c.Revoke.Post == nil, c.revoke},
		{"RateLimit", c.RateLimit.NotApplicable, c.RateLimit.Post == nil, c.rateLimit},
		{"ProcessingFails", c.ProcessingFails.NotApplicable, c.ProcessingFails.Post == nil, c.processingFails},
		{"Thread", c.threadNA(), false, c.thread},
		{"FirstComment", c.firstCommentNA(), false, c.firstComment},
	} {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			switch {
			case cs.na != "":
				t.Skip("not applicable: " + cs.na)
			case cs.empty:
				t.Fatalf("%s declares nothing for %s: fill it in or say why it does not apply", c.Platform, cs.name)
			}
			cs.run(t)
		})
	}
}

// bundle is one simulator with an adapter and a connected account.
type bundle struct {
	srv   *sim.Server
	cfg   platforms.Config
	a     platforms.Adapter
	creds platforms.Credentials
}

func (c Adapter) start(t *testing.T, opts sim.Options) *bundle {
	t.Helper()
	if c.Options != nil {
		c.Options(&opts)
	}
	srv, cfg := Start(t, c.Platform, opts)
	a := c.New(cfg)
	return &bundle{srv: srv, cfg: cfg, a: a, creds: c.Account(t, srv, a)}
}

// with gives a post the account's PostOptions when it has none.
func (c Adapter) with(creds platforms.Credentials, p platforms.Post) platforms.Post {
	if p.Options == nil && c.PostOptions != nil {
		p.Options = c.PostOptions(creds)
	}
	return p
}

func (c Adapter) fake(url string) platforms.Adapter {
	if c.FakeConfig != nil {
		return c.New(c.FakeConfig(url))
	}
	return c.New(platforms.Config{BaseURL: url})
}

// faults injects fault before each step. No step publishes anything: a post the fault left in
// doubt (Unknown) was not created, and the lookup says so once the steps are done (a call in
// between would leave a kept-alive connection that Go's transport replays an idempotent GET on).
func (c Adapter) faults(t *testing.T, fault string, f Faults) {
	b := c.start(t, sim.Options{TimeoutHold: f.Hold})
	a := b.a
	if f.ClientTimeout != 0 {
		cfg := b.cfg
		cfg.HTTPClient = adapterClient(f.ClientTimeout)
		a = c.New(cfg)
	}
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	var unknown []platforms.Post
	for _, s := range f.Steps {
		post := s.Post(t)
		require.NoError(t, b.srv.InjectFault(c.Platform, fault, 1))
		var err error
		if s.Lookup {
			_, _, err = a.Lookup(ctx, b.creds, post, since)
		} else {
			_, err = a.Publish(ctx, b.creds, c.with(b.creds, post))
		}
		require.Equal(t, s.Want, KindOf(t, err, c.Platform), "%s: %v", s.Name, err)
		if s.Want == platforms.Unknown {
			unknown = append(unknown, post)
		}
	}
	require.Empty(t, b.srv.Publications(c.Platform))
	if c.PostThenError.NotApplicable != "" {
		return
	}
	for _, post := range unknown {
		_, found, err := b.a.Lookup(ctx, b.creds, post, since)
		require.NoError(t, err)
		require.False(t, found, "the fault created nothing")
	}
}

// deadURL is the URL of a port nobody listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr
}

func (c Adapter) refused(t *testing.T) {
	_, err := c.fake(deadURL(t)).Publish(context.Background(), c.FakeCreds, c.FakePost)
	require.Equal(t, platforms.Transient, KindOf(t, err, c.Platform), "%v", err)
}

func (c Adapter) garbage(t *testing.T) {
	ctx := context.Background()
	for _, ans := range c.Garbage.Answers {
		h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(ans.Status)
			_, _ = w.Write([]byte(ans.Body))
		}))
		if c.Garbage.Serve != nil {
			h = c.Garbage.Serve(ans)
		}
		srv := httptest.NewServer(h)
		res, err := c.fake(srv.URL).Publish(ctx, c.FakeCreds, c.FakePost)
		srv.Close()
		require.Error(t, err, "%d %s: success %+v", ans.Status, ans.Body, res)
		require.Equal(t, ans.Want, KindOf(t, err, c.Platform), "%d %s: %v", ans.Status, ans.Body, err)
		if ans.ResetIn != 0 {
			var e *platforms.Error
			require.ErrorAs(t, err, &e)
			require.WithinDuration(t, time.Now().Add(ans.ResetIn), e.ResetAt, 5*time.Second)
		}
	}
	for _, ch := range c.Garbage.Checks {
		var base string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ch.Serve == nil {
				_, _ = w.Write([]byte("not json"))
				return
			}
			ch.Serve(base).ServeHTTP(w, r)
		}))
		base = srv.URL
		err := ch.Call(ctx, c.fake(base))
		srv.Close()
		require.Contains(t, ch.Want, KindOf(t, err, c.Platform), "%s: %v", ch.Name, err)
		if ch.Is != nil {
			require.ErrorIs(t, err, ch.Is, ch.Name)
		}
	}
}

func (c Adapter) postThenError(t *testing.T) {
	l := c.PostThenError
	b := c.start(t, sim.Options{})
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	for _, other := range l.Others {
		_, err := b.a.Publish(ctx, b.creds, c.with(b.creds, other(t)))
		require.NoError(t, err)
	}
	post := l.Post(t)
	require.NoError(t, b.srv.InjectFault(c.Platform, sim.FaultPostThenError, 1))
	_, err := b.a.Publish(ctx, b.creds, c.with(b.creds, post))
	require.Equal(t, platforms.Unknown, KindOf(t, err, c.Platform), "%v", err)

	pub, found, err := b.a.Lookup(ctx, b.creds, post, since)
	require.NoError(t, err)
	require.True(t, found)
	recs := b.srv.Publications(c.Platform)
	require.Len(t, recs, len(l.Others)+1)
	require.Equal(t, recs[len(recs)-1].ID, pub.ID, "the post created under the fault")
	require.Equal(t, post.Text, recs[len(recs)-1].Text)
	require.NotEmpty(t, pub.URL)

	_, found, err = b.a.Lookup(ctx, b.creds, l.Missing(t), since)
	require.NoError(t, err)
	require.False(t, found, "a post never published")
	_, found, err = b.a.Lookup(ctx, b.creds, post, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.False(t, found, "posts created before since do not count")
	if l.Another != nil {
		_, found, err = b.a.Lookup(ctx, l.Another(t, b.srv, b.a), post, since)
		require.NoError(t, err)
		require.False(t, found, "another account's posts are not this one's")
	}
	if l.More != nil {
		l.More(t, b.srv, b.a, b.creds, post, since, pub)
	}
}

func (c Adapter) refresh(t *testing.T) {
	r := c.Refresh
	b := c.start(t, sim.Options{})
	ctx := context.Background()
	post := r.Post(t)
	count := 1
	if r.ExpireAll {
		count = 0
	}
	require.NoError(t, b.srv.InjectFault(c.Platform, sim.FaultExpireTokens, count))
	_, err := b.a.Publish(ctx, b.creds, c.with(b.creds, post))
	require.Equal(t, platforms.AuthExpired, KindOf(t, err, c.Platform), "%v", err)
	if r.Code != "" {
		var e *platforms.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, r.Code, e.Code)
	}
	require.Empty(t, b.srv.Publications(c.Platform))

	fresh, err := b.a.Refresh(ctx, b.creds)
	require.NoError(t, err)
	require.NotEqual(t, b.creds.AccessToken, fresh.AccessToken)
	if r.Rotates {
		require.NotEqual(t, b.creds.RefreshToken, fresh.RefreshToken, "the network rotates refresh tokens")
	} else {
		require.Equal(t, b.creds.RefreshToken, fresh.RefreshToken, "the network keeps the refresh token")
	}
	require.Equal(t, b.creds.UserID, fresh.UserID)
	require.Equal(t, b.creds.Handle, fresh.Handle)
	require.Equal(t, b.creds.Extra, fresh.Extra)
	switch {
	case r.Lifetime != 0:
		require.True(t, fresh.ExpiresAt.After(time.Now().Add(r.Lifetime)), "expires %s", fresh.ExpiresAt)
	case !fresh.ExpiresAt.IsZero():
		require.True(t, fresh.ExpiresAt.After(time.Now()), "expires %s", fresh.ExpiresAt)
	}
	if r.More != nil {
		r.More(t, b.creds, fresh)
	}

	_, err = b.a.Publish(ctx, fresh, c.with(fresh, post))
	require.NoError(t, err)
	require.Len(t, b.srv.Publications(c.Platform), 1)

	switch r.Old {
	case OldRefreshWorks:
		_, err = b.a.Refresh(ctx, b.creds)
		require.NoError(t, err)
	case OldRefreshRefused:
		_, err = b.a.Refresh(ctx, b.creds)
		require.Equal(t, platforms.Permanent, KindOf(t, err, c.Platform), "the old refresh token is retired: %v", err)
	}
	if r.Refused != nil {
		for _, cr := range r.Refused(b.creds) {
			_, err = b.a.Refresh(ctx, cr)
			require.Equal(t, platforms.Permanent, KindOf(t, err, c.Platform), "%v", err)
		}
	}
}

// validate checks each case; a post the network refuses is refused by Publish too, before any
// call (the adapter points at a port nobody listens on).
func (c Adapter) validate(t *testing.T) {
	a := c.New(platforms.Config{})
	dead := c.fake(deadURL(t))
	for _, tc := range c.Validate.Cases {
		err := a.Validate(tc.Post)
		if tc.OK {
			require.NoError(t, err, tc.Name)
			continue
		}
		require.Equal(t, platforms.Invalid, KindOf(t, err, c.Platform), tc.Name)
		if tc.Contains != "" {
			require.Contains(t, err.Error(), tc.Contains, tc.Name)
		}
		_, err = dead.Publish(context.Background(), c.FakeCreds, tc.Post)
		require.Equal(t, platforms.Invalid, KindOf(t, err, c.Platform), "%s: Publish checks the rules first", tc.Name)
	}
}

// revoke revokes the account: the network records it, the tokens stop working (a publish is
// AuthExpired, a refresh Permanent) and revoking again is no error.
func (c Adapter) revoke(t *testing.T) {
	b := c.start(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.a.Revoke(ctx, b.creds))
	if c.Revoke.NoOp {
		require.Empty(t, b.srv.Revocations())
		return
	}
	revs := b.srv.Revocations()
	require.Len(t, revs, 1)
	require.Equal(t, string(c.Platform), revs[0].Platform)
	require.Equal(t, b.creds.UserID, revs[0].Account)
	_, err := b.a.Publish(ctx, b.creds, c.with(b.creds, c.Revoke.Post(t)))
	require.Equal(t, platforms.AuthExpired, KindOf(t, err, c.Platform), "%v", err)
	if c.Revoke.Code != "" {
		var e *platforms.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, c.Revoke.Code, e.Code)
	}
	_, err = b.a.Refresh(ctx, b.creds)
	require.Equal(t, platforms.Permanent, KindOf(t, err, c.Platform), "%v", err)
	require.NoError(t, b.a.Revoke(ctx, b.creds), "revoking twice is fine")
}

// limited asserts that err is a rate-limit refusal and returns it.
func (c Adapter) limited(t *testing.T, err error, before time.Time, w Within) *platforms.Error {
	t.Helper()
	require.Equal(t, platforms.RateLimited, KindOf(t, err, c.Platform), "%v", err)
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	w.check(t, before, e.ResetAt)
	if c.RateLimit.ResetAt != nil {
		require.Equal(t, c.RateLimit.ResetAt(before), e.ResetAt)
	}
	return e
}

func (c Adapter) rateLimit(t *testing.T) {
	r := c.RateLimit
	ctx := context.Background()
	b := c.start(t, sim.Options{})
	require.NoError(t, b.srv.InjectFault(c.Platform, sim.FaultRateLimit, 1))
	before := time.Now()
	_, err := b.a.Publish(ctx, b.creds, c.with(b.creds, r.Post(t)))
	e := c.limited(t, err, before, r.Reset)
	if r.Code != "" {
		require.Equal(t, r.Code, e.Code)
	}
	require.Empty(t, b.srv.Publications(c.Platform))

	b = c.start(t, r.Options)
	if r.Window != "" {
		b.srv.SetLimit(c.Platform, r.Window, r.Limit)
	}
	passes := max(r.Passes, 1)
	var res platforms.Result
	for range passes {
		res, err = b.a.Publish(ctx, b.creds, c.with(b.creds, r.Post(t)))
		require.NoError(t, err)
	}
	before = time.Now()
	_, err = b.a.Publish(ctx, b.creds, c.with(b.creds, r.Post(t)))
	e = c.limited(t, err, before, r.Exhausted)
	require.Len(t, b.srv.Publications(c.Platform), passes)
	if r.ReportsRate {
		require.Equal(t, 0, res.Rate.Remaining)
		if r.Window != "" {
			require.Equal(t, r.Limit.Count, res.Rate.Limit)
		}
		if !res.Rate.Reset.IsZero() {
			require.WithinDuration(t, res.Rate.Reset, e.ResetAt, time.Second)
		}
	}
	if r.More != nil {
		r.More(t, b.srv, b.a, b.creds)
	}
}

func (c Adapter) processingFails(t *testing.T) {
	p := c.ProcessingFails
	b := c.start(t, sim.Options{})
	_, err := b.a.Publish(context.Background(), b.creds, c.with(b.creds, p.Post(t)))
	require.Equal(t, platforms.Permanent, KindOf(t, err, c.Platform), "%v", err)
	if p.Code != "" {
		var e *platforms.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, p.Code, e.Code)
	}
	if p.Contains != "" {
		require.Contains(t, err.Error(), p.Contains)
	}
	if !p.Kept {
		require.Empty(t, b.srv.Publications(c.Platform))
	}
}
