package api_test

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// The same bad post is refused the same way at every door that takes a post: a new post
// published or scheduled, a draft published or scheduled, a PATCH of a scheduled post, a campaign
// row, the MCP tools and the dashboard; a draft is held to every rule but the networks'.
func TestOneCheckAtEveryDoor(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, ig := h.Account(platforms.X), h.Account(platforms.Bluesky), h.Account(platforms.Instagram)
	other, _ := h.NewUser("other@example.com", "pro")
	foreign := h.NewAccount(other.ID, "linkedin")
	later := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	s := h.MCPSession(h.Key)
	br := h.NewBrowser()
	require.Equal(t, 200, br.SignIn(h.User.Email, h.Password).Status)
	scheduled := func() string {
		r := h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "fine", "platforms": []string{x.ID}, "scheduledAt": later})
		require.Equal(t, 201, r.Status, string(r.Body))
		return r.JSON(t)["id"].(string)
	}
	with := func(post map[string]any, k string, v any) map[string]any {
		out := maps.Clone(post)
		out[k] = v
		return out
	}

	for _, tc := range []struct {
		name string
		post map[string]any
		msg  string
		// network: a rule of a network, which a draft is not held to.
		network bool
	}{
		{"over X's limit", apptest.CampaignPost(strings.Repeat("a", 281), x, bsky),
			"twitter_x: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)", true},
		{"instagram without media", apptest.CampaignPost("no photo", ig), "instagram: an Instagram post needs a photo or a video", true},
		{"someone else's account", apptest.CampaignPost("hi", foreign, x), "platforms: connected account " + foreign.ID + " does not exist or is not yours", false},
	} {
		refused := func(r *apptest.Response, door string) {
			t.Helper()
			require.Equal(t, 400, r.Status, "%s %s: %s", tc.name, door, r.Body)
			require.Equal(t, "validation_error", r.ErrorCode(t), "%s %s", tc.name, door)
			require.Equal(t, tc.msg, r.ErrorMessage(t), "%s %s", tc.name, door)
		}
		refused(h.DoKey(h.Key, "POST", "/v1/posts/publish", tc.post, nil), "POST /v1/posts/publish")
		refused(h.Do("POST", "/v1/posts/schedule", with(tc.post, "scheduledAt", later)), "POST /v1/posts/schedule")
		refused(br.Send("POST", "/api/posts/publish", tc.post, br.CSRFHeader()), "the dashboard's publish")
		refused(br.Send("POST", "/api/posts/schedule", with(tc.post, "scheduledAt", later), br.CSRFHeader()), "the dashboard's schedule")

		id := scheduled()
		refused(h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": tc.post["content"], "platforms": tc.post["platforms"]}), "PATCH of a scheduled post")
		require.Equal(t, "fine", h.Do("GET", "/v1/posts/"+id, nil).JSON(t)["content"], "a refused PATCH changes nothing")

		require.Equal(t, map[int][]string{1: {tc.msg}}, apptest.RowErrors(t, h.CreateCampaign(map[string]any{"publish": "now", "posts": []any{tc.post}}, nil)), tc.name)
		require.Equal(t, map[int][]string{1: {tc.msg}},
			apptest.RowErrors(t, h.CreateCampaign(map[string]any{"publish": "schedule", "posts": []any{with(tc.post, "scheduledAt", later)}}, nil)), tc.name)

		// The tools relay the API's refusal, naming their own parameter (accounts).
		toolMsg := strings.Replace(tc.msg, "platforms: ", "accounts: ", 1)
		require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, s, "publish_post", map[string]any{"content": tc.post["content"], "accounts": tc.post["platforms"]})),
			toolMsg, tc.name)
		require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, s, "schedule_post",
			map[string]any{"content": tc.post["content"], "accounts": tc.post["platforms"], "scheduled_at": later})), toolMsg, tc.name)

		// A draft may be incomplete for its networks, and is checked when it is submitted.
		r := h.Do("POST", "/v1/posts", tc.post)
		if !tc.network {
			refused(r, "POST /v1/posts")
			require.Equal(t, map[int][]string{1: {tc.msg}}, apptest.RowErrors(t, h.CreateCampaign(map[string]any{"publish": "draft", "posts": []any{tc.post}}, nil)), tc.name)
			continue
		}
		require.Equal(t, 201, r.Status, "%s: a draft: %s", tc.name, r.Body)
		draft := r.JSON(t)["id"].(string)
		refused(h.Do("POST", "/v1/posts/"+draft+"/publish", nil), "POST /v1/posts/:id/publish")
		refused(h.Do("POST", "/v1/posts/"+draft+"/schedule", map[string]any{"scheduledAt": later}), "POST /v1/posts/:id/schedule")
		refused(br.Send("POST", "/api/posts/"+draft+"/publish", nil, br.CSRFHeader()), "the dashboard's publish of a draft")
		require.Equal(t, "draft", h.Do("GET", "/v1/posts/"+draft, nil).JSON(t)["status"])
		r = h.Do("PATCH", "/v1/posts/"+draft, map[string]any{"content": tc.post["content"]})
		require.Equal(t, 200, r.Status, "%s: a PATCH of a draft: %s", tc.name, r.Body)
		r = h.CreateCampaign(map[string]any{"publish": "draft", "posts": []any{tc.post}}, nil)
		require.Equal(t, 202, r.Status, "%s: a draft campaign: %s", tc.name, r.Body)
	}

	// Fixed, the draft publishes.
	r := h.Do("POST", "/v1/posts", apptest.CampaignPost("no photo yet", ig))
	require.Equal(t, 201, r.Status, string(r.Body))
	draft := r.JSON(t)["id"].(string)
	photo := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
	require.Equal(t, 200, h.Do("PATCH", "/v1/posts/"+draft, map[string]any{"media": []string{photo}}).Status)
	r = h.Do("POST", "/v1/posts/"+draft+"/publish", nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	require.Equal(t, "completed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])
	require.Empty(t, h.App.Sim.Publications(platforms.X), "nothing refused reached a network")
	require.Empty(t, h.App.Sim.Publications(platforms.Bluesky))
	require.Len(t, h.App.Sim.Publications(platforms.Instagram), 1)
}
