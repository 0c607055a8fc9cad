package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// Every bad thread and first comment is refused with 400 validation_error naming the target and
// the field, and writes nothing.
func TestThreadAndFirstCommentBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li, pin, tt := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.LinkedIn).ID,
		h.Account(platforms.Pinterest).ID, h.Account(platforms.TikTok).ID
	before := h.CountPosts()
	parts := func(texts ...string) []map[string]any {
		out := make([]map[string]any, len(texts))
		for i, s := range texts {
			out[i] = map[string]any{"content": s}
		}
		return out
	}
	many := make([]string, platforms.MaxThreadParts)
	for i := range many {
		many[i] = "part"
	}
	for _, tc := range []struct {
		name     string
		accounts []string
		target   map[string]any
		msg      string
	}{
		{"a thread on LinkedIn", []string{li}, map[string]any{"account_id": li, "thread": parts("more")},
			"linkedin: thread: LinkedIn has no threads; threads are published on X, Bluesky and Threads"},
		{"a part over X's limit", []string{x}, map[string]any{"account_id": x, "thread": parts("fine", strings.Repeat("a", 281))},
			"twitter_x: thread.1.content: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)"},
		{"a part over Bluesky's limit", []string{bsky}, map[string]any{"account_id": bsky, "thread": parts(strings.Repeat("b", 301))},
			"bluesky: thread.0.content: text is 301 graphemes; Bluesky allows 300"},
		{"an empty part", []string{x}, map[string]any{"account_id": x, "thread": parts("one", "  ")},
			"targets.0.thread.1.content: a thread part needs text or media"},
		{"too many parts", []string{x}, map[string]any{"account_id": x, "thread": parts(many...)},
			"targets.0.thread: at most 24 parts after the post (a thread of 25)"},
		{"a part's unknown field", []string{x}, map[string]any{"account_id": x, "thread": []map[string]any{{"text": "hi"}}},
			`targets.0.thread.0: unknown field "text"; a thread part takes content and media`},
		{"a part without content", []string{x}, map[string]any{"account_id": x, "thread": []map[string]any{{}}},
			"targets.0.thread.0.content: Required"},
		{"a first comment on Pinterest", []string{pin}, map[string]any{"account_id": pin, "first_comment": map[string]any{"content": "hi"}},
			"first_comment: Pinterest offers no comment Herald can publish; first comments are published on LinkedIn, Instagram, Facebook, YouTube, X, Bluesky and Threads"},
		{"a first comment on TikTok", []string{tt}, map[string]any{"account_id": tt, "first_comment": map[string]any{"content": "hi"}},
			"first_comment: TikTok offers no comment Herald can publish; first comments are published on LinkedIn, Instagram, Facebook, YouTube, X, Bluesky and Threads"},
		{"a first comment over LinkedIn's limit", []string{li}, map[string]any{"account_id": li, "first_comment": map[string]any{"content": strings.Repeat("c", 1251)}},
			"linkedin: first_comment.content: is 1251 characters; LinkedIn takes comments of at most 1250"},
		{"a first comment over X's limit", []string{x}, map[string]any{"account_id": x, "first_comment": map[string]any{"content": strings.Repeat("c", 281)}},
			"twitter_x: first_comment.content: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)"},
		{"an empty first comment", []string{li}, map[string]any{"account_id": li, "first_comment": map[string]any{"content": " "}},
			"targets.0.first_comment.content: must not be empty"},
		{"a first comment that is a string", []string{li}, map[string]any{"account_id": li, "first_comment": "hi"},
			"targets.0.first_comment: Expected object, received string"},
	} {
		r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "hello", "platforms": tc.accounts, "targets": []map[string]any{tc.target}})
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Body)
		assert.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
		if strings.HasPrefix(tc.msg, "first_comment:") {
			// The network's own refusal of the post comes first; the comment's is in details.
			assert.Contains(t, errorsOf(t, r)[tc.accounts[0]], tc.msg, tc.name)
			continue
		}
		assert.Equal(t, tc.msg, r.ErrorMessage(t), tc.name)
	}
	// A draft is held to every rule but the networks': a thread where there are none is refused,
	// a part over the limit waits for the draft's publication.
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "hello", "platforms": []string{li}, "targets": []map[string]any{{"account_id": li, "thread": parts("more")}}})
	require.Equal(t, 400, r.Status, string(r.Body))
	assert.Equal(t, before, h.CountPosts(), "nothing was written")
}

