package post_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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

// Posts created and published at once share a commit of the group committer (on PostgreSQL
// their reads go ahead of it, persistence.Store.UpdateAhead), and each gets the answer it would
// get alone. Four publishes commit together, each stored counted in the workspace's quota, with
// its job and its Idempotency-Key answer. Then a batch of a post whose id exists and three more
// than the quota has room for two: the existing post is refused and left as it was, the quota
// takes two and refuses the third, and a refused publish stores neither post nor answer.
func TestPublishesInOneBatchGetTheirOwnAnswers(t *testing.T) {
	t.Parallel()
	var most atomic.Int64
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{OnCommit: func(writes int, _ time.Duration, err error) {
		if err == nil && int64(writes) > most.Load() {
			most.Store(int64(writes))
		}
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	dir := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store}))
	user := uuid.NewString()
	month, limit := time.Now().UTC().Format("2006-01"), 6
	quota := &post.Quota{Month: month, Workspace: &limit}
	newPost := func() *persistence.Post {
		return &persistence.Post{UserID: user, Content: "hello", Status: persistence.PostDraft, CreatedAt: time.Now().UTC(), Targets: targets(2)}
	}
	existing := uuid.Must(uuid.NewV7()).String()
	_, err = actors.Ask[*post.Reply](context.Background(), dir.To(existing), &post.Create{Post: newPost()})
	require.NoError(t, err)

	type req struct {
		id  string
		key []byte
		err error
		got *post.PublishReply
	}
	// batch sends the publishes of ids while a write holds the committer, so that they queue
	// behind it and share the next commit.
	batch := func(ids ...string) []*req {
		release, running := make(chan struct{}), make(chan struct{})
		held := make(chan error, 1)
		go func() {
			var once sync.Once
			held <- store.Update(context.Background(), func(*persistence.Tx) error {
				once.Do(func() { close(running) })
				<-release
				return nil
			})
		}()
		<-running
		var wg sync.WaitGroup
		reqs := make([]*req, len(ids))
		for i, id := range ids {
			r := &req{id: id, key: []byte("idem-" + uuid.NewString())}
			reqs[i] = r
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.got, r.err = actors.Ask[*post.PublishReply](context.Background(), dir.To(r.id), &post.Publish{
					Scope: user, JobID: uuid.Must(uuid.NewV7()).String(), Create: newPost(), Quota: quota,
					Idempotency: &post.Idempotency{Key: r.key, Record: &persistence.IdempotencyRecord{Status: 202, Body: []byte(`{"id":"` + r.id + `"}`), CreatedAt: time.Now().UTC()}},
				})
			}()
		}
		require.Eventually(t, func() bool { return store.QueueDepth() == len(ids) }, 10*time.Second, time.Millisecond)
		close(release)
		wg.Wait()
		require.NoError(t, <-held)
		return reqs
	}
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = uuid.Must(uuid.NewV7()).String()
		}
		return out
	}
	// stored checks what the store holds of each request.
	stored := func(reqs []*req) {
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			for _, r := range reqs {
				rec, _ := tx.Idempotency(r.key)
				p, _ := tx.Post(r.id)
				if r.err != nil {
					require.Nil(t, rec, "a refused publish stores no answer")
					if r.id != existing {
						require.Nil(t, p, "a refused publish stores no post")
					}
					continue
				}
				require.NotNil(t, rec)
				require.JSONEq(t, `{"id":"`+r.id+`"}`, string(rec.Body))
				require.NotNil(t, p)
				require.Equal(t, persistence.PostPublishing, p.Status)
				require.True(t, p.QuotaCounted, "stored as counted")
				j, err := tx.Job(r.got.Job.TrackingID)
				require.NoError(t, err)
				require.Equal(t, r.id, j.PostID)
			}
			return nil
		}))
	}
	usage := func() int {
		var n int
		require.NoError(t, store.View(func(tx *persistence.Tx) error {
			n = tx.Usage(user, month).Get(persistence.UsagePostsAccepted, "")
			return nil
		}))
		return n
	}

	first := batch(ids(4)...)
	for _, r := range first {
		require.NoError(t, r.err)
		require.True(t, r.got.Post.QuotaCounted)
	}
	require.EqualValues(t, 4, most.Load(), "the four publishes shared one commit")
	stored(first)
	require.Equal(t, 4, usage())

	second := batch(append([]string{existing}, ids(3)...)...)
	require.ErrorIs(t, second[0].err, post.ErrExists)
	accepted := 0
	for _, r := range second[1:] {
		var qe *post.QuotaExceededError
		switch {
		case r.err == nil:
			accepted++
			require.True(t, r.got.Post.QuotaCounted)
		case errors.As(r.err, &qe):
			require.Equal(t, limit, qe.Used)
		default:
			t.Fatalf("publish %s: %v", r.id, r.err)
		}
	}
	require.Equal(t, 2, accepted, "the quota has room for two")
	stored(second)
	require.Equal(t, limit, usage())
	r, err := actors.Ask[*post.Reply](context.Background(), dir.To(existing), &post.Get{Scope: user})
	require.NoError(t, err)
	require.Equal(t, persistence.PostDraft, r.Post.Status, "the existing post is left as it was")
}
