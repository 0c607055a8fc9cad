package youtube

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

func publishVideo(t *testing.T, b *testBundle, title string) string {
	t.Helper()
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: title, Media: []platforms.Media{videoMedia(randomBytes(t, 5000))}})
	require.NoError(t, err)
	return res.Publication.ID
}

func addComment(t *testing.T, b *testBundle, videoID, parentID, author, text string) string {
	t.Helper()
	return platformstest.AddComment(t, b.srv, platforms.YouTube, videoID, parentID, author, text)
}

func notFoundErr(t *testing.T, err error) {
	t.Helper()
	platformstest.NotFound(t, err, platforms.YouTube)
}

func TestMetricsReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, "Counted")
	require.Equal(t, http.StatusOK, admin(t, b.srv, http.MethodPost, "/_sim/metrics",
		map[string]any{"platform": "youtube", "post_id": id, "views": 5000, "likes": 300, "comments": 20, "shares": 9}, nil))

	m, err := b.a.Metrics(ctx, b.creds, id)
	require.NoError(t, err)
	require.Equal(t, int64(5000), *m.Views)
	require.Equal(t, int64(300), *m.Likes)
	require.Equal(t, int64(20), *m.Comments)
	require.Nil(t, m.Shares, "YouTube reports no shares")

	_, err = b.a.Metrics(ctx, b.creds, "nosuchvideo")
	notFoundErr(t, err)
}

func TestCommentsListed(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, "Comment on me")
	top := addComment(t, b, id, "", "bob", "great <video>")
	other := addComment(t, b, id, "", "carol", "meh")
	var replies []string
	for i := 0; i < 7; i++ { // more than commentThreads inlines
		replies = append(replies, addComment(t, b, id, top, "dave", "reply"))
	}
	nested := addComment(t, b, id, replies[0], "erin", "to a reply")

	got, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, got, 10)
	byID := map[string]platforms.Comment{}
	for _, c := range got {
		byID[c.ID] = c
		require.Equal(t, id, c.PublicationID)
	}
	require.Equal(t, "great <video>", byID[top].Text)
	require.Equal(t, "bob", byID[top].Author)
	require.Empty(t, byID[top].ParentID)
	require.Empty(t, byID[other].ParentID)
	for _, r := range replies {
		require.Equal(t, top, byID[r].ParentID)
	}
	require.Equal(t, top, byID[nested].ParentID, "YouTube threads are one level deep")

	_, err = b.a.Comments(ctx, b.creds, "nosuchvideo")
	notFoundErr(t, err)
}

func TestReply(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, "Ask me")
	top := addComment(t, b, id, "", "bob", "question")
	answer := addComment(t, b, id, top, "carol", "same question")

	reply, err := b.a.Reply(ctx, b.creds, id, answer, "an answer", nil)
	require.NoError(t, err)
	require.Equal(t, top, reply.ParentID, "a reply to a reply answers the thread")
	require.True(t, reply.ByAccount)

	var listed struct {
		Data []sim.Reply `json:"data"`
	}
	require.Equal(t, http.StatusOK, admin(t, b.srv, http.MethodGet, "/_sim/replies?platform=youtube", nil, &listed))
	require.Len(t, listed.Data, 1)
	require.Equal(t, reply.ID, listed.Data[0].ID)
	require.Equal(t, top, listed.Data[0].InReplyTo)
	require.Equal(t, id, listed.Data[0].PostID)
	require.Equal(t, b.creds.UserID, listed.Data[0].Account)
	require.Equal(t, "an answer", listed.Data[0].Text)

	got, err := b.a.Comments(ctx, b.creds, id)
	require.NoError(t, err)
	require.Len(t, got, 3)
	mine := 0
	for _, c := range got {
		if c.ID == reply.ID {
			require.True(t, c.ByAccount)
			require.Equal(t, top, c.ParentID)
			mine++
		} else {
			require.False(t, c.ByAccount)
		}
	}
	require.Equal(t, 1, mine)
}

func TestReplyRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, "Mine")
	other := publishVideo(t, b, "Other")
	foreign := addComment(t, b, other, "", "bob", "elsewhere")
	own := addComment(t, b, id, "", "bob", "here")

	_, err := b.a.Reply(ctx, b.creds, id, own, "look", []platforms.Media{videoMedia([]byte("x"))})
	require.Equal(t, platforms.Invalid, kindOf(t, err), "YouTube comments take no media")
	_, err = b.a.Reply(ctx, b.creds, id, own, strings.Repeat("a", MaxCommentChars+1), nil)
	require.Equal(t, platforms.Invalid, kindOf(t, err))
	_, err = b.a.Reply(ctx, b.creds, id, foreign, "hello", nil)
	notFoundErr(t, err)
	_, err = b.a.Reply(ctx, b.creds, id, "UgNoSuchComment", "hello", nil)
	notFoundErr(t, err)
	require.Empty(t, b.srv.Replies(platforms.YouTube))
}

func TestLiveReadsClassified(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	id := publishVideo(t, b, "Classified")
	top := addComment(t, b, id, "", "bob", "hm")

	require.NoError(t, b.srv.InjectFault(platforms.YouTube, sim.FaultRateLimit, 1))
	_, err := b.a.Metrics(ctx, b.creds, id)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, QuotaReset(time.Now()), e.ResetAt)

	// comments.insert costs 50 units: a pool of 51 takes the reply's thread lookup and the
	// insert, and then refuses.
	b.srv.SetLimit(platforms.YouTube, sim.YouTubeBucketUnits, sim.Limit{Count: 51, Window: 25 * time.Hour})
	_, err = b.a.Reply(ctx, b.creds, id, top, "costly", nil)
	require.NoError(t, err)
	_, err = b.a.Metrics(ctx, b.creds, id)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	b.srv.SetLimit(platforms.YouTube, sim.YouTubeBucketUnits, sim.Limit{Count: 10000, Window: 25 * time.Hour})

	require.NoError(t, b.srv.InjectFault(platforms.YouTube, sim.FaultError5xx, 1))
	_, err = b.a.Comments(ctx, b.creds, id)
	require.Equal(t, platforms.Transient, kindOf(t, err))

	require.NoError(t, b.srv.InjectFault(platforms.YouTube, sim.FaultPostThenError, 1))
	_, err = b.a.Reply(ctx, b.creds, id, top, "maybe", nil)
	require.Equal(t, platforms.Unknown, kindOf(t, err))
	require.Len(t, b.srv.Replies(platforms.YouTube), 2)

	require.NoError(t, b.srv.InjectFault(platforms.YouTube, sim.FaultExpireTokens, 0))
	_, err = b.a.Metrics(ctx, b.creds, id)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Comments(ctx, b.creds, id)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Reply(ctx, b.creds, id, top, "late", nil)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
}
