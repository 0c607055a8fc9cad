package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// A partial post is fixed and published again: its failed target's media and text can be edited
// (held to its network's rules, an over-limit text refused with the network named and by how
// much), its published target stays as it went out and cannot be removed, and an account added
// is published with the retry.
func TestPartialPostIsFixedAndRetried(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, ig, bsky := h.Account(platforms.X).ID, h.Account(platforms.Instagram).ID, h.Account(platforms.Bluesky).ID
	broken := h.UnconvertiblePhoto()
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "a broken photo", "platforms": []string{x, ig}, "media": []string{broken}})
	require.Equal(t, 202, r.Status, string(r.Body))
	id := r.JSON(t)["post_id"].(string)
	h.WaitJob(r.JSON(t)["tracking_id"].(string))
	get := func() map[string]any { return h.Do("GET", "/v1/posts/"+id, nil).JSON(t) }
	require.Eventually(t, func() bool { return get()["status"] == "partial" }, 10*time.Second, 10*time.Millisecond)

	// Instagram takes 2,200 characters: 2,250 is 50 over, said with its name.
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": strings.Repeat("a", 2250)})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "Instagram")
	require.Contains(t, r.ErrorMessage(t), "50")
	// The account published on cannot be removed.
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"platforms": []string{ig}})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "cannot be removed")
	require.Equal(t, "a broken photo", get()["content"], "a refused edit changes nothing")

	photo := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": "a good photo", "media": []string{photo}, "platforms": []string{x, ig, bsky}})
	require.Equal(t, 200, r.Status, string(r.Body))
	p := r.JSON(t)
	require.Equal(t, "partial", p["status"])
	byPlatform := map[string]map[string]any{}
	for _, pl := range p["platforms"].([]any) {
		byPlatform[pl.(map[string]any)["platform"].(string)] = pl.(map[string]any)
	}
	require.Equal(t, "published", byPlatform["twitter_x"]["status"])
	require.Equal(t, "a broken photo", byPlatform["twitter_x"]["content"], "X keeps what it was sent")
	require.Equal(t, []any{broken}, byPlatform["twitter_x"]["media"])
	require.Equal(t, "failed", byPlatform["instagram"]["status"])
	require.Equal(t, "a good photo", byPlatform["instagram"]["content"])
	require.Equal(t, "pending", byPlatform["bluesky"]["status"])

	r = h.Do("POST", "/v1/posts/"+id+"/publish", nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	j := h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, 2.0, j["total"], "Instagram and the account added, not X again")
	require.Eventually(t, func() bool { return get()["status"] == "published" }, 10*time.Second, 10*time.Millisecond)
	require.Len(t, h.App.Sim.Publications(platforms.X), 1, "X is not published twice")
	require.Len(t, h.App.Sim.Publications(platforms.Instagram), 1)
	require.Len(t, h.App.Sim.Publications(platforms.Bluesky), 1)

	// A published post is not edited.
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": "again"})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "a published post cannot be updated")
}
