package youtube

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A first comment is a top-level comment of the channel, listed with the video's comments as the
// channel's own, and costs 50 quota units: of 110, a comment (50), the list of comments (1) and a
// comment on a video that does not exist (50, refused) leave too little for the next comment,
// which is refused until the quota resets.
func TestFirstCommentCostsFiftyUnits(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "Commented", Media: []platforms.Media{videoMedia(randomBytes(t, 2048))}})
	require.NoError(t, err)
	b.srv.SetLimit(platforms.YouTube, sim.YouTubeBucketUnits, sim.Limit{Count: 110, Window: 24 * time.Hour})

	r, err := b.a.PublishComment(ctx, b.creds, res.Publication, "first!")
	require.NoError(t, err)
	require.Contains(t, r.Publication.URL, "lc="+r.Publication.ID)
	comments, err := b.a.Comments(ctx, b.creds, res.Publication.ID)
	require.NoError(t, err)
	require.Len(t, comments, 1)
	require.Equal(t, r.Publication.ID, comments[0].ID)
	require.True(t, comments[0].ByAccount)
	require.Empty(t, comments[0].ParentID)

	_, err = b.a.PublishComment(ctx, b.creds, platforms.Publication{ID: "nosuchvideo"}, "third")
	require.ErrorIs(t, err, platforms.ErrNotFound)

	_, err = b.a.PublishComment(ctx, b.creds, res.Publication, "second")
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, QuotaReset(time.Now()), e.ResetAt)
	require.Len(t, b.srv.Publications(platforms.YouTube), 2, "the video and its one comment")
}
