package bluesky

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
	id := platformstest.AddComment(t, b.sim, platforms.Bluesky, postID, parentID, author, text)
	require.True(t, strings.HasPrefix(id, "at://"), id)
	return id
}

func notFoundErr(t *testing.T, err error) {
	t.Helper()
	platformstest.NotFound(t, err, platforms.Bluesky)
}

func TestMetricsReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "counted")
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodPost, "/_sim/metrics",
		map[string]any{"platform": "bluesky", "post_id": id, "views": 999, "likes": 12, "comments": 3, "shares": 4}, nil))

	m, err := b.a.Metrics(ctx, b.creds, id)
	require.NoError(t, err)
	require.Nil(t, m.Views, "Bluesky has no views")
	require.Equal(t, int64(12), *m.Likes)
	require.Equal(t, int64(3), *m.Comments)
	require.Equal(t, int64(4), *m.Shares)

	all, err := b.a.BatchMetrics(ctx, b.creds, []string{id, "at://did:plc:nobody/app.bsky.feed.post/3aaaaaaaaaaaa"})
	require.NoError(t, err)
	require.Len(t, all, 1)

	_, err = b.a.Metrics(ctx, b.creds, "at://did:plc:nobody/app.bsky.feed.post/3aaaaaaaaaaaa")
	notFoundErr(t, err)
	_, err = b.a.Metrics(ctx, b.creds, "https://bsky.app/x")
	notFoundErr(t, err)
}

func TestCommentsListed(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "thread root")
	first := addComment(t, b, id, "", "bob.bsky.social", "first")
	second := addComment(t, b, id, "", "carol.bsky.social", "second")
	nested := addComment(t, b, id, first, "dave.bsky.social", "answering bob")

	got, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, got, 3)
	byID := map[string]platforms.Comment{}
	for _, c := range got {
		byID[c.ID] = c
		require.Equal(t, id, c.PublicationID)
		require.False(t, c.ByAccount)
	}
	require.Equal(t, "bob.bsky.social", byID[first].Author)
	require.Equal(t, "first", byID[first].Text)
	require.Empty(t, byID[first].ParentID)
	require.Empty(t, byID[second].ParentID)
	require.Equal(t, first, byID[nested].ParentID)

	m, err := b.a.Metrics(ctx, b.creds, id)
	require.NoError(t, err)
	require.Equal(t, int64(3), *m.Comments)

	_, err = b.a.Comments(ctx, b.creds, "at://did:plc:nobody/app.bsky.feed.post/3aaaaaaaaaaaa")
	notFoundErr(t, err)
}

