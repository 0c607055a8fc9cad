package x

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

// admin calls the simulator's admin API and decodes the answer into out; it returns the status.
func admin(t *testing.T, srv *sim.Server, method, path string, body, out any) int {
	return platformstest.Admin(t, srv, method, path, body, out)
}

func publish(t *testing.T, b *testBundle, text string) string {
	t.Helper()
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text})
	require.NoError(t, err)
	return res.Publication.ID
}

func addComment(t *testing.T, b *testBundle, postID, parentID, author, text string) string {
	t.Helper()
	return platformstest.AddComment(t, b.sim, platforms.X, postID, parentID, author, text)
}

func notFoundErr(t *testing.T, err error) {
	t.Helper()
	platformstest.NotFound(t, err, platforms.X)
}

func TestMetricsReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "counted")
	other := publish(t, b, "also counted")

	var set map[string]any
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodPost, "/_sim/metrics",
		map[string]any{"platform": "twitter_x", "post_id": id, "views": 1234, "likes": 56, "comments": 7, "shares": 8}, &set))
	require.EqualValues(t, 1234, set["views"])

	m, err := b.a.Metrics(ctx, b.creds, id)
	require.NoError(t, err)
	require.NotNil(t, m.Views)
	require.NotNil(t, m.Likes)
	require.NotNil(t, m.Comments)
	require.NotNil(t, m.Shares)
	require.Equal(t, int64(1234), *m.Views)
	require.Equal(t, int64(56), *m.Likes)
	require.Equal(t, int64(7), *m.Comments)
	require.Equal(t, int64(8), *m.Shares)

	// A counter left out keeps its value.
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "twitter_x", "post_id": id, "likes": 60}, nil))
	all, err := b.a.BatchMetrics(ctx, b.creds, []string{id, other, "99999"})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, int64(60), *all[id].Likes)
	require.Equal(t, int64(1234), *all[id].Views)
	require.Equal(t, int64(0), *all[other].Views)

	_, err = b.a.Metrics(ctx, b.creds, "99999")
	notFoundErr(t, err)
	_, err = b.a.Metrics(ctx, b.creds, "not-an-id")
	notFoundErr(t, err)

	require.Equal(t, http.StatusNotFound, admin(t, b.sim, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "twitter_x", "post_id": "424242", "views": 1}, nil))
	require.Equal(t, http.StatusBadRequest, admin(t, b.sim, http.MethodPost, "/_sim/metrics", map[string]any{"platform": "linkedin", "post_id": id, "views": 1}, nil))
}

func TestCommentsListed(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "talk to me")
	first := addComment(t, b, id, "", "bob", "first & best")
	second := addComment(t, b, id, "", "carol", "second")
	answer := addComment(t, b, id, first, "dave", "answering bob")

	got, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, got, 3)
	byID := map[string]platforms.Comment{}
	for _, c := range got {
		byID[c.ID] = c
		require.Equal(t, id, c.PublicationID)
		require.False(t, c.ByAccount)
	}
	require.Equal(t, "first & best", byID[first].Text)
	require.Equal(t, "bob", byID[first].Author)
	require.Empty(t, byID[first].ParentID)
	require.Empty(t, byID[second].ParentID)
	require.Equal(t, first, byID[answer].ParentID)
	require.Equal(t, "dave", byID[answer].Author)
	for i := 1; i < len(got); i++ {
		require.False(t, got[i].CreatedAt.After(got[i-1].CreatedAt), "newest first")
	}

	// Each comment counted on the post.
	m, err := b.a.Metrics(ctx, b.creds, id)
	require.NoError(t, err)
	require.Equal(t, int64(3), *m.Comments)

	// A post without comments (or unknown to X) has none.
	none, err := b.a.Comments(ctx, b.creds, publish(t, b, "quiet"))
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = b.a.Comments(ctx, b.creds, "nope")
	notFoundErr(t, err)

	require.Equal(t, http.StatusNotFound, admin(t, b.sim, http.MethodPost, "/_sim/comments",
		map[string]string{"platform": "twitter_x", "post_id": "777", "text": "x", "author": "bob"}, nil))
	require.Equal(t, http.StatusNotFound, admin(t, b.sim, http.MethodPost, "/_sim/comments",
		map[string]string{"platform": "twitter_x", "post_id": id, "parent_id": "777", "text": "x", "author": "bob"}, nil))
}

