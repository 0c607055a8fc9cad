package sim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// admin calls the admin API of the simulator behind e.
func (e *xTestEnv) admin(t *testing.T, method, path string, body any) xTestResp {
	t.Helper()
	root := e.base[:strings.Index(e.base[len("http://"):], "/")+len("http://")]
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	return e.do(t, method, root+path, "", "application/json", raw)
}

// xLivePost publishes a text post on X for a new account and returns the account and post id.
func xLivePost(t *testing.T, e *xTestEnv, handle, text string) (platforms.Credentials, string) {
	t.Helper()
	c, err := e.sim.NewAccount(platforms.X, handle)
	require.NoError(t, err)
	r := e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", []byte(`{"text":"`+text+`"}`))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	return c, r.json(t)["data"].(map[string]any)["id"].(string)
}

func TestLiveAdminAPI(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	acct, post := xLivePost(t, e, "alice", "hello")

	pubs := e.admin(t, http.MethodGet, "/_sim/publications?platform=twitter_x", nil).json(t)["data"].([]any)
	require.Len(t, pubs, 1)
	require.Equal(t, post, pubs[0].(map[string]any)["id"])
	require.Equal(t, acct.UserID, pubs[0].(map[string]any)["account"])

	// Comments.
	r := e.admin(t, http.MethodPost, "/_sim/comments", map[string]string{"platform": "twitter_x", "post_id": post, "text": "nice", "author": "bob"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	comment := r.json(t)["id"].(string)
	require.NotEmpty(t, comment)
	for _, bad := range []struct {
		body   map[string]string
		status int
	}{
		{map[string]string{"platform": "twitter_x", "post_id": "1", "text": "x", "author": "bob"}, http.StatusNotFound},
		{map[string]string{"platform": "twitter_x", "post_id": post, "parent_id": "1", "text": "x", "author": "bob"}, http.StatusNotFound},
		{map[string]string{"platform": "twitter_x", "post_id": post, "text": "", "author": "bob"}, http.StatusBadRequest},
		{map[string]string{"platform": "tiktok", "post_id": post, "text": "x", "author": "bob"}, http.StatusBadRequest},
		{map[string]string{"platform": "myspace", "post_id": post, "text": "x", "author": "bob"}, http.StatusBadRequest},
	} {
		r := e.admin(t, http.MethodPost, "/_sim/comments", bad.body)
		require.Equal(t, bad.status, r.status, "%v: %s", bad.body, r.body)
		require.NotEmpty(t, r.json(t)["error"])
	}
	listed := e.admin(t, http.MethodGet, "/_sim/comments?platform=twitter_x&post_id="+post, nil).json(t)["data"].([]any)
	require.Len(t, listed, 1)
	require.Equal(t, comment, listed[0].(map[string]any)["id"])
	require.Equal(t, "bob", listed[0].(map[string]any)["author"])

	// Metrics: a counter left out keeps its value; each comment counted.
	r = e.admin(t, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "twitter_x", "post_id": post, "views": 10, "likes": 2})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, map[string]any{"platform": "twitter_x", "post_id": post, "views": 10.0, "likes": 2.0, "comments": 1.0, "shares": 0.0}, r.json(t))
	r = e.admin(t, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "twitter_x", "post_id": post, "shares": 5})
	require.Equal(t, sim.Counters{Views: 10, Likes: 2, Comments: 1, Shares: 5}, e.sim.Metrics(platforms.X, post))
	require.Equal(t, http.StatusBadRequest, e.admin(t, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "twitter_x", "post_id": post, "views": -1}).status)
	require.Equal(t, http.StatusNotFound, e.admin(t, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "twitter_x", "post_id": "1", "views": 1}).status)
	require.Equal(t, http.StatusBadRequest, e.admin(t, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "linkedin", "post_id": post, "views": 1}).status)

	// DMs: one conversation per pair.
	r = e.admin(t, http.MethodPost, "/_sim/dms", map[string]string{"platform": "twitter_x", "account": acct.UserID, "peer": "bob", "text": "hi"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	conv := r.json(t)["conversation_id"].(string)
	r = e.admin(t, http.MethodPost, "/_sim/dms", map[string]string{"platform": "twitter_x", "account": acct.UserID, "peer": "bob", "text": "again"})
	require.Equal(t, conv, r.json(t)["conversation_id"])
	require.Equal(t, http.StatusBadRequest, e.admin(t, http.MethodPost, "/_sim/dms", map[string]string{"platform": "twitter_x", "account": acct.UserID, "text": "hi"}).status)
	require.Equal(t, http.StatusBadRequest, e.admin(t, http.MethodPost, "/_sim/dms", map[string]string{"platform": "youtube", "account": acct.UserID, "peer": "bob", "text": "hi"}).status)
	convs := e.sim.Conversations(platforms.X, acct.UserID)
	require.Len(t, convs, 1)
	require.Len(t, convs[0].Messages, 2)

	// Herald's reply and message, listed with their shapes.
	r = e.do(t, http.MethodPost, "/2/tweets", acct.AccessToken, "application/json", []byte(`{"text":"thanks","reply":{"in_reply_to_tweet_id":"`+comment+`"}}`))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	r = e.do(t, http.MethodPost, "/2/dm_conversations/"+conv+"/messages", acct.AccessToken, "application/json", []byte(`{"text":"hey bob"}`))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))

	replies := e.admin(t, http.MethodGet, "/_sim/replies", nil).json(t)["data"].([]any)
	require.Len(t, replies, 1)
	rep := replies[0].(map[string]any)
	for _, k := range []string{"id", "platform", "account", "post_id", "in_reply_to", "text", "media_sha256", "created_at"} {
		require.Contains(t, rep, k)
	}
	require.Equal(t, comment, rep["in_reply_to"])
	require.Equal(t, post, rep["post_id"])
	require.Equal(t, acct.UserID, rep["account"])
	require.Equal(t, []any{}, rep["media_sha256"])

	dms := e.admin(t, http.MethodGet, "/_sim/dms?platform=twitter_x", nil).json(t)["data"].([]any)
	require.Len(t, dms, 1)
	dm := dms[0].(map[string]any)
	for _, k := range []string{"id", "platform", "account", "conversation_id", "peer", "text", "media_sha256", "created_at"} {
		require.Contains(t, dm, k)
	}
	require.Equal(t, conv, dm["conversation_id"])
	require.Equal(t, "hey bob", dm["text"])
	require.Empty(t, e.admin(t, http.MethodGet, "/_sim/dms?platform=bluesky", nil).json(t)["data"])

	// Reset clears the live data.
	require.Equal(t, http.StatusOK, e.admin(t, http.MethodPost, "/_sim/reset", nil).status)
	require.Empty(t, e.sim.Replies(""))
	require.Empty(t, e.sim.DMs(""))
	require.Empty(t, e.sim.Conversations(platforms.X, acct.UserID))
	require.Equal(t, sim.Counters{}, e.sim.Metrics(platforms.X, post))
}