// platformOf is the post detail's entry for an account.
func platformOf(t *testing.T, h *apptest.Herald, postID, accountID string) map[string]any {
	t.Helper()
	p := h.Do("GET", "/v1/posts/"+postID, nil)
	require.Equal(t, 200, p.Status, string(p.Body))
	for _, pl := range p.JSON(t)["platforms"].([]any) {
		if pl := pl.(map[string]any); pl["connected_account_id"] == accountID {
			return pl
		}
	}
	t.Fatalf("no platform of %s in the post", accountID)
	return nil
}

// A thread goes out on X, Bluesky and Threads as a chain of the account's own replies, in order,
// each part once; the post detail lists each part's id and link, and the timeline names the parts.
func TestThreadsPublishAsReplyChains(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, th := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.Threads).ID
	thread := []map[string]any{{"content": "Second part"}, {"content": "Third part"}}
	r := h.Do("POST", "/v1/posts/publish", map[string]any{
		"content": "First part", "platforms": []string{x, bsky, th},
		"targets": []map[string]any{
			{"account_id": x, "thread": thread},
			{"account_id": bsky, "thread": thread},
			{"account_id": th, "thread": thread},
		},
	})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID := r.JSON(t)["post_id"].(string)
	require.Equal(t, "completed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])
	for _, acc := range []struct {
		id string
		p  platforms.Platform
	}{{x, platforms.X}, {bsky, platforms.Bluesky}, {th, platforms.Threads}} {
		recs := h.App.Sim.Publications(acc.p)
		require.Len(t, recs, 3, acc.p)
		assert.Equal(t, []string{"First part", "Second part", "Third part"}, []string{recs[0].Text, recs[1].Text, recs[2].Text}, acc.p)
		assert.Empty(t, recs[0].ReplyTo, acc.p)
		assert.Equal(t, recs[0].ID, recs[1].ReplyTo, acc.p)
		assert.Equal(t, recs[1].ID, recs[2].ReplyTo, acc.p)

		pl := platformOf(t, h, postID, acc.id)
		assert.Equal(t, "published", pl["status"], acc.p)
		assert.Equal(t, recs[0].ID, pl["platform_post_id"], acc.p)
		parts := pl["thread"].([]any)
		require.Len(t, parts, 2, acc.p)
		for i, part := range parts {
			part := part.(map[string]any)
			assert.Equal(t, recs[i+1].ID, part["platform_post_id"], acc.p)
			assert.NotEmpty(t, part["platform_post_url"], acc.p)
			assert.Equal(t, recs[i+1].Text, part["content"], acc.p)
		}
	}
	ev := h.Do("GET", "/v1/posts/"+postID+"/events", nil)
	require.Equal(t, 200, ev.Status, string(ev.Body))
	var named []string
	for _, e := range ev.JSON(t)["events"].([]any) {
		if e := e.(map[string]any); e["phase"] == "platform_part" && e["platform"] == "twitter_x" {
			named = append(named, e["message"].(string))
		}
	}
	assert.Equal(t, []string{"published part 1 of 3 to twitter_x", "published part 2 of 3 to twitter_x", "published part 3 of 3 to twitter_x: the thread is complete"}, named)
}

