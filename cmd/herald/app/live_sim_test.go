package app_test

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
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// simRequests counts the network API calls the simulator received (GET /_sim/requests).
func (b *testBundle) simRequests() int {
	b.t.Helper()
	resp, err := http.Get(b.app.Sim.BaseURL() + "/_sim/requests")
	require.NoError(b.t, err)
	defer resp.Body.Close()
	var out struct {
		Data []json.RawMessage `json:"data"`
	}
	require.NoError(b.t, json.NewDecoder(resp.Body).Decode(&out))
	return len(out.Data)
}

// publishAndWait publishes a post through the API and returns it once published, with its
// targets (and so the networks' publication ids).
func (b *testBundle) publishAndWait(content string, media []string, accts ...*persistence.Account) *persistence.Post {
	b.t.Helper()
	body := map[string]any{"content": content, "platforms": []string{}}
	for _, a := range accts {
		body["platforms"] = append(body["platforms"].([]string), a.ID)
	}
	if media != nil {
		body["media"] = media
	}
	r := b.publishNew(body, nil)
	require.Equal(b.t, 202, r.status, string(r.body))
	j := b.waitJob(r.json(b.t)["tracking_id"].(string))
	require.Equal(b.t, "completed", j["status"], "%v", j)
	postID := r.json(b.t)["post_id"].(string)
	var p *persistence.Post
	require.Eventually(b.t, func() bool {
		require.NoError(b.t, b.app.Store.View(func(tx *persistence.Tx) error {
			var err error
			p, err = tx.Post(postID)
			return err
		}))
		return p.Status == persistence.PostPublished
	}, 10*time.Second, 10*time.Millisecond)
	return p
}

func target(p *persistence.Post, platform platforms.Platform) string {
	for _, t := range p.Targets {
		if t.Platform == string(platform) {
			return t.PublicationID
		}
	}
	return ""
}

// publicationID is the publication_id of the post's target on platform.
func publicationID(p *persistence.Post, platform platforms.Platform) string {
	for i, t := range p.Targets {
		if t.Platform == string(platform) {
			return persistence.PublicationUUID(p.ID, i)
		}
	}
	return ""
}

