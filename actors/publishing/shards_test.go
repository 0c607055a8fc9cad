package publishing_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/publishing"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
	"github.com/heraldhq/herald/platforms/sim"
)

// The tests of several nodes share one PostgreSQL schema, a simulator and a secret box; each
// node is a member with its own actor system, publishing and shard manager, as a process is.
const (
	nShards  = 4
	leaseTTL = 600 * time.Millisecond
)

type shared struct {
	*bundle
	url   string
	calls *inFlight
	// remind is how often the nodes remind their shards of their work (0: never).
	remind time.Duration
}

func setupShared(t *testing.T, latency time.Duration) *shared {
	t.Helper()
	url := pgtest.URL(t)
	store, err := persistence.OpenPostgres(context.Background(), url, persistence.Options{Shared: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	s, err := sim.Start("127.0.0.1:0", sim.Options{Latency: latency})
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
	adapters := registry.New(cfgs)
	calls := &inFlight{Adapter: adapters[platforms.X]}
	adapters[platforms.X] = calls
	return &shared{url: url, calls: calls, bundle: &bundle{t: t, store: store, sim: s, user: uuid.NewString(), deps: account.Deps{
		Box: box, Adapters: adapters, Budgets: account.NewBudgets(account.DefaultRules), Backoff: 10 * time.Millisecond,
	}}}
}

// inFlight counts X's publishing calls on their way. While hold is set, a call's answer, once
// the network gave it, is held until hold is closed: the call stays on its way for as long as a
// test needs, however slow the machine.
type inFlight struct {
	platforms.Adapter
	n    atomic.Int64
	hold atomic.Pointer[chan struct{}]
}

func (c *inFlight) Publish(ctx context.Context, cr platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	c.n.Add(1)
	defer c.n.Add(-1)
	res, err := c.Adapter.Publish(ctx, cr, p)
	if h := c.hold.Load(); h != nil {
		select {
		case <-*h:
		case <-ctx.Done():
		}
	}
	return res, err
}

// clusterNode is one node: a member and the actors of the shards it holds.
type clusterNode struct {
	member *cluster.Member
	leases *persistence.Leases
	p      *publishing.Publishing
	sys    *actors.System
	// shutdown ends the actor system once, as the process's exit does.
	shutdown func()
	reg      *prometheus.Registry // the account metrics
	cm       *cluster.Metrics
	cancel   context.CancelFunc
	done     chan struct{}

	mu    sync.Mutex
	taken map[string]time.Time // when each lease was acquired
	lost  map[string]bool
	// idle, when set, keeps the shard manager from hearing of leases taken and lost: the actors
	// of a lost shard are not passivated yet (Shards.Lost does it asynchronously) and nothing is
	// resumed, so only the incarnations already live act meanwhile.
	idle atomic.Bool
}

func (s *shared) node(callTimeout time.Duration) *clusterNode {
	t := s.t
	t.Helper()
	leases, err := persistence.OpenLeases(context.Background(), s.url, leaseTTL)
	require.NoError(t, err)
	t.Cleanup(leases.Close)
	leases.SetDoubt(callTimeout) // as app does
	n := &clusterNode{leases: leases, reg: prometheus.NewRegistry(), cm: cluster.NewMetrics(nil), taken: map[string]time.Time{}, lost: map[string]bool{}}
	var sh *publishing.Shards
	n.member = cluster.New(cluster.Config{Leases: leases, Addr: "127.0.0.1:1", Shards: nShards, Metrics: n.cm,
		Acquired: func(tk persistence.Taken) {
			n.mu.Lock()
			n.taken[tk.Name] = time.Now()
			n.mu.Unlock()
			if !n.idle.Load() {
				sh.Acquired(tk)
			}
		},
		Drain: func(l persistence.Lease) { sh.Drain(l) },
		Lost: func(l persistence.Lease) {
			n.mu.Lock()
			n.lost[l.Name] = true
			n.mu.Unlock()
			if !n.idle.Load() {
				sh.Lost(l)
			}
		},
	})
	fence := cluster.NewFence(n.member, n.cm)
	n.sys = actors.NewSystem(prometheus.NewRegistry(), nil)
	n.shutdown = sync.OnceFunc(n.sys.Shutdown)
	t.Cleanup(n.shutdown)
	deps := s.deps
	deps.CallTimeout = callTimeout
	deps.Metrics = account.NewMetrics(n.reg)
	n.p = publishing.New(publishing.Config{System: n.sys, Store: s.store, Backlog: job.NewBacklog(100), Account: deps, Fence: fence})
	sh = publishing.NewShards(n.p, fence, nShards, callTimeout)
	sh.Remind = s.remind
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		go sh.Run(ctx)
		_ = n.member.Run(ctx)
	}()
	t.Cleanup(n.stop)
	select {
	case <-n.member.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the node never became ready")
	}
	return n
}

// stop leaves the cluster as a SIGTERM does: every lease drained and released.
func (n *clusterNode) stop() {
	n.cancel()
	<-n.done
}

func (n *clusterNode) takenAt(name string) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	at, ok := n.taken[name]
	return at, ok
}

