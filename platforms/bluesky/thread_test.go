package bluesky

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

// A post's publication carries its record's CID; a thread whose root and parent come without it
// (published before Herald kept it) reads it with getRecord and answers with strong references
// the simulator accepts; the parts are the account's own replies in the post's thread.
func TestThreadReadsMissingCIDs(t *testing.T) {
	b := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "a thread begins"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Publication.Ref, "the post's CID")
	root := platforms.Publication{ID: res.Publication.ID, URL: res.Publication.URL}

	two, err := b.a.PublishReply(ctx, b.creds, root, root, platforms.Post{Text: "part two"})
	require.NoError(t, err)
	require.NotEmpty(t, two.Publication.Ref)
	parent := platforms.Publication{ID: two.Publication.ID}
	three, err := b.a.PublishReply(ctx, b.creds, root, parent, platforms.Post{Text: "part three"})
	require.NoError(t, err)

	var cids int
	for _, r := range platformstest.Requests(t, b.sim, platforms.Bluesky) {
		if r.Path == "/xrpc/com.atproto.repo.getRecord" {
			cids++
		}
	}
	require.Equal(t, 3, cids, "the root's CID for each part, and the third part's parent's")
	recs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, recs, 3)
	require.Equal(t, two.Publication.ID, recs[2].ReplyTo)

	comments, err := b.a.Comments(ctx, b.creds, root.ID)
	require.NoError(t, err)
	require.Len(t, comments, 2)
	for _, cm := range comments {
		require.True(t, cm.ByAccount, "a part is the account's own reply")
	}
	got, found, err := b.a.LookupReply(ctx, b.creds, root, parent, platforms.Post{Text: "part three"}, since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, three.Publication, got, "found with its CID")

	_, err = b.a.PublishReply(ctx, b.creds, root, platforms.Publication{ID: root.ID + "x"}, platforms.Post{Text: "part four"})
	require.ErrorIs(t, err, platforms.ErrNotFound, "a parent that does not exist")
	require.Len(t, b.sim.Publications(platforms.Bluesky), 3)
}

// A part carries its images with their alt texts and the post's languages, as a post does.
func TestThreadPartWithMediaAndLangs(t *testing.T) {
	b := setup(t, sim.Options{})
	ctx := context.Background()
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "a thread"})
	require.NoError(t, err)
	img := pngBytes(t, 2, 2)
	m := fileMedia("image/png", img)
	m.AltText = "a chart"
	o := &platforms.BlueskyOptions{Langs: []string{"fr"}}
	_, err = b.a.PublishReply(ctx, b.creds, res.Publication, res.Publication, platforms.Post{Text: "partie deux", Media: []platforms.Media{m}, Options: o})
	require.NoError(t, err)
	recs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, recs, 2)
	require.Equal(t, res.Publication.ID, recs[1].ReplyTo)
	require.Equal(t, []string{sha(img)}, recs[1].MediaSHA256)
	require.Equal(t, []string{"a chart"}, recs[1].AltTexts)
	require.Equal(t, []string{"fr"}, recs[1].Options["langs"])
}