// waitSim waits until the simulator holds n records on p.
func waitSim(t *testing.T, h *apptest.Herald, p platforms.Platform, n int) []sim.Record {
	t.Helper()
	require.Eventually(t, func() bool { return len(h.App.Sim.Publications(p)) >= n }, 10*time.Second, 2*time.Millisecond)
	return h.App.Sim.Publications(p)
}

// stepBudget lets an X account make one call a second, so that a test can act on the network
// between two steps of a target; startStepped starts Herald with it, and X (whose rate headers
// Herald follows) saying the same.
var stepBudget = map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Second, Cost: 1}}}

func startStepped(t *testing.T) *apptest.Herald {
	h := apptest.Start(t, apptest.Options{Demo: true, Budgets: stepBudget})
	h.App.Sim.SetLimit(platforms.X, "tweets", sim.Limit{Count: 1, Window: time.Second})
	return h
}

// A first comment that fails leaves its post published, with the comment's failure in the post
// detail; publishing the post again makes only the comment, never the post.
func TestFailedFirstCommentKeepsThePostAndRetryMakesOnlyTheComment(t *testing.T) {
	t.Parallel()
	h := startStepped(t)
	x := h.Account(platforms.X).ID
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "The post", "platforms": []string{x},
		"targets": []map[string]any{{"account_id": x, "first_comment": map[string]any{"content": "The first comment"}}}})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID := r.JSON(t)["post_id"].(string)
	post := waitSim(t, h, platforms.X, 1)[0]
	// The comment waits for the account's budget. Its call fails with a 5xx (the outcome is
	// unknown: X may have made it), and so do the four reads that look for it.
	require.NoError(t, h.App.Sim.InjectFault(platforms.X, sim.FaultError5xx, 5))
	require.Equal(t, "completed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])

	pl := platformOf(t, h, postID, x)
	assert.Equal(t, "published", pl["status"])
	assert.Equal(t, post.ID, pl["platform_post_id"])
	fc := pl["first_comment"].(map[string]any)
	assert.Equal(t, "failed", fc["status"])
	assert.Contains(t, fc["error"], "outcome unknown")
	assert.Nil(t, fc["platform_comment_id"])
	assert.Len(t, h.App.Sim.Publications(platforms.X), 1, "no comment was made")

	again := h.Do("POST", "/v1/posts/"+postID+"/publish", nil)
	require.Equal(t, 202, again.Status, string(again.Body))
	require.Equal(t, "completed", h.WaitJob(again.JSON(t)["tracking_id"].(string))["status"])
	recs := h.App.Sim.Publications(platforms.X)
	require.Len(t, recs, 2, "the post once, the comment once")
	assert.Equal(t, post.ID, recs[0].ID)
	assert.Equal(t, "The first comment", recs[1].Text)
	assert.Equal(t, post.ID, recs[1].ReplyTo)
	pl = platformOf(t, h, postID, x)
	fc = pl["first_comment"].(map[string]any)
	assert.Equal(t, "published", fc["status"])
	assert.Equal(t, recs[1].ID, fc["platform_comment_id"])
	assert.Nil(t, fc["error"])
	assert.Equal(t, post.ID, pl["platform_post_id"])

	// Nothing is missing any more: a third publish is refused.
	assert.Equal(t, 400, h.Do("POST", "/v1/posts/"+postID+"/publish", nil).Status)
}

