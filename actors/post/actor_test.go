package post_test

import (
	"context"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
)

// A post's state is read lazily; a Create for an id that exists in bbolt is refused by the
// create's own transaction, even by a fresh incarnation that has not read the post.
func TestCreateRefusesAnExistingPostAfterPassivation(t *testing.T) {
	t.Parallel()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	dir := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, IdleTimeout: 20 * time.Millisecond}))
	id, user := uuid.Must(uuid.NewV7()).String(), uuid.NewString()
	p := &persistence.Post{UserID: user, Content: "first", Status: persistence.PostDraft, CreatedAt: time.Now().UTC(), Targets: targets(1)}
	ctx := context.Background()
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Create{Post: p})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return dir.Live() == 0 }, 5*time.Second, 5*time.Millisecond)

	p2 := p.Clone()
	p2.Content = "second"
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Create{Post: p2})
	require.ErrorIs(t, err, post.ErrExists)
	r, err := actors.Ask[*post.Reply](ctx, dir.To(id), &post.Get{Scope: user})
	require.NoError(t, err)
	require.Equal(t, "first", r.Post.Content)
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Get{Scope: "someone else"})
	require.ErrorIs(t, err, post.ErrForbidden)
	_, err = actors.Ask[*post.Reply](ctx, dir.To(uuid.NewString()), &post.Get{Scope: user})
	require.ErrorIs(t, err, post.ErrNotFound)
}

func targets(n int) []persistence.Target {
	out := make([]persistence.Target, n)
	for i := range out {
		out[i] = persistence.Target{AccountID: uuid.NewString(), Platform: "bluesky", Status: persistence.TargetPending}
	}
	return out
}

func str(s string) *string { return &s }

// An update is held to the rules of a create, on the post as it would be after the change: no
// edit leaves a post a create refuses, and a refused edit changes nothing.
func TestUpdateAppliesTheCreateRules(t *testing.T) {
	t.Parallel()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	dir := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store}))
	ctx := context.Background()
	user := uuid.NewString()
	create := func(content string, media []string) string {
		id := uuid.Must(uuid.NewV7()).String()
		p := &persistence.Post{UserID: user, Content: content, Status: persistence.PostDraft, CreatedAt: time.Now().UTC(), Targets: targets(1), MediaIDs: media}
		_, err := actors.Ask[*post.Reply](ctx, dir.To(id), &post.Create{Post: p})
		require.NoError(t, err)
		return id
	}
	text := create("text only", nil)
	withMedia := create("", []string{uuid.NewString()})

	refused := []struct {
		name string
		id   string
		msg  *post.Update
		want string
	}{
		{"empty content", text, &post.Update{Content: str("")}, "content: must not be empty when the post has no media"},
		{"blank content", text, &post.Update{Content: str(" \n\t ")}, "content: must not be empty"},
		{"media removed from a post without content", withMedia, &post.Update{MediaIDs: []string{}}, "content: must not be empty"},
		{"NUL", text, &post.Update{Content: str("a\x00b")}, "content: contains control character U+0000 at position 1"},
		{"DEL", text, &post.Update{Content: str("\x7f")}, "U+007F"},
		{"C1", text, &post.Update{Content: str("\u0085")}, "U+0085"},
		{"invalid UTF-8", text, &post.Update{Content: str("\xff\xfe")}, "content: is not valid UTF-8: byte 0xFF at position 0"},
		{"too long", text, &post.Update{Content: str(strings.Repeat("a", post.MaxContentLength+1))}, "content: is 63207 characters"},
		{"no targets", text, &post.Update{Targets: []persistence.Target{}}, "platforms: must contain at least one"},
		{"too many targets", text, &post.Update{Targets: targets(post.MaxTargets + 1)}, "platforms: at most 50"},
		{"too many media", text, &post.Update{MediaIDs: make([]string, post.MaxMedia+1)}, "media: at most 35"},
	}
	for _, tc := range refused {
		tc.msg.Scope = user
		_, err := actors.Ask[*post.Reply](ctx, dir.To(tc.id), tc.msg)
		var ie *post.InvalidError
		require.ErrorAs(t, err, &ie, tc.name)
		require.Contains(t, ie.Error(), tc.want, tc.name)
	}
	for id, content := range map[string]string{text: "text only", withMedia: ""} {
		r, err := actors.Ask[*post.Reply](ctx, dir.To(id), &post.Get{Scope: user})
		require.NoError(t, err)
		require.Equal(t, content, r.Post.Content, "refused updates changed nothing")
		require.EqualValues(t, 1, r.Post.Version)
	}

	// What a create allows, an update allows: empty content on a post with media, text with tabs
	// and line breaks.
	_, err = actors.Ask[*post.Reply](ctx, dir.To(withMedia), &post.Update{Scope: user, Content: str("  ")})
	require.NoError(t, err)
	r, err := actors.Ask[*post.Reply](ctx, dir.To(text), &post.Update{Scope: user, Content: str("line\r\n\tindented")})
	require.NoError(t, err)
	require.Equal(t, "line\r\n\tindented", r.Post.Content)

	// A create is held to the same rules.
	bad := &persistence.Post{UserID: user, Content: "bell\a", Status: persistence.PostDraft, CreatedAt: time.Now().UTC(), Targets: targets(1)}
	_, err = actors.Ask[*post.Reply](ctx, dir.To(uuid.Must(uuid.NewV7()).String()), &post.Create{Post: bad})
	require.True(t, post.IsInvalid(err), "%v", err)
}

