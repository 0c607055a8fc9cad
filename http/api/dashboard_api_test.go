package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// The mirror rule: every operation of the /v1 door is served by the /api door with the same
// handler, and nothing else is added to /api but the dashboard's own routes.
func TestDashboardDoorMirrorsV1(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	v1 := map[string]string{}
	dash := map[string]string{}
	for _, r := range h.App.Server.Echo.Router().Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		switch {
		case strings.HasPrefix(r.Path, "/v1/"):
			v1[r.Method+" "+strings.TrimPrefix(r.Path, "/v1")] = r.Path
		case strings.HasPrefix(r.Path, "/api/"):
			dash[r.Method+" "+strings.TrimPrefix(r.Path, "/api")] = r.Path
		}
	}
	// Outside the doors: the document, the signed media URLs, the connect flow's browser routes.
	for _, own := range []string{"GET /openapi.json", "PUT /media/uploads/:userId/:storageFilename",
		"GET /media/files/:storageFilename", "GET /accounts/connect/authorize", "GET /accounts/connect/callback", "POST /accounts/connect/defaults", "POST /accounts/connect/pick"} {
		require.Contains(t, v1, own)
		delete(v1, own)
	}
	for op := range v1 {
		require.Contains(t, dash, op, "the /api door serves %s", op)
	}
	for _, own := range []string{"POST /session", "GET /session", "DELETE /session", "POST /session/workspace", "PATCH /profile", "POST /profile/password",
		"GET /keys", "POST /keys", "PATCH /keys/:id", "POST /keys/:id/regenerate", "DELETE /keys/:id",
		"POST /accounts/x", "POST /accounts/bluesky",
		"GET /members", "POST /members/invitations", "DELETE /members/invitations/:id", "PATCH /members/:id", "DELETE /members/:id"} {
		require.Contains(t, dash, own)
		delete(dash, own)
	}
	for op := range dash {
		require.Contains(t, v1, op, "%s on /api is a /v1 operation", op)
	}
	require.Contains(t, dash, "GET /jobs/:trackingId/stream")
	require.Contains(t, dash, "POST /media/presign")
	require.Contains(t, dash, "GET /inbox/comments")
	require.Contains(t, dash, "POST /webhooks")
}

// A person publishes through /api on the session and the CSRF token, and follows the job's
// stream on the session; the links point back through /api. The doors stay shut to the other
// credential, and the hourly quota is /v1's only.
func TestPublishThroughTheDashboardDoor(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true, SimLatency: 50 * time.Millisecond})
	br := h.SignedIn()
	x, bsky := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID
	body := map[string]any{"content": "from the dashboard", "platforms": []string{x, bsky}}

	r := br.Send("POST", "/api/posts/publish", body, nil)
	require.Equal(t, 403, r.Status, "no CSRF token")
	require.Equal(t, "forbidden", r.ErrorCode(t))
	r = br.Send("POST", "/api/posts/publish", body, http.Header{"Authorization": {"Bearer " + h.Key}, "X-Csrf-Token": {br.CSRF}})
	require.Equal(t, 401, r.Status, "an API key on /api")
	require.Equal(t, "unauthorized", r.ErrorCode(t))
	r = h.NewBrowser().Send("GET", "/api/posts", nil, http.Header{"Authorization": {"Bearer " + h.Key}})
	require.Equal(t, 401, r.Status, "an API key on /api/posts")
	r = br.Send("GET", "/v1/posts", nil, nil)
	require.Equal(t, 401, r.Status, "a cookie on /v1/posts")
	require.Equal(t, "invalid_api_key", r.ErrorCode(t))
	require.Empty(t, h.App.Sim.Publications(platforms.X), "nothing was published by a refused request")

	r = br.Send("POST", "/api/posts/publish", body, br.CSRFHeader())
	require.Equal(t, 202, r.Status, string(r.Body))
	apptest.RequireSecurityHeaders(t, r)
	require.Empty(t, r.Header.Get("RateLimit-Limit"), "the dashboard's door is not metered by the plan's hourly quota")
	acc := r.JSON(t)
	jobID := acc["tracking_id"].(string)
	require.Equal(t, "/api/jobs/"+jobID+"/stream", acc["stream_url"])
	require.Equal(t, "/api/jobs/"+jobID, r.Header.Get("Location"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+acc["stream_url"].(string), nil)
	require.NoError(t, err)
	events, _ := apptest.ReadStream(br.Client, req, nil)
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, "done", last.Type, "%v", events)
	require.Equal(t, "completed", last.Data["status"])
	require.Equal(t, 2.0, last.Data["completed"])

	r = br.Send("GET", r.Header.Get("Location"), nil, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "completed", r.JSON(t)["status"])
	r = br.Send("GET", "/api/posts/"+acc["post_id"].(string), nil, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, h.Do("GET", "/v1/posts/"+acc["post_id"].(string), nil).JSON(t), r.JSON(t), "one behaviour, two doors")
	require.Len(t, h.App.Sim.Publications(platforms.X), 1)

	// Another user's job through /api is the same 403 as through /v1.
	other, _ := h.NewUser("other@example.com", "pro")
	ob := h.NewBrowser()
	require.Equal(t, 200, ob.SignIn(other.Email, apptest.PasswordOf(other.Email)).Status)
	r = ob.Send("GET", "/api/jobs/"+jobID, nil, nil)
	require.Equal(t, 403, r.Status)
	require.Equal(t, "forbidden", r.ErrorCode(t))
}