// Analytics and the inbox against the simulated networks, end to end.
func TestLiveDataAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	s := b.app.Sim
	x, bsky, yt := b.account(platforms.X), b.account(platforms.Bluesky), b.account(platforms.YouTube)
	tt, pin := b.account(platforms.TikTok), b.account(platforms.Pinterest)

	text := b.publishAndWait("Launch day!", nil, x, bsky)
	video := b.uploadMedia("clip.mp4", "video/mp4", mp4File)
	clip := b.publishAndWait("Launch video\nHow it works", []string{video}, yt, tt)
	image := b.uploadMedia("board.jpg", "image/jpeg", jpegFile)
	pinned := b.publishAndWait("Launch board", []string{image}, pin)

	set := func(p platforms.Platform, post *persistence.Post, c sim.Counters) {
		require.NoError(t, s.SetMetrics(p, target(post, p), c))
	}
	set(platforms.X, text, sim.Counters{Views: 1000, Likes: 10, Comments: 2, Shares: 3})
	set(platforms.Bluesky, text, sim.Counters{Views: 999, Likes: 20, Comments: 4, Shares: 6})
	set(platforms.YouTube, clip, sim.Counters{Views: 5000, Likes: 50, Comments: 5, Shares: 9})
	set(platforms.TikTok, clip, sim.Counters{Views: 7000, Likes: 70, Comments: 7, Shares: 8})
	set(platforms.Pinterest, pinned, sim.Counters{Views: 300, Likes: 30, Comments: 1, Shares: 2})

	before := b.simRequests()
	r := b.do("GET", "/v1/analytics/overview", nil)
	require.Equal(t, 200, r.status, string(r.body))
	ov := r.json(t)
	require.Greater(t, b.simRequests(), before, "the overview read the networks")
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
	calls := b.simRequests()
	for _, q := range []string{"", "?fresh=true"} {
		again := b.do("GET", "/v1/analytics/overview"+q, nil)
		require.Equal(t, 200, again.status)
		require.Equal(t, ov["fetched_at"], again.json(t)["fetched_at"])
	}
	require.Equal(t, calls, b.simRequests(), "no network call within 90 seconds")

	// The inbox: comments on X, Bluesky and YouTube.
	c1, err := s.AddComment(platforms.X, target(text, platforms.X), "When does it ship?", "ann")
	require.NoError(t, err)
	_, err = s.AddComment(platforms.Bluesky, target(text, platforms.Bluesky), "Congrats!", "bob")
	require.NoError(t, err)
	_, err = s.AddComment(platforms.YouTube, target(clip, platforms.YouTube), "Great video", "cid")
	require.NoError(t, err)
	page := b.do("GET", "/v1/inbox/comments", nil)
	require.Equal(t, 200, page.status, string(page.body))
	threads := page.json(t)["threads"].([]any)
	require.Len(t, threads, 3)
	byPlatformThread := map[string]map[string]any{}
	for _, th := range threads {
		c := th.(map[string]any)["comment"].(map[string]any)
		byPlatformThread[c["platform"].(string)] = c
	}
	require.Equal(t, c1, byPlatformThread["twitter_x"]["id"])
	require.Equal(t, publicationID(text, platforms.X), byPlatformThread["twitter_x"]["publication_id"])
	require.Equal(t, "When does it ship?", byPlatformThread["twitter_x"]["text"])
	require.Equal(t, publicationID(clip, platforms.YouTube), byPlatformThread["youtube"]["publication_id"])

	// A reply naming another publication posts nothing.
	r = b.do("POST", "/v1/inbox/comments/"+c1+"/reply", map[string]any{"publication_id": publicationID(clip, platforms.YouTube), "text": "Next week"})
	require.Equal(t, 400, r.status, string(r.body))
	require.Equal(t, "validation_error", r.errorCode(t))
	require.Empty(t, s.Replies(""), "nothing was posted")
	r = b.do("POST", "/v1/inbox/comments/"+c1+"/reply", map[string]any{"publication_id": publicationID(text, platforms.X), "text": "Next week!"})
	require.Equal(t, 200, r.status, string(r.body))
	replies := s.Replies(platforms.X)
	require.Len(t, replies, 1)
	require.Equal(t, c1, replies[0].InReplyTo)
	require.Equal(t, "Next week!", replies[0].Text)
	page = b.do("GET", "/v1/inbox/comments?platform=twitter_x", nil)
	th := page.json(t)["threads"].([]any)[0].(map[string]any)
	require.Equal(t, true, th["answered"])

	// A direct message: the conversation must be the account's.
	conv, err := s.AddDM(platforms.X, x.NetworkUserID, "dana", "Do you ship to Canada?")
	require.NoError(t, err)
	r = b.do("POST", "/v1/inbox/dms/"+conv+"/reply", map[string]any{"account_id": bsky.ID, "text": "Yes"})
	require.Equal(t, 400, r.status, string(r.body))
	require.Empty(t, s.DMs(""), "nothing was sent")
	r = b.do("POST", "/v1/inbox/dms/"+conv+"/reply", map[string]any{"account_id": x.ID, "text": "Yes, we do!"})
	require.Equal(t, 200, r.status, string(r.body))
	dms := s.DMs(platforms.X)
	require.Len(t, dms, 1)
	require.Equal(t, "Yes, we do!", dms[0].Text)
}

// 100 concurrent identical requests make one fan-out: one batch call for the account's
// publications.
func TestLiveCoalescingAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: 50 * time.Millisecond})
	x := b.account(platforms.X)
	for i := range 3 {
		b.publishAndWait(fmt.Sprintf("hello %d", i), nil, x)
	}
	before := b.simRequests()
	var wg sync.WaitGroup
	fetched := make(chan any, 100)
	for range 100 {
		wg.Go(func() {
			r := b.do("GET", "/v1/analytics/overview?range=14d", nil)
			require.Equal(t, 200, r.status)
			fetched <- r.json(t)["fetched_at"]
		})
	}
	wg.Wait()
	close(fetched)
	first := <-fetched
	for f := range fetched {
		require.Equal(t, first, f)
	}
	require.Equal(t, 1, b.simRequests()-before, "one fan-out: one batch read")
}

