package publishing_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/publishing"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/persistence/storetest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
	"github.com/heraldhq/herald/platforms/sim"
)

// bundle is publishing on a real store, actor system and network simulator.
type bundle struct {
	t     *testing.T
	store *persistence.Store
	sim   *sim.Server
	deps  account.Deps
	user  string
	// loops are the background loops of each publishing start runs (stop stops them).
	loops map[*publishing.Publishing]*cluster.Singletons
}

func setup(t *testing.T) *bundle {
	t.Helper()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	s, err := sim.Start("127.0.0.1:0", sim.Options{})
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
	return &bundle{t: t, store: store, sim: s, user: uuid.NewString(), deps: account.Deps{
		Box: box, Adapters: registry.New(cfgs), Budgets: account.NewBudgets(account.DefaultRules),
		Metrics: account.NewMetrics(prometheus.NewRegistry()), Backoff: 10 * time.Millisecond,
	}}
}

// start builds publishing with its own actor system and registry, and starts it.
func (b *bundle) start() (*publishing.Publishing, *prometheus.Registry) {
	b.t.Helper()
	reg := prometheus.NewRegistry()
	sys := actors.NewSystem(reg, nil)
	b.t.Cleanup(sys.Shutdown)
	p := publishing.New(publishing.Config{System: sys, Store: b.store, Registry: reg, Backlog: job.NewBacklog(100), Account: b.deps})
	// Resumed and its loops run as Herald's server runs them on a single node.
	p.Resume()
	loops := cluster.NewSingletons(reg, nil)
	for kind, run := range p.Singletons() {
		loops.Register(kind, run)
	}
	loops.StartAll(context.Background())
	b.t.Cleanup(loops.Stop)
	if b.loops == nil {
		b.loops = map[*publishing.Publishing]*cluster.Singletons{}
	}
	b.loops[p] = loops
	return p, reg
}

// stop stops the background loops of a publishing start started (the scheduler, the pruning).
func (b *bundle) stop(p *publishing.Publishing) { b.loops[p].Stop() }

// connect creates an account on the simulator through p's account directory.
func (b *bundle) connect(p *publishing.Publishing, network platforms.Platform, handle string) string {
	b.t.Helper()
	creds, err := b.sim.NewAccount(network, handle)
	require.NoError(b.t, err)
	id := uuid.Must(uuid.NewV7()).String()
	_, err = actors.Ask[*account.Reply](context.Background(), p.Accounts.To(id), &account.Create{
		Account: &persistence.Account{UserID: b.user, Platform: string(network), Username: &handle, IsActive: true,
			CreatedAt: time.Now().UTC(), NetworkUserID: creds.UserID},
		Creds: creds,
	})
	require.NoError(b.t, err)
	return id
}

func (b *bundle) draft(text string, accounts ...string) *persistence.Post {
	now := time.Now().UTC()
	p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: b.user, Content: text, Status: persistence.PostDraft,
		CreatedAt: now, UpdatedAt: now}
	for _, a := range accounts {
		var platform string
		require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
			acct, err := tx.Account(a)
			if err == nil {
				platform = acct.Platform
			}
			return err
		}))
		p.Targets = append(p.Targets, persistence.Target{AccountID: a, Platform: platform, Status: persistence.TargetPending})
	}
	return p
}

// published waits until the post is published and its job settled: the post took the outcome,
// and the job is no longer among those to resume.
func (b *bundle) published(postID, jobID string) {
	b.t.Helper()
	var p *persistence.Post
	var j *persistence.Job
	var active bool
	defer func() {
		if b.t.Failed() {
			b.t.Logf("post %+v\njob %+v", p, j)
		}
	}()
	require.Eventually(b.t, func() bool {
		require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
			var err error
			if p, err = tx.Post(postID); err != nil {
				return err
			}
			j, err = tx.Job(jobID)
			active = tx.JobActive(jobID)
			return err
		}))
		return p.Status == persistence.PostPublished && j.Status == persistence.JobCompleted && !active
	}, 20*time.Second, 10*time.Millisecond)
}

// setupStopped is setup with an X account connected through a publishing start that was then
// stopped: what a test writes to the store meanwhile is what the next start finds.
func setupStopped(t *testing.T) (*bundle, string) {
	t.Helper()
	b := setup(t)
	first, _ := b.start()
	x := b.connect(first, platforms.X, "ann")
	b.stop(first)
	return b, x
}