// An Idempotency-Key names one operation whichever the door: a replay through the other door is
// the same job, its links pointing through the door of the replay.
func TestIdempotencyAcrossDoors(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	br := h.SignedIn()
	body := map[string]any{"content": "once", "platforms": []string{h.Account(platforms.Bluesky).ID}}
	hdr := br.CSRFHeader()
	hdr.Set("Idempotency-Key", "door-1")
	first := br.Send("POST", "/api/posts/publish", body, hdr)
	require.Equal(t, 202, first.Status, string(first.Body))
	jobID := first.JSON(t)["tracking_id"].(string)

	again := h.DoKey(h.Key, "POST", "/v1/posts/publish", body, http.Header{"Idempotency-Key": {"door-1"}})
	require.Equal(t, 202, again.Status, string(again.Body))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, jobID, again.JSON(t)["tracking_id"])
	require.Equal(t, "/v1/jobs/"+jobID+"/stream", again.JSON(t)["stream_url"])
	require.Equal(t, "/v1/jobs/"+jobID, again.Header.Get("Location"))

	same := br.Send("POST", "/api/posts/publish", body, hdr)
	require.Equal(t, 202, same.Status)
	require.Equal(t, first.Body, same.Body, "a replay through the first door is its stored answer")
	require.Equal(t, "/api/jobs/"+jobID, same.Header.Get("Location"))
	h.WaitJob(jobID)
	require.Len(t, h.App.Sim.Publications(platforms.Bluesky), 1, "one publication for one key")
}

// keyRow finds a key in the answer of GET /api/keys.
func keyRow(t *testing.T, r *apptest.Response, id string) map[string]any {
	t.Helper()
	require.Equal(t, 200, r.Status, string(r.Body))
	for _, k := range r.JSON(t)["data"].([]any) {
		if row := k.(map[string]any); row["id"] == id {
			return row
		}
	}
	t.Fatalf("key %s is not listed: %s", id, r.Body)
	return nil
}

func storedKey(t *testing.T, h *apptest.Herald, id string) *persistence.APIKey {
	t.Helper()
	var k *persistence.APIKey
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		var err error
		k, err = tx.APIKey(id)
		return err
	}))
	return k
}