// publish publishes a new post to the accounts through n's post actors and returns its job id.
// The post and its job are given ids whose shards are none of the accounts', so that a test
// moving an account's shard moves only the account.
func (s *shared) publish(n *clusterNode, text string, accounts ...string) (postID, jobID string) {
	s.t.Helper()
	apart := func(id string) bool {
		for _, a := range accounts {
			if cluster.ShardOf(id, nShards) == cluster.ShardOf(a, nShards) {
				return false
			}
		}
		return true
	}
	draft := s.draft(text, accounts...)
	for !apart(draft.ID) {
		draft.ID = uuid.Must(uuid.NewV7()).String()
	}
	jobID = uuid.Must(uuid.NewV7()).String()
	for !apart(jobID) {
		jobID = uuid.Must(uuid.NewV7()).String()
	}
	_, err := actors.Ask[*post.PublishReply](context.Background(), n.p.Posts.To(draft.ID), &post.Publish{Scope: s.user, JobID: jobID, Create: draft})
	require.NoError(s.t, err)
	return draft.ID, jobID
}

// moveLease gives a lease to another node behind this one's back, as a takeover by a node that
// found it expired does: a new owner and the next epoch.
func (s *shared) moveLease(name string) {
	s.t.Helper()
	conn, err := pgx.Connect(context.Background(), s.url)
	require.NoError(s.t, err)
	defer conn.Close(context.Background())
	tag, err := conn.Exec(context.Background(), "UPDATE cluster_leases SET owner = $2, epoch = epoch + 1, expires_at = now() + interval '1 hour' WHERE name = $1",
		name, uuid.NewString())
	require.NoError(s.t, err)
	require.EqualValues(s.t, 1, tag.RowsAffected())
}

func (s *shared) attempt(jobID string) *persistence.Attempt {
	var a *persistence.Attempt
	require.NoError(s.t, s.store.View(func(tx *persistence.Tx) error {
		a, _ = tx.Attempt(jobID, 0)
		return nil
	}))
	return a
}

// Once another node took an account's shard, the account's actors on the old node record
// nothing and call nothing: the attempt's write is fenced, no second post reaches the network,
// the target waits in the store for the new owner, and the old node stops the shard's actors
// when it finds the lease lost.
func TestAShardsActorsAreFencedOnceItsLeaseMoved(t *testing.T) {
	s := setupShared(t, 0)
	a := s.node(time.Minute)
	x := s.connect(a.p, platforms.X, "ann")
	shard := cluster.ShardOf(x, nShards)
	postID, jobID := s.publish(a, "Before the move", x)
	s.published(postID, jobID)
	require.Len(t, s.sim.Publications(platforms.X), 1)

	s.moveLease(cluster.ShardName(shard))
	_, second := s.publish(a, "After the move", x)
	require.Eventually(t, func() bool { return a.cm.Fenced != nil && counter(t, a.cm.Fenced) >= 1 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.lost[cluster.ShardName(shard)]
	}, 5*time.Second, 5*time.Millisecond, "the node finds the lease lost at its next renewal")
	require.Eventually(t, func() bool {
		return len(a.p.Accounts.LiveIDs(func(id string) bool { return id == x })) == 0
	}, 5*time.Second, 5*time.Millisecond, "the shard's account actor is stopped")
	time.Sleep(200 * time.Millisecond)
	require.Len(t, s.sim.Publications(platforms.X), 1, "nothing was sent for the moved shard")
	require.Nil(t, s.attempt(second), "no attempt was recorded under the old epoch")
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		require.True(t, tx.JobActive(second), "the job waits for the shard's new owner")
		require.Equal(t, 1, tx.WaitingCounts()[x])
		return nil
	}))
}

