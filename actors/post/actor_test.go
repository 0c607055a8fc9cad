package post_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
)

// A post's state is read lazily; a Create for an id that exists in bbolt is refused by the
// create's own transaction, even by a fresh incarnation that has not read the post.
func TestCreateRefusesAnExistingPostAfterPassivation(t *testing.T) {
	t.Parallel()
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	sys := actors.NewSystem(prometheus.NewRegistry(), nil)
	t.Cleanup(sys.Shutdown)
	dir := actors.NewDirectory(sys, post.Kind(post.Deps{Store: store, IdleTimeout: 20 * time.Millisecond}))
	id, user := uuid.Must(uuid.NewV7()).String(), uuid.NewString()
	p := &persistence.Post{UserID: user, Content: "first", Status: persistence.PostDraft, CreatedAt: time.Now().UTC()}
	ctx := context.Background()
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Create{Post: p})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return dir.Live() == 0 }, 5*time.Second, 5*time.Millisecond)

	p2 := p.Clone()
	p2.Content = "second"
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Create{Post: p2})
	require.ErrorIs(t, err, post.ErrExists)
	r, err := actors.Ask[*post.Reply](ctx, dir.To(id), &post.Get{UserID: user})
	require.NoError(t, err)
	require.Equal(t, "first", r.Post.Content)
	_, err = actors.Ask[*post.Reply](ctx, dir.To(id), &post.Get{UserID: "someone else"})
	require.ErrorIs(t, err, post.ErrForbidden)
	_, err = actors.Ask[*post.Reply](ctx, dir.To(uuid.NewString()), &post.Get{UserID: user})
	require.ErrorIs(t, err, post.ErrNotFound)
}