// A publish goes through every hand-off: the post's job to its accounts, their reports to the
// job, and the job's outcome to the post, written in the job's final transaction; the backlog
// counts the publishes in hand and ends empty, and the finished job is counted.
func TestAPublishGoesThroughEveryHandoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p, reg := b.start()
	x, bsky := b.connect(p, platforms.X, "ann"), b.connect(p, platforms.Bluesky, "ann.bsky.social")
	draft := b.draft("Hello through the hand-off", x, bsky)
	jobID := uuid.Must(uuid.NewV7()).String()
	r, err := actors.Ask[*post.PublishReply](context.Background(), p.Posts.To(draft.ID), &post.Publish{Scope: b.user, JobID: jobID, Create: draft})
	require.NoError(t, err)
	require.Equal(t, persistence.PostPublishing, r.Post.Status)
	b.published(draft.ID, jobID)

	require.Len(t, b.sim.Publications(platforms.X), 1)
	require.Len(t, b.sim.Publications(platforms.Bluesky), 1)
	require.Eventually(t, func() bool { return p.Backlog.Len() == 0 }, 5*time.Second, 10*time.Millisecond)
	// Counted once the job's final transaction is durable, just after the store shows it.
	require.Eventually(t, func() bool {
		return testkit.Gathered(t, reg, "herald_jobs_finished_total", "status", "completed") == 1
	}, 5*time.Second, 10*time.Millisecond)
}

// Start resumes what a stop left in the store: the targets waiting for their accounts are taken
// and published, and a job whose outcome its post had not taken hands it on.
func TestStartResumesWhatAStopLeft(t *testing.T) {
	t.Parallel()
	b, x := setupStopped(t)

	// A job whose target waits for its account, as a publish leaves it before its account took it.
	waiting := b.draft("Waiting for its account", x)
	waitingJob := uuid.Must(uuid.NewV7()).String()
	// A job whose outcome is known but that its post has not taken.
	done := b.draft("Published before the stop", x)
	doneJob := uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		for _, c := range []struct {
			p   *persistence.Post
			job string
		}{{waiting, waitingJob}, {done, doneJob}} {
			j, err := post.NewJob(c.p, c.job, now, nil)
			if err != nil {
				return err
			}
			if c.p == done {
				j.Status, j.Targets[0].Phase, j.Targets[0].Message = persistence.JobCompleted, persistence.PhaseSuccess, "published"
				j.Targets[0].PublicationID = "1234"
				j.CompletedAt = &now
			}
			if err := tx.PutPost(c.p, nil); err != nil {
				return err
			}
			if err := tx.PutJob(j); err != nil {
				return err
			}
		}
		return nil
	}))

	second, _ := b.start()
	b.published(waiting.ID, waitingJob)
	b.published(done.ID, doneJob)
	require.Len(t, b.sim.Publications(platforms.X), 1, "only the waiting target was sent; the finished one was not sent again")
	require.Eventually(t, func() bool { return second.Backlog.Len() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// A job whose post is gone when its outcome is known is stored final on its own, and its post's
// actor decides what follows (nothing: there is no post): on a store that reads ahead, the post
// is read in the job's final transaction, and one that is not there refuses only the post's part
// of it.
func TestAJobWhosePostIsGoneIsStoredFinalAlone(t *testing.T) {
	t.Parallel()
	b, x := setupStopped(t)

	orphan := b.draft("Its post is gone", x)
	jobID := uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		j, err := post.NewJob(orphan, jobID, now, nil)
		if err != nil {
			return err
		}
		return tx.PutJob(j) // the post itself is never stored
	}))

	second, _ := b.start()
	require.Eventually(t, func() bool {
		var j *persistence.Job
		var active bool
		require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
			var err error
			j, err = tx.Job(jobID)
			active = tx.JobActive(jobID)
			return err
		}))
		return j.Status == persistence.JobFailed && j.Targets[0].Message == "the post no longer exists" && !active
	}, 20*time.Second, 10*time.Millisecond)
	require.Empty(t, b.sim.Publications(platforms.X), "nothing was sent for a post that is gone")
	require.Eventually(t, func() bool { return second.Backlog.Len() == 0 }, 5*time.Second, 10*time.Millisecond)
	err := b.store.View(func(tx *persistence.Tx) error {
		_, err := tx.Post(orphan.ID)
		return err
	})
	require.ErrorIs(t, err, persistence.ErrNotFound, "no post was made up for the job")
}
