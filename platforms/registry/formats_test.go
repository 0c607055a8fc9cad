package registry_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

// The adapters publish threads exactly where Herald offers them (HasThreads) and first comments
// exactly where a comment has a length (CommentMax), so that what the API accepts is what the
// network's adapter can send.
func TestFormatsMatchTheAdapters(t *testing.T) {
	t.Parallel()
	for p, a := range registry.New(nil) {
		_, threads := a.(platforms.Threader)
		require.Equal(t, p.HasThreads(), threads, "%s threads", p)
		_, comments := a.(platforms.FirstCommenter)
		require.Equal(t, platforms.CommentMax(p) > 0, comments, "%s first comments", p)
	}
}
