package platformstest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// Thread is the threads case, which every adapter that is a platforms.Threader runs: a post and
// two replies land in the simulator as a chain (each part's reply_to the part before it, in
// order); LookupReply finds a part and nothing else; a reply whose answer is lost is Unknown and
// then found exactly once; a refused reply is RateLimited and creates nothing; the post's own
// Lookup still finds the post, not its parts; against fake networks that answer garbage or 5xx a
// reply is Unknown or Transient, never a success nor Permanent.
type Thread struct {
	// Post is the thread's first post and Part a follow-up part (nil: numbered texts).
	Post, Part PostFunc
}

// FirstComment is the first-comment case, which every adapter that is a platforms.FirstCommenter
// runs: a comment on a post lands in the simulator with comment_on (or, where the comment is the
// account's reply, reply_to) the post; LookupComment finds it and nothing else; a comment whose
// answer is lost is Unknown and then found exactly once; a refused comment is RateLimited and
// creates nothing; garbage or 5xx answers are Unknown or Transient, as for a reply.
type FirstComment struct {
	// Post is the post commented on (nil: a numbered text).
	Post PostFunc
}

func (c Adapter) threadNA() string {
	if _, ok := c.New(platforms.Config{}).(platforms.Threader); !ok {
		return c.Platform.Name() + " has no threads"
	}
	return ""
}

func (c Adapter) firstCommentNA() string {
	if _, ok := c.New(platforms.Config{}).(platforms.FirstCommenter); !ok {
		return c.Platform.Name() + " has no first comment"
	}
	return ""
}

var seq atomic.Int64

// unique is a text never published before.
func unique(prefix string) string {
	return fmt.Sprintf("%s %d %d", prefix, time.Now().UnixNano(), seq.Add(1))
}

func orText(f PostFunc, prefix string) PostFunc {
	if f != nil {
		return f
	}
	return func(*testing.T) platforms.Post { return platforms.Post{Text: unique(prefix)} }
}

// record finds the simulator's record of a publication.
func record(t *testing.T, srv *sim.Server, p platforms.Platform, id string) sim.Record {
	t.Helper()
	for _, r := range srv.Publications(p) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("the simulator has no %s publication %s", p, id)
	return sim.Record{}
}

// withText counts the records with this text.
func withText(srv *sim.Server, p platforms.Platform, text string) []sim.Record {
	var out []sim.Record
	for _, r := range srv.Publications(p) {
		if r.Text == text {
			out = append(out, r)
		}
	}
	return out
}

func (c Adapter) thread(t *testing.T) {
	b := c.start(t, sim.Options{})
	th := b.a.(platforms.Threader)
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	postOf, partOf := orText(c.Thread.Post, "thread post"), orText(c.Thread.Part, "thread part")

	first := c.with(b.creds, postOf(t))
	res, err := b.a.Publish(ctx, b.creds, first)
	require.NoError(t, err)
	root, parent := res.Publication, res.Publication
	var parts []platforms.Publication
	var texts []string
	for range 2 {
		part := partOf(t)
		r, err := th.PublishReply(ctx, b.creds, root, parent, part)
		require.NoError(t, err)
		require.NotEmpty(t, r.Publication.ID)
		require.NotEqual(t, parent.ID, r.Publication.ID)
		parts, texts, parent = append(parts, r.Publication), append(texts, part.Text), r.Publication
	}
	recs := b.srv.Publications(c.Platform)
	require.Len(t, recs, 3)
	require.Equal(t, root.ID, recs[0].ID)
	require.Empty(t, recs[0].ReplyTo)
	for i, want := range []string{root.ID, parts[0].ID} {
		require.Equal(t, parts[i].ID, recs[i+1].ID, "part %d in order", i+2)
		require.Equal(t, want, recs[i+1].ReplyTo, "part %d answers the part before it", i+2)
		require.Equal(t, texts[i], recs[i+1].Text)
		require.Equal(t, recs[0].Account, recs[i+1].Account)
	}

	got, found, err := th.LookupReply(ctx, b.creds, root, parts[0], platforms.Post{Text: texts[1]}, since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, parts[1].ID, got.ID)
	_, found, err = th.LookupReply(ctx, b.creds, root, parts[0], platforms.Post{Text: unique("never published")}, since)
	require.NoError(t, err)
	require.False(t, found, "a reply never published")
	_, found, err = th.LookupReply(ctx, b.creds, root, root, platforms.Post{Text: texts[1]}, since)
	require.NoError(t, err)
	require.False(t, found, "the part answers another post")
	pub, found, err := b.a.Lookup(ctx, b.creds, first, since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, root.ID, pub.ID, "the post's lookup finds the post, not a part")

	lost := partOf(t)
	require.NoError(t, b.srv.InjectFault(c.Platform, sim.FaultPostThenError, 1))
	_, err = th.PublishReply(ctx, b.creds, root, parts[1], lost)
	require.Equal(t, platforms.Unknown, KindOf(t, err, c.Platform), "%v", err)
	got, found, err = th.LookupReply(ctx, b.creds, root, parts[1], lost, since)
	require.NoError(t, err)
	require.True(t, found, "the reply created under the fault")
	same := withText(b.srv, c.Platform, lost.Text)
	require.Len(t, same, 1)
	require.Equal(t, same[0].ID, got.ID)
	require.Equal(t, parts[1].ID, same[0].ReplyTo)

	n := len(b.srv.Publications(c.Platform))
	require.NoError(t, b.srv.InjectFault(c.Platform, sim.FaultRateLimit, 1))
	_, err = th.PublishReply(ctx, b.creds, root, got, partOf(t))
	require.Equal(t, platforms.RateLimited, KindOf(t, err, c.Platform), "%v", err)
	require.Len(t, b.srv.Publications(c.Platform), n, "a refused reply creates nothing")
	fakeRoot := platforms.Publication{ID: root.ID, URL: root.URL, Ref: root.Ref}
	if fakeRoot.Ref == "" {
		fakeRoot.Ref = "ref"
	}
	c.lostAnswers(t, func(a platforms.Adapter) error {
		_, err := a.(platforms.Threader).PublishReply(ctx, c.FakeCreds, fakeRoot, fakeRoot, partOf(t))
		return err
	})
}

