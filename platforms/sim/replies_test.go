package sim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// On X a reply to the account's own post is a post of the account (reply_to, on its timeline,
// counted against its posts limit), while a reply to another account's post stays a comment
// reply; the admin API shows reply_to.
func TestXSelfReplyIsAPost(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	e.sim.SetLimit(platforms.X, "tweets", sim.Limit{Count: 2, Window: 15 * time.Minute})
	alice, post := xLivePost(t, e, "alice", "hello")
	bob, other := xLivePost(t, e, "bob", "bob's")

	reply := func(c platforms.Credentials, to, text string) xTestResp {
		return e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", []byte(`{"text":"`+text+`","reply":{"in_reply_to_tweet_id":"`+to+`"}}`))
	}
	r := reply(alice, post, "part two")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	part := r.json(t)["data"].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusCreated, reply(bob, post, "nice").status)
	require.Equal(t, http.StatusTooManyRequests, reply(alice, other, "hi bob").status, "replies spend the posts limit")

	pubs := e.admin(t, http.MethodGet, "/_sim/publications?platform=twitter_x", nil).json(t)["data"].([]any)
	require.Len(t, pubs, 3, "alice's post and part, bob's post; bob's reply is a comment")
	require.Equal(t, post, pubs[2].(map[string]any)["reply_to"])
	require.NotContains(t, pubs[0].(map[string]any), "reply_to")
	require.Len(t, e.sim.Replies(platforms.X), 1, "bob's reply")

	q := url.Values{"tweet.fields": {"referenced_tweets,conversation_id"}, "max_results": {"10"}}
	tl := e.do(t, http.MethodGet, "/2/users/"+alice.UserID+"/tweets?"+q.Encode(), alice.AccessToken, "", nil).json(t)["data"].([]any)
	require.Len(t, tl, 2)
	first := tl[0].(map[string]any)
	require.Equal(t, part, first["id"])
	require.Equal(t, post, first["conversation_id"])
	require.Equal(t, []any{map[string]any{"type": "replied_to", "id": post}}, first["referenced_tweets"])
	q.Set("exclude", "replies")
	tl = e.do(t, http.MethodGet, "/2/users/"+alice.UserID+"/tweets?"+q.Encode(), alice.AccessToken, "", nil).json(t)["data"].([]any)
	require.Len(t, tl, 1)
	require.Equal(t, post, tl[0].(map[string]any)["id"])
}

// LinkedIn comments: only the member as actor, on a post that exists, with text of at most 1,250
// characters; a comment is recorded with comment_on and is not one of the member's posts.
func TestLinkedInComments(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.LinkedIn)
	c, err := e.sim.NewAccount(platforms.LinkedIn, "alice")
	require.NoError(t, err)
	author := "urn:li:person:" + c.UserID
	r := liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "hello", nil))
	require.Equal(t, http.StatusCreated, r.status)
	post := r.header.Get("x-restli-id")
	path := "/rest/socialActions/" + url.QueryEscape(post) + "/comments"
	comment := func(actor, object, text string) xTestResp {
		b, _ := json.Marshal(map[string]any{"actor": actor, "object": object, "message": map[string]string{"text": text}})
		return liREST(t, e, http.MethodPost, path, c.AccessToken, b)
	}

	require.Equal(t, http.StatusForbidden, comment("urn:li:person:someone", post, "hi").status)
	require.Equal(t, http.StatusUnprocessableEntity, comment(author, "urn:li:share:1", "hi").status)
	require.Equal(t, http.StatusUnprocessableEntity, comment(author, post, strings.Repeat("a", 1251)).status)
	b, _ := json.Marshal(map[string]any{"actor": author, "object": "urn:li:share:1", "message": map[string]string{"text": "hi"}})
	require.Equal(t, http.StatusNotFound, liREST(t, e, http.MethodPost, "/rest/socialActions/urn%3Ali%3Ashare%3A1/comments", c.AccessToken, b).status)
	r = comment(author, post, "first comment")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	urn := r.json(t)["commentUrn"].(string)
	require.Equal(t, "urn:li:comment:("+post+","+r.header.Get("x-restli-id")+")", urn)

	list := liREST(t, e, http.MethodGet, path, c.AccessToken, nil).json(t)["elements"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, "first comment", list[0].(map[string]any)["message"].(map[string]any)["text"])
	pubs := e.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 2)
	require.Equal(t, sim.Record{ID: urn, Platform: "linkedin", Account: c.UserID, Text: "first comment", MediaSHA256: []string{}, CreatedAt: pubs[1].CreatedAt, CommentOn: post}, pubs[1])
	posts := liREST(t, e, http.MethodGet, "/rest/posts?q=author&author="+url.QueryEscape(author), c.AccessToken, nil).json(t)["elements"].([]any)
	require.Len(t, posts, 1, "a comment is not a post")
	last, _ := e.sim.LastPublication(platforms.LinkedIn, c.UserID)
	require.Equal(t, post, last.ID, "nor the member's newest publication")
}