// silentWithAttemptInDoubt connects X's account through a node that then goes silent holding
// every lease (no renewal, no release: they expire), leaving a post whose job's attempt for the
// account was recorded, as if its call were in flight when the node went silent.
func (s *shared) silentWithAttemptInDoubt(text string) (draft *persistence.Post, jobID string, silent time.Time) {
	t := s.t
	t.Helper()
	first := s.node(time.Minute)
	x := s.connect(first.p, platforms.X, "ann")
	require.NoError(t, first.p.Accounts.Passivate(context.Background(), func(string) bool { return true }))
	draft = s.draft(text, x)
	jobID = uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	require.NoError(t, s.store.Update(context.Background(), func(tx *persistence.Tx) error {
		j, err := post.NewJob(draft, jobID, now, nil)
		if err != nil {
			return err
		}
		if err := tx.PutPost(draft, nil); err != nil {
			return err
		}
		if err := tx.PutJob(j); err != nil {
			return err
		}
		return tx.PutAttempt(&persistence.Attempt{JobID: jobID, Target: 0, AccountID: x, StartedAt: now})
	}))
	silent = time.Now()
	first.leases.Close()
	return draft, jobID, silent
}

// takeOver starts a node that takes the silent node's leases over, and returns it with when it
// took the shard of the draft's account.
func (s *shared) takeOver(draft *persistence.Post, callTimeout time.Duration) (*clusterNode, time.Time) {
	t := s.t
	t.Helper()
	n := s.node(callTimeout)
	shard := cluster.ShardName(cluster.ShardOf(draft.Targets[0].AccountID, nShards))
	require.Eventually(t, func() bool { _, ok := n.takenAt(shard); return ok }, 10*time.Second, 10*time.Millisecond)
	taken, _ := n.takenAt(shard)
	require.GreaterOrEqual(t, counter(t, n.cm.Epochs.WithLabelValues("takeover")), 1.0)
	return n, taken
}

// A node that takes a shard over from a silent one (a takeover, not a hand-off) looks up an
// attempt the old owner may still have had in flight only once the call time-out has passed
// since it took the shard (the old lease had expired by then): the old node's call would have
// ended. Then the target is resolved as after a crash, and sent once.
func TestATakeoverDelaysTheLookupOfAttemptsInDoubt(t *testing.T) {
	s := setupShared(t, 0)
	const callTimeout = 1500 * time.Millisecond
	draft, jobID, killed := s.silentWithAttemptInDoubt("In flight when its node went silent")
	second, taken := s.takeOver(draft, callTimeout)
	require.GreaterOrEqual(t, taken.Sub(killed), leaseTTL/2, "taken over only after the lease expired")

	s.published(draft.ID, jobID)
	pubs := s.sim.Publications(platforms.X)
	require.Len(t, pubs, 1, "sent once, after the lookup found nothing")
	require.GreaterOrEqual(t, pubs[0].CreatedAt.Sub(taken), callTimeout, "the lookup waited for the call time-out after the takeover")
	require.InDelta(t, 1, testkit.Gathered(t, second.reg, "herald_network_unknown_outcomes_total", "resolution", "not_found"), 0)
}