// A change whose commit fails is answered with the failure and leaves the post as it was; once
// the store writes again the same changes succeed. A job's outcome the store could not take is
// taken again, by an actor that stays alive for it, until the store takes it.
func TestAFailedCommitLeavesThePostAsItWas(t *testing.T) {
	t.Parallel()
	faults := &persistence.Faults{}
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{Faults: faults})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	started, synced := make(chan *persistence.Job, 4), make(chan bool, 4)
	dir := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, IdleTimeout: 20 * time.Millisecond,
		Log:     slog.New(slog.DiscardHandler),
		Handoff: handoff{started: started, synced: synced}}))
	id, user := uuid.Must(uuid.NewV7()).String(), uuid.NewString()
	ctx := context.Background()
	p := &persistence.Post{UserID: user, Content: "first", Status: persistence.PostDraft, CreatedAt: time.Now().UTC(),
		Targets: []persistence.Target{{AccountID: uuid.NewString(), Platform: "bluesky", Status: persistence.TargetPending}}}
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Create{Post: p})
	require.NoError(t, err)
	get := func() *persistence.Post {
		t.Helper()
		r, err := actors.Ask[*post.Reply](ctx, dir.To(id), &post.Get{Scope: user})
		require.NoError(t, err)
		return r.Post
	}

	faults.FailCommits(syscall.ENOSPC)
	changed := "changed"
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Update{Scope: user, Content: &changed})
	require.ErrorIs(t, err, persistence.ErrWriteFailed)
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Schedule{Scope: user, At: time.Now().Add(time.Hour)})
	require.ErrorIs(t, err, persistence.ErrWriteFailed)
	_, err = actors.Ask[*post.PublishReply](ctx, dir.To(id), &post.Publish{Scope: user, JobID: uuid.Must(uuid.NewV7()).String()})
	require.ErrorIs(t, err, persistence.ErrWriteFailed)
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Delete{Scope: user})
	require.ErrorIs(t, err, persistence.ErrWriteFailed)
	_, err = actors.Ask[*post.Reply](ctx, dir.To(uuid.Must(uuid.NewV7()).String()), &post.Create{Post: p.Clone()})
	require.ErrorIs(t, err, persistence.ErrWriteFailed)
	cur := get()
	require.Equal(t, "first", cur.Content)
	require.Equal(t, persistence.PostDraft, cur.Status)
	require.Nil(t, cur.ScheduledAt)
	require.EqualValues(t, 1, cur.Version)
	require.Empty(t, started, "no job started")

	faults.ClearCommits()
	r, err := actors.Ask[*post.PublishReply](ctx, dir.To(id), &post.Publish{Scope: user, JobID: uuid.Must(uuid.NewV7()).String()})
	require.NoError(t, err)
	j := (<-started).Clone()
	require.Equal(t, r.Job.TrackingID, j.TrackingID)
	require.Equal(t, persistence.PostPublishing, get().Status)

	// The job's outcome, while the store cannot write: retried, the actor kept alive (its idle
	// timeout is far shorter than the retries), and taken once the store writes again.
	faults.FailCommits(syscall.EIO)
	j.Status = persistence.JobCompleted
	j.Targets[0].Phase, j.Targets[0].PublicationID = persistence.PhaseSuccess, "pub-1"
	before := faults.Injected()
	dir.Send(id, &post.Finish{Job: j})
	deadline := time.Now().Add(10 * time.Second)
	for faults.Injected() < before+4 {
		require.True(t, time.Now().Before(deadline), "the outcome is retried")
		time.Sleep(5 * time.Millisecond)
	}
	require.Empty(t, synced)
	faults.ClearCommits()
	select {
	case stored := <-synced:
		require.True(t, stored)
	case <-time.After(20 * time.Second):
		t.Fatal("the outcome was never taken")
	}
	cur = get()
	require.Equal(t, persistence.PostPublished, cur.Status)
	require.Equal(t, "pub-1", cur.Targets[0].PublicationID)
}

