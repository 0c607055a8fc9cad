package youtube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

func TestHideComment(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, "moderated")
	spam := addComment(t, b, id, "", "troll", "buy now")
	under := addComment(t, b, id, spam, "ann", "under the spam")
	fine := addComment(t, b, id, "", "bob", "great")

	require.NoError(t, b.a.HideComment(ctx, b.creds, id, spam, true))
	require.Equal(t, []sim.Hidden{{Platform: "youtube", PostID: id, CommentID: spam}}, b.srv.HiddenComments(platforms.YouTube))
	comments, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, comments, 1, "a rejected comment leaves the video's threads with its replies")
	require.Equal(t, fine, comments[0].ID)
	_ = under

	require.NoError(t, b.a.HideComment(ctx, b.creds, id, spam, false))
	require.Empty(t, b.srv.HiddenComments(platforms.YouTube))
	comments, err = b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, comments, 3)
}

func TestHideForeignCommentSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, "mine")
	other := publishVideo(t, b, "another")
	foreign := addComment(t, b, other, "", "bob", "elsewhere")
	for _, comment := range []string{foreign, "UgNoSuchComment4A", "a,b"} {
		notFoundErr(t, b.a.HideComment(ctx, b.creds, id, comment, true))
	}
	require.Empty(t, b.srv.HiddenComments(platforms.YouTube))
}