// A shard taken over and handed off again before the takeover's doubt passed (a node joined
// soon after another died) keeps the doubt: the node handing it off does not wait for its
// lookup, which is still waiting out the doubt (the drain ends the wait, the attempt stays in
// doubt), and the next owner looks the attempt up only once the doubt counted from the takeover
// has passed, not at once because it was handed the shard.
func TestAShardHandedOffBeforeTheTakeoversDoubtPassedKeepsIt(t *testing.T) {
	s := setupShared(t, 0)
	const callTimeout = 3 * time.Second
	draft, jobID, _ := s.silentWithAttemptInDoubt("In doubt across a takeover and a hand-off")
	second, taken := s.takeOver(draft, callTimeout)
	x := draft.Targets[0].AccountID
	require.Eventually(t, func() bool {
		return len(second.p.Accounts.LiveIDs(func(id string) bool { return id == x })) == 1
	}, 10*time.Second, 10*time.Millisecond, "the account took its attempt in doubt and waits to look it up")
	time.Sleep(300 * time.Millisecond) // its first take (a read of the store) started the lookup's wait

	// The node stops (a SIGTERM) well within the doubt: its hand-off does not wait for it.
	second.stop()
	stopped := time.Now()
	require.True(t, stopped.Before(taken.Add(callTimeout)), "the hand-off ended within the doubt (at %v of %v)", stopped.Sub(taken), callTimeout)
	require.Empty(t, s.sim.Publications(platforms.X), "nothing was sent")
	require.NotNil(t, s.attempt(jobID), "the attempt is still in doubt in the store")

	third := s.node(callTimeout)
	s.published(draft.ID, jobID)
	require.InDelta(t, 0, counter(t, third.cm.Epochs.WithLabelValues("takeover")), 0, "every shard was handed to the third node")
	pubs := s.sim.Publications(platforms.X)
	require.Len(t, pubs, 1, "sent once, after the lookup found nothing")
	require.GreaterOrEqual(t, pubs[0].CreatedAt.Sub(taken), callTimeout, "the lookup waited for the doubt counted from the takeover")
	require.InDelta(t, 1, testkit.Gathered(t, third.reg, "herald_network_unknown_outcomes_total", "resolution", "not_found"), 0)
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

// A node that hands its shards off (a SIGTERM) first lets the calls in flight come back and
// their outcomes be stored: the node that takes the shards next finds no attempt in doubt, looks
// nothing up and sends nothing twice.
func TestAHandOffDrainsCallsInFlightBeforeReleasing(t *testing.T) {
	s := setupShared(t, 300*time.Millisecond)
	a := s.node(time.Minute)
	x := s.connect(a.p, platforms.X, "ann")
	postID, jobID := s.publish(a, "In flight at the hand-off", x)
	require.Eventually(t, func() bool { return s.calls.n.Load() == 1 }, 5*time.Second, time.Millisecond, "the call is on its way")

	a.stop()
	// The process ends: whatever its actors had not done is lost with it.
	a.shutdown()
	require.Len(t, s.sim.Publications(platforms.X), 1, "the call in flight ended before the node left")
	require.Nil(t, s.attempt(jobID), "its outcome was stored before the leases were released")
	require.InDelta(t, 0, counter(t, a.cm.Epochs.WithLabelValues("takeover")), 0)

	b := s.node(time.Minute)
	s.published(postID, jobID)
	require.Len(t, s.sim.Publications(platforms.X), 1)
	require.InDelta(t, 0, testkit.Gathered(t, b.reg, "herald_network_unknown_outcomes_total"), 0, "nothing was in doubt")
	require.InDelta(t, 0, counter(t, b.cm.Epochs.WithLabelValues("takeover")), 0, "every shard was handed off")
}

// A request to a post whose shard moved to another node changes nothing: the post's write is
// fenced (the HTTP layer answers it with a retriable 503), and the post stays as it was.
func TestAPostsWriteIsFencedOnceItsShardMoved(t *testing.T) {
	s := setupShared(t, 0)
	a := s.node(time.Minute)
	x := s.connect(a.p, platforms.X, "ann")
	draft := s.draft("A draft", x)
	_, err := actors.Ask[*post.Reply](context.Background(), a.p.Posts.To(draft.ID), &post.Create{Post: draft})
	require.NoError(t, err)

	s.moveLease(cluster.ShardName(cluster.ShardOf(draft.ID, nShards)))
	text := "Edited after the move"
	_, err = actors.Ask[*post.Reply](context.Background(), a.p.Posts.To(draft.ID), &post.Update{Scope: s.user, Content: &text})
	require.ErrorIs(t, err, persistence.ErrFenced)
	require.NoError(t, s.store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(draft.ID)
		require.NoError(t, err)
		require.Equal(t, "A draft", p.Content)
		return nil
	}))
	require.GreaterOrEqual(t, counter(t, a.cm.Fenced), 1.0)
}