// A thread whose part fails fails its target and keeps what was published; publishing the post
// again resumes at the failed part, and every part is on the network once, in order.
func TestFailedThreadPartResumesOnRetry(t *testing.T) {
	t.Parallel()
	h := startStepped(t)
	x := h.Account(platforms.X).ID
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "One", "platforms": []string{x},
		"targets": []map[string]any{{"account_id": x, "thread": []map[string]any{{"content": "Two"}, {"content": "Three"}}}}})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID := r.JSON(t)["post_id"].(string)
	first := waitSim(t, h, platforms.X, 1)[0]
	require.NoError(t, h.App.Sim.InjectFault(platforms.X, sim.FaultError5xx, 5)) // the part's call and the four reads that look for it
	require.Equal(t, "failed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])

	pl := platformOf(t, h, postID, x)
	assert.Equal(t, "failed", pl["status"])
	assert.Contains(t, pl["error"], "part 2 of 3 of the thread failed")
	assert.Equal(t, first.ID, pl["platform_post_id"], "the post is on the network")
	for _, part := range pl["thread"].([]any) {
		assert.Nil(t, part.(map[string]any)["platform_post_id"])
	}

	again := h.Do("POST", "/v1/posts/"+postID+"/publish", nil)
	require.Equal(t, 202, again.Status, string(again.Body))
	require.Equal(t, "completed", h.WaitJob(again.JSON(t)["tracking_id"].(string))["status"])
	recs := h.App.Sim.Publications(platforms.X)
	require.Len(t, recs, 3)
	assert.Equal(t, []string{"One", "Two", "Three"}, []string{recs[0].Text, recs[1].Text, recs[2].Text})
	assert.Equal(t, []string{"", recs[0].ID, recs[1].ID}, []string{recs[0].ReplyTo, recs[1].ReplyTo, recs[2].ReplyTo})
	pl = platformOf(t, h, postID, x)
	assert.Equal(t, "published", pl["status"])
	assert.Equal(t, first.ID, pl["platform_post_id"])
	parts := pl["thread"].([]any)
	assert.Equal(t, recs[1].ID, parts[0].(map[string]any)["platform_post_id"])
	assert.Equal(t, recs[2].ID, parts[1].(map[string]any)["platform_post_id"])
}

// A first comment goes out on LinkedIn, Instagram, Facebook and YouTube as the account's comment
// on its new post (and on X, Bluesky and Threads as its reply), each recorded by the network on
// the post, with its id in the post detail.
func TestFirstCommentsOnEveryNetworkThatTakesThem(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	photo := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
	video := h.UploadMedia("clip.mp4", "video/mp4", apptest.MP4File)
	nets := []platforms.Platform{platforms.LinkedIn, platforms.Instagram, platforms.Facebook, platforms.YouTube, platforms.X, platforms.Bluesky, platforms.Threads}
	var ids []string
	var targets []map[string]any
	for _, p := range nets {
		id := h.Account(p).ID
		ids = append(ids, id)
		tg := map[string]any{"account_id": id, "first_comment": map[string]any{"content": "First comment on " + p.Name()}}
		switch p {
		case platforms.Instagram:
			tg["media"] = []string{photo}
		case platforms.YouTube:
			tg["media"] = []string{video}
			tg["options"] = map[string]any{"title": "A video"}
		}
		targets = append(targets, tg)
	}
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "A post with a first comment", "platforms": ids, "targets": targets})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID := r.JSON(t)["post_id"].(string)
	job := h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, "completed", job["status"], job)
	for i, p := range nets {
		pl := platformOf(t, h, postID, ids[i])
		require.Equal(t, "published", pl["status"], "%s: %v", p, pl["error"])
		fc := pl["first_comment"].(map[string]any)
		require.Equal(t, "published", fc["status"], "%s: %v", p, fc["error"])
		var comment, post *sim.Record
		for _, rec := range h.App.Sim.Publications(p) {
			switch {
			case rec.ID == pl["platform_post_id"]:
				post = &rec
			case rec.ID == fc["platform_comment_id"]:
				comment = &rec
			}
		}
		require.NotNil(t, post, p)
		require.NotNil(t, comment, p)
		assert.Equal(t, "First comment on "+p.Name(), comment.Text, p)
		if p.HasThreads() {
			assert.Equal(t, post.ID, comment.ReplyTo, "%s: the comment is the account's reply", p)
		} else {
			assert.Equal(t, post.ID, comment.CommentOn, "%s: the comment is on the post", p)
		}
		assert.Len(t, h.App.Sim.Publications(p), 2, "%s: the post and its comment, once each", p)
	}
}
