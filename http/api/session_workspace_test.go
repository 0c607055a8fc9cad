package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// The dashboard's switcher: POST /api/session/workspace keeps the choice in the session record,
// so the session's /api calls act in that workspace without a header; another session and the
// key are not moved; bad choices are refused with nothing changed; a workspace deleted later
// falls back to main.
func TestSessionWorkspaceSwitch(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	other := h.NewBrowser()
	require.Equal(t, 200, other.SignIn(h.User.Email, h.Password).Status)

	r := h.Do("POST", "/v1/workspaces", map[string]any{"name": "Client A"})
	require.Equal(t, 201, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	stranger, _ := h.NewUser("stranger@example.com", "pro")
	foreign := "0190f000-0000-7000-8000-000000000001"
	require.NoError(t, h.App.Store.Update(t.Context(), func(tx *persistence.Tx) error {
		return tx.PutWorkspace(&persistence.Workspace{ID: foreign, UserID: stranger.ID, Name: "Theirs", Version: 1})
	}))

	sessionWorkspace := func() string {
		t.Helper()
		r := br.Send("GET", "/api/me", nil, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		w, _ := r.JSON(t)["workspace_id"].(string)
		return w
	}
	require.Equal(t, "main", sessionWorkspace())

	// Refusals: nothing changes.
	for _, c := range []struct {
		body   any
		hdr    bool
		status int
		code   string
	}{
		{map[string]any{"workspace_id": id}, false, 403, "forbidden"}, // no CSRF token
		{map[string]any{}, true, 400, "validation_error"},
		{map[string]any{"workspace_id": 7}, true, 400, "validation_error"},
		{map[string]any{"workspace_id": id, "x": 1}, true, 400, "validation_error"},
		{map[string]any{"workspace_id": foreign}, true, 404, "not_found"},
		{map[string]any{"workspace_id": "not-a-workspace"}, true, 404, "not_found"},
	} {
		hdr := br.CSRFHeader()
		if !c.hdr {
			hdr = nil
		}
		r := br.Send("POST", "/api/session/workspace", c.body, hdr)
		require.Equal(t, c.status, r.Status, "%v: %s", c.body, r.Body)
		require.Equal(t, c.code, r.ErrorCode(t))
		require.Equal(t, "main", sessionWorkspace())
	}

	r = br.Send("POST", "/api/session/workspace", map[string]any{"workspace_id": id}, br.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, id, r.JSON(t)["id"])
	require.Equal(t, "Client A", r.JSON(t)["name"])
	require.Equal(t, id, sessionWorkspace())

	// The key and the other session still act in main.
	r = other.Send("GET", "/api/me", nil, nil)
	require.Equal(t, "main", r.JSON(t)["workspace_id"])
	r = h.Do("GET", "/v1/me", nil)
	require.Equal(t, "main", r.JSON(t)["workspace_id"])

	// The header still wins over the session's choice for one request.
	r = br.Send("GET", "/api/me", nil, ws("main"))
	require.Equal(t, "main", r.JSON(t)["workspace_id"])

	// Back to main by its id or by the user's id.
	r = br.Send("POST", "/api/session/workspace", map[string]any{"workspace_id": h.User.ID}, br.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "main", r.JSON(t)["id"])
	require.Equal(t, "main", sessionWorkspace())

	// A chosen workspace deleted later: the session is back in main.
	r = br.Send("POST", "/api/session/workspace", map[string]any{"workspace_id": id}, br.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, 204, h.Do("DELETE", "/v1/workspaces/"+id, nil).Status)
	require.Equal(t, "main", sessionWorkspace())
}
