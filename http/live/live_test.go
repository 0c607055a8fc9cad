package live_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// liveNetwork is a network whose live calls answer from maps the test fills. It stands in for
// an adapter where the simulator cannot show what a test needs (a call that never answers, an
// exact count of calls per publication).
type liveNetwork struct {
	platform platforms.Platform

	mu       sync.Mutex
	metrics  map[string]platforms.Metrics
	comments map[string][]platforms.Comment
	convos   map[string][]platforms.Message
	calls    map[string]int
	replies  []platforms.Comment
	sent     []platforms.Message
	// gate, when set, holds every metrics and comments call until it is closed.
	gate chan struct{}
	// stall lists publications whose reads never answer (until the caller gives up).
	stall map[string]bool
}

func newLiveNetwork(p platforms.Platform) *liveNetwork {
	return &liveNetwork{platform: p, metrics: map[string]platforms.Metrics{}, comments: map[string][]platforms.Comment{},
		convos: map[string][]platforms.Message{}, calls: map[string]int{}, stall: map[string]bool{}}
}

func (n *liveNetwork) count(op string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[op]
}

func (n *liveNetwork) enter(ctx context.Context, op, id string) error {
	n.mu.Lock()
	n.calls[op]++
	gate, stall := n.gate, n.stall[id]
	n.mu.Unlock()
	if stall {
		<-ctx.Done()
		return ctx.Err()
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (n *liveNetwork) Platform() platforms.Platform  { return n.platform }
func (n *liveNetwork) Validate(platforms.Post) error { return nil }
func (n *liveNetwork) Publish(context.Context, platforms.Credentials, platforms.Post) (platforms.Result, error) {
	return platforms.Result{}, errors.New("publishing is not part of these tests")
}
func (n *liveNetwork) Refresh(_ context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	return c, &platforms.Error{Kind: platforms.Permanent, Platform: n.platform, Message: "invalid_grant"}
}
func (n *liveNetwork) Revoke(context.Context, platforms.Credentials) error { return nil }
func (n *liveNetwork) Lookup(context.Context, platforms.Credentials, platforms.Post, time.Time) (platforms.Publication, bool, error) {
	return platforms.Publication{}, false, nil
}

func (n *liveNetwork) Metrics(ctx context.Context, _ platforms.Credentials, id string) (platforms.Metrics, error) {
	if err := n.enter(ctx, "metrics", id); err != nil {
		return platforms.Metrics{}, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	m, ok := n.metrics[id]
	if !ok {
		return platforms.Metrics{}, platforms.ErrNotFound
	}
	return m, nil
}

func (n *liveNetwork) Comments(ctx context.Context, _ platforms.Credentials, id string) ([]platforms.Comment, error) {
	if err := n.enter(ctx, "comments", id); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]platforms.Comment(nil), n.comments[id]...), nil
}

func (n *liveNetwork) Reply(_ context.Context, _ platforms.Credentials, pub, comment, text string, media []platforms.Media) (platforms.Comment, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls["reply"]++
	c := platforms.Comment{ID: fmt.Sprintf("reply-%d", len(n.replies)+1), PublicationID: pub, ParentID: comment, Text: text, ByAccount: true, CreatedAt: time.Now().UTC()}
	n.replies = append(n.replies, c)
	n.comments[pub] = append(n.comments[pub], c)
	return c, nil
}

func (n *liveNetwork) Conversation(_ context.Context, _ platforms.Credentials, id string) ([]platforms.Message, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls["dm_read"]++
	msgs, ok := n.convos[id]
	if !ok {
		return nil, platforms.ErrNotFound
	}
	return msgs, nil
}

func (n *liveNetwork) SendMessage(_ context.Context, _ platforms.Credentials, id, peer, text string, _ []platforms.Media) (platforms.Message, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls["dm_send"]++
	m := platforms.Message{ID: fmt.Sprintf("dm-%d", len(n.sent)+1), ConversationID: id, Text: text, CreatedAt: time.Now().UTC()}
	n.sent = append(n.sent, m)
	return m, nil
}

// liveHerald is a started Herald whose X, Bluesky, YouTube and TikTok adapters are
// liveNetworks, with one connected account on each holding a working token.
type liveHerald struct {
	*apptest.Herald
	nets  map[platforms.Platform]*liveNetwork
	accts map[platforms.Platform]*persistence.Account
}

func setupLive(t *testing.T, cfg app.LiveConfig) *liveHerald {
	t.Helper()
	h := apptest.Start(t, apptest.Options{Config: func(c *app.Config) { c.Live = cfg }})
	lh := &liveHerald{Herald: h, nets: map[platforms.Platform]*liveNetwork{}, accts: map[platforms.Platform]*persistence.Account{}}
	for _, p := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.YouTube, platforms.TikTok} {
		n := newLiveNetwork(p)
		lh.nets[p] = n
		// No account actor has run yet: they will load this adapter.
		h.App.Adapters[p] = n
		lh.accts[p] = lh.connect(h.User.ID, p)
	}
	return lh
}

