package oauth_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/oauth"
)

func TestOAuthMetadata(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	get := func(p string) map[string]any {
		r := h.Bearer("", "GET", p)
		require.Equal(t, 200, r.Status, p)
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &m))
		return m
	}
	mcp := get("/.well-known/oauth-protected-resource/mcp")
	require.Equal(t, h.URL+"/mcp", mcp["resource"])
	require.Equal(t, []any{h.URL}, mcp["authorization_servers"])
	require.Equal(t, []any{"service:read", "service:write"}, mcp["scopes_supported"])
	rest := get("/.well-known/oauth-protected-resource")
	require.Equal(t, h.URL, rest["resource"])
	require.Len(t, rest["scopes_supported"], 11)
	as := get("/.well-known/oauth-authorization-server")
	require.Equal(t, h.URL, as["issuer"])
	require.Equal(t, h.URL+"/oauth/authorize", as["authorization_endpoint"])
	require.Equal(t, h.URL+"/oauth/token", as["token_endpoint"])
	require.Equal(t, h.URL+"/oauth/register", as["registration_endpoint"])
	require.Equal(t, h.URL+"/oauth/revoke", as["revocation_endpoint"])
	require.Equal(t, []any{"S256"}, as["code_challenge_methods_supported"])
	require.Equal(t, []any{"none"}, as["token_endpoint_auth_methods_supported"])
	require.Equal(t, true, as["authorization_response_iss_parameter_supported"])
	require.Equal(t, true, as["client_id_metadata_document_supported"], "the webhooks' egress fetches the documents")
	require.Len(t, as["scopes_supported"], 11)

	// Every 401 on /v1 names the REST API's metadata, and keeps the spec's error.
	r := h.DoKey("", "GET", "/v1/me", nil, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "invalid_api_key", r.ErrorCode(t))
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `resource_metadata="`+h.URL+`/.well-known/oauth-protected-resource"`)
}

func TestOAuthFlow(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	verifier, challenge := apptest.PKCEPair("a")
	q := h.AuthRequest(challenge, h.URL, "me:read posts:read")

	// Not signed in: to the sign-in page, which comes back to the request.
	br := h.NewBrowser()
	r := br.Send("GET", "/oauth/authorize?"+q.Encode(), nil, nil)
	require.Equal(t, 303, r.Status)
	loc, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/signin", loc.Path)
	next := loc.Query().Get("next")
	require.True(t, strings.HasPrefix(next, "/oauth/authorize?"), next)
	r = br.Send("POST", "/signin", url.Values{"email": {h.User.Email}, "password": {h.Password}, "next": {next}}, nil)
	require.Equal(t, 303, r.Status, string(r.Body))
	require.Equal(t, next, r.Header.Get("Location"))

	code := h.Consent(br, q, "approve").Get("code")
	require.True(t, strings.HasPrefix(code, "hoc_"), code)
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"redirect_uri": {h.Redirect}, "client_id": {h.ClientID}, "resource": {h.URL}}
	r = h.Token(exchange)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	tok := r.JSON(t)
	require.Equal(t, "Bearer", tok["token_type"])
	require.EqualValues(t, 3600, tok["expires_in"])
	require.Equal(t, "me:read posts:read", tok["scope"])
	access := tok["access_token"].(string)
	require.True(t, strings.HasPrefix(tok["refresh_token"].(string), "hor_"))

	// The access token opens /v1 within its scopes.
	me := h.DoKey(access, "GET", "/v1/me", nil, nil)
	require.Equal(t, 200, me.Status, string(me.Body))
	require.Equal(t, h.User.Email, me.JSON(t)["email"])
	require.Equal(t, 200, h.DoKey(access, "GET", "/v1/posts", nil, nil).Status)
	r = h.Bearer(access, "GET", "/v1/accounts")
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, "forbidden", r.ErrorCode(t))
	require.Equal(t, `Bearer error="insufficient_scope", scope="accounts:read service:read"`, r.Header.Get("WWW-Authenticate"))
	r = h.Bearer(access, "DELETE", "/v1/posts/0190a000-0000-7000-8000-000000000000")
	require.Equal(t, 403, r.Status, "posts:read does not write")

	// The code is good once.
	r = h.Token(exchange)
	require.Equal(t, 400, r.Status)
	require.Equal(t, "invalid_grant", r.JSON(t)["error"])

	// The approval made a connector key, listed with the others.
	keys := br.Send("GET", "/api/keys", nil, nil)
	require.Equal(t, 200, keys.Status, string(keys.Body))
	require.Contains(t, string(keys.Body), `"name":"MCP connector: Claude"`)
	require.Contains(t, string(keys.Body), `"kind":"connector"`)
	require.Contains(t, string(keys.Body), `"kind":"standard"`)
}

