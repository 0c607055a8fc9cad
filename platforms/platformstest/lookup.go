package platformstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// BuriedLookup checks that a's Lookup says "not found" only when its listing reached back to the
// time it looks from: a post just published is found, one never sent is absent, and once buried
// more posts of the account are published after it than Lookup reads (its page bound), Lookup
// answers ErrLookupIncomplete, a permanent error, never "not found": an attempt in doubt must not
// be sent again on the strength of a listing that stopped short. The simulator behind a must let
// the account publish that many posts (sim.Options.LimitScale).
func BuriedLookup(t *testing.T, a platforms.Adapter, creds platforms.Credentials, buried int) {
	t.Helper()
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	_, err := a.Publish(ctx, creds, platforms.Post{Text: "the post in doubt"})
	require.NoError(t, err)
	_, found, err := a.Lookup(ctx, creds, platforms.Post{Text: "the post in doubt"}, since)
	require.NoError(t, err)
	require.True(t, found, "found right after it was published")
	_, found, err = a.Lookup(ctx, creds, platforms.Post{Text: "never sent"}, since)
	require.NoError(t, err, "a listing read back past since says the post is absent")
	require.False(t, found)
	for i := range buried {
		_, err := a.Publish(ctx, creds, platforms.Post{Text: fmt.Sprintf("burying it %d", i)})
		require.NoError(t, err)
	}
	_, found, err = a.Lookup(ctx, creds, platforms.Post{Text: "the post in doubt"}, since)
	require.False(t, found)
	require.ErrorIs(t, err, platforms.ErrLookupIncomplete)
	require.Equal(t, platforms.Permanent, platforms.KindOf(err), "not retried: more posts only bury it deeper")
}