// connect creates an account with a working token through its actor.
func (h *liveHerald) connect(userID string, p platforms.Platform) *persistence.Account {
	h.T.Helper()
	handle := "live-" + string(p)
	r, err := actors.Ask[*account.Reply](context.Background(), h.App.Accounts.To(uuid.Must(uuid.NewV7()).String()), &account.Create{
		Account: &persistence.Account{UserID: userID, Platform: string(p), Username: &handle, IsActive: true, CreatedAt: time.Now().UTC()},
		Creds:   platforms.Credentials{AccessToken: "token-" + string(p), RefreshToken: "refresh", ExpiresAt: time.Now().Add(24 * time.Hour), UserID: "me"},
	})
	require.NoError(h.T, err)
	return r.Account
}

// publication stores a published post of one target on acct, published at at, and returns its
// id.
func publication(h *apptest.Herald, acct *persistence.Account, networkID string, at time.Time) string {
	h.T.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	p := &persistence.Post{ID: id, UserID: acct.UserID, Content: "post " + networkID, Status: persistence.PostPublished,
		CreatedAt: at.Add(-time.Minute).UTC(), UpdatedAt: at.UTC(), MediaIDs: []string{},
		Targets: []persistence.Target{{AccountID: acct.ID, Platform: acct.Platform, Status: persistence.TargetPublished, PublicationID: networkID}}}
	require.NoError(h.T, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
	return id
}

func n64(v int64) *int64 { return &v }

// cacheCount reads a live cache counter.
func cacheCount(h *apptest.Herald, cache, result string) float64 {
	h.T.Helper()
	families, err := h.App.Registry.Gather()
	require.NoError(h.T, err)
	for _, f := range families {
		if f.GetName() != "herald_live_cache_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["cache"] == cache && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func gauge(h *apptest.Herald, name string) float64 {
	h.T.Helper()
	families, err := h.App.Registry.Gather()
	require.NoError(h.T, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

func TestAnalyticsOverview(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	now := time.Now().UTC()
	x, bsky, yt := h.nets[platforms.X], h.nets[platforms.Bluesky], h.nets[platforms.YouTube]
	x.metrics["tw-1"] = platforms.Metrics{Views: n64(1000), Likes: n64(10), Comments: n64(2), Shares: n64(3)}
	x.metrics["tw-2"] = platforms.Metrics{Views: n64(50), Likes: n64(1), Comments: n64(0), Shares: n64(0)}
	bsky.metrics["at-1"] = platforms.Metrics{Likes: n64(40), Comments: n64(5), Shares: n64(7)} // Bluesky has no views
	yt.metrics["yt-old"] = platforms.Metrics{Views: n64(99999), Likes: n64(999)}
	tw1 := publication(h.Herald, h.accts[platforms.X], "tw-1", now.Add(-2*time.Hour))
	publication(h.Herald, h.accts[platforms.X], "tw-2", now.Add(-3*24*time.Hour))
	at1 := publication(h.Herald, h.accts[platforms.Bluesky], "at-1", now.Add(-time.Hour))
	publication(h.Herald, h.accts[platforms.YouTube], "yt-old", now.Add(-10*24*time.Hour)) // outside 7d
	publication(h.Herald, h.Account(platforms.LinkedIn), "li-1", now.Add(-time.Hour))      // not a live analytics network
	// An account without a usable token: listed, not read, not partial.
	stale := h.Account(platforms.X)
	publication(h.Herald, stale, "tw-stale", now.Add(-time.Hour))

	r := h.Do("GET", "/v1/analytics/overview", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	ov := r.JSON(t)
	require.Equal(t, "7d", ov["range"])
	since, err := time.Parse(time.RFC3339Nano, ov["since"].(string))
	require.NoError(t, err)
	until, err := time.Parse(time.RFC3339Nano, ov["until"].(string))
	require.NoError(t, err)
	require.Equal(t, 7*24*time.Hour, until.Sub(since))
	require.WithinDuration(t, now, until, time.Minute)
	fetched, err := time.Parse(time.RFC3339Nano, ov["fetched_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, now, fetched, time.Minute)
	require.Equal(t, false, ov["sampled"])
	require.EqualValues(t, 200, ov["sample_limit"])
	require.Equal(t, false, ov["partial"])
	require.EqualValues(t, 4, ov["publications"])
	require.EqualValues(t, 3, ov["publications_read"])
	require.Equal(t, map[string]any{"views": 1050.0, "likes": 51.0, "comments": 7.0, "shares": 10.0, "engagement": 68.0}, ov["totals"])
	xm := map[string]any{"views": 1050.0, "likes": 11.0, "comments": 2.0, "shares": 3.0, "engagement": 16.0}
	bm := map[string]any{"views": nil, "likes": 40.0, "comments": 5.0, "shares": 7.0, "engagement": 52.0}
	require.Equal(t, []any{
		map[string]any{"platform": "twitter_x", "publications": 2.0, "views": 1050.0, "likes": 11.0, "comments": 2.0, "shares": 3.0, "engagement": 16.0, "post_count": 2.0, "metrics": xm},
		map[string]any{"platform": "bluesky", "publications": 1.0, "views": nil, "likes": 40.0, "comments": 5.0, "shares": 7.0, "engagement": 52.0, "post_count": 1.0, "metrics": bm},
	}, ov["by_platform"])
	series := ov["series"].([]any)
	require.Len(t, series, 8, "every UTC day the window touches")
	require.Equal(t, since.Format(time.DateOnly), series[0].(map[string]any)["date"])
	require.Equal(t, until.Format(time.DateOnly), series[7].(map[string]any)["date"])
	var dayPubs, dayEngagement float64
	for _, d := range series {
		dayPubs += d.(map[string]any)["publications"].(float64)
		dayEngagement += d.(map[string]any)["engagement"].(float64)
	}
	require.EqualValues(t, 3, dayPubs)
	require.EqualValues(t, 68, dayEngagement)
	top := ov["top_posts"].([]any)
	require.Len(t, top, 3)
	first := top[0].(map[string]any)
	require.Equal(t, at1, first["post_id"])
	require.Equal(t, "bluesky", first["platform"])
	require.Equal(t, h.accts[platforms.Bluesky].ID, first["account_id"])
	require.Nil(t, first["link"])
	require.Equal(t, map[string]any{"views": nil, "likes": 40.0, "comments": 5.0, "shares": 7.0, "engagement": 52.0}, first["metrics"])
	require.Equal(t, tw1, top[1].(map[string]any)["post_id"])
	require.Equal(t, []any{map[string]any{"id": stale.ID, "platform": "twitter_x", "username": *stale.Username, "token_status": "expired"}}, ov["accounts_needing_reconnect"])

	// One account only.
	r = h.Do("GET", "/v1/analytics/overview?account_id="+h.accts[platforms.Bluesky].ID, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.EqualValues(t, 1, r.JSON(t)["publications"])
	// A custom window reaching the older publication.
	q := url.Values{"range": {"custom"}, "since": {now.Add(-30 * 24 * time.Hour).Format(time.RFC3339)}, "until": {now.Format(time.RFC3339)}}
	r = h.Do("GET", "/v1/analytics/overview?"+q.Encode(), nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	ov = r.JSON(t)
	require.Equal(t, "custom", ov["range"])
	require.EqualValues(t, 5, ov["publications"])
	require.EqualValues(t, 4, ov["publications_read"])
	require.Len(t, ov["series"], 31)
}

// The 90-second floor: a second request, fresh or not, is the same answer and makes no network
// call.
func TestAnalyticsFloor(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	x := h.nets[platforms.X]
	x.metrics["tw-1"] = platforms.Metrics{Views: n64(1), Likes: n64(1), Comments: n64(1), Shares: n64(1)}
	publication(h.Herald, h.accts[platforms.X], "tw-1", time.Now().Add(-time.Hour))

	first := h.Do("GET", "/v1/analytics/overview", nil)
	require.Equal(t, 200, first.Status)
	require.Equal(t, 1, x.count("metrics"))
	x.mu.Lock()
	x.metrics["tw-1"] = platforms.Metrics{Views: n64(1000), Likes: n64(1), Comments: n64(1), Shares: n64(1)}
	x.mu.Unlock()
	for _, path := range []string{"/v1/analytics/overview", "/v1/analytics/overview?fresh=true", "/v1/analytics/overview?range=7d&fresh=1"} {
		r := h.Do("GET", path, nil)
		require.Equal(t, 200, r.Status)
		require.Equal(t, first.JSON(t)["fetched_at"], r.JSON(t)["fetched_at"], path)
		require.Equal(t, string(first.Body), string(r.Body), path)
	}
	require.Equal(t, 1, x.count("metrics"), "no network call within 90 seconds")
	// Another query is another entry.
	r := h.Do("GET", "/v1/analytics/overview?range=14d", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, 2, x.count("metrics"))
	require.EqualValues(t, 1000, r.JSON(t)["totals"].(map[string]any)["views"])
}

// 100 concurrent identical requests make one fan-out.
func TestAnalyticsCoalescing(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	x := h.nets[platforms.X]
	for i := range 5 {
		id := fmt.Sprintf("tw-%d", i)
		x.metrics[id] = platforms.Metrics{Likes: n64(1)}
		publication(h.Herald, h.accts[platforms.X], id, time.Now().Add(-time.Duration(i+1)*time.Hour))
	}
	gate := make(chan struct{})
	x.mu.Lock()
	x.gate = gate
	x.mu.Unlock()
	const n = 100
	var wg sync.WaitGroup
	bodies := make(chan string, n)
	for range n {
		wg.Go(func() {
			r := h.Do("GET", "/v1/analytics/overview?range=28d", nil)
			require.Equal(t, 200, r.Status)
			bodies <- string(r.Body)
		})
	}
	// Release the fan-out once every request is being served (waiting on it).
	require.Eventually(t, func() bool { return gauge(h.Herald, "herald_http_requests_in_flight") >= n }, 20*time.Second, 5*time.Millisecond)
	close(gate)
	wg.Wait()
	close(bodies)
	var first string
	for body := range bodies {
		if first == "" {
			first = body
		}
		require.Equal(t, first, body)
	}
	require.Equal(t, 5, x.count("metrics"), "one fan-out: one call per publication")
	require.EqualValues(t, 1, cacheCount(h.Herald, "analytics", "miss"))
	require.EqualValues(t, n-1, cacheCount(h.Herald, "analytics", "coalesced")+cacheCount(h.Herald, "analytics", "hit"))
}

func TestAnalyticsPartialAndSampled(t *testing.T) {
	t.Parallel()
	t.Run("request budget", func(t *testing.T) {
		t.Parallel()
		h := setupLive(t, app.LiveConfig{Calls: 2, PerAccount: 1})
		x := h.nets[platforms.X]
		for i := range 5 {
			id := fmt.Sprintf("tw-%d", i)
			x.metrics[id] = platforms.Metrics{Likes: n64(1)}
			publication(h.Herald, h.accts[platforms.X], id, time.Now().Add(-time.Duration(i+1)*time.Hour))
		}
		ov := h.Do("GET", "/v1/analytics/overview", nil).JSON(t)
		require.Equal(t, true, ov["partial"])
		require.Equal(t, false, ov["sampled"])
		require.EqualValues(t, 5, ov["publications"])
		require.EqualValues(t, 2, ov["publications_read"])
		require.EqualValues(t, 2, ov["totals"].(map[string]any)["likes"])
		require.Equal(t, 2, x.count("metrics"))
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		h := setupLive(t, app.LiveConfig{Deadline: time.Second})
		x, bsky := h.nets[platforms.X], h.nets[platforms.Bluesky]
		x.metrics["tw-ok"] = platforms.Metrics{Likes: n64(3)}
		x.stall["tw-slow"] = true
		bsky.metrics["at-ok"] = platforms.Metrics{Likes: n64(4)}
		publication(h.Herald, h.accts[platforms.X], "tw-ok", time.Now().Add(-time.Hour))
		publication(h.Herald, h.accts[platforms.X], "tw-slow", time.Now().Add(-2*time.Hour))
		publication(h.Herald, h.accts[platforms.Bluesky], "at-ok", time.Now().Add(-3*time.Hour))
		ov := h.Do("GET", "/v1/analytics/overview", nil).JSON(t)
		require.Equal(t, true, ov["partial"])
		require.EqualValues(t, 2, ov["publications_read"])
		require.EqualValues(t, 7, ov["totals"].(map[string]any)["likes"])
	})
	t.Run("sampled", func(t *testing.T) {
		t.Parallel()
		h := setupLive(t, app.LiveConfig{SampleLimit: 3})
		x := h.nets[platforms.X]
		for i := range 5 {
			id := fmt.Sprintf("tw-%d", i)
			x.metrics[id] = platforms.Metrics{Likes: n64(int64(1) << i)}
			publication(h.Herald, h.accts[platforms.X], id, time.Now().Add(-time.Duration(i+1)*time.Hour))
		}
		ov := h.Do("GET", "/v1/analytics/overview", nil).JSON(t)
		require.Equal(t, true, ov["sampled"])
		require.Equal(t, false, ov["partial"])
		require.EqualValues(t, 3, ov["sample_limit"])
		require.EqualValues(t, 5, ov["publications"])
		require.EqualValues(t, 3, ov["publications_read"])
		require.EqualValues(t, 1+2+4, ov["totals"].(map[string]any)["likes"], "the latest three")
		require.Equal(t, 3, x.count("metrics"))
	})
}

func TestAnalyticsBadInput(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	other, _ := h.NewUser("someone@example.com", "pro")
	theirs := h.connect(other.ID, platforms.X)
	now := time.Now().UTC()
	ts := func(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339)) }
	cases := map[string]string{
		"range=30d":                        "range",
		"range=":                           "",
		"since=" + ts(now.Add(-time.Hour)): "since: only allowed with range=custom",
		"until=" + ts(now):                 "until: only allowed with range=custom",
		"range=7d&since=" + ts(now.Add(-time.Hour)): "since: only allowed",
		"range=custom": "since: Required",
		"range=custom&since=" + ts(now) + "&until=" + ts(now.Add(-time.Hour)):        "until: must be after since",
		"range=custom&since=" + ts(now.Add(-366*24*time.Hour)) + "&until=" + ts(now): "365 days",
		"range=custom&since=yesterday":                                               "since: Invalid datetime",
		"range=custom&since=" + ts(now.Add(-time.Hour)) + "&until=2026-13-01":        "until: Invalid datetime",
		"account_id=abc":                                 "account_id: Invalid uuid",
		"account_id=" + theirs.ID:                        "does not exist or is not yours",
		"account_id=" + uuid.NewString():                 "does not exist or is not yours",
		"account_id=" + h.Account(platforms.LinkedIn).ID: "has no live analytics",
		"fresh=maybe":                                    "fresh: Expected boolean",
	}
	for query, want := range cases {
		r := h.Do("GET", "/v1/analytics/overview?"+query, nil)
		if want == "" {
			require.Equal(t, 200, r.Status, query)
			continue
		}
		require.Equal(t, 400, r.Status, "%s: %s", query, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), query)
		require.Contains(t, r.ErrorMessage(t), want, query)
	}
	for _, n := range h.nets {
		require.Zero(t, n.count("metrics"), "bad input reads nothing")
	}
}

// comment builds a comment on a publication.
func comment(pub, id, parent, author, text string, at time.Time, mine bool) platforms.Comment {
	return platforms.Comment{ID: id, PublicationID: pub, ParentID: parent, Author: author, Text: text, CreatedAt: at, ByAccount: mine}
}

func TestInboxComments(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	now := time.Now().UTC()
	x, bsky, yt := h.nets[platforms.X], h.nets[platforms.Bluesky], h.nets[platforms.YouTube]
	x.comments["tw-1"] = []platforms.Comment{
		comment("tw-1", "c2", "tw-1", "bob", "second", now.Add(-10*time.Minute), false),
		comment("tw-1", "c1", "tw-1", "ann", "first", now.Add(-20*time.Minute), false),
		comment("tw-1", "r1", "c1", "me", "thanks ann", now.Add(-15*time.Minute), true),
		comment("tw-1", "r2", "r1", "ann", "you're welcome", now.Add(-14*time.Minute), false),
		comment("tw-1", "self", "tw-1", "me", "a thread of my own", now.Add(-30*time.Minute), true),
	}
	bsky.comments["at-1"] = []platforms.Comment{comment("at-1", "at://c/1", "", "carl", "nice", now.Add(-time.Hour), false)}
	tw1 := publication(h.Herald, h.accts[platforms.X], "tw-1", now.Add(-time.Hour))
	at1 := publication(h.Herald, h.accts[platforms.Bluesky], "at-1", now.Add(-2*time.Hour))
	publication(h.Herald, h.accts[platforms.YouTube], "yt-1", now.Add(-3*time.Hour)) // no comments yet
	publication(h.Herald, h.accts[platforms.TikTok], "tt-1", now.Add(-time.Hour))    // no comments inbox on TikTok

	r := h.Do("GET", "/v1/inbox/comments", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	page := r.JSON(t)
	require.Equal(t, "7d", page["range"])
	require.Equal(t, false, page["has_more"])
	require.Empty(t, page["next_before"])
	require.Equal(t, false, page["sampled"])
	require.Equal(t, false, page["partial"])
	require.Equal(t, []any{}, page["accounts_needing_reconnect"])
	threads := page["threads"].([]any)
	require.Len(t, threads, 3)
	t0 := threads[0].(map[string]any)
	c0 := t0["comment"].(map[string]any)
	require.Equal(t, "c2", c0["id"])
	require.Equal(t, persistence.PublicationUUID(tw1, 0), c0["publication_id"], "publication_id names the post's target")
	require.Equal(t, "twitter_x", c0["platform"])
	require.Equal(t, "second", c0["text"])
	require.Equal(t, true, c0["can_reply"])
	require.Equal(t, false, t0["answered"])
	require.Equal(t, []any{}, t0["replies"])
	t1 := threads[1].(map[string]any)
	require.Equal(t, "c1", t1["comment"].(map[string]any)["id"])
	require.Equal(t, true, t1["answered"])
	replies := t1["replies"].([]any)
	require.Len(t, replies, 2)
	require.Equal(t, "r1", replies[0].(map[string]any)["id"])
	require.Equal(t, true, replies[0].(map[string]any)["by_account"])
	require.Equal(t, "r2", replies[1].(map[string]any)["id"])
	t2 := threads[2].(map[string]any)["comment"].(map[string]any)
	require.Equal(t, persistence.PublicationUUID(at1, 0), t2["publication_id"])
	require.Equal(t, "bluesky", t2["platform"])
	require.Equal(t, 1, yt.count("comments"))
	require.Zero(t, h.nets[platforms.TikTok].count("comments"))

	// One network only.
	r = h.Do("GET", "/v1/inbox/comments?platform=bluesky", nil)
	require.Equal(t, 200, r.Status)
	require.Len(t, r.JSON(t)["threads"], 1)
}

func TestInboxPaging(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	now := time.Now().UTC()
	x := h.nets[platforms.X]
	var posts []string
	for i := range 3 {
		id := fmt.Sprintf("tw-%d", i)
		if i != 1 { // the middle publication has no comments: its page is empty
			x.comments[id] = []platforms.Comment{comment(id, "c-"+id, id, "ann", "on "+id, now, false)}
		}
		posts = append(posts, publication(h.Herald, h.accts[platforms.X], id, now.Add(-time.Duration(i+1)*time.Hour)))
	}
	var seen []string
	before := ""
	pages := 0
	for {
		q := url.Values{"limit": {"1"}}
		if before != "" {
			q.Set("before", before)
		}
		r := h.Do("GET", "/v1/inbox/comments?"+q.Encode(), nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		page := r.JSON(t)
		pages++
		for _, th := range page["threads"].([]any) {
			seen = append(seen, th.(map[string]any)["comment"].(map[string]any)["publication_id"].(string))
		}
		if pages == 2 {
			require.Empty(t, page["threads"], "a page can be empty")
			require.Equal(t, true, page["has_more"], "while more publications follow")
		}
		if page["has_more"] == false {
			require.Empty(t, page["next_before"])
			break
		}
		before = page["next_before"].(string)
		require.NotEmpty(t, before)
	}
	require.Equal(t, 3, pages)
	require.Equal(t, []string{persistence.PublicationUUID(posts[0], 0), persistence.PublicationUUID(posts[2], 0)}, seen)
	require.Equal(t, 3, x.count("comments"))
}

func TestInboxPartialPageStopsBeforeTheUnread(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{Deadline: time.Second})
	now := time.Now().UTC()
	x := h.nets[platforms.X]
	x.comments["tw-0"] = []platforms.Comment{comment("tw-0", "c0", "tw-0", "ann", "hi", now, false)}
	x.stall["tw-1"] = true
	x.comments["tw-2"] = []platforms.Comment{comment("tw-2", "c2", "tw-2", "bob", "hey", now, false)}
	for i := range 3 {
		publication(h.Herald, h.accts[platforms.X], fmt.Sprintf("tw-%d", i), now.Add(-time.Duration(i+1)*time.Hour))
	}
	page := h.Do("GET", "/v1/inbox/comments", nil).JSON(t)
	require.Equal(t, true, page["partial"])
	require.Equal(t, true, page["has_more"])
	threads := page["threads"].([]any)
	require.Len(t, threads, 1, "only the publications before the unread one")
	require.Equal(t, "c0", threads[0].(map[string]any)["comment"].(map[string]any)["id"])
	// The next page starts with the unread publication.
	x.mu.Lock()
	delete(x.stall, "tw-1")
	x.mu.Unlock()
	next := h.Do("GET", "/v1/inbox/comments?before="+url.QueryEscape(page["next_before"].(string)), nil).JSON(t)
	require.Equal(t, false, next["partial"])
	require.Equal(t, false, next["has_more"])
	require.Len(t, next["threads"], 1)
	require.Equal(t, "c2", next["threads"].([]any)[0].(map[string]any)["comment"].(map[string]any)["id"])
}

func TestInboxBadInput(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	now := time.Now().UTC()
	x := h.nets[platforms.X]
	for i := range 2 {
		publication(h.Herald, h.accts[platforms.X], fmt.Sprintf("tw-%d", i), now.Add(-time.Duration(i+1)*time.Hour))
	}
	first := h.Do("GET", "/v1/inbox/comments?limit=1", nil)
	require.Equal(t, 200, first.Status)
	cursor := first.JSON(t)["next_before"].(string)
	// A cursor with one character changed.
	flip := []byte(cursor)
	flip[len(flip)/2] ^= 1
	if flip[len(flip)/2] == '-' || flip[len(flip)/2] == '_' {
		flip[len(flip)/2] = 'A'
	}
	// Another user's cursor.
	other, otherKey := h.NewUser("other@example.com", "pro")
	otherAcct := h.connect(other.ID, platforms.X)
	for i := range 2 {
		publication(h.Herald, otherAcct, fmt.Sprintf("o-%d", i), now.Add(-time.Duration(i+1)*time.Hour))
	}
	r := h.DoKey(otherKey, "GET", "/v1/inbox/comments?limit=1", nil, nil)
	require.Equal(t, 200, r.Status)
	otherCursor := r.JSON(t)["next_before"].(string)
	calls := x.count("comments")

	ts := func(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339)) }
	cases := map[string]string{
		"range=1y":                         "range",
		"since=" + ts(now.Add(-time.Hour)): "since: only allowed with range=custom",
		"range=custom&since=" + ts(now) + "&until=" + ts(now.Add(-time.Hour)):        "until: must be after since",
		"range=custom&since=" + ts(now.Add(-400*24*time.Hour)) + "&until=" + ts(now): "365 days",
		"range=custom&since=last-week":                                               "since: Invalid datetime",
		"account_id=12345":                                                           "account_id: Invalid uuid",
		"account_id=" + otherAcct.ID:                                                 "does not exist or is not yours",
		"account_id=" + h.accts[platforms.TikTok].ID:                                 "has no live comments inbox",
		"platform=linkedin":                                                          "platform: linkedin has no live comments inbox",
		"platform=tiktok":                                                            "platform: tiktok has no live comments inbox",
		"platform=myspace":                                                           "platform: must be one of",
		"platform=bluesky&account_id=" + h.accts[platforms.X].ID:                     "is on twitter_x, not bluesky",
		"limit=0":   "limit: must be between 1 and 24",
		"limit=25":  "limit: must be between 1 and 24",
		"limit=ten": "limit: Expected number",
		"before=" + url.QueryEscape(string(flip)):              "before: invalid cursor",
		"before=not-a-cursor":                                  "before: invalid cursor",
		"before=" + url.QueryEscape(otherCursor):               "before: invalid cursor",
		"range=14d&before=" + url.QueryEscape(cursor):          "before: the cursor belongs to another query",
		"platform=twitter_x&before=" + url.QueryEscape(cursor): "before: the cursor belongs to another query",
		"fresh=yes": "fresh: Expected boolean",
	}
	for query, want := range cases {
		r := h.Do("GET", "/v1/inbox/comments?"+query, nil)
		require.Equal(t, 400, r.Status, "%s: %s", query, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), query)
		require.Contains(t, r.ErrorMessage(t), want, query)
	}
	require.Equal(t, calls, x.count("comments"), "bad input reads nothing")
	// The genuine cursor works.
	r = h.Do("GET", "/v1/inbox/comments?before="+url.QueryEscape(cursor), nil)
	require.Equal(t, 200, r.Status, string(r.Body))
}

func TestReplyToComment(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	now := time.Now().UTC()
	x, yt := h.nets[platforms.X], h.nets[platforms.YouTube]
	x.comments["tw-1"] = []platforms.Comment{comment("tw-1", "c1", "tw-1", "ann", "question?", now, false)}
	x.comments["tw-2"] = []platforms.Comment{comment("tw-2", "c9", "tw-2", "bob", "other", now, false)}
	yt.comments["yt-1"] = []platforms.Comment{comment("yt-1", "y1", "", "dan", "cool video", now, false)}
	tw1 := publication(h.Herald, h.accts[platforms.X], "tw-1", now.Add(-time.Hour))
	tw2 := publication(h.Herald, h.accts[platforms.X], "tw-2", now.Add(-2*time.Hour))
	yt1 := publication(h.Herald, h.accts[platforms.YouTube], "yt-1", now.Add(-time.Hour))
	li := publication(h.Herald, h.Account(platforms.LinkedIn), "li-1", now.Add(-time.Hour))
	other, _ := h.NewUser("x@example.com", "pro")
	theirs := publication(h.Herald, h.connect(other.ID, platforms.X), "tw-9", now)

	// The inbox is cached; a reply makes it stale.
	page := h.Do("GET", "/v1/inbox/comments?platform=twitter_x", nil).JSON(t)
	require.Equal(t, false, page["threads"].([]any)[0].(map[string]any)["answered"])

	bad := []struct {
		path string
		body any
		want string
	}{
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": tw1, "text": ""}, "text: must not be empty"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": tw1, "text": "   "}, "text: must not be empty"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": tw1}, "text: Required"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": tw1, "text": 5}, "text: Expected string, received number"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"text": "hi"}, "publication_id: Required"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": "tw-1", "text": "hi"}, "publication_id: Invalid uuid"},
		{"/v1/inbox/comments/c1/reply", "hello", "Expected object, received string"},
		{"/v1/inbox/comments/nope/reply", map[string]any{"publication_id": tw1, "text": "hi"}, "is not a comment of publication"},
		{"/v1/inbox/comments/c9/reply", map[string]any{"publication_id": tw1, "text": "hi"}, "comment c9 is not a comment of publication " + tw1},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": theirs, "text": "hi"}, "is not a publication of yours"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": uuid.NewString(), "text": "hi"}, "is not a publication of yours"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": li, "text": "hi"}, "is not a publication on a network with a live comments inbox"},
		{"/v1/inbox/comments/y1/reply", map[string]any{"publication_id": yt1, "text": "hi", "media_id": uuid.NewString()}, "media_id: only twitter_x, bluesky take an attachment"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": tw1, "text": "hi", "media_id": "pic.jpg"}, "media_id: Invalid uuid"},
		{"/v1/inbox/comments/c1/reply", map[string]any{"publication_id": tw1, "text": "hi", "media_id": uuid.NewString()}, "is not a confirmed media of yours"},
	}
	for _, c := range bad {
		r := h.Do("POST", c.path, c.body)
		require.Equal(t, 400, r.Status, "%v: %s", c.body, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), c.want, "%v", c.body)
	}
	require.Zero(t, x.count("reply"), "nothing was posted")
	require.Zero(t, yt.count("reply"))

	r := h.Do("POST", "/v1/inbox/comments/c1/reply", map[string]any{"publication_id": tw1, "text": "Thanks for asking!"})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"ok": true, "reply_id": "reply-1", "platform": "twitter_x"}, r.JSON(t))
	require.Len(t, x.replies, 1)
	require.Equal(t, "c1", x.replies[0].ParentID)
	require.Equal(t, "tw-1", x.replies[0].PublicationID)
	r = h.Do("POST", "/v1/inbox/comments/y1/reply", map[string]any{"publication_id": yt1, "text": "glad you liked it", "media_id": nil})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, 1, yt.count("reply"))
	_ = tw2

	page = h.Do("GET", "/v1/inbox/comments?platform=twitter_x", nil).JSON(t)
	th := page["threads"].([]any)[0].(map[string]any)
	require.Equal(t, "c1", th["comment"].(map[string]any)["id"])
	require.Equal(t, true, th["answered"], "the reply shows at once")
}