// A node whose membership expired (its heartbeat row gone, as when the others counted it dead)
// steps down: every shard is lost and its actors stop; it joins again under a new id, takes the
// shards back once their old leases expire, and resumes them: a post accepted meanwhile is
// published, once.
func TestANodeThatLostItsMembershipRejoinsAndResumes(t *testing.T) {
	s := setupShared(t, 0)
	// The node reminds its shards of their work, as every node does: the shards are taken back
	// one by one, and the post's account may report its outcome to a job whose shard this node
	// does not hold yet. That report is fenced and lost; the reminder makes it good (without it
	// the job would wait for a report that never comes: TestAReportLostOnItsWay…).
	s.remind = 300 * time.Millisecond
	a := s.node(300 * time.Millisecond)
	x := s.connect(a.p, platforms.X, "ann")
	old := a.member.Node()
	conn, err := pgx.Connect(context.Background(), s.url)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), "DELETE FROM cluster_nodes WHERE id = $1", old)
	require.NoError(t, err)
	_ = conn.Close(context.Background())

	require.Eventually(t, func() bool { n := a.member.Node(); return n != "" && n != old }, 10*time.Second, 5*time.Millisecond,
		"joined again under a new id")
	a.mu.Lock()
	lost := len(a.lost)
	a.mu.Unlock()
	require.Equal(t, nShards, lost, "every shard was lost at the step-down")

	var postID, jobID string
	require.Eventually(t, func() bool {
		draft := s.draft("After the step-down", x)
		jobID = uuid.Must(uuid.NewV7()).String()
		_, err := actors.Ask[*post.PublishReply](context.Background(), a.p.Posts.To(draft.ID), &post.Publish{Scope: s.user, JobID: jobID, Create: draft})
		postID = draft.ID
		return err == nil // refused (fenced) until the post's shard is taken back
	}, 10*time.Second, 50*time.Millisecond)
	s.published(postID, jobID)
	require.Len(t, s.sim.Publications(platforms.X), 1)
	require.GreaterOrEqual(t, counter(t, a.cm.Epochs.WithLabelValues("takeover")), 1.0, "the old leases were taken over once expired")
}

// A report lost on its way to its job (here the job's incarnation was fenced as it stored it,
// since its shard had moved; it could as well have died with its node) is made good at the next
// reminder: the account reports the outcome again, and the job, whose shard is back, stores it.
// Resuming the job's shard alone would not: its account is on another shard.
func TestAReportLostOnItsWayIsReportedAgainAtTheNextReminder(t *testing.T) {
	for _, remind := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprintf("remind=%s", remind), func(t *testing.T) {
			s := setupShared(t, 0)
			s.remind = remind
			a := s.node(300 * time.Millisecond)
			x := s.connect(a.p, platforms.X, "lou")
			// The post, its job and the account on three shards.
			draft := s.draft("Reported again", x)
			jobID := uuid.Must(uuid.NewV7()).String()
			for cluster.ShardOf(draft.ID, nShards) == cluster.ShardOf(x, nShards) {
				draft.ID = uuid.Must(uuid.NewV7()).String()
			}
			for sh := cluster.ShardOf(jobID, nShards); sh == cluster.ShardOf(x, nShards) || sh == cluster.ShardOf(draft.ID, nShards); sh = cluster.ShardOf(jobID, nShards) {
				jobID = uuid.Must(uuid.NewV7()).String()
			}
			jobLease := cluster.ShardName(cluster.ShardOf(jobID, nShards))
			// The post's commit writes the job under the post's shard; the job's own shard
			// moves before the account's report reaches it.
			s.moveLease(jobLease)
			_, err := actors.Ask[*post.PublishReply](context.Background(), a.p.Posts.To(draft.ID), &post.Publish{Scope: s.user, JobID: jobID, Create: draft})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return len(s.sim.Publications(platforms.X)) == 1 }, 10*time.Second, 5*time.Millisecond)
			require.Eventually(t, func() bool { return counter(t, a.cm.Fenced) >= 1 }, 10*time.Second, 5*time.Millisecond,
				"the job's write of the outcome was fenced: the report is lost")
			// The lease comes back to this node, taken over once it expires.
			expire(t, s.url, jobLease)
			require.Eventually(t, func() bool { _, ok := a.member.Trusted(jobLease); return ok }, 10*time.Second, 5*time.Millisecond)
			if remind == 0 {
				time.Sleep(2 * time.Second)
				var j *persistence.Job
				require.NoError(t, s.store.View(func(tx *persistence.Tx) error { j, err = tx.Job(jobID); return err }))
				require.NotEqual(t, persistence.JobCompleted, j.Status, "without reminders, the job waits for a report that never comes")
				return
			}
			s.published(draft.ID, jobID)
			require.Len(t, s.sim.Publications(platforms.X), 1, "published once")
		})
	}
}

