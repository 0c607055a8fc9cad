package x

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

func TestLikeAndUnlikeComment(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "likeable")
	c := addComment(t, b, id, "", "bob", "nice")

	// Unliking a comment never liked: ErrNotLiked, nothing sent.
	err := b.a.LikeComment(ctx, b.creds, id, c, false)
	require.ErrorIs(t, err, platforms.ErrNotLiked)
	require.Empty(t, b.sim.Likes(platforms.X))

	require.NoError(t, b.a.LikeComment(ctx, b.creds, id, c, true))
	require.NoError(t, b.a.LikeComment(ctx, b.creds, id, c, true), "liking twice changes nothing")
	var likes struct {
		Data []sim.Like `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodGet, "/_sim/likes?platform=twitter_x", nil, &likes))
	require.Len(t, likes.Data, 1)
	require.Equal(t, b.creds.UserID, likes.Data[0].Account)
	require.Equal(t, c, likes.Data[0].PostID)
	require.EqualValues(t, 1, b.sim.Metrics(platforms.X, c).Likes)

	require.NoError(t, b.a.LikeComment(ctx, b.creds, id, c, false))
	require.Empty(t, b.sim.Likes(platforms.X))
	require.EqualValues(t, 0, b.sim.Metrics(platforms.X, c).Likes)
}

func TestHideComment(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "moderated")
	c := addComment(t, b, id, "", "troll", "spam spam")

	require.NoError(t, b.a.HideComment(ctx, b.creds, id, c, true))
	var hidden struct {
		Data []sim.Hidden `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodGet, "/_sim/hidden?platform=twitter_x", nil, &hidden))
	require.Equal(t, []sim.Hidden{{Platform: "twitter_x", PostID: id, CommentID: c}}, hidden.Data)

	require.NoError(t, b.a.HideComment(ctx, b.creds, id, c, false))
	require.Empty(t, b.sim.HiddenComments(platforms.X))
}

// A comment of another publication, an unknown one or the publication itself: nothing is sent.
func TestEngagementOfForeignCommentSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "mine")
	other := publish(t, b, "another")
	foreign := addComment(t, b, other, "", "bob", "on the other post")
	for _, comment := range []string{foreign, "123456789", id, "not-an-id"} {
		notFoundErr(t, b.a.LikeComment(ctx, b.creds, id, comment, true))
		notFoundErr(t, b.a.HideComment(ctx, b.creds, id, comment, true))
	}
	require.Empty(t, b.sim.Likes(platforms.X))
	require.Empty(t, b.sim.HiddenComments(platforms.X))

	// X refuses to hide a reply in a conversation the account did not start.
	carol, err := b.sim.NewAccount(platforms.X, "carol")
	require.NoError(t, err)
	carol.Extra = b.creds.Extra
	res, err := b.a.Publish(ctx, carol, platforms.Post{Text: "carol's"})
	require.NoError(t, err)
	reply := addComment(t, b, res.Publication.ID, "", "dave", "hi carol")
	err = b.a.HideComment(ctx, b.creds, res.Publication.ID, reply, true)
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe, "%v", err)
	require.Equal(t, http.StatusForbidden, pe.Status)
	require.Empty(t, b.sim.HiddenComments(platforms.X))
}

func TestConversationsListed(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	bobConv, err := b.sim.AddDM(platforms.X, b.creds.UserID, "bob", "first from bob")
	require.NoError(t, err)
	_, err = b.sim.AddDM(platforms.X, b.creds.UserID, "carol", "<script>alert(1)</script>")
	require.NoError(t, err)
	_, err = b.a.SendMessage(ctx, b.creds, bobConv, "", "answer to bob", nil)
	require.NoError(t, err)
	// Another account's conversation is not listed.
	erin, err := b.sim.NewAccount(platforms.X, "erin")
	require.NoError(t, err)
	_, err = b.sim.AddDM(platforms.X, erin.UserID, "frank", "not yours")
	require.NoError(t, err)

	list, truncated, err := b.a.Conversations(ctx, b.creds)
	require.NoError(t, err)
	require.False(t, truncated)
	require.Len(t, list, 2)
	require.Equal(t, bobConv, list[0].ID, "newest message first")
	require.Equal(t, "answer to bob", list[0].Last.Text)
	require.Equal(t, b.creds.UserID, list[0].Last.From)
	require.Equal(t, "bob", list[0].PeerHandle)
	require.NotEmpty(t, list[0].PeerID)
	require.NotEqual(t, b.creds.UserID, list[0].PeerID)
	require.Equal(t, "carol", list[1].PeerHandle)
	require.Equal(t, "<script>alert(1)</script>", list[1].Last.Text)
	require.True(t, list[1].CanReply)
}
