package live_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// inboxCommentIDs lists the comment ids of the user's inbox on platform.
func inboxCommentIDs(h *apptest.Herald, platform platforms.Platform) []string {
	h.T.Helper()
	r := h.Do("GET", "/v1/inbox/comments?platform="+string(platform), nil)
	require.Equal(h.T, 200, r.Status, string(r.Body))
	ids := []string{}
	for _, th := range r.JSON(h.T)["threads"].([]any) {
		ids = append(ids, th.(map[string]any)["comment"].(map[string]any)["id"].(string))
	}
	return ids
}

// Likes and hides of comments through the accounts, against the simulated networks.
func TestCommentLikeAndHideAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky, yt := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.YouTube)
	// Bluesky's comment ids are at:// URIs; its likes and hides are proven by the adapter tests
	// (platforms/bluesky) against the simulator.
	text := h.PublishAndWait("Engage!", nil, x, bsky)
	clip := h.PublishAndWait("Engage video", []string{h.UploadMedia("clip.mp4", "video/mp4", apptest.MP4File)}, yt)
	other := h.PublishAndWait("Another one", nil, x, bsky)
	xc, err := s.AddComment(platforms.X, apptest.Target(text, platforms.X), "Love it", "ann")
	require.NoError(t, err)
	yc, err := s.AddComment(platforms.YouTube, apptest.Target(clip, platforms.YouTube), "Buy followers", "spammer")
	require.NoError(t, err)
	foreign, err := s.AddComment(platforms.X, apptest.Target(other, platforms.X), "elsewhere", "bob")
	require.NoError(t, err)
	xPub, yPub := apptest.PublicationID(text, platforms.X), apptest.PublicationID(clip, platforms.YouTube)

	// Likes.
	r := h.Do("POST", "/v1/inbox/comments/"+xc+"/like", map[string]any{"publication_id": xPub})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"ok": true, "liked": true, "platform": "twitter_x"}, r.JSON(t))
	likes := s.Likes(platforms.X)
	require.Len(t, likes, 1)
	require.Equal(t, sim.Like{Platform: "twitter_x", Account: x.NetworkUserID, PostID: xc, CreatedAt: likes[0].CreatedAt}, likes[0])

	// Unliking a comment never liked: refused, nothing changed.
	x2, err := s.AddComment(platforms.X, apptest.Target(text, platforms.X), "Second", "bob")
	require.NoError(t, err)
	r = h.Do("POST", "/v1/inbox/comments/"+x2+"/like", map[string]any{"publication_id": xPub, "unlike": true})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "has not liked comment "+x2+"; nothing was changed")
	require.Len(t, s.Likes(platforms.X), 1, "nothing changed")
	// A post id names every publication of the post; an unlike removes the like.
	r = h.Do("POST", "/v1/inbox/comments/"+x2+"/like", map[string]any{"publication_id": text.ID})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Len(t, s.Likes(platforms.X), 2)
	r = h.Do("POST", "/v1/inbox/comments/"+x2+"/like", map[string]any{"publication_id": xPub, "unlike": true})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"ok": true, "liked": false, "platform": "twitter_x"}, r.JSON(t))
	require.Len(t, s.Likes(platforms.X), 1)

	r = h.Do("POST", "/v1/inbox/comments/"+yc+"/like", map[string]any{"publication_id": yPub})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "only on twitter_x, bluesky")
	require.Contains(t, r.ErrorMessage(t), "YouTube's API has no call to like a comment")

	// Hides: the inbox is cached, a hide makes it stale.
	require.Contains(t, inboxCommentIDs(h, platforms.YouTube), yc)
	for _, c := range []struct {
		id, pub, platform string
	}{{xc, xPub, "twitter_x"}, {yc, yPub, "youtube"}} {
		r = h.Do("POST", "/v1/inbox/comments/"+c.id+"/hide", map[string]any{"publication_id": c.pub})
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, map[string]any{"ok": true, "hidden": true, "platform": c.platform}, r.JSON(t))
	}
	require.Equal(t, []sim.Hidden{{Platform: "twitter_x", PostID: apptest.Target(text, platforms.X), CommentID: xc}}, s.HiddenComments(platforms.X))
	require.Equal(t, []sim.Hidden{{Platform: "youtube", PostID: apptest.Target(clip, platforms.YouTube), CommentID: yc}}, s.HiddenComments(platforms.YouTube))
	require.NotContains(t, inboxCommentIDs(h, platforms.YouTube), yc, "YouTube lists only published comments: the cached page went stale")

	r = h.Do("POST", "/v1/inbox/comments/"+yc+"/hide", map[string]any{"publication_id": yPub, "unhide": true})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"ok": true, "hidden": false, "platform": "youtube"}, r.JSON(t))
	require.Empty(t, s.HiddenComments(platforms.YouTube))
	require.Contains(t, inboxCommentIDs(h, platforms.YouTube), yc)

	// A comment of another publication: refused, nothing sent.
	for _, action := range []string{"like", "hide"} {
		r = h.Do("POST", "/v1/inbox/comments/"+foreign+"/"+action, map[string]any{"publication_id": xPub})
		require.Equal(t, 400, r.Status, string(r.Body))
		require.Equal(t, "validation_error", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), "is not a comment of publication "+xPub+"; nothing was sent")
	}
	require.Len(t, s.Likes(platforms.X), 1, "nothing was liked")
	require.Len(t, s.HiddenComments(platforms.X), 1, "nothing was hidden")

	// The reply answers with the network's id.
	r = h.Do("POST", "/v1/inbox/comments/"+xc+"/reply", map[string]any{"publication_id": xPub, "text": "Thanks!"})
	require.Equal(t, 200, r.Status, string(r.Body))
	replies := s.Replies(platforms.X)
	require.Len(t, replies, 1)
	require.Equal(t, map[string]any{"ok": true, "reply_id": replies[0].ID, "platform": "twitter_x"}, r.JSON(t))
}

func TestCommentLikeAndHideBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, li := h.Account(platforms.X), h.Account(platforms.LinkedIn)
	text := h.PublishAndWait("Hello", nil, x)
	linked := h.PublishAndWait("Hello LinkedIn", nil, li)
	xc, err := s.AddComment(platforms.X, apptest.Target(text, platforms.X), "hi", "ann")
	require.NoError(t, err)
	xPub := apptest.PublicationID(text, platforms.X)
	other, _ := h.NewUser("other@example.com", "pro")
	theirs := h.NewAccount(other.ID, "twitter_x")
	theirPost := publication(h, theirs, "777", time.Now().Add(-time.Hour))

	for _, action := range []string{"like", "hide"} {
		undo := map[string]string{"like": "unlike", "hide": "unhide"}[action]
		bad := []struct {
			path string
			body any
			want string
		}{
			{"/v1/inbox/comments/" + xc + "/" + action, map[string]any{}, "publication_id: Required"},
			{"/v1/inbox/comments/" + xc + "/" + action, map[string]any{"publication_id": "tw-1"}, "publication_id: Invalid uuid"},
			{"/v1/inbox/comments/" + xc + "/" + action, map[string]any{"publication_id": 7}, "publication_id: Expected string"},
			{"/v1/inbox/comments/" + xc + "/" + action, map[string]any{"publication_id": xPub, undo: "yes"}, undo + ": Expected boolean"},
			{"/v1/inbox/comments/" + xc + "/" + action, "nope", "Expected object"},
			{"/v1/inbox/comments/" + strings.Repeat("9", 513) + "/" + action, map[string]any{"publication_id": xPub}, "commentId: too long"},
			{"/v1/inbox/comments/" + xc + "/" + action, map[string]any{"publication_id": apptest.PublicationID(linked, platforms.LinkedIn)}, "not a publication on a network with a live comments inbox (youtube, twitter_x, bluesky)"},
			{"/v1/inbox/comments/" + xc + "/" + action, map[string]any{"publication_id": theirPost}, "is not a publication of yours"},
			{"/v1/inbox/comments/123456789/" + action, map[string]any{"publication_id": xPub}, "comment 123456789 is not a comment of publication"},
		}
		for _, c := range bad {
			r := h.Do("POST", c.path, c.body)
			require.Equal(t, 400, r.Status, "%s %v: %s", c.path, c.body, r.Body)
			require.Equal(t, "validation_error", r.ErrorCode(t))
			require.Contains(t, r.ErrorMessage(t), c.want, "%s %v", c.path, c.body)
		}
	}
	require.Empty(t, s.Likes(""), "nothing was liked")
	require.Empty(t, s.HiddenComments(""), "nothing was hidden")
}

