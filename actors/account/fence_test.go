package account_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
	"github.com/heraldhq/herald/platforms/sim"
)

// gate is a node's leases as an account sees them: held (its writes pass on bbolt, which fences
// nothing), trusted while trusted is set.
type gate struct {
	trusted atomic.Bool
	fenced  atomic.Int64
}

func (g *gate) Lease(string) (persistence.Lease, bool) {
	return persistence.Lease{Name: "shard/0", Epoch: 1}, true
}
func (g *gate) Trusted(string) bool        { return g.trusted.Load() }
func (g *gate) Finishing(string) bool      { return g.trusted.Load() }
func (g *gate) NotBefore(string) time.Time { return time.Time{} }
func (g *gate) Fenced()                    { g.fenced.Add(1) }
func (b *bundle) attempt(job string) (a *persistence.Attempt) {
	require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
		a, _ = tx.Attempt(job, 0)
		return nil
	}))
	return a
}

// publishedWhileTrusted sets up an X account behind fence g, which it trusts (trusted is g's
// switch), and publishes one post through it.
func publishedWhileTrusted(t *testing.T, g actors.Fence, trusted *atomic.Bool) (*bundle, string) {
	t.Helper()
	trusted.Store(true)
	b := setupWith(t, options{fence: g})
	acct := b.connect(platforms.X, "ann")
	first := newJobID()
	b.publish(acct, first, 0, "while trusted")
	require.True(t, b.finals(first, 1)[0].Success)
	return b, acct
}

// An account calls its network only while its node trusts the lease of its shard: once the
// trust ends (a renewal too old: the node was paused or cut off, or it hands the shard off), the
// call whose attempt was just recorded is not made, its attempt is forgotten, nothing is
// reported, the target waits in the store for the shard's next owner, and the actor stops.
func TestAnAccountCallsOnlyWhileItsShardIsTrusted(t *testing.T) {
	if pgtest.Enabled() {
		t.Skip("the stand-in lease has no row in PostgreSQL to fence on")
	}
	t.Parallel()
	g := &gate{}
	b, acct := publishedWhileTrusted(t, g, &g.trusted)
	g.trusted.Store(false)
	second := newJobID()
	b.publish(acct, second, 0, "no longer trusted")
	require.Eventually(t, func() bool {
		return len(b.dir.LiveIDs(func(id string) bool { return id == acct })) == 0
	}, 5*time.Second, 5*time.Millisecond, "the account stops")
	require.Len(t, b.sim.Publications(platforms.X), 1, "the untrusted call was not made")
	require.Nil(t, b.attempt(second), "the call was not made: its attempt is forgotten, nothing is left in doubt")
	require.Equal(t, 1, b.waiting(acct))
	for len(b.reports) > 0 {
		r := <-b.reports
		require.False(t, r.JobID == second && r.Final, "nothing is reported for the untrusted call")
	}
}

// drainingGate stands for a node that starts handing the account's shard off as a call finds it
// untrusted: at the first read of the lease after that (as the call's outcome reaches the
// actor), the hand-off's Drain is sent, and the actor holds on long enough for it to wait in its
// mailbox behind the outcome.
type drainingGate struct {
	gate
	armed, sent atomic.Bool
	drain       func() // set while trusted
}

func (g *drainingGate) Trusted(id string) bool {
	ok := g.gate.Trusted(id)
	if !ok && !g.sent.Load() {
		g.armed.Store(true)
	}
	return ok
}

func (g *drainingGate) Lease(id string) (persistence.Lease, bool) {
	if g.armed.Load() && g.sent.CompareAndSwap(false, true) {
		go g.drain()
		time.Sleep(50 * time.Millisecond)
	}
	return g.gate.Lease(id)
}

// An account that stops because its call found the shard untrusted answers a hand-off's Drain
// that reached it meanwhile: the incarnation ends, and a fresh one answers at once, instead of
// the Drain going unanswered with the stopped one and the hand-off waiting out its time-out.
func TestAnAccountThatStopsUntrustedAnswersTheDrainInItsMailbox(t *testing.T) {
	if pgtest.Enabled() {
		t.Skip("the stand-in lease has no row in PostgreSQL to fence on")
	}
	t.Parallel()
	g := &drainingGate{}
	b, acct := publishedWhileTrusted(t, g, &g.trusted)

	answered := make(chan error, 1)
	g.drain = func() {
		_, err := actors.AskWithin[*account.Drained](context.Background(), 5*time.Second, b.dir.To(acct), &account.Drain{})
		answered <- err
	}
	g.trusted.Store(false)
	second := newJobID()
	b.publish(acct, second, 0, "found untrusted as the hand-off begins")
	select {
	case err := <-answered:
		require.NoError(t, err, "the Drain is answered")
	case <-time.After(10 * time.Second):
		t.Fatal("the Drain was never sent")
	}
	require.Len(t, b.sim.Publications(platforms.X), 1, "the untrusted call was not made")
	require.Nil(t, b.attempt(second), "its attempt is forgotten")
	require.Equal(t, 1, b.waiting(acct), "the target waits in the store for the shard's next owner")
}