func TestXLiveEndpoints(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	acct, post := xLivePost(t, e, "alice", "root")
	comment, err := e.sim.AddComment(platforms.X, post, "first", "bob")
	require.NoError(t, err)

	// Lookup with a partial not-found error.
	r := e.do(t, http.MethodGet, "/2/tweets?ids="+post+",42&tweet.fields=public_metrics,conversation_id", acct.AccessToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, "5000", r.header.Get("x-rate-limit-limit"))
	require.NotEmpty(t, r.header.Get("x-rate-limit-reset"))
	body := r.json(t)
	require.Len(t, body["data"], 1)
	require.Equal(t, post, body["data"].([]any)[0].(map[string]any)["conversation_id"])
	require.EqualValues(t, 1, body["data"].([]any)[0].(map[string]any)["public_metrics"].(map[string]any)["reply_count"])
	require.Equal(t, "https://api.x.com/2/problems/resource-not-found", body["errors"].([]any)[0].(map[string]any)["type"])

	// Recent search covers the last 7 days.
	search := "/2/tweets/search/recent?" + url.Values{"query": {"conversation_id:" + post}, "tweet.fields": {"conversation_id,referenced_tweets"}, "expansions": {"author_id"}}.Encode()
	r = e.do(t, http.MethodGet, search, acct.AccessToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	body = r.json(t)
	require.Len(t, body["data"], 1)
	require.Equal(t, comment, body["data"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, "bob", body["includes"].(map[string]any)["users"].([]any)[0].(map[string]any)["username"])
	e.clock.Advance(8 * 24 * time.Hour)
	acct, err = e.sim.NewAccount(platforms.X, "alice")
	require.NoError(t, err)
	r = e.do(t, http.MethodGet, search, acct.AccessToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Nil(t, r.json(t)["data"])
	r = e.do(t, http.MethodGet, "/2/tweets/search/recent?query=from:bob", acct.AccessToken, "", nil)
	require.Equal(t, http.StatusBadRequest, r.status)

	// A reply to a post X does not show.
	r = e.do(t, http.MethodPost, "/2/tweets", acct.AccessToken, "application/json", []byte(`{"text":"hi","reply":{"in_reply_to_tweet_id":"12345"}}`))
	require.Equal(t, http.StatusForbidden, r.status)
	require.Empty(t, e.sim.Replies(platforms.X))

	// DMs: a conversation of others is not found; with a participant it is made.
	carol, err := e.sim.NewAccount(platforms.X, "carol")
	require.NoError(t, err)
	foreign, err := e.sim.AddDM(platforms.X, carol.UserID, "dave", "secret")
	require.NoError(t, err)
	r = e.do(t, http.MethodGet, "/2/dm_conversations/"+foreign+"/dm_events", acct.AccessToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	r = e.do(t, http.MethodPost, "/2/dm_conversations/"+foreign+"/messages", acct.AccessToken, "application/json", []byte(`{"text":"hi"}`))
	require.Equal(t, http.StatusNotFound, r.status)
	r = e.do(t, http.MethodPost, "/2/dm_conversations/with/"+carol.UserID+"/messages", acct.AccessToken, "application/json", []byte(`{"text":"hi carol"}`))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	conv := r.json(t)["data"].(map[string]any)["dm_conversation_id"].(string)
	require.Contains(t, conv, carol.UserID)
	require.Contains(t, conv, acct.UserID)
	r = e.do(t, http.MethodGet, "/2/dm_conversations/with/"+acct.UserID+"/dm_events?dm_event.fields=sender_id", carol.AccessToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	ev := r.json(t)["data"].([]any)[0].(map[string]any)
	require.Equal(t, "hi carol", ev["text"])
	require.Equal(t, acct.UserID, ev["sender_id"])

	// The DM send window: 15 per 15 minutes per user.
	e.sim.SetLimit(platforms.X, "dm_send", sim.Limit{Count: 1, Window: 15 * time.Minute})
	r = e.do(t, http.MethodPost, "/2/dm_conversations/"+conv+"/messages", acct.AccessToken, "application/json", []byte(`{"text":"one"}`))
	require.Equal(t, http.StatusCreated, r.status)
	r = e.do(t, http.MethodPost, "/2/dm_conversations/"+conv+"/messages", acct.AccessToken, "application/json", []byte(`{"text":"two"}`))
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "0", r.header.Get("x-rate-limit-remaining"))
}

func TestBlueskyLiveEndpoints(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Bluesky)
	s, r := bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")
	require.Equal(t, http.StatusOK, r.status)
	r = bskyPost(t, e, s, map[string]any{"text": "root"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	root := r.json(t)
	rootRef := map[string]any{"uri": root["uri"], "cid": root["cid"]}
	comment, err := e.sim.AddComment(platforms.Bluesky, root["uri"].(string), "a comment", "bob.bsky.social")
	require.NoError(t, err)
	c := e.sim.CommentsOf(platforms.Bluesky, root["uri"].(string))
	require.Len(t, c, 1)
	commentRef := map[string]any{"uri": comment, "cid": c[0].CID}

	// Strong references must match.
	bad := bskyPost(t, e, s, map[string]any{"text": "reply", "reply": map[string]any{"root": rootRef, "parent": map[string]any{"uri": comment, "cid": "bafywrong"}}})
	require.Equal(t, http.StatusBadRequest, bad.status)
	bad = bskyPost(t, e, s, map[string]any{"text": "reply", "reply": map[string]any{"root": commentRef, "parent": commentRef}})
	require.Equal(t, http.StatusBadRequest, bad.status, "the root must be a thread root")
	require.Empty(t, e.sim.Replies(platforms.Bluesky))
	ok2 := bskyPost(t, e, s, map[string]any{"text": "reply", "reply": map[string]any{"root": rootRef, "parent": commentRef}})
	require.Equal(t, http.StatusOK, ok2.status, string(ok2.body))
	require.Len(t, e.sim.Replies(platforms.Bluesky), 1)
	require.Len(t, e.sim.Publications(platforms.Bluesky), 1)

	// The thread nests the reply under the comment.
	r = e.do(t, http.MethodGet, "/xrpc/app.bsky.feed.getPostThread?uri="+url.QueryEscape(root["uri"].(string)), s.AccessJwt, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	thread := r.json(t)["thread"].(map[string]any)
	require.EqualValues(t, 2, thread["post"].(map[string]any)["replyCount"])
	first := thread["replies"].([]any)[0].(map[string]any)
	require.Equal(t, comment, first["post"].(map[string]any)["uri"])
	require.Equal(t, ok2.json(t)["uri"], first["replies"].([]any)[0].(map[string]any)["post"].(map[string]any)["uri"])
	r = e.do(t, http.MethodGet, "/xrpc/app.bsky.feed.getPostThread?uri="+url.QueryEscape("at://did:plc:x/app.bsky.feed.post/3zzz"), s.AccessJwt, "", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "NotFound", r.json(t)["error"])

	// Chat needs the proxy header.
	conv, err := e.sim.AddDM(platforms.Bluesky, s.DID, "bob.bsky.social", "yo")
	require.NoError(t, err)
	r = e.do(t, http.MethodGet, "/xrpc/chat.bsky.convo.getMessages?convoId="+conv, s.AccessJwt, "", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	r = e.do(t, http.MethodGet, "/xrpc/chat.bsky.convo.getMessages?convoId="+conv, s.AccessJwt, "", nil, "atproto-proxy", "did:web:api.bsky.chat#bsky_chat")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Len(t, r.json(t)["messages"], 1)
	r = e.do(t, http.MethodPost, "/xrpc/chat.bsky.convo.sendMessage", s.AccessJwt, "application/json",
		[]byte(`{"convoId":"`+conv+`","message":{"text":"pic","embed":{"$type":"app.bsky.embed.images","images":[]}}}`), "atproto-proxy", "did:web:api.bsky.chat#bsky_chat")
	require.Equal(t, http.StatusBadRequest, r.status, "messages are text only")
	require.Empty(t, e.sim.DMs(platforms.Bluesky))
}

func TestYouTubeLiveEndpoints(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.YouTube)
	acct, err := e.sim.NewAccount(platforms.YouTube, "alice")
	require.NoError(t, err)
	// A video, uploaded in one PUT.
	r := e.do(t, http.MethodPost, "/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status", acct.AccessToken, "application/json",
		[]byte(`{"snippet":{"title":"Clip"},"status":{"privacyStatus":"public"}}`), "X-Upload-Content-Length", "4", "X-Upload-Content-Type", "video/mp4")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = e.do(t, http.MethodPut, r.header.Get("Location"), acct.AccessToken, "video/mp4", []byte("abcd"))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	video := r.json(t)["id"].(string)

	top, err := e.sim.AddComment(platforms.YouTube, video, "top", "bob")
	require.NoError(t, err)
	reply, err := e.sim.AddCommentReply(platforms.YouTube, video, top, "a reply", "carol")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(reply, top+"."))

	// comments.insert needs a top-level parent and costs 50 units of the pool.
	e.sim.SetLimit(platforms.YouTube, sim.YouTubeBucketUnits, sim.Limit{Count: 50, Window: 25 * time.Hour})
	r = e.do(t, http.MethodPost, "/youtube/v3/comments?part=snippet", acct.AccessToken, "application/json", []byte(`{"snippet":{"parentId":"`+reply+`","textOriginal":"x"}}`))
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	e.sim.SetLimit(platforms.YouTube, sim.YouTubeBucketUnits, sim.Limit{Count: 50, Window: 25 * time.Hour})
	r = e.do(t, http.MethodPost, "/youtube/v3/comments?part=snippet", acct.AccessToken, "application/json", []byte(`{"snippet":{"parentId":"`+top+`","textOriginal":"thanks"}}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = e.do(t, http.MethodGet, "/youtube/v3/videos?part=statistics&id="+video, acct.AccessToken, "", nil)
	require.Equal(t, http.StatusForbidden, r.status, "the pool is spent")
	e.sim.SetLimit(platforms.YouTube, sim.YouTubeBucketUnits, sim.Limit{Count: 10000, Window: 25 * time.Hour})

	r = e.do(t, http.MethodGet, "/youtube/v3/videos?part=statistics&id="+video, acct.AccessToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	stats := r.json(t)["items"].([]any)[0].(map[string]any)["statistics"].(map[string]any)
	require.Equal(t, "3", stats["commentCount"])

	r = e.do(t, http.MethodGet, "/youtube/v3/commentThreads?part=snippet,replies&videoId="+video, acct.AccessToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	items := r.json(t)["items"].([]any)
	require.Len(t, items, 1)
	require.EqualValues(t, 2, items[0].(map[string]any)["snippet"].(map[string]any)["totalReplyCount"])
	r = e.do(t, http.MethodGet, "/youtube/v3/commentThreads?part=snippet&videoId=nosuch", acct.AccessToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	r = e.do(t, http.MethodPost, "/youtube/v3/comments?part=snippet", acct.AccessToken, "application/json", []byte(`{"snippet":{"parentId":"Ugnosuch","textOriginal":"x"}}`))
	require.Equal(t, http.StatusNotFound, r.status)
}

func TestPinterestAnalyticsDates(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Pinterest)
	acct, err := e.sim.NewAccount(platforms.Pinterest, "alice")
	require.NoError(t, err)
	r := e.do(t, http.MethodGet, "/v5/pins/1/analytics?start_date=2026-11-01&end_date=2026-11-20&metric_types=IMPRESSION", acct.AccessToken, "", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	for _, q := range []string{
		"start_date=2026-08-01&end_date=2026-11-20&metric_types=IMPRESSION", // more than 90 days back
		"start_date=2026-11-20&end_date=2026-11-01&metric_types=IMPRESSION", // reversed
		"start_date=2026-11-01&end_date=2026-11-20&metric_types=LIKES",      // unknown metric
		"end_date=2026-11-20&metric_types=IMPRESSION",
	} {
		r := e.do(t, http.MethodGet, "/v5/pins/1/analytics?"+q, acct.AccessToken, "", nil)
		require.Equal(t, http.StatusBadRequest, r.status, q)
	}
}