func TestReplyWithImage(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "ask me anything")
	comment := addComment(t, b, id, "", "bob", "why?")
	img := randomBytes(t, 2000)

	reply, err := b.a.Reply(ctx, b.creds, id, comment, "because", []platforms.Media{fileMedia("image/png", img, true)})
	require.NoError(t, err)
	require.Equal(t, comment, reply.ParentID)
	require.True(t, reply.ByAccount)

	var listed struct {
		Data []sim.Reply `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodGet, "/_sim/replies?platform=twitter_x", nil, &listed))
	require.Len(t, listed.Data, 1)
	r := listed.Data[0]
	require.Equal(t, reply.ID, r.ID)
	require.Equal(t, comment, r.InReplyTo)
	require.Equal(t, id, r.PostID)
	require.Equal(t, b.creds.UserID, r.Account)
	require.Equal(t, "because", r.Text)
	require.Equal(t, []string{sha(img)}, r.MediaSHA256)
	require.Len(t, b.sim.Publications(platforms.X), 1, "a reply is not a publication")

	got, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, reply.ID, got[0].ID, "newest first")
	require.True(t, got[0].ByAccount)
	require.Equal(t, comment, got[0].ParentID)
	require.False(t, got[1].ByAccount)
}

func TestReplyToForeignCommentPostsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "mine")
	other := publish(t, b, "another")
	foreign := addComment(t, b, other, "", "bob", "on the other post")

	_, err := b.a.Reply(ctx, b.creds, id, foreign, "hello", nil)
	notFoundErr(t, err)
	_, err = b.a.Reply(ctx, b.creds, id, "123456789", "hello", nil)
	notFoundErr(t, err)
	_, err = b.a.Reply(ctx, b.creds, id, id, "hello", nil)
	notFoundErr(t, err)
	require.Empty(t, b.sim.Replies(platforms.X))

	// Content rules apply before anything is read.
	_, err = b.a.Reply(ctx, b.creds, id, foreign, strings.Repeat("a", 281), nil)
	require.Equal(t, platforms.Invalid, kindOf(t, err))
}

func TestDirectMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	var added struct {
		ConversationID string `json:"conversation_id"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodPost, "/_sim/dms",
		map[string]string{"platform": "twitter_x", "account": b.creds.UserID, "peer": "bob", "text": "hi there"}, &added))
	require.NotEmpty(t, added.ConversationID)

	msgs, err := b.a.Conversation(ctx, b.creds, added.ConversationID)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "hi there", msgs[0].Text)
	require.NotEqual(t, b.creds.UserID, msgs[0].From)
	bob := msgs[0].From
	require.Contains(t, added.ConversationID, bob)

	img := randomBytes(t, 3000)
	sent, err := b.a.SendMessage(ctx, b.creds, added.ConversationID, "", "hello bob", []platforms.Media{fileMedia("image/jpeg", img, true)})
	require.NoError(t, err)
	require.Equal(t, added.ConversationID, sent.ConversationID)

	var dms struct {
		Data []sim.DM `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodGet, "/_sim/dms?platform=twitter_x", nil, &dms))
	require.Len(t, dms.Data, 1)
	require.Equal(t, sent.ID, dms.Data[0].ID)
	require.Equal(t, added.ConversationID, dms.Data[0].ConversationID)
	require.Equal(t, b.creds.UserID, dms.Data[0].Account)
	require.Equal(t, bob, dms.Data[0].Peer)
	require.Equal(t, "hello bob", dms.Data[0].Text)
	require.Equal(t, []string{sha(img)}, dms.Data[0].MediaSHA256)

	msgs, err = b.a.Conversation(ctx, b.creds, added.ConversationID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Equal(t, "hello bob", msgs[0].Text, "newest first")
	require.Equal(t, b.creds.UserID, msgs[0].From)

	// With the peer's id instead of the conversation, the same conversation is used.
	again, err := b.a.SendMessage(ctx, b.creds, "", bob, "and again", nil)
	require.NoError(t, err)
	require.Equal(t, added.ConversationID, again.ConversationID)
	require.Len(t, b.sim.DMs(platforms.X), 2)
}

func TestDirectMessagesOfAnotherAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	carol, err := b.sim.NewAccount(platforms.X, "carol")
	require.NoError(t, err)
	conv, err := b.sim.AddDM(platforms.X, carol.UserID, "dave", "private")
	require.NoError(t, err)

	_, err = b.a.Conversation(ctx, b.creds, conv)
	notFoundErr(t, err)
	_, err = b.a.SendMessage(ctx, b.creds, conv, "", "let me in", nil)
	notFoundErr(t, err)
	require.Empty(t, b.sim.DMs(platforms.X))

	_, err = b.a.SendMessage(ctx, b.creds, conv, "", "two", []platforms.Media{fileMedia("image/png", []byte("a"), true), fileMedia("image/png", []byte("b"), true)})
	require.Equal(t, platforms.Invalid, kindOf(t, err))
	_, err = b.a.SendMessage(ctx, b.creds, conv, "", "doc", []platforms.Media{fileMedia("application/pdf", []byte("a"), true)})
	require.Equal(t, platforms.Invalid, kindOf(t, err))
	_, err = b.a.SendMessage(ctx, b.creds, conv, "", strings.Repeat("a", maxDMChars+1), nil)
	require.Equal(t, platforms.Invalid, kindOf(t, err))
	_, err = b.a.SendMessage(ctx, b.creds, "", "", "nowhere", nil)
	require.Equal(t, platforms.Invalid, kindOf(t, err))
	require.Empty(t, b.sim.DMs(platforms.X))
}

func TestLiveReadsClassified(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "classified")
	comment := addComment(t, b, id, "", "bob", "hm")
	conv, err := b.sim.AddDM(platforms.X, b.creds.UserID, "bob", "yo")
	require.NoError(t, err)

	// The rate_limit fault answers X's 429 with the reset in x-rate-limit-reset.
	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultRateLimit, 1))
	_, err = b.a.Metrics(ctx, b.creds, id)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.False(t, e.ResetAt.IsZero())

	// The DM lookup window (15 calls per 15 minutes) runs out.
	b.sim.SetLimit(platforms.X, "dm_lookup", sim.Limit{Count: 1, Window: 15 * time.Minute})
	_, err = b.a.Conversation(ctx, b.creds, conv)
	require.NoError(t, err)
	_, err = b.a.Conversation(ctx, b.creds, conv)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	require.ErrorAs(t, err, &e)
	require.WithinDuration(t, time.Now().Add(15*time.Minute), e.ResetAt, time.Minute)

	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultError5xx, 1))
	_, err = b.a.Comments(ctx, b.creds, id)
	require.Equal(t, platforms.Transient, kindOf(t, err))

	// A reply recorded and then answered 503: the outcome is unknown.
	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultPostThenError, 1))
	_, err = b.a.Reply(ctx, b.creds, id, comment, "maybe", nil)
	require.Equal(t, platforms.Unknown, kindOf(t, err))
	require.Len(t, b.sim.Replies(platforms.X), 1)

	require.NoError(t, b.sim.InjectFault(platforms.X, sim.FaultExpireTokens, 0))
	_, err = b.a.Metrics(ctx, b.creds, id)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Comments(ctx, b.creds, id)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Reply(ctx, b.creds, id, comment, "late", nil)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.SendMessage(ctx, b.creds, conv, "", "late", nil)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
}