// handoff is a post directory's hand-off in these tests: the jobs started and the syncs, on
// channels.
type handoff struct {
	post.NoHandoff
	started chan *persistence.Job
	synced  chan bool
}

func (h handoff) StartJob(j *persistence.Job, _ *persistence.Post) { h.started <- j }
func (h handoff) Synced(_ string, stored bool)                     { h.synced <- stored }

// A publish under a quota stores its post counted with its job and counts the quota once, made
// at once or from a draft; one the quota refuses stores nothing and counts nothing.
func TestAPublishUnderAQuotaIsStoredCounted(t *testing.T) {
	t.Parallel()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	started, synced := make(chan *persistence.Job, 4), make(chan bool, 4)
	dir := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, IdleTimeout: time.Minute,
		Log: slog.New(slog.DiscardHandler), Handoff: handoff{started: started, synced: synced}}))
	user, month := uuid.NewString(), time.Now().UTC().Format("2006-01")
	ctx := context.Background()
	newPost := func() *persistence.Post {
		return &persistence.Post{UserID: user, Content: "counted", Status: persistence.PostDraft, CreatedAt: time.Now().UTC(), Targets: targets(1)}
	}
	stored := func(id string) (*persistence.Post, int) {
		t.Helper()
		var p *persistence.Post
		used := 0
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			p, _ = tx.Post(id)
			used = tx.QuotaUsed(user, month)
			return nil
		}))
		return p, used
	}

	at := uuid.Must(uuid.NewV7()).String()
	r, err := actors.Ask[*post.PublishReply](ctx, dir.To(at), &post.Publish{Create: newPost(), JobID: uuid.Must(uuid.NewV7()).String(),
		Quota: &post.Quota{Limit: 2, Month: month}})
	require.NoError(t, err)
	require.True(t, r.Post.QuotaCounted)
	require.Equal(t, r.Job.TrackingID, (<-started).TrackingID)
	p, used := stored(at)
	require.NotNil(t, p)
	require.True(t, p.QuotaCounted, "stored counted")
	require.Equal(t, persistence.PostPublishing, p.Status)
	require.Equal(t, 1, used)

	draft := uuid.Must(uuid.NewV7()).String()
	_, err = actors.Ask[*post.Reply](ctx, dir.To(draft), &post.Create{Post: newPost()})
	require.NoError(t, err)
	r, err = actors.Ask[*post.PublishReply](ctx, dir.To(draft), &post.Publish{Scope: user, JobID: uuid.Must(uuid.NewV7()).String(),
		Quota: &post.Quota{Limit: 2, Month: month}})
	require.NoError(t, err)
	require.True(t, r.Post.QuotaCounted)
	<-started
	p, used = stored(draft)
	require.True(t, p.QuotaCounted, "stored counted")
	require.Equal(t, 2, used)

	refused := uuid.Must(uuid.NewV7()).String()
	_, err = actors.Ask[*post.PublishReply](ctx, dir.To(refused), &post.Publish{Create: newPost(), JobID: uuid.Must(uuid.NewV7()).String(),
		Quota: &post.Quota{Limit: 2, Month: month}})
	var exceeded *post.QuotaExceededError
	require.ErrorAs(t, err, &exceeded)
	p, used = stored(refused)
	require.Nil(t, p, "nothing stored")
	require.Equal(t, 2, used)
	require.Empty(t, started, "no job started")
}
