package live_test

import (
	"context"
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
	"github.com/heraldhq/herald/platforms/sim"
)

// liveAccounts reads a listing as account id → entry, and checks that it is in the order of
// GET /v1/accounts.
func liveAccounts(h *apptest.Herald, path string) map[string]map[string]any {
	h.T.Helper()
	r := h.Do("GET", path, nil)
	require.Equal(h.T, 200, r.Status, string(r.Body))
	var order []string
	for _, a := range h.Do("GET", "/v1/accounts", nil).JSON(h.T)["data"].([]any) {
		order = append(order, a.(map[string]any)["id"].(string))
	}
	out := map[string]map[string]any{}
	var got []string
	for _, e := range r.JSON(h.T)["data"].([]any) {
		m := e.(map[string]any)
		got = append(got, m["account_id"].(string))
		out[m["account_id"].(string)] = m
	}
	require.Equal(h.T, order, got, "every account, in the order of GET /v1/accounts")
	return out
}

// The listings say which accounts are read live, and why the others are not, without a network
// call.
func TestLiveAccountListings(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	// An inactive account, and a YouTube account whose token the network refuses and whose
	// refresh fails (found by a read).
	handle := "paused"
	r, err := actors.Ask[*account.Reply](context.Background(), h.App.Accounts.To(uuid.Must(uuid.NewV7()).String()), &account.Create{
		Account: &persistence.Account{UserID: h.User.ID, Platform: string(platforms.X), Username: &handle, IsActive: false, CreatedAt: time.Now().UTC()},
		Creds:   platforms.Credentials{AccessToken: "t", RefreshToken: "r", ExpiresAt: time.Now().Add(time.Hour)},
	})
	require.NoError(t, err)
	paused := r.Account
	h.App.Adapters[platforms.YouTube] = refusing{h.nets[platforms.YouTube]}
	refused := h.connect(h.User.ID, platforms.YouTube)
	publication(h.Herald, refused, "yt-1", time.Now().Add(-time.Hour))
	require.Len(t, h.Do("GET", "/v1/analytics/overview", nil).JSON(t)["accounts_needing_reconnect"], 1)
	calls := func() int {
		n := 0
		for _, net := range h.nets {
			for _, op := range []string{"metrics", "comments", "dm_read"} {
				n += net.count(op)
			}
		}
		return n
	}
	before := calls()

	noToken := h.Account(platforms.X) // stored without credentials
	linkedin := h.Account(platforms.LinkedIn)
	live := func(m map[string]any) {
		t.Helper()
		require.Equal(t, true, m["live"])
		require.NotContains(t, m, "reason")
	}
	notLive := func(m map[string]any, reason string) {
		t.Helper()
		require.Equal(t, false, m["live"])
		require.Contains(t, m["reason"], reason)
	}

	got := liveAccounts(h.Herald, "/v1/analytics/accounts")
	require.Len(t, got, 9)
	for _, p := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.YouTube, platforms.TikTok} {
		live(got[h.accts[p].ID])
		require.Equal(t, string(p), got[h.accts[p].ID]["platform"])
		require.Equal(t, "live-"+string(p), got[h.accts[p].ID]["username"])
	}
	notLive(got[linkedin.ID], "linkedin has no live analytics")
	notLive(got[linkedin.ID], "youtube, pinterest, tiktok, twitter_x, bluesky")
	notLive(got[noToken.ID], "connect the account again")
	notLive(got[refused.ID], "connect the account again")
	notLive(got[paused.ID], "not active")

	got = liveAccounts(h.Herald, "/v1/inbox/accounts")
	require.Equal(t, got, liveAccounts(h.Herald, "/v1/inbox/accounts?mode=comments"))
	live(got[h.accts[platforms.X].ID])
	live(got[h.accts[platforms.YouTube].ID])
	notLive(got[h.accts[platforms.TikTok].ID], "tiktok has no live comments inbox")
	notLive(got[refused.ID], "connect the account again")

	got = liveAccounts(h.Herald, "/v1/inbox/accounts?mode=dms")
	live(got[h.accts[platforms.X].ID])
	live(got[h.accts[platforms.Bluesky].ID])
	notLive(got[h.accts[platforms.YouTube].ID], "youtube has no live direct messages")
	notLive(got[noToken.ID], "no usable token")

	require.Equal(t, before, calls(), "the listings call no network")

	for _, mode := range []string{"dm", "COMMENTS", "all"} {
		r := h.Do("GET", "/v1/inbox/accounts?mode="+mode, nil)
		require.Equal(t, 400, r.Status, mode)
		require.Equal(t, "validation_error", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), "mode: must be one of comments, dms")
	}
	// Another user sees only theirs.
	other, key := h.NewUser("other@example.com", "pro")
	theirs := h.connect(other.ID, platforms.X)
	r2 := h.DoKey(key, "GET", "/v1/analytics/accounts", nil, nil)
	require.Equal(t, 200, r2.Status)
	require.Equal(t, []any{map[string]any{"account_id": theirs.ID, "platform": "twitter_x", "username": "live-twitter_x", "live": true}}, r2.JSON(t)["data"])
}