func TestOAuthRefreshRotation(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	tok := h.Grant(h.URL, "")
	refresh := func(rt string) *apptest.Response {
		return h.Token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {h.ClientID}, "resource": {h.URL}})
	}
	r := refresh(tok["refresh_token"].(string))
	require.Equal(t, 200, r.Status, string(r.Body))
	next := r.JSON(t)
	require.NotEqual(t, tok["refresh_token"], next["refresh_token"], "refresh tokens rotate")
	require.Equal(t, "service:read service:write", next["scope"])
	require.Equal(t, 200, h.DoKey(next["access_token"].(string), "GET", "/v1/me", nil, nil).Status)

	// The access token expires after an hour; the clock says so.
	h.Clock.Add(61 * time.Minute)
	r = h.Bearer(next["access_token"].(string), "GET", "/v1/me")
	require.Equal(t, 401, r.Status)
	require.Contains(t, r.ErrorMessage(t), "expired")
	r = refresh(next["refresh_token"].(string))
	require.Equal(t, 200, r.Status, string(r.Body))
	newest := r.JSON(t)
	require.Equal(t, 200, h.DoKey(newest["access_token"].(string), "GET", "/v1/me", nil, nil).Status)

	// Reusing a rotated refresh token revokes the grant: the newest tokens stop working too.
	r = refresh(tok["refresh_token"].(string))
	require.Equal(t, 400, r.Status)
	require.Equal(t, "invalid_grant", r.JSON(t)["error"])
	require.Equal(t, 401, h.Bearer(newest["access_token"].(string), "GET", "/v1/me").Status)
	r = refresh(newest["refresh_token"].(string))
	require.Equal(t, 400, r.Status)
	require.Equal(t, "invalid_grant", r.JSON(t)["error"])
}