// A person manages their API keys in the dashboard: the raw key is shown once, its use is listed,
// rename, regenerate and revoke take effect on /v1 at once.
func TestDashboardKeys(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Config: func(cfg *app.Config) { cfg.KeyUseFlushEvery = time.Hour }})
	br := h.SignedIn()

	r := br.Send("POST", "/api/keys", map[string]any{"name": "no token"}, nil)
	require.Equal(t, 403, r.Status, "no CSRF token")
	r = h.NewBrowser().Send("GET", "/api/keys", nil, http.Header{"Authorization": {"Bearer " + h.Key}})
	require.Equal(t, 401, r.Status, "a key cannot list keys")
	require.Equal(t, 404, h.Do("GET", "/v1/keys", nil).Status, "keys are managed on the dashboard's door only")

	r = br.Send("POST", "/api/keys", map[string]any{"name": "  deploy bot  "}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	created := r.JSON(t)
	id, raw := created["id"].(string), created["key"].(string)
	require.True(t, strings.HasPrefix(raw, "sk_live_"))
	require.Equal(t, raw[:12], created["prefix"])
	require.Equal(t, "deploy bot", created["name"])
	require.Nil(t, created["expires_at"])

	r = br.Send("POST", "/api/keys", map[string]any{"name": "thirty days", "expires_in_days": 30}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	exp, err := time.Parse(time.RFC3339Nano, r.JSON(t)["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, exp, time.Now().Add(30*24*time.Hour), time.Minute)

	list := br.Send("GET", "/api/keys", nil, nil)
	row := keyRow(t, list, id)
	require.Nil(t, row["last_used_at"], "not used yet")
	require.NotContains(t, string(list.Body), raw, "the raw key is shown once")
	require.NotContains(t, string(list.Body), "hash")
	for _, f := range []string{"id", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"} {
		require.Contains(t, row, f)
	}

	// Use is listed at once from memory, and written by the flush (every minute and at shutdown).
	me := h.DoKey(raw, "GET", "/v1/me", nil, nil)
	require.Equal(t, 200, me.Status)
	require.Equal(t, id, me.JSON(t)["api_key"].(map[string]any)["id"])
	row = keyRow(t, br.Send("GET", "/api/keys", nil, nil), id)
	require.NotNil(t, row["last_used_at"], "the use is listed before it is written")
	require.Nil(t, storedKey(t, h, id).LastUsedAt, "no write per request")
	require.NoError(t, h.App.Auth.FlushUse(context.Background()))
	used := storedKey(t, h, id).LastUsedAt
	require.NotNil(t, used)
	listed, err := time.Parse(time.RFC3339Nano, keyRow(t, br.Send("GET", "/api/keys", nil, nil), id)["last_used_at"].(string))
	require.NoError(t, err)
	require.True(t, used.Equal(listed))

	// Rename: /v1/me names the key by its new name at once.
	r = br.Send("PATCH", "/api/keys/"+id, map[string]any{"name": "release bot"}, br.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "release bot", r.JSON(t)["name"])
	require.Equal(t, "release bot", h.DoKey(raw, "GET", "/v1/me", nil, nil).JSON(t)["api_key"].(map[string]any)["name"])

	// Regenerate: the new secret once, the old one refused at once.
	r = br.Send("POST", "/api/keys/"+id+"/regenerate", nil, br.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	fresh := r.JSON(t)["key"].(string)
	require.NotEqual(t, raw, fresh)
	require.Equal(t, id, r.JSON(t)["id"])
	r = h.DoKey(raw, "GET", "/v1/me", nil, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "invalid_api_key", r.ErrorCode(t))
	require.Equal(t, "invalid API key", r.ErrorMessage(t), "a regenerated key's old secret is no longer known (docs/decisions.md)")
	require.Equal(t, 200, h.DoKey(fresh, "GET", "/v1/me", nil, nil).Status)

	// Revoke: refused at once as revoked, still listed.
	r = br.Send("DELETE", "/api/keys/"+id, nil, br.CSRFHeader())
	require.Equal(t, 204, r.Status, string(r.Body))
	r = h.DoKey(fresh, "GET", "/v1/me", nil, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "API key has been revoked", r.ErrorMessage(t))
	require.NotNil(t, keyRow(t, br.Send("GET", "/api/keys", nil, nil), id)["revoked_at"])
	require.Equal(t, 204, br.Send("DELETE", "/api/keys/"+id, nil, br.CSRFHeader()).Status, "revoking twice")
	r = br.Send("POST", "/api/keys/"+id+"/regenerate", nil, br.CSRFHeader())
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))

	// Another user's key: 403 forbidden, as another user's account or webhook; nothing changes.
	other, otherKey := h.NewUser("neighbour@example.com", "pro")
	theirs, err := auth.ListKeys(h.App.Store, other.Email)
	require.NoError(t, err)
	require.Len(t, theirs, 1)
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"PATCH", "/api/keys/" + theirs[0].ID, map[string]any{"name": "mine now"}},
		{"POST", "/api/keys/" + theirs[0].ID + "/regenerate", nil},
		{"DELETE", "/api/keys/" + theirs[0].ID, nil},
	} {
		r = br.Send(req.method, req.path, req.body, br.CSRFHeader())
		require.Equal(t, 403, r.Status, "%s %s", req.method, req.path)
		require.Equal(t, "forbidden", r.ErrorCode(t))
	}
	require.Equal(t, 200, h.DoKey(otherKey, "GET", "/v1/me", nil, nil).Status, "their key still works")
	require.NotContains(t, string(br.Send("GET", "/api/keys", nil, nil).Body), theirs[0].ID, "only one's own keys are listed")
	r = br.Send("DELETE", "/api/keys/"+uuid.NewString(), nil, br.CSRFHeader())
	require.Equal(t, 404, r.Status)
	require.Equal(t, "not_found", r.ErrorCode(t))
	r = br.Send("DELETE", "/api/keys/not-a-key", nil, br.CSRFHeader())
	require.Equal(t, 400, r.Status)
}

