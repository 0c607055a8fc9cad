package live_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// simRequests counts the network API calls the simulator received (GET /_sim/requests).
func simRequests(h *apptest.Herald) int {
	h.T.Helper()
	resp, err := http.Get(h.App.Sim.BaseURL() + "/_sim/requests")
	require.NoError(h.T, err)
	defer resp.Body.Close()
	var out struct {
		Data []json.RawMessage `json:"data"`
	}
	require.NoError(h.T, json.NewDecoder(resp.Body).Decode(&out))
	return len(out.Data)
}

// Analytics and the inbox against the simulated networks, end to end.
func TestLiveDataAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky, yt := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.YouTube)
	tt, pin := h.Account(platforms.TikTok), h.Account(platforms.Pinterest)

	text := h.PublishAndWait("Launch day!", nil, x, bsky)
	video := h.UploadMedia("clip.mp4", "video/mp4", apptest.MP4File)
	clip := h.PublishAndWait("Launch video\nHow it works", []string{video}, yt, tt)
	image := h.UploadMedia("board.jpg", "image/jpeg", apptest.JPEGFile)
	pinned := h.PublishAndWait("Launch board", []string{image}, pin)

	set := func(p platforms.Platform, post *persistence.Post, c sim.Counters) {
		require.NoError(t, s.SetMetrics(p, apptest.Target(post, p), c))
	}
	set(platforms.X, text, sim.Counters{Views: 1000, Likes: 10, Comments: 2, Shares: 3})
	set(platforms.Bluesky, text, sim.Counters{Views: 999, Likes: 20, Comments: 4, Shares: 6})
	set(platforms.YouTube, clip, sim.Counters{Views: 5000, Likes: 50, Comments: 5, Shares: 9})
	set(platforms.TikTok, clip, sim.Counters{Views: 7000, Likes: 70, Comments: 7, Shares: 8})
	set(platforms.Pinterest, pinned, sim.Counters{Views: 300, Likes: 30, Comments: 1, Shares: 2})

	before := simRequests(h)
	r := h.Do("GET", "/v1/analytics/overview", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	ov := r.JSON(t)
	require.Greater(t, simRequests(h), before, "the overview read the networks")
	require.Equal(t, false, ov["partial"])
	require.Equal(t, false, ov["sampled"])
	require.EqualValues(t, 5, ov["publications"])
	require.EqualValues(t, 5, ov["publications_read"])
	require.Equal(t, []any{}, ov["accounts_needing_reconnect"])
	byPlatform := map[string]map[string]any{}
	for _, e := range ov["by_platform"].([]any) {
		byPlatform[e.(map[string]any)["platform"].(string)] = e.(map[string]any)
	}
	require.Len(t, byPlatform, 5)
	require.EqualValues(t, 10, byPlatform["twitter_x"]["likes"])
	require.EqualValues(t, 1000, byPlatform["twitter_x"]["views"])
	require.Nil(t, byPlatform["bluesky"]["views"], "Bluesky reports no views")
	require.EqualValues(t, 20, byPlatform["bluesky"]["likes"])
	require.EqualValues(t, 5000, byPlatform["youtube"]["views"])
	require.EqualValues(t, 70, byPlatform["tiktok"]["likes"])
	require.EqualValues(t, 30, byPlatform["pinterest"]["likes"])
	totals := ov["totals"].(map[string]any)
	require.EqualValues(t, 10+20+50+70+30, totals["likes"])
	top := ov["top_posts"].([]any)
	require.Len(t, top, 5)
	first := top[0].(map[string]any)
	require.Equal(t, clip.ID, first["post_id"])
	require.Equal(t, "tiktok", first["platform"])

	// The 90-second floor: the same answer, no network call, fresh or not.
	calls := simRequests(h)
	for _, q := range []string{"", "?fresh=true"} {
		again := h.Do("GET", "/v1/analytics/overview"+q, nil)
		require.Equal(t, 200, again.Status)
		require.Equal(t, ov["fetched_at"], again.JSON(t)["fetched_at"])
	}
	require.Equal(t, calls, simRequests(h), "no network call within 90 seconds")

	// The inbox: comments on X, Bluesky and YouTube.
	c1, err := s.AddComment(platforms.X, apptest.Target(text, platforms.X), "When does it ship?", "ann")
	require.NoError(t, err)
	_, err = s.AddComment(platforms.Bluesky, apptest.Target(text, platforms.Bluesky), "Congrats!", "bob")
	require.NoError(t, err)
	_, err = s.AddComment(platforms.YouTube, apptest.Target(clip, platforms.YouTube), "Great video", "cid")
	require.NoError(t, err)
	page := h.Do("GET", "/v1/inbox/comments", nil)
	require.Equal(t, 200, page.Status, string(page.Body))
	threads := page.JSON(t)["threads"].([]any)
	require.Len(t, threads, 3)
	byPlatformThread := map[string]map[string]any{}
	for _, th := range threads {
		c := th.(map[string]any)["comment"].(map[string]any)
		byPlatformThread[c["platform"].(string)] = c
	}
	require.Equal(t, c1, byPlatformThread["twitter_x"]["id"])
	require.Equal(t, apptest.PublicationID(text, platforms.X), byPlatformThread["twitter_x"]["publication_id"])
	require.Equal(t, "When does it ship?", byPlatformThread["twitter_x"]["text"])
	require.Equal(t, apptest.PublicationID(clip, platforms.YouTube), byPlatformThread["youtube"]["publication_id"])

	// A reply naming another publication posts nothing.
	r = h.Do("POST", "/v1/inbox/comments/"+c1+"/reply", map[string]any{"publication_id": apptest.PublicationID(clip, platforms.YouTube), "text": "Next week"})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Empty(t, s.Replies(""), "nothing was posted")
	r = h.Do("POST", "/v1/inbox/comments/"+c1+"/reply", map[string]any{"publication_id": apptest.PublicationID(text, platforms.X), "text": "Next week!"})
	require.Equal(t, 200, r.Status, string(r.Body))
	replies := s.Replies(platforms.X)
	require.Len(t, replies, 1)
	require.Equal(t, c1, replies[0].InReplyTo)
	require.Equal(t, "Next week!", replies[0].Text)
	page = h.Do("GET", "/v1/inbox/comments?platform=twitter_x", nil)
	th := page.JSON(t)["threads"].([]any)[0].(map[string]any)
	require.Equal(t, true, th["answered"])

	// A direct message: the conversation must be the account's.
	conv, err := s.AddDM(platforms.X, x.NetworkUserID, "dana", "Do you ship to Canada?")
	require.NoError(t, err)
	r = h.Do("POST", "/v1/inbox/dms/"+conv+"/reply", map[string]any{"account_id": bsky.ID, "text": "Yes"})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Empty(t, s.DMs(""), "nothing was sent")
	r = h.Do("POST", "/v1/inbox/dms/"+conv+"/reply", map[string]any{"account_id": x.ID, "text": "Yes, we do!"})
	require.Equal(t, 200, r.Status, string(r.Body))
	dms := s.DMs(platforms.X)
	require.Len(t, dms, 1)
	require.Equal(t, "Yes, we do!", dms[0].Text)
}