func TestOAuthRefusals(t *testing.T) { //nolint:tparallel // each case checks that nothing was issued, which a case running beside it would change
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	br := h.SignedIn()

	t.Run("wrong PKCE verifier", func(t *testing.T) {
		_, challenge := apptest.PKCEPair("b")
		code := h.Consent(br, h.AuthRequest(challenge, h.URL, ""), "approve").Get("code")
		other, _ := apptest.PKCEPair("c")
		r := h.Token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {other},
			"redirect_uri": {h.Redirect}, "client_id": {h.ClientID}})
		require.Equal(t, 400, r.Status)
		require.Equal(t, "invalid_grant", r.JSON(t)["error"])
		require.Contains(t, r.JSON(t)["error_description"], "PKCE")
	})
	t.Run("mismatched redirect_uri", func(t *testing.T) {
		verifier, challenge := apptest.PKCEPair("d")
		code := h.Consent(br, h.AuthRequest(challenge, h.URL, ""), "approve").Get("code")
		r := h.Token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {"http://127.0.0.1:7777/other"}, "client_id": {h.ClientID}})
		require.Equal(t, 400, r.Status)
		require.Equal(t, "invalid_grant", r.JSON(t)["error"])
		// And at the authorization endpoint: an unregistered redirect_uri is never redirected to.
		q := h.AuthRequest(challenge, h.URL, "")
		q.Set("redirect_uri", "https://evil.example/cb")
		page := br.Send("GET", "/oauth/authorize?"+q.Encode(), nil, nil)
		require.Equal(t, 400, page.Status)
		require.Empty(t, page.Header.Get("Location"))
	})
	t.Run("expired code", func(t *testing.T) {
		verifier, challenge := apptest.PKCEPair("e")
		code := h.Consent(br, h.AuthRequest(challenge, h.URL, ""), "approve").Get("code")
		h.Clock.Add(61 * time.Second)
		r := h.Token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {h.Redirect}, "client_id": {h.ClientID}})
		require.Equal(t, 400, r.Status)
		require.Contains(t, r.JSON(t)["error_description"], "expired")
	})
	t.Run("resource of another server", func(t *testing.T) {
		_, challenge := apptest.PKCEPair("f")
		r := br.Send("GET", "/oauth/authorize?"+h.AuthRequest(challenge, "https://other.example", "").Encode(), nil, nil)
		require.Equal(t, 302, r.Status)
		loc, err := url.Parse(r.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, "invalid_target", loc.Query().Get("error"))
		require.Equal(t, "st-123", loc.Query().Get("state"))
		// A code for /v1 exchanged for another resource.
		verifier, challenge := apptest.PKCEPair("g")
		code := h.Consent(br, h.AuthRequest(challenge, h.URL, ""), "approve").Get("code")
		tr := h.Token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {h.Redirect}, "client_id": {h.ClientID}, "resource": {h.URL + "/mcp"}})
		require.Equal(t, 400, tr.Status)
		require.Equal(t, "invalid_target", tr.JSON(t)["error"])
	})
	t.Run("token for the MCP endpoint does not open /v1", func(t *testing.T) {
		tok := h.Grant(h.URL+"/mcp", "service:read service:write posts:read")
		require.Equal(t, "service:read service:write", tok["scope"], "the MCP endpoint knows only the umbrellas")
		r := h.Bearer(tok["access_token"].(string), "GET", "/v1/me")
		require.Equal(t, 401, r.Status)
		require.Contains(t, r.ErrorMessage(t), "/mcp")
		// The MCP door's check takes it, and refuses a token for the REST API.
		p, err := h.App.OAuth.VerifyBearer("Bearer "+tok["access_token"].(string), h.App.OAuth.MCPResource())
		require.NoError(t, err)
		require.Equal(t, []string{"service:read", "service:write"}, p.Scopes)
		rest := h.Grant(h.URL, "")
		_, err = h.App.OAuth.VerifyBearer("Bearer "+rest["access_token"].(string), h.App.OAuth.MCPResource())
		require.ErrorIs(t, err, oauth.ErrWrongResource)
		p, err = h.App.OAuth.VerifyBearer("Bearer "+h.Key, h.App.OAuth.MCPResource())
		require.NoError(t, err, "API keys open every door")
		require.False(t, p.OAuth())
	})
	t.Run("denied consent", func(t *testing.T) {
		_, challenge := apptest.PKCEPair("h")
		q := h.Consent(br, h.AuthRequest(challenge, h.URL, ""), "deny")
		require.Equal(t, "access_denied", q.Get("error"))
		require.Empty(t, q.Get("code"))
	})
	t.Run("consent without the CSRF token", func(t *testing.T) {
		_, challenge := apptest.PKCEPair("i")
		form := h.AuthRequest(challenge, h.URL, "")
		form.Set("decision", "approve")
		r := br.Send("POST", "/oauth/authorize", form, nil)
		require.Equal(t, 403, r.Status)
	})
	t.Run("registration with a non-loopback http redirect", func(t *testing.T) {
		r := h.Post("/oauth/register", "application/json", `{"client_name":"x","redirect_uris":["http://example.com/cb"]}`)
		require.Equal(t, 400, r.Status)
		require.Equal(t, "invalid_redirect_uri", r.JSON(t)["error"])
		for _, ok := range []string{"http://localhost:3000/cb", "http://[::1]:9/cb", "https://app.example/cb"} {
			r := h.Post("/oauth/register", "application/json", `{"client_name":"x","redirect_uris":["`+ok+`"]}`)
			require.Equal(t, 201, r.Status, ok)
		}
		// A confidential method asked is registered as public, and the answer says so.
		r = h.Post("/oauth/register", "application/json", `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`)
		require.Equal(t, 201, r.Status, string(r.Body))
		require.Equal(t, "none", r.JSON(t)["token_endpoint_auth_method"])
		require.NotContains(t, r.JSON(t), "client_secret")
		r = h.Post("/oauth/register", "application/json", `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`)
		require.Equal(t, 400, r.Status)
		require.Equal(t, "invalid_client_metadata", r.JSON(t)["error"])
	})
	t.Run("revoked connector key", func(t *testing.T) {
		tok := h.Grant(h.URL, "")
		access := tok["access_token"].(string)
		require.Equal(t, 200, h.DoKey(access, "GET", "/v1/me", nil, nil).Status)
		var keys struct{ Data []map[string]any }
		r := br.Send("GET", "/api/keys", nil, nil)
		require.NoError(t, json.Unmarshal(r.Body, &keys), string(r.Body))
		id := ""
		for _, k := range keys.Data {
			if k["kind"] == "connector" && k["revoked_at"] == nil {
				id = k["id"].(string)
			}
		}
		require.NotEmpty(t, id)
		r = br.Send("DELETE", "/api/keys/"+id, nil, br.CSRFHeader())
		require.Less(t, r.Status, 300, string(r.Body))
		require.Equal(t, 401, h.Bearer(access, "GET", "/v1/me").Status, "refused at once")
		rr := h.Token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {h.ClientID}})
		require.Equal(t, 400, rr.Status)
	})
	t.Run("revocation endpoint", func(t *testing.T) {
		tok := h.Grant(h.URL, "")
		r := h.Post("/oauth/revoke", "application/x-www-form-urlencoded",
			url.Values{"token": {tok["refresh_token"].(string)}, "client_id": {h.ClientID}}.Encode())
		require.Equal(t, 200, r.Status)
		require.Equal(t, 401, h.Bearer(tok["access_token"].(string), "GET", "/v1/me").Status)
	})
}

