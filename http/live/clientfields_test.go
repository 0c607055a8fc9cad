package live_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// The service's own clients (its MCP package and CLI) read element shapes the spec leaves
// unshown, and some answers by names Herald gives otherwise: Herald's answers carry those names
// beside its own, with the same values.
func TestAnswersCarryTheNamesTheServiceClientsRead(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	long := "Launch day!   Our new\nproduct ships today. " + strings.Repeat("More words follow here. ", 8)
	post := h.PublishAndWait(long, nil, x, bsky)
	xc, err := s.AddComment(platforms.X, apptest.Target(post, platforms.X), "Love it", "ann")
	require.NoError(t, err)
	r := h.Do("POST", "/v1/inbox/comments/"+xc+"/reply", map[string]any{"publication_id": apptest.PublicationID(post, platforms.X), "text": "Thanks!"})
	require.Equal(t, 200, r.Status, string(r.Body))
	_, err = s.AddDM(platforms.X, x.NetworkUserID, "dana", "Hello there, a question about the launch")
	require.NoError(t, err)
	snippet := "Launch day! Our new product ships today. More words follow here. More words follow here. More words…"
	require.Len(t, []rune(snippet), 100)

	// Analytics overview: by_platform[].post_count and .metrics, top_posts[].snippet.
	r = h.Do("GET", "/v1/analytics/overview?fresh=true", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	ov := r.JSON(t)
	byPlatform := ov["by_platform"].([]any)
	require.NotEmpty(t, byPlatform)
	for _, e := range byPlatform {
		pt := e.(map[string]any)
		require.Equal(t, pt["publications"], pt["post_count"], pt["platform"])
		m := pt["metrics"].(map[string]any)
		for _, k := range []string{"views", "likes", "comments", "shares", "engagement"} {
			require.Contains(t, m, k)
			require.Equal(t, pt[k], m[k], "%s %s", pt["platform"], k)
		}
	}
	top := ov["top_posts"].([]any)
	require.NotEmpty(t, top)
	for _, e := range top {
		require.Equal(t, snippet, e.(map[string]any)["snippet"])
	}

	// Comments: author_handle and post_snippet on the comment, is_own on replies.
	r = h.Do("GET", "/v1/inbox/comments?platform=twitter_x&fresh=true", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	page := r.JSON(t)
	require.Empty(t, page["next_before"], "a string, empty on the last page")
	require.IsType(t, "", page["next_before"])
	threads := page["threads"].([]any)
	require.Len(t, threads, 1)
	th := threads[0].(map[string]any)
	c := th["comment"].(map[string]any)
	require.Equal(t, "ann", c["author_handle"])
	require.Equal(t, c["author"], c["author_handle"])
	require.Equal(t, snippet, c["post_snippet"])
	replies := th["replies"].([]any)
	require.Len(t, replies, 1)
	require.Equal(t, true, replies[0].(map[string]any)["is_own"])
	require.Equal(t, true, replies[0].(map[string]any)["by_account"])

	// DMs: conversation_id, snippet, peer_handle.
	r = h.Do("GET", "/v1/inbox/dms?platform=twitter_x", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	page = r.JSON(t)
	require.Empty(t, page["next_before"])
	require.IsType(t, "", page["next_before"])
	conv := page["conversations"].([]any)[0].(map[string]any)
	require.Equal(t, conv["id"], conv["conversation_id"])
	require.Equal(t, "Hello there, a question about the launch", conv["snippet"])
	require.Equal(t, "dana", conv["peer_handle"])
	r = h.Do("GET", "/v1/inbox/dms/"+url.PathEscape(conv["id"].(string))+"?account_id="+x.ID, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	one := r.JSON(t)["conversation"].(map[string]any)
	require.Equal(t, conv["id"], one["conversation_id"])
	require.Equal(t, "Hello there, a question about the launch", one["snippet"])
}
