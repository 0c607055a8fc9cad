package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// putWorkspace stores a workspace of userID.
func putWorkspace(t *testing.T, h *apptest.Herald, userID, name string) *persistence.Workspace {
	t.Helper()
	w := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: name, CreatedAt: time.Now().UTC()}
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutWorkspace(w) }))
	return w
}

// putKey stores a key of userID bound to workspace (""; none) and limited to scopes (none: full
// access) and returns it.
func putKey(t *testing.T, h *apptest.Herald, userID, workspace string, scopes ...string) string {
	t.Helper()
	raw, prefix, hash := auth.GenerateKey()
	k := &persistence.APIKey{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: "bound", Prefix: prefix, Hash: hash,
		CreatedAt: time.Now().UTC(), WorkspaceID: workspace, Scopes: scopes}
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAPIKey(k, nil) }))
	return raw
}

// A workspace's connect links are created (the url shown once), listed (with a prefix, never
// the url) and revoked; they are the workspace's own.
func TestConnectLinksCreateListRevoke(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := putWorkspace(t, h, h.User.ID, "Acme")
	base := "/v1/workspaces/" + ws.ID + "/connect-links"

	r := h.Do("POST", base, map[string]any{"platforms": []string{"instagram", "linkedin"}, "expires_in_hours": 24, "note": "for Acme's Instagram"})
	require.Equal(t, 201, r.Status, string(r.Body))
	made := r.JSON(t)
	u := made["url"].(string)
	require.True(t, strings.HasPrefix(u, h.URL+"/connect/l/"), u)
	token := strings.TrimPrefix(u, h.URL+"/connect/l/")
	require.Equal(t, token[:8], made["prefix"])
	require.Equal(t, []any{"instagram", "linkedin"}, made["platforms"])
	require.Equal(t, ws.ID, made["workspace_id"])
	require.Equal(t, "for Acme's Instagram", made["note"])
	created, err := time.Parse(time.RFC3339, made["created_at"].(string))
	require.NoError(t, err)
	expires, err := time.Parse(time.RFC3339, made["expires_at"].(string))
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, expires.Sub(created).Round(time.Second))

	// Defaults: 72 hours, every network whose consent this server runs (the sandbox has an X app).
	r = h.Do("POST", base, nil)
	require.Equal(t, 201, r.Status, string(r.Body))
	def := r.JSON(t)
	created, _ = time.Parse(time.RFC3339, def["created_at"].(string))
	expires, _ = time.Parse(time.RFC3339, def["expires_at"].(string))
	require.Equal(t, 72*time.Hour, expires.Sub(created).Round(time.Second))
	require.Len(t, def["platforms"], 8)
	require.Contains(t, def["platforms"], "twitter_x")
	require.Nil(t, def["note"])

	r = h.Do("GET", base, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	list := r.JSON(t)["data"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, made["id"], list[0].(map[string]any)["id"])
	require.NotContains(t, string(r.Body), token, "the list never shows the secret")
	require.NotContains(t, list[0].(map[string]any), "url")
	require.Nil(t, list[0].(map[string]any)["revoked_at"])
	require.EqualValues(t, 0, list[0].(map[string]any)["uses"])

	// The main workspace has links of its own, none of these.
	r = h.Do("GET", "/v1/workspaces/main/connect-links", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Empty(t, r.JSON(t)["data"])
	// Another workspace cannot revoke this one's link.
	r = h.Do("DELETE", "/v1/workspaces/main/connect-links/"+made["id"].(string), nil)
	require.Equal(t, 404, r.Status, string(r.Body))
	require.Equal(t, "not_found", r.ErrorCode(t))

	r = h.Do("DELETE", base+"/"+made["id"].(string), nil)
	require.Equal(t, 204, r.Status, string(r.Body))
	r = h.Do("DELETE", base+"/"+made["id"].(string), nil)
	require.Equal(t, 204, r.Status, "revoking again changes nothing")
	r = h.Do("GET", base, nil)
	require.NotNil(t, r.JSON(t)["data"].([]any)[0].(map[string]any)["revoked_at"])
	require.Nil(t, r.JSON(t)["data"].([]any)[1].(map[string]any)["revoked_at"])

	// The dashboard's door serves the same operations on the session's cookie.
	br := h.SignedIn()
	r = br.Send("GET", "/api/workspaces/"+ws.ID+"/connect-links", nil, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Len(t, r.JSON(t)["data"], 2)
	r = br.Send("POST", "/api/workspaces/main/connect-links", map[string]any{"platforms": []string{"youtube"}}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
}

// Bad input is refused in the spec's error shape and creates nothing.
func TestConnectLinksBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := putWorkspace(t, h, h.User.ID, "Acme")
	base := "/v1/workspaces/" + ws.ID + "/connect-links"
	mallory, malloryKey := h.NewUser("mallory@example.com", "pro")
	theirs := putWorkspace(t, h, mallory.ID, "Mallory's")

	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"hours 0", map[string]any{"expires_in_hours": 0}, "expires_in_hours"},
		{"hours 169", map[string]any{"expires_in_hours": 169}, "expires_in_hours"},
		{"hours not a number", map[string]any{"expires_in_hours": "72"}, "expires_in_hours"},
		{"hours not an integer", map[string]any{"expires_in_hours": 1.5}, "expires_in_hours"},
		{"unknown platform", map[string]any{"platforms": []string{"myspace"}}, "platforms"},
		{"credential platform", map[string]any{"platforms": []string{"bluesky"}}, "platforms"},
		{"duplicate platform", map[string]any{"platforms": []string{"linkedin", "linkedin"}}, "platforms"},
		{"platforms not an array", map[string]any{"platforms": "linkedin"}, "platforms"},
		{"note not a string", map[string]any{"note": 5}, "note"},
		{"note too long", map[string]any{"note": strings.Repeat("n", 501)}, "note"},
		{"not an object", `[1]`, ""},
	} {
		r := h.Do("POST", base, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), c.name)
		require.Contains(t, r.ErrorMessage(t), c.want, c.name)
	}
	r := h.Do("GET", base, nil)
	require.Empty(t, r.JSON(t)["data"], "nothing was created")

	// Another user's workspace, or one that does not exist: 404, both ways round.
	for _, path := range []string{"/v1/workspaces/" + theirs.ID + "/connect-links", "/v1/workspaces/" + uuid.Must(uuid.NewV7()).String() + "/connect-links", "/v1/workspaces/nope/connect-links"} {
		r = h.Do("POST", path, nil)
		require.Equal(t, 404, r.Status, "%s: %s", path, r.Body)
		require.Equal(t, "not_found", r.ErrorCode(t))
		r = h.Do("GET", path, nil)
		require.Equal(t, 404, r.Status, "%s: %s", path, r.Body)
	}
	r = h.DoKey(malloryKey, "GET", base, nil, nil)
	require.Equal(t, 404, r.Status, string(r.Body))
	made := h.Do("POST", base, nil).JSON(t)
	r = h.DoKey(malloryKey, "DELETE", "/v1/workspaces/main/connect-links/"+made["id"].(string), nil, nil)
	require.Equal(t, 404, r.Status, "another user cannot revoke it")
	r = h.Do("DELETE", base+"/not-a-uuid", nil)
	require.Equal(t, 400, r.Status, string(r.Body))
	r = h.Do("DELETE", base+"/"+uuid.Must(uuid.NewV7()).String(), nil)
	require.Equal(t, 404, r.Status, string(r.Body))

	// A key bound to another workspace: 403 with the insufficient_scope challenge.
	bound := putKey(t, h, h.User.ID, persistence.MainWorkspace)
	r = h.DoKey(bound, "POST", base, nil, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, "forbidden", r.ErrorCode(t))
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	r = h.DoKey(bound, "GET", "/v1/workspaces/main/connect-links", nil, nil)
	require.Equal(t, 200, r.Status, "its own workspace: %s", r.Body)

	// A key limited to scopes: accounts:read lists, only accounts:write creates and revokes.
	reader := putKey(t, h, h.User.ID, "", auth.ScopeAccountsRead)
	r = h.DoKey(reader, "GET", base, nil, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	r = h.DoKey(reader, "POST", base, nil, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	r = h.DoKey(reader, "DELETE", base+"/"+made["id"].(string), nil, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	writer := putKey(t, h, h.User.ID, "", auth.ScopeAccountsWrite)
	r = h.DoKey(writer, "POST", base, nil, http.Header{})
	require.Equal(t, 201, r.Status, string(r.Body))
}