func TestOAuthRegistrationRateLimit(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuthNoClient(t, apptest.Options{Config: func(cfg *app.Config) { cfg.OAuthRegistrationsPerHour = 2 }})
	body := func(name string) string {
		return `{"client_name":"` + name + `","redirect_uris":["http://127.0.0.1:1/cb"]}`
	}
	require.Equal(t, 201, h.Post("/oauth/register", "application/json", body("a")).Status)
	require.Equal(t, 201, h.Post("/oauth/register", "application/json", body("b")).Status)
	r := h.Post("/oauth/register", "application/json", body("c"))
	require.Equal(t, 429, r.Status)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	// Registering the same metadata again makes nothing, and is not counted.
	require.Equal(t, 201, h.Post("/oauth/register", "application/json", body("a")).Status)
}

// A token whose only scope is me:read opens GET /v1/me and nothing else: every other /v1 route
// answers 403 insufficient_scope before its handler runs.
func TestOAuthNarrowTokenOnEveryRoute(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	access := h.Grant(h.URL, "me:read")["access_token"].(string)
	open := map[string]bool{ // no API credential at all: public or signed URLs, the browser's connect steps
		"/v1/openapi.json": true, api.MediaUploadRoute: true, api.MediaFileRoute: true,
		accountlink.AuthorizePath: true, accountlink.CallbackPath: true, accountlink.DefaultsPath: true,
		accountlink.PickPath: true,
	}
	fill := strings.NewReplacer(":id", uuid.NewString(), ":trackingId", uuid.NewString(), ":postId", uuid.NewString(),
		":commentId", "c1", ":conversationId", "d1")
	checked := 0
	for _, rt := range h.App.Server.Echo.Router().Routes() {
		if !strings.HasPrefix(rt.Path, "/v1/") || open[rt.Path] || rt.Method == http.MethodOptions || rt.Method == echo.RouteAny {
			continue
		}
		r := h.Bearer(access, rt.Method, fill.Replace(rt.Path))
		if rt.Method == http.MethodGet && rt.Path == "/v1/me" {
			require.Equal(t, 200, r.Status, string(r.Body))
			continue
		}
		require.Equal(t, 403, r.Status, "%s %s: %s", rt.Method, rt.Path, r.Body)
		require.Equal(t, "forbidden", r.ErrorCode(t), rt.Path)
		require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`, rt.Path)
		checked++
	}
	require.Greater(t, checked, 30, "every scoped /v1 route was tried")
}
