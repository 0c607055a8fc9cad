package threads_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A reply spends the profile's 1,000 replies a day, not its 250 posts: with the post quota used
// up, a thread still goes on, and a used-up reply quota refuses the next part before any
// container is made. A part may carry a carousel.
func TestRepliesSpendTheReplyQuota(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	res, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "a thread"})
	require.NoError(t, err)
	root := res.Publication
	e.srv.SetLimit(platforms.Threads, "publish", sim.Limit{Count: 0, Window: 24 * time.Hour})
	e.srv.SetLimit(platforms.Threads, "replies", sim.Limit{Count: 1, Window: 24 * time.Hour})

	part := platforms.Post{Text: "part two", Media: []platforms.Media{e.media("image/jpeg", "a.jpg"), e.media("image/png", "b.png")}}
	two, err := e.a.PublishReply(ctx, e.creds, root, root, part)
	require.NoError(t, err)
	require.True(t, two.Rate.Known)
	require.Equal(t, 1, two.Rate.Limit)
	require.Equal(t, 0, two.Rate.Remaining)
	recs := e.srv.Publications(platforms.Threads)
	require.Len(t, recs, 2)
	require.Equal(t, root.ID, recs[1].ReplyTo)
	require.Equal(t, []string{sum(jpeg), sum(png)}, recs[1].MediaSHA256, "the part's carousel, in order")

	_, err = e.a.PublishReply(ctx, e.creds, root, two.Publication, platforms.Post{Text: "part three"})
	require.Contains(t, kind(t, err, platforms.RateLimited).Message, "reply quota")
	require.Len(t, e.srv.Publications(platforms.Threads), 2)
}

// A reply to a post Threads does not know is refused when its container is made.
func TestReplyToUnknownPost(t *testing.T) {
	e := setup(t, sim.Options{})
	_, err := e.a.PublishReply(context.Background(), e.creds, platforms.Publication{ID: "404"}, platforms.Publication{ID: "404"}, platforms.Post{Text: "part two"})
	require.Contains(t, kind(t, err, platforms.Permanent).Message, "reply_to_id")
	require.Empty(t, e.srv.Publications(platforms.Threads))
}

// LookupReply finds the profile's own reply, not another profile's with the same text.
func TestLookupReplyIsTheProfiles(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	res, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "a question"})
	require.NoError(t, err)
	bob, err := e.srv.NewAccount(platforms.Threads, "bob")
	require.NoError(t, err)
	_, err = e.a.PublishReply(ctx, bob, res.Publication, res.Publication, platforms.Post{Text: "same answer"})
	require.NoError(t, err)
	_, found, err := e.a.LookupReply(ctx, e.creds, res.Publication, res.Publication, platforms.Post{Text: "same answer"}, since)
	require.NoError(t, err)
	require.False(t, found, "bob's reply is not acme's")
	mine, err := e.a.PublishComment(ctx, e.creds, res.Publication, "same answer")
	require.NoError(t, err)
	got, found, err := e.a.LookupComment(ctx, e.creds, res.Publication, "same answer", since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, mine.Publication.ID, got.ID)
}
