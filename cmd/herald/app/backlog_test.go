package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A backlog that the network's budget holds back waits in the store, not in memory: the account
// holds its next batch, the jobs behind it have no live actor and read as queued, nothing is
// refused, and every post goes out once, in the order it was published, as the budget frees.
func TestABacklogWaitsInTheStore(t *testing.T) {
	t.Parallel()
	// A window of ten seconds: the 150 publishes (each a durable write before its answer, on
	// PostgreSQL several round trips) are all accepted within the first windows on a busy
	// machine too, so that most of them still wait when the first window's posts are out.
	const posts, limit, window = 150, 30, 10 * time.Second
	rules, err := account.OverrideRules(account.DefaultRules, fmt.Sprintf("twitter_x:tweets=%d/%s", limit, window))
	require.NoError(t, err)
	b := setup(t, bundleOpts{demo: true, budgets: rules})
	b.app.Sim.SetLimit(platforms.X, "tweets", sim.Limit{Count: limit, Window: window})
	x := b.account(platforms.X)
	var jobs []string
	for i := range posts {
		r := b.publishNew(map[string]any{"content": fmt.Sprintf("backlog post %03d", i), "platforms": ids(x.ID)}, nil)
		require.Equal(t, 202, r.status, string(r.body))
		jobs = append(jobs, r.json(t)["tracking_id"].(string))
	}
	waiting := func() int {
		n := 0
		require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
			ws, _ := tx.WaitingFor(x.ID, posts, 0, nil)
			n = len(ws)
			return nil
		}))
		return n
	}
	// While the first window's posts are out, the rest waits in the store, the last job untouched.
	require.Eventually(t, func() bool { return len(b.app.Sim.Publications(platforms.X)) >= limit }, 20*time.Second, 5*time.Millisecond)
	require.Greater(t, waiting(), posts-2*limit-65, "the backlog waits in the store")
	last := b.do("GET", "/v1/jobs/"+jobs[posts-1], nil)
	require.Equal(t, 200, last.status)
	require.Equal(t, "queued", last.json(t)["status"])
	require.LessOrEqual(t, b.app.Jobs.Live(), 2*limit+65, "no live actor for the jobs waiting in the store")

	require.Eventually(t, func() bool { return len(b.app.Sim.Publications(platforms.X)) == posts }, 150*time.Second, 20*time.Millisecond)
	for i, rec := range b.app.Sim.Publications(platforms.X) {
		require.Equal(t, fmt.Sprintf("backlog post %03d", i), rec.Text, "published once each, in order")
	}
	require.Eventually(t, func() bool { return waiting() == 0 }, 10*time.Second, 10*time.Millisecond)
	for _, id := range []string{jobs[0], jobs[posts-1]} {
		require.Eventually(t, func() bool { return b.do("GET", "/v1/jobs/"+id, nil).json(t)["status"] == "completed" }, 10*time.Second, 10*time.Millisecond)
	}
	require.Zero(t, gathered(t, b.app, "herald_network_rate_limited_total"), "no 429 from the network")
}

// --max-live-actors caps each kind: reads of many drafts leave no more post actors live than
// the cap, the least recently used passivated first, and every read answers.
func TestLiveActorsAreCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, config: func(c *app.Config) {
		c.MaxLiveActors = app.ActorCaps{PerKind: map[string]int{"post": 4}}
	}})
	x := b.account(platforms.X)
	var drafts []string
	for i := range 40 {
		drafts = append(drafts, b.createPost(fmt.Sprintf("draft %d", i), x))
	}
	for round := 0; round < 2; round++ {
		for _, id := range drafts {
			r := b.do("GET", "/v1/posts/"+id, nil)
			require.Equal(t, 200, r.status, string(r.body))
		}
	}
	require.Eventually(t, func() bool { return b.app.Posts.Live() <= 4 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 4.0, gathered(t, b.app, "herald_actors_live_limit", "actor_kind", "post"))
	require.Equal(t, float64(app.DefaultMaxLiveActors), gathered(t, b.app, "herald_actors_live_limit", "actor_kind", "job"))
	require.GreaterOrEqual(t, gathered(t, b.app, "herald_actor_capped_passivations_total", "actor_kind", "post"), 70.0)
}