// A tight request budget and a small sample: partial and sampled, honestly.
func TestLivePartialAndSampledAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, config: func(c *app.Config) { c.Live = app.LiveConfig{Calls: 1, SampleLimit: 4} }})
	x, bsky := b.account(platforms.X), b.account(platforms.Bluesky)
	for i := range 3 {
		b.publishAndWait(fmt.Sprintf("hello %d", i), nil, x, bsky)
	}
	before := b.simRequests()
	ov := b.do("GET", "/v1/analytics/overview", nil).json(t)
	require.Equal(t, true, ov["sampled"], "six publications, four kept")
	require.Equal(t, true, ov["partial"], "one call: one account's batch read")
	require.EqualValues(t, 6, ov["publications"])
	require.EqualValues(t, 2, ov["publications_read"])
	require.Equal(t, 1, b.simRequests()-before, "the request budget bounds the network calls")
}

// Metrics are read in batches: one call per network for many publications.
func TestLiveMetricsInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x, bsky := b.account(platforms.X), b.account(platforms.Bluesky)
	for i := range 30 {
		b.publishAndWait(fmt.Sprintf("batch %d", i), nil, x, bsky)
	}
	before := b.simRequests()
	ov := b.do("GET", "/v1/analytics/overview", nil).json(t)
	require.Equal(t, false, ov["partial"])
	require.EqualValues(t, 60, ov["publications_read"])
	// X reads 100 posts per call, Bluesky 25.
	require.Equal(t, 1+2, b.simRequests()-before)
}

// A Bluesky comment id is an at:// URI; a client puts it in the path percent-encoded, and the
// reply reaches Bluesky.
func TestReplyToABlueskyCommentThroughAnEncodedPath(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	s := b.app.Sim
	bsky := b.account(platforms.Bluesky)
	post := b.publishAndWait("Launch day on Bluesky", nil, bsky)
	comment, err := s.AddComment(platforms.Bluesky, target(post, platforms.Bluesky), "Congrats!", "bob")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(comment, "at://did:"), comment)
	inbox := b.do("GET", "/v1/inbox/comments?platform=bluesky", nil)
	require.Equal(t, 200, inbox.status, string(inbox.body))
	require.Equal(t, comment, inbox.json(t)["threads"].([]any)[0].(map[string]any)["comment"].(map[string]any)["id"])

	reply := func(escapedID string, body map[string]any) *response {
		t.Helper()
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest("POST", b.url+"/v1/inbox/comments/"+escapedID+"/reply", bytes.NewReader(raw))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		r := &response{status: resp.StatusCode, header: resp.Header, body: out}
		b.validate(req, r)
		return r
	}

	// Bad ids are refused and nothing is sent.
	for name, id := range map[string]string{
		"NUL":       url.PathEscape(comment) + "%00",
		"line feed": url.PathEscape(comment) + "%0A",
		"too long":  url.PathEscape(comment + strings.Repeat("x", 600)),
	} {
		r := reply(id, map[string]any{"publication_id": post.ID, "text": "Thanks!"})
		require.Equal(t, 400, r.status, name)
		require.Equal(t, "validation_error", r.errorCode(t), name)
		require.Contains(t, r.errorMessage(t), "commentId: ", name)
	}
	require.Empty(t, s.Replies(""), "nothing was posted")

	escaped := url.PathEscape(comment)
	require.Contains(t, escaped, "%2F", "the id's slashes are encoded")
	r := reply(escaped, map[string]any{"publication_id": post.ID, "text": "Thanks, Bob!"})
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "bluesky", r.json(t)["platform"])
	replies := s.Replies(platforms.Bluesky)
	require.Len(t, replies, 1)
	require.Equal(t, comment, replies[0].InReplyTo, "the reply answers the comment the id named")
	require.Equal(t, target(post, platforms.Bluesky), replies[0].PostID)
	require.Equal(t, bsky.NetworkUserID, replies[0].Account)
	require.Equal(t, "Thanks, Bob!", replies[0].Text)
	require.Equal(t, r.json(t)["reply_id"], replies[0].ID)

	// An encoded UUID is the same UUID.
	var enc strings.Builder
	for _, c := range []byte(post.ID) {
		fmt.Fprintf(&enc, "%%%02X", c)
	}
	got := b.do("GET", "/v1/posts/"+enc.String(), nil)
	require.Equal(t, 200, got.status, string(got.body))
	require.Equal(t, post.ID, got.json(t)["id"])
}