// expire ends a lease now, as if its owner stopped renewing it.
func expire(t *testing.T, url, name string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), "UPDATE cluster_leases SET expires_at = now() WHERE name = $1", name)
	require.NoError(t, err)
}

// A node that lost an account's shard and took it again under a later epoch, while the account's
// incarnation from before the loss still runs (its passivation is asynchronous), lets that
// incarnation neither store nor call: its state may be older than the store's, another node
// having published its targets meanwhile. The target queued behind its call in flight across the
// change is not sent, what the incarnation would write for it is fenced (it writes under the
// epoch it activated under) or never written, and the incarnation stops. The next message
// activates a fresh incarnation, which holds the current lease, reads the store afresh and
// publishes everything, each target once.
func TestAnIncarnationFromBeforeItsShardWasTakenAgainNeitherStoresNorCalls(t *testing.T) {
	s := setupShared(t, 0)
	answer := make(chan struct{})
	s.calls.hold.Store(&answer) // the first call is answered once the change is made
	a := s.node(time.Minute)
	x := s.connect(a.p, platforms.X, "ann")
	name := cluster.ShardName(cluster.ShardOf(x, nShards))
	before, ok := a.member.Lease(name)
	require.True(t, ok)

	firstPost, firstJob := s.publish(a, "In flight as the epoch moves", x)
	require.Eventually(t, func() bool { return s.calls.n.Load() == 1 }, 10*time.Second, time.Millisecond, "the call is on its way")
	secondPost, secondJob := s.publish(a, "Queued behind it", x)
	// Its attempt is recorded (it waits in the lane behind the call) before the change: recorded
	// after it, the write would be fenced and the incarnation stop before the test looks at it.
	require.Eventually(t, func() bool { return s.attempt(secondJob) != nil }, 10*time.Second, time.Millisecond, "the second target waits in the lane")

	// The shard is lost (found taken at the next renewal) and taken back by this node once the
	// other owner's lease expires, a later epoch under the same node, before the call returns.
	a.idle.Store(true)
	s.moveLease(name)
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.lost[name]
	}, 5*time.Second, 5*time.Millisecond, "the node finds the lease lost")
	expire(t, s.url, name)
	require.Eventually(t, func() bool {
		le, ok := a.member.Trusted(name)
		return ok && le.Epoch > before.Epoch+1
	}, 5*time.Second, 5*time.Millisecond, "the node takes the shard again")
	require.EqualValues(t, 1, s.calls.n.Load(), "the call is still on its way: the test needs it across the change")
	require.Len(t, a.p.Accounts.LiveIDs(func(id string) bool { return id == x }), 1, "the incarnation from before the loss lives")
	s.calls.hold.Store(nil)
	close(answer)

	// The call's outcome is the incarnation's first message since the change: before it, the
	// directory finds the incarnation stale and stops it after the messages already in its
	// mailbox. The target behind the call comes back unsent (untrusted) and, when that comes
	// back before the stop, the incarnation's write forgetting its attempt is fenced; when the
	// stop comes first it writes nothing. Either way the attempt stays recorded: the store has
	// nothing of the incarnation from after the change.
	require.Eventually(t, func() bool {
		return s.calls.n.Load() == 0 && a.p.Accounts.Live() == 0
	}, 10*time.Second, 5*time.Millisecond, "the call comes back and the old incarnation stops")
	t.Logf("writes fenced: %v", counter(t, a.cm.Fenced))
	require.NotNil(t, s.attempt(secondJob), "the old incarnation's forgetting of the unsent target's attempt is not stored")
	time.Sleep(300 * time.Millisecond)
	require.Len(t, s.sim.Publications(platforms.X), 1, "the old incarnation sent nothing after the change")

	// A message now activates a fresh incarnation under the current lease.
	a.idle.Store(false)
	thirdPost, thirdJob := s.publish(a, "After the change", x)
	s.published(firstPost, firstJob)
	s.published(secondPost, secondJob)
	s.published(thirdPost, thirdJob)
	require.Len(t, s.sim.Publications(platforms.X), 3, "each target published once")
}