func TestReplyWithImage(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "ask me")
	first := addComment(t, b, id, "", "bob.bsky.social", "why?")
	nested := addComment(t, b, id, first, "carol.bsky.social", "yes why?")
	img := pngBytes(t, 3, 2)

	reply, err := b.a.Reply(ctx, b.creds, id, nested, "because", []platforms.Media{fileMedia("image/png", img)})
	require.NoError(t, err)
	require.Equal(t, nested, reply.ParentID)

	var listed struct {
		Data []sim.Reply `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodGet, "/_sim/replies?platform=bluesky", nil, &listed))
	require.Len(t, listed.Data, 1)
	r := listed.Data[0]
	require.Equal(t, reply.ID, r.ID)
	require.Equal(t, nested, r.InReplyTo)
	require.Equal(t, id, r.PostID)
	require.Equal(t, b.creds.UserID, r.Account)
	require.Equal(t, []string{sha(img)}, r.MediaSHA256)
	require.Len(t, b.sim.Publications(platforms.Bluesky), 1, "a reply is not a publication")

	got, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, got, 3)
	mine := 0
	for _, c := range got {
		if c.ID == reply.ID {
			require.True(t, c.ByAccount)
			require.Equal(t, nested, c.ParentID)
			mine++
		} else {
			require.False(t, c.ByAccount)
		}
	}
	require.Equal(t, 1, mine)
}

func TestReplyToForeignCommentPostsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "mine")
	other := publish(t, b, "other")
	foreign := addComment(t, b, other, "", "bob.bsky.social", "elsewhere")

	_, err := b.a.Reply(ctx, b.creds, id, foreign, "hello", nil)
	notFoundErr(t, err)
	_, err = b.a.Reply(ctx, b.creds, id, other, "hello", nil) // a post, not a comment
	notFoundErr(t, err)
	_, err = b.a.Reply(ctx, b.creds, id, "at://did:plc:nobody/app.bsky.feed.post/3aaaaaaaaaaaa", "hello", nil)
	notFoundErr(t, err)
	require.Empty(t, b.sim.Replies(platforms.Bluesky))

	_, err = b.a.Reply(ctx, b.creds, id, foreign, strings.Repeat("a", 301), nil)
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
		map[string]string{"platform": "bluesky", "account": b.creds.UserID, "peer": "bob.bsky.social", "text": "hey"}, &added))
	require.NotEmpty(t, added.ConversationID)

	msgs, err := b.a.Conversation(ctx, b.creds, added.ConversationID)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "hey", msgs[0].Text)
	bob := msgs[0].From
	require.True(t, strings.HasPrefix(bob, "did:"), bob)

	sent, err := b.a.SendMessage(ctx, b.creds, added.ConversationID, "", "hello bob", nil)
	require.NoError(t, err)
	require.Equal(t, b.creds.UserID, sent.From)

	var dms struct {
		Data []sim.DM `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodGet, "/_sim/dms?platform=bluesky", nil, &dms))
	require.Len(t, dms.Data, 1)
	require.Equal(t, sent.ID, dms.Data[0].ID)
	require.Equal(t, added.ConversationID, dms.Data[0].ConversationID)
	require.Equal(t, bob, dms.Data[0].Peer)
	require.Equal(t, "hello bob", dms.Data[0].Text)
	require.Empty(t, dms.Data[0].MediaSHA256)

	msgs, err = b.a.Conversation(ctx, b.creds, added.ConversationID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)

	// By peer (a handle): the same conversation.
	again, err := b.a.SendMessage(ctx, b.creds, "", "bob.bsky.social", "again", nil)
	require.NoError(t, err)
	require.Equal(t, added.ConversationID, again.ConversationID)

	// Text only.
	_, err = b.a.SendMessage(ctx, b.creds, added.ConversationID, "", "pic", []platforms.Media{fileMedia("image/png", pngBytes(t, 1, 1))})
	require.Equal(t, platforms.Invalid, kindOf(t, err))
	_, err = b.a.SendMessage(ctx, b.creds, added.ConversationID, "", strings.Repeat("a", 1001), nil)
	require.Equal(t, platforms.Invalid, kindOf(t, err))
	require.Len(t, b.sim.DMs(platforms.Bluesky), 2)

	proxied := 0
	for _, l := range platformstest.Requests(t, b.sim, platforms.Bluesky) {
		if strings.Contains(l.Path, "chat.bsky.convo.") {
			require.Equal(t, ChatProxy, l.Headers["Atproto-Proxy"], l.Path)
			proxied++
		}
	}
	require.Positive(t, proxied)
}

func TestDirectMessagesOfAnotherAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	conv, err := b.sim.AddDM(platforms.Bluesky, "did:plc:carolcarolcarol", "dave.bsky.social", "private")
	require.NoError(t, err)

	_, err = b.a.Conversation(ctx, b.creds, conv)
	notFoundErr(t, err)
	_, err = b.a.SendMessage(ctx, b.creds, conv, "", "let me in", nil)
	notFoundErr(t, err)
	require.Empty(t, b.sim.DMs(platforms.Bluesky))
}

func TestLiveReadsClassified(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "classified")
	comment := addComment(t, b, id, "", "bob.bsky.social", "hm")
	conv, err := b.sim.AddDM(platforms.Bluesky, b.creds.UserID, "bob.bsky.social", "yo")
	require.NoError(t, err)

	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultRateLimit, 1))
	_, err = b.a.Metrics(ctx, b.creds, id)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.False(t, e.ResetAt.IsZero())

	// The PDS's per-IP window runs out.
	b.sim.SetLimit(platforms.Bluesky, "ip", sim.Limit{Count: 1, Window: 5 * time.Minute})
	_, err = b.a.Conversation(ctx, b.creds, conv)
	require.NoError(t, err)
	_, err = b.a.Conversation(ctx, b.creds, conv)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	require.ErrorAs(t, err, &e)
	require.WithinDuration(t, time.Now().Add(5*time.Minute), e.ResetAt, time.Minute)
	b.sim.SetLimit(platforms.Bluesky, "ip", sim.Limit{Count: 3000, Window: 5 * time.Minute})

	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultError5xx, 1))
	_, err = b.a.Comments(ctx, b.creds, id)
	require.Equal(t, platforms.Transient, kindOf(t, err))

	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultPostThenError, 1))
	_, err = b.a.SendMessage(ctx, b.creds, conv, "", "maybe", nil)
	require.Equal(t, platforms.Unknown, kindOf(t, err))
	require.Len(t, b.sim.DMs(platforms.Bluesky), 1)

	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultExpireTokens, 0))
	_, err = b.a.Metrics(ctx, b.creds, id)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Comments(ctx, b.creds, id)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Reply(ctx, b.creds, id, comment, "late", nil)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Conversation(ctx, b.creds, conv)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
}
