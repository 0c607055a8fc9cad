package app_test

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
	b := setup(t, bundleOpts{demo: true})
	x, bsky, ig := b.account(platforms.X), b.account(platforms.Bluesky), b.account(platforms.Instagram)
	other, _ := b.newUser("other@example.com", "pro")
	foreign := b.newAccount(other.ID, "linkedin")
	later := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	s := b.herald().MCPSession(b.key)
	br := b.newBrowser()
	require.Equal(t, 200, br.signIn(b.user.Email, b.password).status)
	scheduled := func() string {
		r := b.do("POST", "/v1/posts/schedule", map[string]any{"content": "fine", "platforms": []string{x.ID}, "scheduledAt": later})
		require.Equal(t, 201, r.status, string(r.body))
		return r.json(t)["id"].(string)
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
		{"over X's limit", campaignPost(strings.Repeat("a", 281), x, bsky),
			"twitter_x: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)", true},
		{"instagram without media", campaignPost("no photo", ig), "instagram: an Instagram post needs a photo or a video", true},
		{"someone else's account", campaignPost("hi", foreign, x), "platforms: connected account " + foreign.ID + " does not exist or is not yours", false},
	} {
		refused := func(r *response, door string) {
			t.Helper()
			require.Equal(t, 400, r.status, "%s %s: %s", tc.name, door, r.body)
			require.Equal(t, "validation_error", r.errorCode(t), "%s %s", tc.name, door)
			require.Equal(t, tc.msg, r.errorMessage(t), "%s %s", tc.name, door)
		}
		refused(b.publishNew(tc.post, nil), "POST /v1/posts/publish")
		refused(b.do("POST", "/v1/posts/schedule", with(tc.post, "scheduledAt", later)), "POST /v1/posts/schedule")
		refused(br.send("POST", "/api/posts/publish", tc.post, br.csrfHeader()), "the dashboard's publish")
		refused(br.send("POST", "/api/posts/schedule", with(tc.post, "scheduledAt", later), br.csrfHeader()), "the dashboard's schedule")

		id := scheduled()
		refused(b.do("PATCH", "/v1/posts/"+id, map[string]any{"content": tc.post["content"], "platforms": tc.post["platforms"]}), "PATCH of a scheduled post")
		require.Equal(t, "fine", b.do("GET", "/v1/posts/"+id, nil).json(t)["content"], "a refused PATCH changes nothing")

		require.Equal(t, map[int][]string{1: {tc.msg}}, rowErrors(t, b.createCampaign(map[string]any{"publish": "now", "posts": []any{tc.post}}, nil)), tc.name)
		require.Equal(t, map[int][]string{1: {tc.msg}},
			rowErrors(t, b.createCampaign(map[string]any{"publish": "schedule", "posts": []any{with(tc.post, "scheduledAt", later)}}, nil)), tc.name)

		// The tools relay the API's refusal, naming their own parameter (accounts).
		toolMsg := strings.Replace(tc.msg, "platforms: ", "accounts: ", 1)
		require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, s, "publish_post", map[string]any{"content": tc.post["content"], "accounts": tc.post["platforms"]})),
			toolMsg, tc.name)
		require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, s, "schedule_post",
			map[string]any{"content": tc.post["content"], "accounts": tc.post["platforms"], "scheduled_at": later})), toolMsg, tc.name)

		// A draft may be incomplete for its networks, and is checked when it is submitted.
		r := b.do("POST", "/v1/posts", tc.post)
		if !tc.network {
			refused(r, "POST /v1/posts")
			require.Equal(t, map[int][]string{1: {tc.msg}}, rowErrors(t, b.createCampaign(map[string]any{"publish": "draft", "posts": []any{tc.post}}, nil)), tc.name)
			continue
		}
		require.Equal(t, 201, r.status, "%s: a draft: %s", tc.name, r.body)
		draft := r.json(t)["id"].(string)
		refused(b.do("POST", "/v1/posts/"+draft+"/publish", nil), "POST /v1/posts/:id/publish")
		refused(b.do("POST", "/v1/posts/"+draft+"/schedule", map[string]any{"scheduledAt": later}), "POST /v1/posts/:id/schedule")
		refused(br.send("POST", "/api/posts/"+draft+"/publish", nil, br.csrfHeader()), "the dashboard's publish of a draft")
		require.Equal(t, "draft", b.do("GET", "/v1/posts/"+draft, nil).json(t)["status"])
		r = b.do("PATCH", "/v1/posts/"+draft, map[string]any{"content": tc.post["content"]})
		require.Equal(t, 200, r.status, "%s: a PATCH of a draft: %s", tc.name, r.body)
		r = b.createCampaign(map[string]any{"publish": "draft", "posts": []any{tc.post}}, nil)
		require.Equal(t, 202, r.status, "%s: a draft campaign: %s", tc.name, r.body)
	}

	// Fixed, the draft publishes.
	r := b.do("POST", "/v1/posts", campaignPost("no photo yet", ig))
	require.Equal(t, 201, r.status, string(r.body))
	draft := r.json(t)["id"].(string)
	photo := b.uploadMedia("photo.jpg", "image/jpeg", jpegFile)
	require.Equal(t, 200, b.do("PATCH", "/v1/posts/"+draft, map[string]any{"media": []string{photo}}).status)
	r = b.do("POST", "/v1/posts/"+draft+"/publish", nil)
	require.Equal(t, 202, r.status, string(r.body))
	require.Equal(t, "completed", b.waitJob(r.json(t)["tracking_id"].(string))["status"])
	require.Empty(t, b.app.Sim.Publications(platforms.X), "nothing refused reached a network")
	require.Empty(t, b.app.Sim.Publications(platforms.Bluesky))
	require.Len(t, b.app.Sim.Publications(platforms.Instagram), 1)
}
