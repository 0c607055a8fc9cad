package post

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// A live post actor told that its job's transaction stored its outcome (Took) answers the post as
// stored from then on, not the publishing post it read before; a state older than its own is
// not taken.
func TestTookReplacesOnlyAnOlderState(t *testing.T) {
	t.Parallel()
	publishing := &persistence.Post{ID: "p", Status: persistence.PostPublishing, Version: 3}
	published := &persistence.Post{ID: "p", Status: persistence.PostPublished, Version: 4}
	a := &Actor{id: "p", state: publishing, loaded: true}
	a.took(&Took{Post: published})
	require.Same(t, published, a.state)
	a.took(&Took{Post: publishing})
	require.Same(t, published, a.state)
	require.True(t, a.Settled(), "a published post passivates")
}