// multiPublication stores a published post with one published target per (account, network
// id), the first with a link and a publication time of its own.
func (h *liveHerald) multiPublication(at time.Time, targets ...any) *persistence.Post {
	h.T.Helper()
	p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, Content: "multi", Status: persistence.PostPublished,
		CreatedAt: at.Add(-time.Minute).UTC(), UpdatedAt: at.UTC(), MediaIDs: []string{}}
	for i := 0; i < len(targets); i += 2 {
		a := targets[i].(*persistence.Account)
		p.Targets = append(p.Targets, persistence.Target{AccountID: a.ID, Platform: a.Platform, Status: persistence.TargetPublished, PublicationID: targets[i+1].(string)})
	}
	own := at.Add(-30 * time.Second).UTC()
	p.Targets[0].URL = "https://x.example/status/" + p.Targets[0].PublicationID
	p.Targets[0].PublishedAt = &own
	require.NoError(h.T, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
	return p
}

func TestPostAnalytics(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	x, bsky := h.nets[platforms.X], h.nets[platforms.Bluesky]
	x.metrics["tw-1"] = platforms.Metrics{Views: n64(1000), Likes: n64(10), Comments: n64(2), Shares: n64(3)}
	bsky.metrics["at-1"] = platforms.Metrics{Likes: n64(40), Comments: n64(5), Shares: n64(7)}
	now := time.Now().UTC()
	stale := h.Account(platforms.X) // no usable token
	p := h.multiPublication(now.Add(-time.Hour),
		h.accts[platforms.X], "tw-1", h.accts[platforms.Bluesky], "at-1", h.Account(platforms.LinkedIn), "li-1", stale, "tw-stale")
	// A target not published is no publication.
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		p.Targets = append(p.Targets, persistence.Target{AccountID: h.accts[platforms.TikTok].ID, Platform: "tiktok", Status: persistence.TargetFailed})
		return tx.PutPost(p, nil)
	}))

	r := h.Do("GET", "/v1/analytics/posts/"+p.ID, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	got := r.JSON(t)
	require.Equal(t, p.ID, got["post_id"])
	require.Equal(t, false, got["partial"], "an account to reconnect is not partial")
	fetched, err := time.Parse(time.RFC3339Nano, got["fetched_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, now, fetched, time.Minute)
	pubs := got["publications"].([]any)
	require.Len(t, pubs, 4)
	require.Equal(t, map[string]any{
		"publication_id": persistence.PublicationUUID(p.ID, 0), "platform": "twitter_x", "connected_account_id": h.accts[platforms.X].ID,
		"platform_post_id": "tw-1", "platform_post_url": "https://x.example/status/tw-1",
		"published_at": p.Targets[0].PublishedAt.Format(time.RFC3339Nano), "live": true,
		"views": 1000.0, "likes": 10.0, "comments": 2.0, "shares": 3.0, "engagement": 15.0,
	}, pubs[0])
	require.Equal(t, map[string]any{
		"publication_id": persistence.PublicationUUID(p.ID, 1), "platform": "bluesky", "connected_account_id": h.accts[platforms.Bluesky].ID,
		"platform_post_id": "at-1", "platform_post_url": nil, "published_at": p.UpdatedAt.Format(time.RFC3339Nano), "live": true,
		"views": nil, "likes": 40.0, "comments": 5.0, "shares": 7.0, "engagement": 52.0,
	}, pubs[1], "Bluesky reports no views: null, never 0")
	li := pubs[2].(map[string]any)
	require.Equal(t, false, li["live"])
	require.Contains(t, li["reason"], "linkedin has no live analytics")
	for _, c := range []string{"views", "likes", "comments", "shares", "engagement"} {
		require.Nil(t, li[c], c)
		require.Nil(t, pubs[3].(map[string]any)[c], c)
	}
	require.Equal(t, true, pubs[3].(map[string]any)["live"])
	require.Contains(t, pubs[3].(map[string]any)["reason"], "connected again")
	require.Equal(t, map[string]any{"views": 1000.0, "likes": 50.0, "comments": 7.0, "shares": 10.0, "engagement": 67.0}, got["totals"])
	require.Equal(t, []any{map[string]any{"id": stale.ID, "platform": "twitter_x", "username": *stale.Username, "token_status": "expired"}}, got["accounts_needing_reconnect"])
	require.Equal(t, 1, x.count("metrics"))
	require.Equal(t, 1, bsky.count("metrics"))

	// The overview's cache rules: within 90 seconds the same answer, fresh or not, and no call.
	x.mu.Lock()
	x.metrics["tw-1"] = platforms.Metrics{Views: n64(5000)}
	x.mu.Unlock()
	for _, q := range []string{"", "?fresh=true", "?fresh=1"} {
		again := h.Do("GET", "/v1/analytics/posts/"+p.ID+q, nil)
		require.Equal(t, 200, again.Status)
		require.Equal(t, string(r.Body), string(again.Body), q)
	}
	require.Equal(t, 1, x.count("metrics"), "no network call within 90 seconds")
	require.Equal(t, 1, bsky.count("metrics"))
	require.EqualValues(t, 3, cacheCount(h.Herald, "analytics", "hit"))
}

func TestPostAnalyticsPartial(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{Calls: 1, PerAccount: 1})
	x, bsky := h.nets[platforms.X], h.nets[platforms.Bluesky]
	x.metrics["tw-1"] = platforms.Metrics{Likes: n64(1)}
	bsky.metrics["at-1"] = platforms.Metrics{Likes: n64(2)}
	p := h.multiPublication(time.Now().Add(-time.Hour), h.accts[platforms.X], "tw-1", h.accts[platforms.Bluesky], "at-1")
	got := h.Do("GET", "/v1/analytics/posts/"+p.ID, nil).JSON(t)
	require.Equal(t, true, got["partial"])
	read, unread := 0, 0
	for _, e := range got["publications"].([]any) {
		m := e.(map[string]any)
		if m["likes"] == nil {
			unread++
			require.Contains(t, m["reason"], "live budget")
		} else {
			read++
		}
	}
	require.Equal(t, 1, read)
	require.Equal(t, 1, unread)
	require.Equal(t, 1, x.count("metrics")+bsky.count("metrics"), "one call: the request's budget")
}

func TestPostAnalyticsBadInput(t *testing.T) {
	t.Parallel()
	h := setupLive(t, app.LiveConfig{})
	other, key := h.NewUser("someone@example.com", "pro")
	theirs := h.connect(other.ID, platforms.X)
	theirPost := publication(h.Herald, theirs, "tw-theirs", time.Now().Add(-time.Hour))

	// Unknown, invalid, another user's: the answers of GET /v1/posts/:id.
	for _, id := range []string{uuid.NewString(), "not-a-uuid", "123", theirPost} {
		want := h.Do("GET", "/v1/posts/"+id, nil)
		r := h.Do("GET", "/v1/analytics/posts/"+id, nil)
		require.Equal(t, want.Status, r.Status, "%s: %s", id, r.Body)
		require.Equal(t, want.ErrorCode(t), r.ErrorCode(t), id)
	}
	require.Equal(t, 404, h.Do("GET", "/v1/analytics/posts/"+uuid.NewString(), nil).Status)
	r := h.Do("GET", "/v1/analytics/posts/not-a-uuid", nil)
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "postId")
	require.Equal(t, 403, h.Do("GET", "/v1/analytics/posts/"+theirPost, nil).Status)
	r = h.Do("GET", "/v1/analytics/posts/"+uuid.NewString()+"?fresh=maybe", nil)
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "fresh: Expected boolean")

	// A draft and a scheduled post have no publication: no analytics yet.
	draft := h.CreatePost("draft", h.accts[platforms.X])
	sched := h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "later", "platforms": []string{h.accts[platforms.X].ID},
		"scheduledAt": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 201, sched.Status, string(sched.Body))
	for _, id := range []string{draft, sched.JSON(t)["id"].(string)} {
		r := h.Do("GET", "/v1/analytics/posts/"+id, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		got := r.JSON(t)
		require.Equal(t, id, got["post_id"])
		require.Equal(t, []any{}, got["publications"])
		require.Equal(t, map[string]any{"views": 0.0, "likes": 0.0, "comments": 0.0, "shares": 0.0, "engagement": 0.0}, got["totals"])
	}
	// Published only to a network without live analytics.
	li := publication(h.Herald, h.Account(platforms.LinkedIn), "li-only", time.Now().Add(-time.Hour))
	r = h.Do("GET", "/v1/analytics/posts/"+li, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	pubs := r.JSON(t)["publications"].([]any)
	require.Len(t, pubs, 1)
	require.Equal(t, false, pubs[0].(map[string]any)["live"])
	require.Contains(t, pubs[0].(map[string]any)["reason"].(string), "no live analytics")
	for _, n := range h.nets {
		require.Zero(t, n.count("metrics"), "nothing was read")
	}
	require.Equal(t, 200, h.DoKey(key, "GET", "/v1/analytics/posts/"+theirPost, nil, nil).Status, "its owner reads it")
}

// The account listings and per-post analytics against the simulated networks, end to end: the
// counters are the networks', the link is the one each network gave at publish, and a second
// read within 90 seconds, fresh or not, calls no network.
func TestPostAnalyticsAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky, li := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.LinkedIn)

	before := simRequests(h)
	got := liveAccounts(h, "/v1/analytics/accounts")
	require.Len(t, got, 9)
	var live []string
	for _, a := range h.Accounts {
		if got[a.ID]["live"] == true {
			live = append(live, a.Platform)
		} else {
			require.Contains(t, got[a.ID]["reason"], "has no live analytics", a.Platform)
		}
	}
	require.ElementsMatch(t, []string{"youtube", "pinterest", "tiktok", "twitter_x", "bluesky"}, live)
	dms := liveAccounts(h, "/v1/inbox/accounts?mode=dms")
	require.Equal(t, true, dms[x.ID]["live"])
	require.Equal(t, true, dms[bsky.ID]["live"])
	require.Equal(t, false, dms[h.Account(platforms.YouTube).ID]["live"])
	require.Equal(t, before, simRequests(h), "the listings call no network")

	p := h.PublishAndWait("Per-post analytics", nil, x, bsky, li)
	require.NoError(t, s.SetMetrics(platforms.X, apptest.Target(p, platforms.X), sim.Counters{Views: 1000, Likes: 10, Comments: 2, Shares: 3}))
	require.NoError(t, s.SetMetrics(platforms.Bluesky, apptest.Target(p, platforms.Bluesky), sim.Counters{Views: 999, Likes: 20, Comments: 4, Shares: 6}))

	before = simRequests(h)
	r := h.Do("GET", "/v1/analytics/posts/"+p.ID, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Greater(t, simRequests(h), before, "read from the networks")
	pa := r.JSON(t)
	require.Equal(t, false, pa["partial"])
	require.Equal(t, []any{}, pa["accounts_needing_reconnect"])
	byPlatform := map[string]map[string]any{}
	for _, e := range pa["publications"].([]any) {
		byPlatform[e.(map[string]any)["platform"].(string)] = e.(map[string]any)
	}
	require.Len(t, byPlatform, 3)
	jobLinks := map[string]any{}
	j := h.Do("GET", "/v1/jobs/"+*p.TrackingID, nil).JSON(t)
	for _, e := range j["platform_statuses"].([]any) {
		jobLinks[e.(map[string]any)["platform"].(string)] = e.(map[string]any)["url"]
	}
	for _, pl := range []platforms.Platform{platforms.X, platforms.Bluesky, platforms.LinkedIn} {
		e := byPlatform[string(pl)]
		require.Equal(t, apptest.PublicationID(p, pl), e["publication_id"])
		require.Equal(t, apptest.Target(p, pl), e["platform_post_id"])
		require.NotEmpty(t, e["platform_post_url"], pl)
		if link, ok := jobLinks[string(pl)]; ok && link != nil {
			require.Equal(t, link, e["platform_post_url"], pl)
		}
	}
	require.Equal(t, map[string]any{"views": 1000.0, "likes": 10.0, "comments": 2.0, "shares": 3.0, "engagement": 15.0},
		pick(byPlatform["twitter_x"], "views", "likes", "comments", "shares", "engagement"))
	require.Nil(t, byPlatform["bluesky"]["views"], "Bluesky reports no views")
	require.EqualValues(t, 30, byPlatform["bluesky"]["engagement"])
	require.Equal(t, false, byPlatform["linkedin"]["live"])
	require.Nil(t, byPlatform["linkedin"]["likes"])
	require.Equal(t, map[string]any{"views": 1000.0, "likes": 30.0, "comments": 6.0, "shares": 9.0, "engagement": 45.0}, pa["totals"])

	calls := simRequests(h)
	for _, q := range []string{"", "?fresh=true"} {
		again := h.Do("GET", "/v1/analytics/posts/"+p.ID+q, nil)
		require.Equal(t, 200, again.Status)
		require.Equal(t, string(r.Body), string(again.Body), q)
	}
	require.Equal(t, calls, simRequests(h), "no network call within 90 seconds, fresh or not")
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}