// Graph comments: Instagram takes comments on the account's own media only, Facebook on any post
// it knows; both list them newest first and leave them out of the account's posts.
func TestGraphComments(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Facebook)
	page, err := e.sim.NewAccount(platforms.Facebook, "acme")
	require.NoError(t, err)
	r := e.do(t, http.MethodPost, "/v25.0/"+page.UserID+"/feed", page.AccessToken, "application/x-www-form-urlencoded", []byte("message=hello"))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	post := r.json(t)["id"].(string)

	r = e.do(t, http.MethodPost, "/v25.0/"+post+"/comments", page.AccessToken, "application/x-www-form-urlencoded", []byte("message="))
	require.Equal(t, http.StatusBadRequest, r.status)
	r = e.do(t, http.MethodPost, "/v25.0/123/comments", page.AccessToken, "application/x-www-form-urlencoded", []byte("message=hi"))
	require.Equal(t, http.StatusBadRequest, r.status)
	for _, text := range []string{"one", "two"} {
		r = e.do(t, http.MethodPost, "/v25.0/"+post+"/comments", page.AccessToken, "application/x-www-form-urlencoded", []byte("message="+text))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		e.clock.Advance(time.Second)
	}
	id := r.json(t)["id"].(string)
	require.True(t, strings.HasPrefix(id, strings.SplitN(post, "_", 2)[1]+"_"), "a Facebook comment id is {post}_{comment}: %s", id)
	list := e.do(t, http.MethodGet, "/v25.0/"+post+"/comments", page.AccessToken, "", nil).json(t)["data"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, "two", list[0].(map[string]any)["message"])
	require.Equal(t, page.UserID, list[0].(map[string]any)["from"].(map[string]any)["id"])
	r = e.do(t, http.MethodGet, "/v25.0/"+post+"/comments?fields=id,message,username", page.AccessToken, "", nil)
	require.Equal(t, http.StatusBadRequest, r.status, "a Facebook comment has no username")
	feed := e.do(t, http.MethodGet, "/v25.0/"+page.UserID+"/feed", page.AccessToken, "", nil).json(t)["data"].([]any)
	require.Len(t, feed, 1)

	ig := newXTestEnv(t, platforms.Instagram)
	alice, err := ig.sim.NewAccount(platforms.Instagram, "alice")
	require.NoError(t, err)
	bob, err := ig.sim.NewAccount(platforms.Instagram, "bob")
	require.NoError(t, err)
	rec := igPublish(t, ig, alice)
	r = ig.do(t, http.MethodPost, "/v25.0/"+rec+"/comments", bob.AccessToken, "application/x-www-form-urlencoded", []byte("message=hi"))
	require.Equal(t, http.StatusBadRequest, r.status, "not bob's media")
	r = ig.do(t, http.MethodPost, "/v25.0/"+rec+"/comments", alice.AccessToken, "application/x-www-form-urlencoded", []byte("message=hi"))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	list = ig.do(t, http.MethodGet, "/v25.0/"+rec+"/comments", alice.AccessToken, "", nil).json(t)["data"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, "hi", list[0].(map[string]any)["text"])
	require.Equal(t, "alice", list[0].(map[string]any)["username"])
}

// igPublish publishes a photo for c through the container flow and returns the media id.
func igPublish(t *testing.T, e *xTestEnv, c platforms.Credentials) string {
	t.Helper()
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("\xff\xd8\xffimage")) }))
	t.Cleanup(files.Close)
	form := url.Values{"image_url": {files.URL + "/a.jpg"}, "caption": {"hi"}}
	r := e.do(t, http.MethodPost, "/v25.0/"+c.UserID+"/media", c.AccessToken, "application/x-www-form-urlencoded", []byte(form.Encode()))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	e.clock.Advance(time.Minute)
	r = e.do(t, http.MethodPost, "/v25.0/"+c.UserID+"/media_publish", c.AccessToken, "application/x-www-form-urlencoded", []byte("creation_id="+r.json(t)["id"].(string)))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	return r.json(t)["id"].(string)
}
