package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// GET /v1/posts filters by account, under the name account_id and under connected_account_id.
func TestListPostsByAccount(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.LinkedIn)
	ids := map[string]string{}
	for _, p := range []struct {
		name  string
		accts []string
	}{{"x", []string{x.ID}}, {"both", []string{x.ID, bsky.ID}}, {"bsky", []string{bsky.ID}}} {
		name := p.name
		r := h.Do("POST", "/v1/posts", map[string]any{"content": name, "platforms": p.accts})
		require.Equal(t, 201, r.Status, string(r.Body))
		ids[name] = r.JSON(t)["id"].(string)
	}
	list := func(q string) (got []string, total float64) {
		r := h.Do("GET", "/v1/posts?"+q, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		for _, p := range r.JSON(t)["data"].([]any) {
			got = append(got, p.(map[string]any)["id"].(string))
		}
		return got, r.JSON(t)["pagination"].(map[string]any)["total"].(float64)
	}
	got, total := list("account_id=" + x.ID)
	require.Equal(t, []string{ids["both"], ids["x"]}, got, "newest first")
	require.Equal(t, 2.0, total)
	got, _ = list("connected_account_id=" + bsky.ID)
	require.Equal(t, []string{ids["bsky"], ids["both"]}, got)
	got, total = list("account_id=" + x.ID + "&limit=1&page=2")
	require.Equal(t, []string{ids["x"]}, got)
	require.Equal(t, 2.0, total)
	got, _ = list("account_id=" + x.ID + "&connected_account_id=" + x.ID + "&search=both")
	require.Equal(t, []string{ids["both"]}, got)
	got, total = list("account_id=" + li.ID)
	require.Empty(t, got)
	require.Equal(t, 0.0, total)
	got, _ = list("account_id=" + x.ID + "&platform=bluesky")
	require.Empty(t, got, "no target is on X's account and on Bluesky")

	other, _ := h.NewUser("posts-filter@example.com", "pro")
	theirs := h.NewAccount(other.ID, "twitter_x")
	for q, want := range map[string]string{
		"account_id=nope":           "account_id: Invalid uuid",
		"connected_account_id=nope": "connected_account_id: Invalid uuid",
		"account_id=" + theirs.ID:   "does not exist or is not yours",
		"account_id=" + x.ID + "&connected_account_id=" + bsky.ID: "must equal account_id",
	} {
		r := h.Do("GET", "/v1/posts?"+q, nil)
		require.Equal(t, 400, r.Status, "%s: %s", q, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), want, q)
	}
}

// Both schedule answers carry post_id beside id.
func TestScheduleAnswersCarryPostID(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X)
	at := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	r := h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "later", "platforms": []string{x.ID}, "scheduledAt": at})
	require.Equal(t, 201, r.Status, string(r.Body))
	body := r.JSON(t)
	require.NotEmpty(t, body["id"])
	require.Equal(t, body["id"], body["post_id"])
	require.Equal(t, "scheduled", body["status"])

	r = h.Do("POST", "/v1/posts", map[string]any{"content": "draft", "platforms": []string{x.ID}})
	require.Equal(t, 201, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	r = h.Do("POST", "/v1/posts/"+id+"/schedule", map[string]any{"scheduledAt": at})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, id, r.JSON(t)["post_id"])
	require.Equal(t, id, r.JSON(t)["id"])
}