// Names are 1 to 100 characters without control characters; an expiry is a whole number of days
// from 1 to 3650.
func TestDashboardKeysBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	for name, body := range map[string]any{
		"no body":           nil,
		"no name":           map[string]any{},
		"empty name":        map[string]any{"name": ""},
		"blank name":        map[string]any{"name": "   "},
		"name not a string": map[string]any{"name": 7},
		"too long":          map[string]any{"name": strings.Repeat("é", 101)},
		"line break":        map[string]any{"name": "a\nb"},
		"escape":            map[string]any{"name": "a\u001bb"},
		"delete":            map[string]any{"name": "a\u007fb"},
		"zero days":         map[string]any{"name": "k", "expires_in_days": 0},
		"negative days":     map[string]any{"name": "k", "expires_in_days": -1},
		"fractional days":   map[string]any{"name": "k", "expires_in_days": 1.5},
		"days as a string":  map[string]any{"name": "k", "expires_in_days": "7"},
		"too many days":     map[string]any{"name": "k", "expires_in_days": 3651},
		"not an object":     "a key",
	} {
		r := br.Send("POST", "/api/keys", body, br.CSRFHeader())
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
	}
	r := br.Send("POST", "/api/keys", map[string]any{"name": strings.Repeat("é", 100), "expires_in_days": nil}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, "100 characters, null expiry: %s", r.Body)
	id := r.JSON(t)["id"].(string)
	for name, body := range map[string]any{
		"empty name": map[string]any{"name": ""},
		"too long":   map[string]any{"name": strings.Repeat("k", 101)},
		"tab":        map[string]any{"name": "a\tb"},
		"no name":    map[string]any{},
	} {
		r := br.Send("PATCH", "/api/keys/"+id, body, br.CSRFHeader())
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
	}
}