// 100 concurrent identical requests make one fan-out: one batch call for the account's
// publications.
func TestLiveCoalescingAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, SimLatency: 50 * time.Millisecond})
	x := h.Account(platforms.X)
	for i := range 3 {
		h.PublishAndWait(fmt.Sprintf("hello %d", i), nil, x)
	}
	before := simRequests(h)
	var wg sync.WaitGroup
	fetched := make(chan any, 100)
	for range 100 {
		wg.Go(func() {
			r := h.Do("GET", "/v1/analytics/overview?range=14d", nil)
			require.Equal(t, 200, r.Status)
			fetched <- r.JSON(t)["fetched_at"]
		})
	}
	wg.Wait()
	close(fetched)
	first := <-fetched
	for f := range fetched {
		require.Equal(t, first, f)
	}
	require.Equal(t, 1, simRequests(h)-before, "one fan-out: one batch read")
}

// A tight request budget and a small sample: partial and sampled, honestly.
func TestLivePartialAndSampledAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, Config: func(c *app.Config) { c.Live = app.LiveConfig{Calls: 1, SampleLimit: 4} }})
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	for i := range 3 {
		h.PublishAndWait(fmt.Sprintf("hello %d", i), nil, x, bsky)
	}
	before := simRequests(h)
	ov := h.Do("GET", "/v1/analytics/overview", nil).JSON(t)
	require.Equal(t, true, ov["sampled"], "six publications, four kept")
	require.Equal(t, true, ov["partial"], "one call: one account's batch read")
	require.EqualValues(t, 6, ov["publications"])
	require.EqualValues(t, 2, ov["publications_read"])
	require.Equal(t, 1, simRequests(h)-before, "the request budget bounds the network calls")
}

