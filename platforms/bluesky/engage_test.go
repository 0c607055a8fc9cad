package bluesky

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

func TestLikeAndUnlikeComment(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "likeable")
	c := addComment(t, b, id, "", "bob.bsky.social", "nice")

	err := b.a.LikeComment(ctx, b.creds, id, c, false)
	require.ErrorIs(t, err, platforms.ErrNotLiked)

	require.NoError(t, b.a.LikeComment(ctx, b.creds, id, c, true))
	require.NoError(t, b.a.LikeComment(ctx, b.creds, id, c, true), "viewer.like says it is liked: no second record")
	var likes struct {
		Data []sim.Like `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.sim, http.MethodGet, "/_sim/likes?platform=bluesky", nil, &likes))
	require.Len(t, likes.Data, 1)
	require.Equal(t, b.creds.UserID, likes.Data[0].Account)
	require.Equal(t, c, likes.Data[0].PostID)
	require.True(t, strings.HasPrefix(likes.Data[0].Record, "at://"+b.creds.UserID+"/app.bsky.feed.like/"), likes.Data[0].Record)
	require.EqualValues(t, 1, b.sim.Metrics(platforms.Bluesky, c).Likes)
	var records struct {
		Records []map[string]any `json:"records"`
	}
	require.Equal(t, http.StatusOK, pds(t, b, "/xrpc/com.atproto.repo.listRecords?repo="+b.creds.UserID+"&collection=app.bsky.feed.like", &records))
	require.Len(t, records.Records, 1)

	require.NoError(t, b.a.LikeComment(ctx, b.creds, id, c, false))
	require.Empty(t, b.sim.Likes(platforms.Bluesky))
	require.Equal(t, http.StatusOK, pds(t, b, "/xrpc/com.atproto.repo.listRecords?repo="+b.creds.UserID+"&collection=app.bsky.feed.like", &records))
	require.Empty(t, records.Records, "the like record was deleted")
	require.ErrorIs(t, b.a.LikeComment(ctx, b.creds, id, c, false), platforms.ErrNotLiked)
}

func TestHideComment(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "gated")
	spam := addComment(t, b, id, "", "troll.bsky.social", "spam")
	below := addComment(t, b, id, spam, "ann.bsky.social", "under the spam")
	fine := addComment(t, b, id, "", "bob.bsky.social", "fine")

	require.NoError(t, b.a.HideComment(ctx, b.creds, id, spam, true))
	require.NoError(t, b.a.HideComment(ctx, b.creds, id, spam, true), "hiding twice changes nothing")
	require.Equal(t, []sim.Hidden{{Platform: "bluesky", PostID: id, CommentID: spam}}, b.sim.HiddenComments(platforms.Bluesky))
	var gate struct {
		Value struct {
			Post          string   `json:"post"`
			HiddenReplies []string `json:"hiddenReplies"`
		} `json:"value"`
	}
	rkey := id[strings.LastIndex(id, "/")+1:]
	require.Equal(t, http.StatusOK, pds(t, b, "/xrpc/com.atproto.repo.getRecord?repo="+b.creds.UserID+"&collection=app.bsky.feed.threadgate&rkey="+rkey, &gate))
	require.Equal(t, id, gate.Value.Post)
	require.Equal(t, []string{spam}, gate.Value.HiddenReplies)

	// The thread leaves the hidden reply out, with what is below it.
	comments, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, comments, 1)
	require.Equal(t, fine, comments[0].ID)
	_ = below

	require.NoError(t, b.a.HideComment(ctx, b.creds, id, spam, false), "a hidden reply is found to be shown again")
	require.Empty(t, b.sim.HiddenComments(platforms.Bluesky))
	comments, err = b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, comments, 3)
}

func TestEngagementOfForeignCommentSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publish(t, b, "mine")
	other := publish(t, b, "another")
	foreign := addComment(t, b, other, "", "bob.bsky.social", "elsewhere")
	before := len(platformstest.Requests(t, b.sim, platforms.Bluesky))
	for _, comment := range []string{foreign, id, "at://did:plc:nobody/app.bsky.feed.post/3aaaaaaaaaaaa", "nope"} {
		notFoundErr(t, b.a.LikeComment(ctx, b.creds, id, comment, true))
		notFoundErr(t, b.a.HideComment(ctx, b.creds, id, comment, true))
	}
	for _, r := range platformstest.Requests(t, b.sim, platforms.Bluesky)[before:] {
		require.NotContains(t, r.Path, "com.atproto.repo", "nothing was written")
	}
	require.Empty(t, b.sim.Likes(platforms.Bluesky))
	require.Empty(t, b.sim.HiddenComments(platforms.Bluesky))
}

func TestConversationsListed(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	bobConv, err := b.sim.AddDM(platforms.Bluesky, b.creds.UserID, "bob.bsky.social", "hello from bob")
	require.NoError(t, err)
	_, err = b.sim.AddDM(platforms.Bluesky, b.creds.UserID, "carol.bsky.social", "<b>carol</b>")
	require.NoError(t, err)
	_, err = b.a.SendMessage(ctx, b.creds, bobConv, "", "hi bob", nil)
	require.NoError(t, err)
	_, err = b.sim.AddDM(platforms.Bluesky, "did:plc:someoneelse", "dave.bsky.social", "not yours")
	require.NoError(t, err)

	list, truncated, err := b.a.Conversations(ctx, b.creds)
	require.NoError(t, err)
	require.False(t, truncated)
	require.Len(t, list, 2)
	require.Equal(t, bobConv, list[0].ID)
	require.Equal(t, "hi bob", list[0].Last.Text)
	require.Equal(t, b.creds.UserID, list[0].Last.From)
	require.Equal(t, "bob.bsky.social", list[0].PeerHandle)
	require.True(t, strings.HasPrefix(list[0].PeerID, "did:"))
	require.Equal(t, "<b>carol</b>", list[1].Last.Text)
	require.True(t, list[1].CanReply)
}

// pds makes an unauthenticated GET on the simulated PDS.
func pds(t *testing.T, b *testBundle, path string, out any) int {
	t.Helper()
	resp, err := http.Get(b.sim.AdapterConfig(platforms.Bluesky).BaseURL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	return resp.StatusCode
}
