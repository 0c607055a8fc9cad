package api_test

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// ws is a header naming a workspace.
func ws(id string) http.Header { return http.Header{"Herald-Workspace": {id}} }

// snapshot is every workspace of the user as stored, to show that a refused request changed
// nothing.
func snapshot(t *testing.T, h *apptest.Herald) []persistence.Workspace {
	t.Helper()
	var out []persistence.Workspace
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.Workspaces(h.User.ID)
		for _, w := range list {
			out = append(out, *w)
		}
		return err
	}))
	return out
}

// moveAccount puts a stored account in the workspace id (as if it had been connected there).
func moveAccount(t *testing.T, h *apptest.Herald, accountID, id string) {
	t.Helper()
	require.NoError(t, h.App.Store.Update(t.Context(), func(tx *persistence.Tx) error {
		a, err := tx.Account(accountID)
		if err != nil {
			return err
		}
		if err := tx.DeleteAccount(a); err != nil {
			return err
		}
		a.WorkspaceID = id
		return tx.PutAccount(a)
	}))
}

// The workspaces routes: main is always there; create, read, rename, limits, delete; and what
// each bad request gets, with nothing changed.
func TestWorkspacesCRUD(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})

	r := h.Do("GET", "/v1/workspaces", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	data := r.JSON(t)["data"].([]any)
	require.Len(t, data, 1)
	main := data[0].(map[string]any)
	require.Equal(t, "main", main["id"])
	require.Equal(t, "Main", main["name"])
	require.Equal(t, false, main["approval_required"])

	r = h.Do("POST", "/v1/workspaces", map[string]any{"name": "  Client A  ", "approval_required": true, "limits": map[string]any{"accounts": 3}})
	require.Equal(t, 201, r.Status, string(r.Body))
	a := r.JSON(t)
	id := a["id"].(string)
	require.Equal(t, "Client A", a["name"])
	require.Equal(t, true, a["approval_required"])
	require.Equal(t, float64(3), a["limits"].(map[string]any)["accounts"])
	require.Nil(t, a["limits"].(map[string]any)["posts_per_month"])

	r = h.Do("GET", "/v1/workspaces/"+id, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "Client A", r.JSON(t)["name"])
	r = h.Do("PATCH", "/v1/workspaces/"+id, map[string]any{"name": "Client A (EU)", "limits": map[string]any{"posts_per_month": 100}})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "Client A (EU)", r.JSON(t)["name"])
	require.Equal(t, float64(100), r.JSON(t)["limits"].(map[string]any)["posts_per_month"])
	require.Equal(t, float64(3), r.JSON(t)["limits"].(map[string]any)["accounts"], "a limit not sent stays")
	r = h.Do("PATCH", "/v1/workspaces/main", map[string]any{"name": "Agency"})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "main", r.JSON(t)["id"])
	require.Len(t, h.Do("GET", "/v1/workspaces", nil).JSON(t)["data"], 2)

	before := snapshot(t, h)
	other, otherKey := h.NewUser("other@example.com", "pro")
	_ = other
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code, msg    string
	}{
		{"POST", "/v1/workspaces", map[string]any{}, 400, "validation_error", "name: Required"},
		{"POST", "/v1/workspaces", map[string]any{"name": "   "}, 400, "validation_error", "must not be blank"},
		{"POST", "/v1/workspaces", map[string]any{"name": strings.Repeat("n", 101)}, 400, "validation_error", "at most 100"},
		{"POST", "/v1/workspaces", map[string]any{"name": "a\nb"}, 400, "validation_error", "one line"},
		{"POST", "/v1/workspaces", map[string]any{"name": 7}, 400, "validation_error", "Expected string"},
		{"POST", "/v1/workspaces", map[string]any{"name": "x", "owner": "y"}, 400, "validation_error", "Unrecognized key"},
		{"POST", "/v1/workspaces", map[string]any{"name": "x", "limits": map[string]any{"accounts": -1}}, 400, "validation_error", "from 0"},
		{"POST", "/v1/workspaces", map[string]any{"name": "x", "limits": map[string]any{"accounts": 1.5}}, 400, "validation_error", "whole number"},
		{"POST", "/v1/workspaces", map[string]any{"name": "x", "limits": map[string]any{"seats": 1}}, 400, "validation_error", "Unrecognized key"},
		{"POST", "/v1/workspaces", map[string]any{"name": "x", "limits": "none"}, 400, "validation_error", "Expected object"},
		{"POST", "/v1/workspaces", map[string]any{"name": "x", "approval_required": "yes"}, 400, "validation_error", "Expected boolean"},
		{"PATCH", "/v1/workspaces/" + id, map[string]any{}, 400, "validation_error", "nothing to update"},
		{"GET", "/v1/workspaces/not-a-workspace", nil, 404, "not_found", "workspace"},
		{"DELETE", "/v1/workspaces/main", nil, 400, "validation_error", "main workspace cannot be deleted"},
	} {
		r := h.Do(c.method, c.path, c.body)
		require.Equal(t, c.status, r.Status, "%s %s %v: %s", c.method, c.path, c.body, r.Body)
		require.Equal(t, c.code, r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), c.msg)
	}
	// Another user's workspace is not found, by path and by header, and changes nothing.
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		r := h.DoKey(otherKey, m, "/v1/workspaces/"+id, map[string]any{"name": "mine"}, nil)
		require.Equal(t, 404, r.Status, "%s: %s", m, r.Body)
		require.Equal(t, "not_found", r.ErrorCode(t))
	}
	r = h.DoKey(otherKey, "GET", "/v1/posts", nil, ws(id))
	require.Equal(t, 404, r.Status, string(r.Body))
	require.Equal(t, "not_found", r.ErrorCode(t))
	require.Equal(t, before, snapshot(t, h))

	// A workspace that holds an account is not deleted (409); once empty it is, and is gone.
	acct := h.NewAccount(h.User.ID, "bluesky")
	moveAccount(t, h, acct.ID, id)
	// A draft and a webhook of the workspace: deleted with it.
	wr := h.DoKey(h.Key, "POST", "/v1/posts", map[string]any{"content": "a draft of A", "platforms": []string{acct.ID}}, ws(id))
	require.Equal(t, 201, wr.Status, string(wr.Body))
	draftID := wr.JSON(t)["id"].(string)
	wr = h.DoKey(h.Key, "POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/a", "events": []string{"post.published"}}, ws(id))
	require.Equal(t, 201, wr.Status, string(wr.Body))
	hookID := wr.JSON(t)["id"].(string)
	require.Empty(t, h.Do("GET", "/v1/webhooks", nil).JSON(t)["data"], "main has no webhook")
	r = h.Do("DELETE", "/v1/workspaces/"+id, nil)
	require.Equal(t, 409, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "holds 1 connected accounts")
	// Limits below what is used are refused.
	r = h.Do("PATCH", "/v1/workspaces/"+id, map[string]any{"limits": map[string]any{"accounts": 0}})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "holds 1 connected accounts already")
	require.Equal(t, 204, h.DoKey(h.Key, "DELETE", "/v1/accounts/"+acct.ID, nil, ws(id)).Status)

	draft := h.DoKey(h.Key, "POST", "/v1/posts", map[string]any{"content": "a draft of A", "platforms": []string{h.Accounts[0].ID}}, ws(id))
	require.Equal(t, 400, draft.Status, "main's account is not in workspace A: %s", draft.Body)
	r = h.Do("DELETE", "/v1/workspaces/"+id, nil)
	require.Equal(t, 204, r.Status, string(r.Body))
	require.Equal(t, 404, h.Do("GET", "/v1/workspaces/"+id, nil).Status)
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		require.False(t, tx.HasPost(draftID), "the workspace's draft is deleted with it")
		_, err := tx.Webhook(hookID)
		require.ErrorIs(t, err, persistence.ErrNotFound, "so is its webhook")
		require.Zero(t, tx.PostCount(id, "", ""))
		return nil
	}))
	r = h.DoKey(h.Key, "GET", "/v1/posts", nil, ws(id))
	require.Equal(t, 404, r.Status, "a deleted workspace is not found")
	r = h.Do("GET", "/v1/workspaces", nil)
	require.Len(t, r.JSON(t)["data"], 1)
	require.Equal(t, "Agency", r.JSON(t)["data"].([]any)[0].(map[string]any)["name"])
}

