package x

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A thread's parts and a first comment are the account's own replies: listed with the post's
// comments as the account's, each answering the part before it; the post's Lookup finds the
// post and not a part with the same text.
func TestThreadPartsAreOwnReplies(t *testing.T) {
	b := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "same words"})
	require.NoError(t, err)
	root := res.Publication
	two, err := b.a.PublishReply(ctx, b.creds, root, root, platforms.Post{Text: "same words"})
	require.NoError(t, err)
	three, err := b.a.PublishReply(ctx, b.creds, root, two.Publication, platforms.Post{Text: "part three"})
	require.NoError(t, err)
	comment, err := b.a.PublishComment(ctx, b.creds, root, "first comment")
	require.NoError(t, err)

	comments, err := b.a.Comments(ctx, b.creds, root.ID)
	require.NoError(t, err)
	require.Len(t, comments, 3)
	parents := map[string]string{}
	for _, cm := range comments {
		require.True(t, cm.ByAccount)
		parents[cm.ID] = cm.ParentID
	}
	require.Equal(t, map[string]string{two.Publication.ID: "", three.Publication.ID: two.Publication.ID, comment.Publication.ID: ""}, parents)

	pub, found, err := b.a.Lookup(ctx, b.creds, platforms.Post{Text: "same words"}, since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, root.ID, pub.ID, "the post, not its part")
	got, found, err := b.a.LookupReply(ctx, b.creds, root, root, platforms.Post{Text: "same words"}, since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, two.Publication.ID, got.ID)
}

func TestWithoutMentions(t *testing.T) {
	require.Equal(t, "hello", withoutMentions("@alice @bob hello"))
	require.Equal(t, "hello @alice", withoutMentions("hello @alice"))
	require.Empty(t, withoutMentions("@alice"))
}

// A part carries its images with their alt texts, as a post does.
func TestThreadPartWithMedia(t *testing.T) {
	b := setup(t, sim.Options{})
	ctx := context.Background()
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "a thread"})
	require.NoError(t, err)
	img := randomBytes(t, 64)
	m := fileMedia("image/png", img, true)
	m.AltText = "a chart"
	two, err := b.a.PublishReply(ctx, b.creds, res.Publication, res.Publication, platforms.Post{Text: "part two", Media: []platforms.Media{m, fileMedia("image/png", randomBytes(t, 64), true)}})
	require.NoError(t, err)
	recs := b.sim.Publications(platforms.X)
	require.Len(t, recs, 2)
	require.Equal(t, two.Publication.ID, recs[1].ID)
	require.Equal(t, sha(img), recs[1].MediaSHA256[0])
	require.Len(t, recs[1].MediaSHA256, 2)
	require.Equal(t, []string{"a chart", ""}, recs[1].AltTexts)
}