// Direct message conversations: listing, paging, one conversation, and the reply's id.
func TestInboxDMsAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky, tt := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.TikTok)
	script := `<script>alert("hi")</script>`
	xConv, err := s.AddDM(platforms.X, x.NetworkUserID, "dana", script)
	require.NoError(t, err)
	bConv, err := s.AddDM(platforms.Bluesky, bsky.NetworkUserID, "erin.bsky.social", "Hello from Erin")
	require.NoError(t, err)
	carol, err := s.NewAccount(platforms.X, "carol")
	require.NoError(t, err)
	carolConv, err := s.AddDM(platforms.X, carol.UserID, "frank", "not yours")
	require.NoError(t, err)

	// The reply answers with the network's message id.
	r := h.Do("POST", "/v1/inbox/dms/"+xConv+"/reply", map[string]any{"account_id": x.ID, "text": "Hi Dana"})
	require.Equal(t, 200, r.Status, string(r.Body))
	dms := s.DMs(platforms.X)
	require.Len(t, dms, 1)
	require.Equal(t, map[string]any{"ok": true, "message_id": dms[0].ID, "platform": "twitter_x"}, r.JSON(t))

	r = h.Do("GET", "/v1/inbox/dms", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"), r.Header.Get("Content-Type"))
	page := r.JSON(t)
	require.Equal(t, false, page["has_more"])
	require.Empty(t, page["next_before"])
	require.Equal(t, false, page["sampled"])
	require.Equal(t, false, page["partial"])
	convs := page["conversations"].([]any)
	require.Len(t, convs, 2)
	first, second := convs[0].(map[string]any), convs[1].(map[string]any)
	require.Equal(t, xConv, first["id"], "the newest message first")
	require.Equal(t, x.ID, first["account_id"])
	require.Equal(t, "twitter_x", first["platform"])
	require.Equal(t, "dana", first["peer"].(map[string]any)["username"])
	last := first["last_message"].(map[string]any)
	require.Equal(t, "Hi Dana", last["text"])
	require.Equal(t, true, last["from_me"])
	require.Equal(t, dms[0].ID, last["id"])
	require.Equal(t, bConv, second["id"])
	require.Equal(t, "erin.bsky.social", second["peer"].(map[string]any)["username"])
	require.Equal(t, false, second["last_message"].(map[string]any)["from_me"])

	// Paging with the signed cursor.
	r = h.Do("GET", "/v1/inbox/dms?limit=1", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	page = r.JSON(t)
	require.Len(t, page["conversations"].([]any), 1)
	require.Equal(t, true, page["has_more"])
	cursor := page["next_before"].(string)
	r = h.Do("GET", "/v1/inbox/dms?limit=1&before="+url.QueryEscape(cursor), nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	page = r.JSON(t)
	require.Equal(t, bConv, page["conversations"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, false, page["has_more"])
	require.Empty(t, page["next_before"])

	// One conversation: its messages newest first; the sender's text verbatim.
	r = h.Do("GET", "/v1/inbox/dms/"+xConv+"?account_id="+x.ID, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"))
	thread := r.JSON(t)
	msgs := thread["messages"].([]any)
	require.Len(t, msgs, 2)
	require.Equal(t, "Hi Dana", msgs[0].(map[string]any)["text"])
	require.Equal(t, true, msgs[0].(map[string]any)["from_me"])
	require.Equal(t, script, msgs[1].(map[string]any)["text"], "data, never markup: the JSON carries the text as it is")
	require.Equal(t, false, msgs[1].(map[string]any)["from_me"])
	conv := thread["conversation"].(map[string]any)
	require.Equal(t, xConv, conv["id"])
	require.Equal(t, x.ID, conv["account_id"])
	require.NotEmpty(t, conv["peer"].(map[string]any)["id"])
	require.NotEqual(t, x.NetworkUserID, conv["peer"].(map[string]any)["id"])

	// Bad input, each a 400 with nothing read that is not the caller's.
	other, _ := h.NewUser("dm-other@example.com", "pro")
	theirs := h.NewAccount(other.ID, "twitter_x")
	bad := []struct {
		path, want string
	}{
		{"/v1/inbox/dms/" + carolConv + "?account_id=" + x.ID, "conversation " + carolConv + " does not belong to account " + x.ID},
		{"/v1/inbox/dms/" + xConv + "?account_id=" + bsky.ID, "does not belong to account " + bsky.ID},
		{"/v1/inbox/dms/" + xConv + "?account_id=" + theirs.ID, "does not exist or is not yours"},
		{"/v1/inbox/dms/" + xConv + "?account_id=" + tt.ID, "direct messages are live only on twitter_x, bluesky"},
		{"/v1/inbox/dms/" + xConv, "account_id: Required"},
		{"/v1/inbox/dms/" + xConv + "?account_id=nope", "account_id: Invalid uuid"},
		{"/v1/inbox/dms/" + strings.Repeat("1", 513) + "?account_id=" + x.ID, "conversationId: too long"},
		{"/v1/inbox/dms/" + xConv + "?account_id=" + x.ID + "&peer_id=" + strings.Repeat("1", 513), "peer_id: must be"},
		{"/v1/inbox/dms?limit=0", "limit"},
		{"/v1/inbox/dms?limit=25", "limit"},
		{"/v1/inbox/dms?platform=tiktok", "tiktok has no live direct messages (live: twitter_x, bluesky)"},
		{"/v1/inbox/dms?platform=myspace", "platform: must be one of"},
		{"/v1/inbox/dms?account_id=" + tt.ID, "has no live direct messages (live: twitter_x, bluesky)"},
		{"/v1/inbox/dms?account_id=" + theirs.ID, "does not exist or is not yours"},
		{"/v1/inbox/dms?account_id=" + x.ID + "&platform=bluesky", "is on twitter_x, not bluesky"},
		{"/v1/inbox/dms?before=garbage", "before: invalid cursor"},
		{"/v1/inbox/dms?before=" + url.QueryEscape(cursor[:len(cursor)-2]+"AA"), "before: invalid cursor"},
		{"/v1/inbox/dms?platform=twitter_x&limit=1&before=" + url.QueryEscape(cursor), "the cursor belongs to another query"},
		{"/v1/inbox/comments?before=" + url.QueryEscape(cursor), "before: invalid cursor"},
	}
	for _, c := range bad {
		r := h.Do("GET", c.path, nil)
		require.Equal(t, 400, r.Status, "%s: %s", c.path, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), c.want, c.path)
	}
	// Another user cannot use the cursor.
	_, otherKey := h.NewUser("dm-third@example.com", "pro")
	r = h.DoKey(otherKey, "GET", "/v1/inbox/dms?limit=1&before="+url.QueryEscape(cursor), nil, nil)
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "before: invalid cursor")
	require.Len(t, s.DMs(""), 1, "nothing more was sent")
}