// A drained account starts nothing new and answers once its call in flight came back and was
// reported, naming the job it reported to.
func TestADrainedAccountFinishesItsCallInFlightAndStartsNothing(t *testing.T) {
	t.Parallel()
	c := &counting{}
	b := setupWith(t, options{latency: 300 * time.Millisecond, edit: func(a registry.Adapters) {
		c.Adapter = a[platforms.X]
		a[platforms.X] = c
	}})
	acct := b.connect(platforms.X, "ann")
	first := newJobID()
	b.publish(acct, first, 0, "in flight at the drain")
	require.Eventually(t, func() bool { return c.now.Load() == 1 }, 5*time.Second, time.Millisecond, "the call is on its way")
	d, err := actors.AskWithin[*account.Drained](context.Background(), 10*time.Second, b.dir.To(acct), &account.Drain{})
	require.NoError(t, err)
	require.Equal(t, []string{first}, d.Jobs)
	require.Len(t, b.sim.Publications(platforms.X), 1, "the call in flight ended before the answer")
	r := <-b.reports
	require.True(t, r.Final && r.Success && r.JobID == first, "reported before the answer: %+v", r)

	second := newJobID()
	b.publish(acct, second, 0, "after the drain")
	time.Sleep(500 * time.Millisecond)
	require.Len(t, b.sim.Publications(platforms.X), 1, "nothing new starts once drained")
	require.Equal(t, 1, b.waiting(acct), "it waits in the store for the shard's next owner")
}

// A token refresh rotates the account's tokens at the network, so it too is made only while the
// node trusts the account's shard: a call that finds its token expired after the trust ended
// leads to no refresh, and the actor stops.
func TestAnAccountRefreshesItsTokenOnlyWhileItsShardIsTrusted(t *testing.T) {
	if pgtest.Enabled() {
		t.Skip("the stand-in lease has no row in PostgreSQL to fence on")
	}
	t.Parallel()
	g := &onceTrusted{}
	b := setupWith(t, options{fence: g})
	acct := b.connect(platforms.X, "ann")
	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultExpireTokens, 1))
	job := newJobID()
	b.publish(acct, job, 0, "its token expired")
	require.Eventually(t, func() bool {
		return len(b.dir.LiveIDs(func(id string) bool { return id == acct })) == 0
	}, 5*time.Second, 5*time.Millisecond, "the account stops")
	require.InDelta(t, 0, testutil.ToFloat64(b.metrics.Refreshes.WithLabelValues(string(platforms.X), "ok")), 0, "no refresh was made")
	require.Empty(t, b.sim.Publications(platforms.X))
}

// onceTrusted trusts the first check only: the publishing call is made, what follows is not.
type onceTrusted struct{ gate }

func (g *onceTrusted) Trusted(string) bool {
	return g.trusted.CompareAndSwap(false, true)
}

// handingOff is a gate whose node, once it stops trusting the shard, still lets the calls on
// their way finish (Finishing): a hand-off under way.
type handingOff struct{ gate }

func (*handingOff) Finishing(string) bool { return true }

// A call found untrusted does not cut short the calls already on their way: with two calls
// allowed at once, the one in flight when the trust ended comes back and is reported, and only
// then does the actor stop. (The node lets it finish: were the trust to end before its request
// left, a gate that also stopped finishing would refuse that request, as a lost lease does.)
func TestAnUntrustedAccountReportsItsCallsInFlightBeforeStopping(t *testing.T) {
	if pgtest.Enabled() {
		t.Skip("the stand-in lease has no row in PostgreSQL to fence on")
	}
	t.Parallel()
	g := &handingOff{}
	g.trusted.Store(true)
	c := &counting{}
	b := setupWith(t, options{fence: g, concurrency: 2, latency: 400 * time.Millisecond, edit: func(a registry.Adapters) {
		c.Adapter = a[platforms.X]
		a[platforms.X] = c
	}})
	acct := b.connect(platforms.X, "ann")
	first := newJobID()
	b.publish(acct, first, 0, "on its way when the trust ends")
	require.Eventually(t, func() bool { return c.now.Load() == 1 }, 5*time.Second, time.Millisecond)
	g.trusted.Store(false)
	second := newJobID()
	b.publish(acct, second, 0, "found untrusted")
	r := b.finals(first, 1)[0]
	require.True(t, r.Success, r.Message)
	require.Eventually(t, func() bool {
		return len(b.dir.LiveIDs(func(id string) bool { return id == acct })) == 0
	}, 5*time.Second, 5*time.Millisecond, "the account stops once nothing is on its way")
	require.Len(t, b.sim.Publications(platforms.X), 1)
	require.Nil(t, b.attempt(second))
	require.Eventually(t, func() bool { return b.waiting(acct) == 1 }, 5*time.Second, 5*time.Millisecond,
		"the untrusted target waits for the shard's next owner")
}