// X and Bluesky accounts are added from the dashboard's credential forms, checked with the
// network as herald accounts add does; the answer is the account as GET /v1/accounts shows it.
func TestDashboardCredentialForms(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	br := h.SignedIn()
	before := len(h.Do("GET", "/v1/accounts", nil).JSON(t)["data"].([]any))

	bsky := map[string]any{"handle": "dash.bsky.social", "app_password": "abcd-efgh-ijkl-mnop"}
	r := br.Send("POST", "/api/accounts/bluesky", bsky, nil)
	require.Equal(t, 403, r.Status, "no CSRF token")
	r = br.Send("POST", "/api/accounts/bluesky", bsky, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	acc := r.JSON(t)
	require.Equal(t, "bluesky", acc["platform"])
	require.Equal(t, "dash.bsky.social", acc["username"])
	require.Equal(t, true, acc["is_active"])
	r = br.Send("POST", "/api/accounts/bluesky", bsky, br.CSRFHeader())
	require.Equal(t, 200, r.Status, "the same network user again: its credentials replaced, %s", r.Body)
	require.Equal(t, acc["id"], r.JSON(t)["id"])
	// From another workspace the same network user is refused, and nothing of main is named.
	ws := h.Do("POST", "/v1/workspaces", map[string]any{"name": "Elsewhere"}).JSON(t)["id"].(string)
	hdr := br.CSRFHeader()
	hdr.Set("Herald-Workspace", ws)
	r = br.Send("POST", "/api/accounts/bluesky", bsky, hdr)
	require.Equal(t, 409, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "already connected in another workspace")
	require.NotContains(t, string(r.Body), acc["id"].(string))
	require.Empty(t, h.DoKey(h.Key, "GET", "/v1/accounts", nil, http.Header{"Herald-Workspace": {ws}}).JSON(t)["data"])

	xc, err := h.App.Sim.NewAccount(platforms.X, "dashwriter")
	require.NoError(t, err)
	r = br.Send("POST", "/api/accounts/x", map[string]any{"client_id": sim.ClientID, "access_token": xc.AccessToken,
		"refresh_token": xc.RefreshToken, "expires_in": 7200}, br.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	xacc := r.JSON(t)
	require.Equal(t, "twitter_x", xacc["platform"])
	exp, err := time.Parse(time.RFC3339Nano, xacc["access_token_expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, exp, time.Now().Add(2*time.Hour), time.Minute)

	// The same shape as GET /v1/accounts (and /api/accounts), where both now are.
	listed := map[string]map[string]any{}
	for _, a := range br.Send("GET", "/api/accounts", nil, nil).JSON(t)["data"].([]any) {
		listed[a.(map[string]any)["id"].(string)] = a.(map[string]any)
	}
	require.Len(t, listed, before+2)
	require.Equal(t, xacc, listed[xacc["id"].(string)])
	require.Len(t, h.Do("GET", "/v1/accounts", nil).JSON(t)["data"], before+2)

	// Refused by the network: 400 with its reason, nothing saved.
	r = br.Send("POST", "/api/accounts/bluesky", map[string]any{"handle": "nobody.bsky.social", "app_password": "wrong-app-password-1"}, br.CSRFHeader())
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	r = br.Send("POST", "/api/accounts/x", map[string]any{"client_id": sim.ClientID, "access_token": "refused-x-token-123"}, br.CSRFHeader())
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Len(t, h.Do("GET", "/v1/accounts", nil).JSON(t)["data"], before+2)

	for name, c := range map[string]struct {
		path string
		body any
	}{
		"x without client_id":     {"/api/accounts/x", map[string]any{"access_token": "t"}},
		"x without access_token":  {"/api/accounts/x", map[string]any{"client_id": "c"}},
		"x blank access_token":    {"/api/accounts/x", map[string]any{"client_id": "c", "access_token": "  "}},
		"x negative expires_in":   {"/api/accounts/x", map[string]any{"client_id": "c", "access_token": "t", "expires_in": -5}},
		"x fractional expires_in": {"/api/accounts/x", map[string]any{"client_id": "c", "access_token": "t", "expires_in": 1.5}},
		"x token not a string":    {"/api/accounts/x", map[string]any{"client_id": "c", "access_token": 42}},
		"x control character":     {"/api/accounts/x", map[string]any{"client_id": "c", "access_token": "a\nb"}},
		"bluesky without handle":  {"/api/accounts/bluesky", map[string]any{"app_password": "abcd-efgh-ijkl-mnop"}},
		"bluesky without app_pw":  {"/api/accounts/bluesky", map[string]any{"handle": "a.bsky.social"}},
		"bluesky pds":             {"/api/accounts/bluesky", map[string]any{"handle": "a.example.com", "app_password": "abcd-efgh-ijkl-mnop", "pds": "https://pds.example.com"}},
		"not an object":           {"/api/accounts/bluesky", "credentials"},
	} {
		r := br.Send("POST", c.path, c.body, br.CSRFHeader())
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
	}
	r = h.NewBrowser().Send("POST", "/api/accounts/x", map[string]any{"client_id": "c", "access_token": "t"},
		http.Header{"Authorization": {"Bearer " + h.Key}})
	require.Equal(t, 401, r.Status, "an API key on the credential forms")
	r = h.Do("POST", "/v1/accounts/bluesky", bsky)
	require.Equal(t, 405, r.Status, "the credential forms are the dashboard's (DELETE /v1/accounts/:id is the path's only method)")
	require.Equal(t, "not_found", r.ErrorCode(t))

	// A network that does not answer: 503, retry later; nothing saved.
	require.NoError(t, h.App.Sim.InjectFault(platforms.X, sim.FaultError5xx, 10))
	xc2, err := h.App.Sim.NewAccount(platforms.X, "dashwriter2")
	require.NoError(t, err)
	r = br.Send("POST", "/api/accounts/x", map[string]any{"client_id": sim.ClientID, "access_token": xc2.AccessToken}, br.CSRFHeader())
	require.Equal(t, 503, r.Status, string(r.Body))
	require.Equal(t, "internal_error", r.ErrorCode(t))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Len(t, h.Do("GET", "/v1/accounts", nil).JSON(t)["data"], before+2)
}