func TestReplyToConversation(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	x, bsky := h.nets[platforms.X], h.nets[platforms.Bluesky]
	x.convos["dm-x"] = []platforms.Message{{ID: "m1", ConversationID: "dm-x", From: "ann", Text: "hello?"}}
	bsky.convos["dm-b"] = []platforms.Message{{ID: "m2", ConversationID: "dm-b", From: "bob", Text: "hi"}}
	other, _ := h.NewUser("y@example.com", "pro")
	theirs := h.connect(other.ID, platforms.X)
	xa, ba := h.accts[platforms.X].ID, h.accts[platforms.Bluesky].ID

	bad := []struct {
		path string
		body any
		want string
	}{
		{"/v1/inbox/dms/dm-b/reply", map[string]any{"account_id": xa, "text": "hi"}, "conversation dm-b does not belong to account " + xa},
		{"/v1/inbox/dms/dm-x/reply", map[string]any{"account_id": theirs.ID, "text": "hi"}, "does not exist or is not yours"},
		{"/v1/inbox/dms/dm-x/reply", map[string]any{"account_id": "x", "text": "hi"}, "account_id: Invalid uuid"},
		{"/v1/inbox/dms/dm-x/reply", map[string]any{"text": "hi"}, "account_id: Required"},
		{"/v1/inbox/dms/dm-x/reply", map[string]any{"account_id": xa, "text": ""}, "text: must not be empty"},
		{"/v1/inbox/dms/dm-x/reply", map[string]any{"account_id": h.accts[platforms.TikTok].ID, "text": "hi"}, "direct messages are live only on twitter_x, bluesky"},
		{"/v1/inbox/dms/dm-b/reply", map[string]any{"account_id": ba, "text": "hi", "media_id": uuid.NewString()}, "bluesky direct messages are text only"},
		{"/v1/inbox/dms/dm-x/reply", map[string]any{"account_id": xa, "text": "hi", "peer_id": 7}, "peer_id: Expected string"},
	}
	for _, c := range bad {
		r := h.Do("POST", c.path, c.body)
		require.Equal(t, 400, r.Status, "%v: %s", c.body, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), c.want, "%v", c.body)
	}
	require.Zero(t, x.count("dm_send"), "nothing was sent")
	require.Zero(t, bsky.count("dm_send"))

	r := h.Do("POST", "/v1/inbox/dms/dm-x/reply", map[string]any{"account_id": xa, "text": "Hi Ann!", "peer_id": "ann-id"})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"ok": true, "message_id": "dm-1", "platform": "twitter_x"}, r.JSON(t))
	require.Equal(t, "Hi Ann!", x.sent[0].Text)
	r = h.Do("POST", "/v1/inbox/dms/dm-b/reply", map[string]any{"account_id": ba, "text": "Hi Bob"})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Len(t, bsky.sent, 1)
}