// untrustedMidCall stands for a node whose trust ends after the lane's check and before the
// call's request goes out (paused in between, or its renewal too old by then): it ends the trust
// as the call starts, and the adapter's request must not be sent.
type untrustedMidCall struct {
	platforms.Adapter
	g     *gate
	calls atomic.Int64
}

func (u *untrustedMidCall) Publish(ctx context.Context, cr platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	u.calls.Add(1)
	u.g.trusted.Store(false)
	return u.Adapter.Publish(ctx, cr, p)
}

// The trust is checked again before every request of a call, not only before the call: a call
// whose node stopped trusting the account's shard once the call had begun sends nothing more (a
// call of several requests stops at the next one), the adapter sees a request that could not be
// sent, and the actor stops with the target waiting in the store.
func TestAnAccountSendsNoRequestOnceItsShardIsNoLongerTrustedMidCall(t *testing.T) {
	if pgtest.Enabled() {
		t.Skip("the stand-in lease has no row in PostgreSQL to fence on")
	}
	t.Parallel()
	g := &gate{}
	g.trusted.Store(true)
	u := &untrustedMidCall{g: g}
	b := setupWith(t, options{fence: g, edit: func(a registry.Adapters) {
		u.Adapter = a[platforms.X]
		a[platforms.X] = u
	}})
	acct := b.connect(platforms.X, "ann")
	job := newJobID()
	b.publish(acct, job, 0, "trust ends mid-call")
	require.Eventually(t, func() bool {
		return len(b.dir.LiveIDs(func(id string) bool { return id == acct })) == 0
	}, 5*time.Second, 5*time.Millisecond, "the account stops")
	require.EqualValues(t, 1, u.calls.Load(), "the call began")
	require.Empty(t, b.sim.Publications(platforms.X), "its request was not sent")
	require.Equal(t, 1, b.waiting(acct), "the target waits in the store for the shard's next owner")
	for len(b.reports) > 0 {
		r := <-b.reports
		require.False(t, r.JobID == job && r.Final, "nothing final is reported for the call not sent: %+v", r)
	}
}

// trustedFor trusts the first n checks only, of either kind (a call about to start asks
// Trusted, a request of a call under way Finishing).
type trustedFor struct {
	gate
	n atomic.Int64
}

func (g *trustedFor) Trusted(string) bool   { return g.n.Add(-1) >= 0 }
func (g *trustedFor) Finishing(string) bool { return g.n.Add(-1) >= 0 }

// An outcome in doubt is looked up only while the node trusts the account's shard: a call whose
// answer was lost (the post was created) while the trust ended leaves its attempt in the store,
// in doubt, for the shard's next owner to look up; this node neither looks it up nor fails it,
// and the actor stops.
func TestAnAccountLooksAnOutcomeUpOnlyWhileItsShardIsTrusted(t *testing.T) {
	if pgtest.Enabled() {
		t.Skip("the stand-in lease has no row in PostgreSQL to fence on")
	}
	t.Parallel()
	g := &trustedFor{}
	g.n.Store(2) // the lane's check before the call and the gate before its request
	b := setupWith(t, options{fence: g})
	acct := b.connect(platforms.X, "ann")
	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultPostThenError, 1))
	job := newJobID()
	b.publish(acct, job, 0, "answer lost as the trust ends")
	require.Eventually(t, func() bool {
		return len(b.dir.LiveIDs(func(id string) bool { return id == acct })) == 0
	}, 5*time.Second, 5*time.Millisecond, "the account stops")
	require.Len(t, b.sim.Publications(platforms.X), 1, "the call was made")
	for _, outcome := range []string{"found", "not_found", "unresolved"} {
		require.Zero(t, testutil.ToFloat64(b.metrics.UnknownOutcome.WithLabelValues(string(platforms.X), outcome)), "no lookup: %s", outcome)
	}
	require.NotNil(t, b.attempt(job), "the attempt stays in doubt in the store")
	for len(b.reports) > 0 {
		r := <-b.reports
		require.False(t, r.JobID == job && r.Final, "nothing final is reported from here: %+v", r)
	}
}