// Metrics are read in batches: one call per network for many publications.
func TestLiveMetricsInBatches(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	for i := range 30 {
		h.PublishAndWait(fmt.Sprintf("batch %d", i), nil, x, bsky)
	}
	before := simRequests(h)
	ov := h.Do("GET", "/v1/analytics/overview", nil).JSON(t)
	require.Equal(t, false, ov["partial"])
	require.EqualValues(t, 60, ov["publications_read"])
	// X reads 100 posts per call, Bluesky 25.
	require.Equal(t, 1+2, simRequests(h)-before)
}

// A Bluesky comment id is an at:// URI; a client puts it in the path percent-encoded, and the
// reply reaches Bluesky.
func TestReplyToABlueskyCommentThroughAnEncodedPath(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	bsky := h.Account(platforms.Bluesky)
	post := h.PublishAndWait("Launch day on Bluesky", nil, bsky)
	comment, err := s.AddComment(platforms.Bluesky, apptest.Target(post, platforms.Bluesky), "Congrats!", "bob")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(comment, "at://did:"), comment)
	inbox := h.Do("GET", "/v1/inbox/comments?platform=bluesky", nil)
	require.Equal(t, 200, inbox.Status, string(inbox.Body))
	require.Equal(t, comment, inbox.JSON(t)["threads"].([]any)[0].(map[string]any)["comment"].(map[string]any)["id"])

	reply := func(escapedID string, body map[string]any) *apptest.Response {
		t.Helper()
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest("POST", h.URL+"/v1/inbox/comments/"+escapedID+"/reply", bytes.NewReader(raw))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+h.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := h.Client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		r := &apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: out}
		h.Validate(req, r)
		return r
	}

	// Bad ids are refused and nothing is sent.
	for name, id := range map[string]string{
		"NUL":       url.PathEscape(comment) + "%00",
		"line feed": url.PathEscape(comment) + "%0A",
		"too long":  url.PathEscape(comment + strings.Repeat("x", 600)),
	} {
		r := reply(id, map[string]any{"publication_id": post.ID, "text": "Thanks!"})
		require.Equal(t, 400, r.Status, name)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
		require.Contains(t, r.ErrorMessage(t), "commentId: ", name)
	}
	require.Empty(t, s.Replies(""), "nothing was posted")

	escaped := url.PathEscape(comment)
	require.Contains(t, escaped, "%2F", "the id's slashes are encoded")
	r := reply(escaped, map[string]any{"publication_id": post.ID, "text": "Thanks, Bob!"})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "bluesky", r.JSON(t)["platform"])
	replies := s.Replies(platforms.Bluesky)
	require.Len(t, replies, 1)
	require.Equal(t, comment, replies[0].InReplyTo, "the reply answers the comment the id named")
	require.Equal(t, apptest.Target(post, platforms.Bluesky), replies[0].PostID)
	require.Equal(t, bsky.NetworkUserID, replies[0].Account)
	require.Equal(t, "Thanks, Bob!", replies[0].Text)
	require.Equal(t, r.JSON(t)["reply_id"], replies[0].ID)

	// An encoded UUID is the same UUID.
	var enc strings.Builder
	for _, c := range []byte(post.ID) {
		fmt.Fprintf(&enc, "%%%02X", c)
	}
	got := h.Do("GET", "/v1/posts/"+enc.String(), nil)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, post.ID, got.JSON(t)["id"])
}