// A token the network refuses: the account is listed, the request does not fail.
func TestAnalyticsReconnectDoesNotFail(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	x := h.nets[platforms.X]
	x.metrics["tw-1"] = platforms.Metrics{Likes: n64(2)}
	publication(h.Herald, h.accts[platforms.X], "tw-1", time.Now().Add(-time.Hour))
	// A YouTube account whose token the network refuses, and whose refresh fails.
	h.App.Adapters[platforms.YouTube] = refusing{h.nets[platforms.YouTube]}
	yt := h.connect(h.User.ID, platforms.YouTube)
	publication(h.Herald, yt, "yt-1", time.Now().Add(-time.Hour))
	ov := h.Do("GET", "/v1/analytics/overview", nil).JSON(t)
	require.Equal(t, false, ov["partial"])
	require.EqualValues(t, 1, ov["publications_read"])
	list := ov["accounts_needing_reconnect"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, yt.ID, list[0].(map[string]any)["id"])
	require.Equal(t, "youtube", list[0].(map[string]any)["platform"])
	require.True(t, strings.HasPrefix(list[0].(map[string]any)["username"].(string), "live-"))
}

// refusing answers every metrics call with auth-expired.
type refusing struct{ *liveNetwork }

func (r refusing) Metrics(context.Context, platforms.Credentials, string) (platforms.Metrics, error) {
	return platforms.Metrics{}, &platforms.Error{Kind: platforms.AuthExpired, Platform: r.platform, Status: 401, Message: "token revoked"}
}