// Objects made in a workspace are seen and changed only there; main keeps what it had.
func TestWorkspaceHeaderKeepsObjectsApart(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	id := h.Do("POST", "/v1/workspaces", map[string]any{"name": "Client B"}).JSON(t)["id"].(string)
	inMain := h.CreatePost("in main", h.Accounts[0])

	// An account of workspace B, and a draft there.
	acct := h.NewAccount(h.User.ID, "linkedin")
	moveAccount(t, h, acct.ID, id)
	r := h.DoKey(h.Key, "POST", "/v1/posts", map[string]any{"content": "in B", "platforms": []string{acct.ID}}, ws(id))
	require.Equal(t, 201, r.Status, string(r.Body))
	inB := r.JSON(t)["id"].(string)

	list := func(hdr http.Header) []string {
		r := h.DoKey(h.Key, "GET", "/v1/posts", nil, hdr)
		require.Equal(t, 200, r.Status, string(r.Body))
		var ids []string
		for _, p := range r.JSON(t)["data"].([]any) {
			ids = append(ids, p.(map[string]any)["id"].(string))
		}
		return ids
	}
	require.Equal(t, []string{inMain}, list(nil))
	require.Equal(t, []string{inMain}, list(ws("main")))
	require.Equal(t, []string{inB}, list(ws(id)))
	accounts := h.DoKey(h.Key, "GET", "/v1/accounts", nil, ws(id)).JSON(t)["data"].([]any)
	require.Len(t, accounts, 1)
	require.Equal(t, acct.ID, accounts[0].(map[string]any)["id"])
	require.Len(t, h.Do("GET", "/v1/accounts", nil).JSON(t)["data"], len(h.Accounts))

	// By id from the other workspace: refused, and nothing changes.
	r = h.Do("GET", "/v1/posts/"+inB, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	r = h.Do("DELETE", "/v1/posts/"+inB, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	r = h.DoKey(h.Key, "PATCH", "/v1/posts/"+inMain, map[string]any{"content": "changed from B"}, ws(id))
	require.Equal(t, 403, r.Status, string(r.Body))
	r = h.Do("POST", "/v1/posts", map[string]any{"content": "main with B's account", "platforms": []string{acct.ID}})
	require.Equal(t, 400, r.Status, "an account of another workspace is not one of this workspace's: %s", r.Body)
	require.Equal(t, "in main", h.Do("GET", "/v1/posts/"+inMain, nil).JSON(t)["content"])
	require.Equal(t, "in B", h.DoKey(h.Key, "GET", "/v1/posts/"+inB, nil, ws(id)).JSON(t)["content"])

	// /v1/me names the workspace the request acted in.
	require.Equal(t, id, h.DoKey(h.Key, "GET", "/v1/me", nil, ws(id)).JSON(t)["workspace_id"])
	require.Equal(t, "main", h.Do("GET", "/v1/me", nil).JSON(t)["workspace_id"])
}

// Keys bound to a workspace and limited to scopes: /v1/me shows both, another workspace is 403
// with an insufficient_scope challenge, and so is a route outside the scopes.
func TestBoundAndScopedKeys(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	id := h.Do("POST", "/v1/workspaces", map[string]any{"name": "Client C"}).JSON(t)["id"].(string)
	br := h.SignedIn()

	for _, c := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"name": "k", "scopes": []string{"posts:read", "posts:fly"}}, "scopes.1: Invalid enum value"},
		{map[string]any{"name": "k", "scopes": []string{}}, "at least 1"},
		{map[string]any{"name": "k", "scopes": "posts:read"}, "Expected array"},
		{map[string]any{"name": "k", "workspace_id": "client-c"}, "workspace_id"},
		{map[string]any{"name": "k", "workspace_id": "0190a0a0-0000-7000-8000-000000000000"}, "no workspace"},
	} {
		r := br.Send("POST", "/api/keys", c.body, br.CSRFHeader())
		require.Equal(t, 400, r.Status, "%v: %s", c.body, r.Body)
		require.Contains(t, r.ErrorMessage(t), c.msg)
	}

	r := br.Send("POST", "/api/keys", map[string]any{"name": "client C reader", "workspace_id": id, "scopes": []string{"posts:read", "accounts:read"}}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	k := r.JSON(t)
	key := k["key"].(string)
	require.Equal(t, id, k["workspace_id"])
	require.Equal(t, []any{"accounts:read", "posts:read"}, k["scopes"])

	me := h.DoKey(key, "GET", "/v1/me", nil, nil)
	require.Equal(t, 403, me.Status, "me:read is not among the key's scopes: %s", me.Body)
	r = h.DoKey(key, "GET", "/v1/posts", nil, nil)
	require.Equal(t, 200, r.Status, "a bound key acts in its workspace without a header: %s", r.Body)
	r = h.DoKey(key, "GET", "/v1/posts", nil, ws(id))
	require.Equal(t, 200, r.Status, string(r.Body))
	for _, hdr := range []http.Header{ws("main"), ws(h.User.ID)} {
		r = h.DoKey(key, "GET", "/v1/posts", nil, hdr)
		require.Equal(t, 403, r.Status, string(r.Body))
		require.Equal(t, "forbidden", r.ErrorCode(t))
		require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	}
	r = h.DoKey(key, "POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}}, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	require.Contains(t, r.ErrorMessage(t), "this API key lacks the scope")
	r = h.DoKey(key, "GET", "/v1/workspaces/main", nil, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, 403, h.DoKey(key, "GET", "/v1/workspaces", nil, nil).Status, "listing workspaces needs service:read")

	// A full-access key bound to main: /v1/me shows the binding and no scopes.
	r = br.Send("POST", "/api/keys", map[string]any{"name": "main only", "workspace_id": "main"}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	mainKey := r.JSON(t)["key"].(string)
	me = h.DoKey(mainKey, "GET", "/v1/me", nil, nil)
	require.Equal(t, 200, me.Status, string(me.Body))
	ak := me.JSON(t)["api_key"].(map[string]any)
	require.Equal(t, "main", ak["workspace_id"])
	require.Nil(t, ak["scopes"])
	require.Equal(t, 403, h.DoKey(mainKey, "GET", "/v1/accounts", nil, ws(id)).Status)
	require.Equal(t, 403, h.DoKey(mainKey, "POST", "/v1/workspaces", map[string]any{"name": "more"}, nil).Status)
	list := h.DoKey(mainKey, "GET", "/v1/workspaces", nil, nil)
	require.Equal(t, 200, list.Status, string(list.Body))
	require.Len(t, list.JSON(t)["data"], 1, "a bound key sees its own workspace only")
	require.Equal(t, "main", list.JSON(t)["data"].([]any)[0].(map[string]any)["id"])

	// The workspace deleted: its bound key is refused.
	require.Equal(t, 204, h.Do("DELETE", "/v1/workspaces/"+id, nil).Status)
	r = h.DoKey(key, "GET", "/v1/posts", nil, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "no longer exists")
}

// limits.posts_per_month caps the posts a workspace publishes or schedules in a month, counted
// when accepted; usage reports what was published per network, as JSON and CSV.
func TestWorkspaceLimitAndUsage(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	var bluesky, x *persistence.Account
	for _, a := range h.Accounts {
		switch a.Platform {
		case "bluesky":
			bluesky = a
		case "twitter_x":
			x = a
		}
	}
	h.PublishAndWait("counted once", nil, bluesky, x)
	r := h.Do("PATCH", "/v1/workspaces/main", map[string]any{"limits": map[string]any{"posts_per_month": 0}})
	require.Equal(t, 400, r.Status, "one post is counted already: %s", r.Body)
	require.Contains(t, r.ErrorMessage(t), "allow at least 1")
	r = h.Do("PATCH", "/v1/workspaces/main", map[string]any{"limits": map[string]any{"posts_per_month": 2}})
	require.Equal(t, 200, r.Status, string(r.Body))
	r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "the second", "platforms": []string{bluesky.ID},
		"scheduledAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 201, r.Status, string(r.Body))
	before := h.CountPosts()
	r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "one too many", "platforms": []string{bluesky.ID}})
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, "limit_exceeded", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "the workspace's limits allow 2")
	require.Equal(t, before, h.CountPosts(), "a refused publish creates nothing")

	month := time.Now().UTC().Format("2006-01")
	r = h.Do("GET", "/v1/workspaces/main/usage", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	u := r.JSON(t)
	require.Equal(t, month, u["month"])
	require.Equal(t, float64(2), u["posts_accepted"])
	require.Equal(t, map[string]any{"published": float64(1), "failed": float64(0)}, u["posts"])
	require.Equal(t, map[string]any{"published": float64(2), "failed": float64(0)}, u["targets"])
	nets := u["networks"].(map[string]any)
	require.Len(t, nets, 2)
	require.Equal(t, map[string]any{"published": float64(1), "failed": float64(0)}, nets["bluesky"].(map[string]any)["posts"])
	require.Greater(t, u["api_requests"].(float64), float64(3), "the requests above are counted")

	r = h.DoKey(h.Key, "GET", "/v1/workspaces/main/usage?month="+month, nil, http.Header{"Accept": {"text/csv"}})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv"))
	rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 4) // header, two networks, all
	require.Equal(t, "network", rows[0][2])
	require.Equal(t, []string{"main", month, "all", "1", "0", "2", "0", "2"}, rows[3][:8])

	for _, m := range []string{"2026-13", "26-01", "last"} {
		r = h.Do("GET", "/v1/workspaces/main/usage?month="+m, nil)
		require.Equal(t, 400, r.Status, m)
		require.Equal(t, "validation_error", r.ErrorCode(t))
	}
	r = h.Do("GET", "/v1/workspaces/main/usage?month=2020-01", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, float64(0), r.JSON(t)["posts_accepted"])
}
