package web_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// What the pages show a member follows their role: the Members entry and page are the owner's,
// the team's keys an admin's; every member's header names them, not the owner.
func TestPagesForMembers(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	ed, adm := h.Member("ed@example.com", "editor"), h.Member("adm@example.com", "admin")
	own := h.Member("co@example.com", "owner")

	r := ed.Send("GET", "/developer", nil, nil)
	require.Equal(t, 200, r.Status)
	require.NotContains(t, string(r.Body), `id="keys-h"`, "no keys for an editor")
	require.Contains(t, string(r.Body), `id="hooks-h"`)
	require.Contains(t, string(r.Body), `<span class="who">ed@example.com</span>`)
	require.NotContains(t, string(r.Body), `href="/members"`)
	r = ed.Send("GET", "/members", nil, nil)
	require.Equal(t, 403, r.Status)
	require.Contains(t, string(r.Body), "needs the owner role")

	r = adm.Send("GET", "/developer", nil, nil)
	require.Contains(t, string(r.Body), `id="keys-h"`)
	require.NotContains(t, string(r.Body), `href="/members"`)
	require.Equal(t, 403, adm.Send("GET", "/members", nil, nil).Status)

	for _, br := range []*apptest.Browser{own, h.SignedIn()} {
		r = br.Send("GET", "/members", nil, nil)
		require.Equal(t, 200, r.Status)
		apptest.RequireSecurityHeaders(t, r)
		require.Contains(t, string(r.Body), `href="/members"`)
		require.Contains(t, string(r.Body), "ed@example.com")
		require.Contains(t, string(r.Body), `data-api="/api/members/invitations"`)
	}
	r = own.Send("GET", "/members", nil, nil)
	require.Contains(t, string(r.Body), "(you)", "a member does not change or remove themselves")
}

// A post's page offers each action only to whom its operation's role allows: a viewer gets none,
// an editor publishes, schedules, queues and edits but does not delete (an admin's), an admin and
// the owner delete.
func TestPostPageActionsFollowTheRole(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "A draft for the team", "platforms": []string{h.Accounts[0].ID}})
	require.Equal(t, 201, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	page := func(br *apptest.Browser) string {
		r := br.Send("GET", "/posts/"+id, nil, nil)
		require.Equal(t, 200, r.Status)
		return string(r.Body)
	}
	const del, publish, queue, edit = `data-method="DELETE"`, `id="publish-draft"`, `id="add-to-queue"`, `data-method="PATCH"`
	viewer := page(h.Member("vi@example.com", "viewer"))
	for _, s := range []string{del, publish, queue, edit} {
		require.NotContains(t, viewer, s, "a viewer")
	}
	editor := page(h.Member("ed@example.com", "editor"))
	for _, s := range []string{publish, queue, edit} {
		require.Contains(t, editor, s, "an editor")
	}
	require.NotContains(t, editor, del, "an editor does not delete")
	for _, br := range []*apptest.Browser{h.Member("adm@example.com", "admin"), h.SignedIn()} {
		require.Contains(t, page(br), del)
	}
}
