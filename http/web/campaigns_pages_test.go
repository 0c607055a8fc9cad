package web_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// The Campaigns pages: the list with the campaign's status and totals and the CSV form for those
// who may submit (not a viewer), the campaign's page with its posts (not followed when nothing is
// open), the campaign named on the posts list and the post's page; another workspace's campaign
// and one that does not exist are 404, and absent from the list.
func TestCampaignPages(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	x := h.Account(platforms.X)
	r := h.Do("POST", "/v1/campaigns", map[string]any{"name": "Spring <b>", "publish": "draft",
		"posts": []any{map[string]any{"content": "First draft of the spring", "platforms": []string{x.ID}}}})
	require.Equal(t, 202, r.Status, string(r.Body))
	id := r.JSON(t)["campaign_id"].(string)
	postID := r.JSON(t)["posts"].([]any)[0].(map[string]any)["post_id"].(string)

	own := h.SignedIn()
	r = own.Send("GET", "/campaigns", nil, nil)
	require.Equal(t, 200, r.Status)
	apptest.RequireSecurityHeaders(t, r)
	body := string(r.Body)
	require.Contains(t, body, `<a href="/campaigns/`+id+`">Spring &lt;b&gt;</a>`)
	require.Contains(t, body, `<span class="badge badge-draft">draft</span>`)
	require.Contains(t, body, `id="campaign-form"`)
	require.Contains(t, body, `<code>`+x.ID+`</code>`, "the ids a CSV names")
	require.Contains(t, body, `src="/static/campaigns.js?v=`)

	r = own.Send("GET", "/campaigns/"+id, nil, nil)
	require.Equal(t, 200, r.Status)
	body = string(r.Body)
	require.Contains(t, body, "<h1>Campaign: Spring &lt;b&gt;</h1>")
	require.Contains(t, body, `<a href="/posts/`+postID+`" class="post-text">First draft of the spring</a>`)
	require.NotContains(t, body, `data-follow`, "a campaign of drafts has nothing to follow")
	require.NotContains(t, body, `id="camp-retry"`, "nothing failed")
	require.Contains(t, body, `id="camp-cancel"`, "the owner may cancel the draft")

	r = own.Send("GET", "/posts", nil, nil)
	require.Contains(t, string(r.Body), `<a href="/campaigns/`+id+`" class="muted campaign-name">Campaign: Spring &lt;b&gt;</a>`)
	r = own.Send("GET", "/posts/"+postID, nil, nil)
	require.Contains(t, string(r.Body), `<p id="post-campaign">Part of the campaign <a href="/campaigns/`+id+`">Spring &lt;b&gt;</a></p>`)

	for _, path := range []string{"/campaigns/" + uuid.NewString(), "/campaigns/not-an-id"} {
		require.Equal(t, 404, own.Send("GET", path, nil, nil).Status, path)
	}

	viewer := h.Member("viewer@example.com", "viewer")
	r = viewer.Send("GET", "/campaigns", nil, nil)
	require.Equal(t, 200, r.Status)
	require.Contains(t, string(r.Body), `href="/campaigns/`+id+`"`)
	require.NotContains(t, string(r.Body), `id="campaign-form"`, "a viewer cannot submit")
	r = viewer.Send("GET", "/campaigns/"+id, nil, nil)
	require.Equal(t, 200, r.Status)
	require.NotContains(t, string(r.Body), `id="camp-cancel"`, "nor cancel")

	ws := h.Do("POST", "/v1/workspaces", map[string]any{"name": "Other"})
	require.Equal(t, 201, ws.Status, string(ws.Body))
	r = own.Send("POST", "/api/session/workspace", map[string]any{"workspace_id": ws.JSON(t)["id"]}, own.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, 404, own.Send("GET", "/campaigns/"+id, nil, nil).Status, "another workspace's campaign")
	r = own.Send("GET", "/campaigns", nil, nil)
	require.NotContains(t, string(r.Body), id)
	require.Contains(t, string(r.Body), "No campaign yet.")
}