func (c Adapter) firstComment(t *testing.T) {
	b := c.start(t, sim.Options{})
	fc := b.a.(platforms.FirstCommenter)
	ctx := context.Background()
	since := time.Now().Add(-time.Second)

	post := c.with(b.creds, orText(c.FirstComment.Post, "commented post")(t))
	res, err := b.a.Publish(ctx, b.creds, post)
	require.NoError(t, err)
	on := res.Publication
	text := unique("first comment")
	r, err := fc.PublishComment(ctx, b.creds, on, text)
	require.NoError(t, err)
	require.NotEmpty(t, r.Publication.ID)
	require.NotEqual(t, on.ID, r.Publication.ID)
	require.NotEmpty(t, r.Publication.URL)
	rec := record(t, b.srv, c.Platform, r.Publication.ID)
	require.Equal(t, text, rec.Text)
	require.Contains(t, []string{rec.CommentOn, rec.ReplyTo}, on.ID, "the comment is on the post")
	require.Equal(t, record(t, b.srv, c.Platform, on.ID).Account, rec.Account, "the account comments")

	got, found, err := fc.LookupComment(ctx, b.creds, on, text, since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, r.Publication.ID, got.ID)
	_, found, err = fc.LookupComment(ctx, b.creds, on, unique("never commented"), since)
	require.NoError(t, err)
	require.False(t, found, "a comment never published")
	_, found, err = fc.LookupComment(ctx, b.creds, on, text, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.False(t, found, "comments made before since do not count")
	_, found, err = b.a.Lookup(ctx, b.creds, c.with(b.creds, platforms.Post{Text: text}), since)
	if !errors.Is(err, platforms.ErrLookupUnsupported) {
		require.NoError(t, err)
		require.False(t, found, "the post's lookup does not take the comment for a post")
	}

	lost := unique("lost comment")
	require.NoError(t, b.srv.InjectFault(c.Platform, sim.FaultPostThenError, 1))
	_, err = fc.PublishComment(ctx, b.creds, on, lost)
	require.Equal(t, platforms.Unknown, KindOf(t, err, c.Platform), "%v", err)
	got, found, err = fc.LookupComment(ctx, b.creds, on, lost, since)
	require.NoError(t, err)
	require.True(t, found, "the comment created under the fault")
	same := withText(b.srv, c.Platform, lost)
	require.Len(t, same, 1)
	require.Equal(t, same[0].ID, got.ID)

	refused := unique("refused comment")
	require.NoError(t, b.srv.InjectFault(c.Platform, sim.FaultRateLimit, 1))
	_, err = fc.PublishComment(ctx, b.creds, on, refused)
	require.Equal(t, platforms.RateLimited, KindOf(t, err, c.Platform), "%v", err)
	require.Empty(t, withText(b.srv, c.Platform, refused), "a refused comment creates nothing")
	fakeOn := platforms.Publication{ID: on.ID, URL: on.URL, Ref: on.Ref}
	if fakeOn.Ref == "" {
		fakeOn.Ref = "ref"
	}
	c.lostAnswers(t, func(a platforms.Adapter) error {
		_, err := a.(platforms.FirstCommenter).PublishComment(ctx, c.FakeCreds, fakeOn, unique("comment"))
		return err
	})
}

// lostAnswers makes a reply or comment against fake networks that answer every call with each of
// answers: never a success, and never a refusal that says nothing was created when the network
// may have made it (Unknown, or Transient when the call that fails comes before the one that
// creates).
func (c Adapter) lostAnswers(t *testing.T, call func(a platforms.Adapter) error) {
	t.Helper()
	for _, ans := range []struct {
		status int
		body   string
	}{{200, "not json"}, {200, "{}"}, {500, `{"error":"internal"}`}, {503, ""}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(ans.status)
			_, _ = w.Write([]byte(ans.body))
		}))
		err := call(c.fake(srv.URL))
		srv.Close()
		require.Contains(t, []platforms.Kind{platforms.Unknown, platforms.Transient}, KindOf(t, err, c.Platform), "%d %q: %v", ans.status, ans.body, err)
	}
}
