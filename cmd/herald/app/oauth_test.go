package app_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/oauth"
)

// oauthBundle is a Herald with an injected OAuth clock, and a registered public client.
type oauthBundle struct {
	*testBundle
	clock    *sessionClock
	clientID string
	redirect string
}

func setupOAuth(t *testing.T) *oauthBundle {
	t.Helper()
	clock := &sessionClock{now: time.Now()}
	b := setup(t, bundleOpts{config: func(cfg *app.Config) { cfg.OAuthClock = clock.Now }})
	ob := &oauthBundle{testBundle: b, clock: clock, redirect: "http://127.0.0.1:7777/callback"}
	r := ob.post("/oauth/register", "application/json", `{"client_name":"Claude","redirect_uris":["`+ob.redirect+`"]}`)
	require.Equal(t, 201, r.status, string(r.body))
	ob.clientID = r.json(t)["client_id"].(string)
	require.NotEmpty(t, ob.clientID)
	return ob
}

// post sends a body with no credentials.
func (b *oauthBundle) post(path, ct, body string) *response {
	b.t.Helper()
	resp, err := b.client.Post(b.url+path, ct, strings.NewReader(body))
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return &response{status: resp.StatusCode, header: resp.Header, body: out}
}

// bearer sends a request with a token, unvalidated (the scope and audience refusals).
func (b *oauthBundle) bearer(token, method, path string) *response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.url+path, nil)
	require.NoError(b.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return &response{status: resp.StatusCode, header: resp.Header, body: out}
}

func (b *oauthBundle) token(form url.Values) *response {
	return b.post("/oauth/token", "application/x-www-form-urlencoded", form.Encode())
}

func pkcePair(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 64)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authRequest is an authorization request's parameters.
func (b *oauthBundle) authRequest(challenge, resource, scope string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {b.clientID}, "redirect_uri": {b.redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"st-123"},
		"resource": {resource}, "scope": {scope}}
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// consent loads the consent page as the browser and posts its form with decision; it returns
// the redirect's query.
func (b *oauthBundle) consent(br *browser, q url.Values, decision string) url.Values {
	b.t.Helper()
	page := br.send("GET", "/oauth/authorize?"+q.Encode(), nil, nil)
	require.Equal(b.t, 200, page.status, string(page.body))
	require.Contains(b.t, string(page.body), "Connect Claude?")
	require.Contains(b.t, string(page.body), "127.0.0.1:7777")
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(page.body), -1) {
		form.Add(m[1], htmlUnescape(m[2]))
	}
	require.NotEmpty(b.t, form.Get("csrf_token"))
	form.Set("decision", decision)
	r := br.send("POST", "/oauth/authorize", form, nil)
	require.Equal(b.t, 303, r.status, string(r.body))
	loc, err := url.Parse(r.header.Get("Location"))
	require.NoError(b.t, err)
	require.Equal(b.t, "127.0.0.1:7777", loc.Host)
	require.Equal(b.t, "st-123", loc.Query().Get("state"))
	require.Equal(b.t, b.url, loc.Query().Get("iss"), "RFC 9207 iss")
	return loc.Query()
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&#43;", "+").Replace(s)
}

// grant runs the whole flow for the bundle's user and returns the token answer.
func (b *oauthBundle) grant(resource, scope string) map[string]any {
	b.t.Helper()
	verifier, challenge := pkcePair("v")
	q := b.consent(b.signedIn(), b.authRequest(challenge, resource, scope), "approve")
	r := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {b.redirect}, "client_id": {b.clientID}, "resource": {resource}})
	require.Equal(b.t, 200, r.status, string(r.body))
	return r.json(b.t)
}

func TestOAuthMetadata(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	get := func(p string) map[string]any {
		r := b.bearer("", "GET", p)
		require.Equal(t, 200, r.status, p)
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.body, &m))
		return m
	}
	mcp := get("/.well-known/oauth-protected-resource/mcp")
	require.Equal(t, b.url+"/mcp", mcp["resource"])
	require.Equal(t, []any{b.url}, mcp["authorization_servers"])
	require.Equal(t, []any{"service:read", "service:write"}, mcp["scopes_supported"])
	rest := get("/.well-known/oauth-protected-resource")
	require.Equal(t, b.url, rest["resource"])
	require.Len(t, rest["scopes_supported"], 11)
	as := get("/.well-known/oauth-authorization-server")
	require.Equal(t, b.url, as["issuer"])
	require.Equal(t, b.url+"/oauth/authorize", as["authorization_endpoint"])
	require.Equal(t, b.url+"/oauth/token", as["token_endpoint"])
	require.Equal(t, b.url+"/oauth/register", as["registration_endpoint"])
	require.Equal(t, b.url+"/oauth/revoke", as["revocation_endpoint"])
	require.Equal(t, []any{"S256"}, as["code_challenge_methods_supported"])
	require.Equal(t, []any{"none"}, as["token_endpoint_auth_methods_supported"])
	require.Equal(t, true, as["authorization_response_iss_parameter_supported"])
	require.Equal(t, true, as["client_id_metadata_document_supported"], "the webhooks' egress fetches the documents")
	require.Len(t, as["scopes_supported"], 11)

	// Every 401 on /v1 names the REST API's metadata, and keeps the spec's error.
	r := b.doKey("", "GET", "/v1/me", nil, nil)
	require.Equal(t, 401, r.status)
	require.Equal(t, "invalid_api_key", r.errorCode(t))
	require.Contains(t, r.header.Get("WWW-Authenticate"), `resource_metadata="`+b.url+`/.well-known/oauth-protected-resource"`)
}

func TestOAuthFlow(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	verifier, challenge := pkcePair("a")
	q := b.authRequest(challenge, b.url, "me:read posts:read")

	// Not signed in: to the sign-in page, which comes back to the request.
	br := b.newBrowser()
	r := br.send("GET", "/oauth/authorize?"+q.Encode(), nil, nil)
	require.Equal(t, 303, r.status)
	loc, err := url.Parse(r.header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/signin", loc.Path)
	next := loc.Query().Get("next")
	require.True(t, strings.HasPrefix(next, "/oauth/authorize?"), next)
	r = br.send("POST", "/signin", url.Values{"email": {b.user.Email}, "password": {b.password}, "next": {next}}, nil)
	require.Equal(t, 303, r.status, string(r.body))
	require.Equal(t, next, r.header.Get("Location"))

	code := b.consent(br, q, "approve").Get("code")
	require.True(t, strings.HasPrefix(code, "hoc_"), code)
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"redirect_uri": {b.redirect}, "client_id": {b.clientID}, "resource": {b.url}}
	r = b.token(exchange)
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	tok := r.json(t)
	require.Equal(t, "Bearer", tok["token_type"])
	require.EqualValues(t, 3600, tok["expires_in"])
	require.Equal(t, "me:read posts:read", tok["scope"])
	access := tok["access_token"].(string)
	require.True(t, strings.HasPrefix(tok["refresh_token"].(string), "hor_"))

	// The access token opens /v1 within its scopes.
	me := b.doKey(access, "GET", "/v1/me", nil, nil)
	require.Equal(t, 200, me.status, string(me.body))
	require.Equal(t, b.user.Email, me.json(t)["email"])
	require.Equal(t, 200, b.doKey(access, "GET", "/v1/posts", nil, nil).status)
	r = b.bearer(access, "GET", "/v1/accounts")
	require.Equal(t, 403, r.status, string(r.body))
	require.Equal(t, "forbidden", r.errorCode(t))
	require.Equal(t, `Bearer error="insufficient_scope", scope="accounts:read service:read"`, r.header.Get("WWW-Authenticate"))
	r = b.bearer(access, "DELETE", "/v1/posts/0190a000-0000-7000-8000-000000000000")
	require.Equal(t, 403, r.status, "posts:read does not write")

	// The code is good once.
	r = b.token(exchange)
	require.Equal(t, 400, r.status)
	require.Equal(t, "invalid_grant", r.json(t)["error"])

	// The approval made a connector key, listed with the others.
	keys := br.send("GET", "/api/keys", nil, nil)
	require.Equal(t, 200, keys.status, string(keys.body))
	require.Contains(t, string(keys.body), `"name":"MCP connector: Claude"`)
	require.Contains(t, string(keys.body), `"kind":"connector"`)
	require.Contains(t, string(keys.body), `"kind":"standard"`)
}

func TestOAuthRefreshRotation(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	tok := b.grant(b.url, "")
	refresh := func(rt string) *response {
		return b.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {b.clientID}, "resource": {b.url}})
	}
	r := refresh(tok["refresh_token"].(string))
	require.Equal(t, 200, r.status, string(r.body))
	next := r.json(t)
	require.NotEqual(t, tok["refresh_token"], next["refresh_token"], "refresh tokens rotate")
	require.Equal(t, "service:read service:write", next["scope"])
	require.Equal(t, 200, b.doKey(next["access_token"].(string), "GET", "/v1/me", nil, nil).status)

	// The access token expires after an hour; the clock says so.
	b.clock.Add(61 * time.Minute)
	r = b.bearer(next["access_token"].(string), "GET", "/v1/me")
	require.Equal(t, 401, r.status)
	require.Contains(t, r.errorMessage(t), "expired")
	r = refresh(next["refresh_token"].(string))
	require.Equal(t, 200, r.status, string(r.body))
	newest := r.json(t)
	require.Equal(t, 200, b.doKey(newest["access_token"].(string), "GET", "/v1/me", nil, nil).status)

	// Reusing a rotated refresh token revokes the grant: the newest tokens stop working too.
	r = refresh(tok["refresh_token"].(string))
	require.Equal(t, 400, r.status)
	require.Equal(t, "invalid_grant", r.json(t)["error"])
	require.Equal(t, 401, b.bearer(newest["access_token"].(string), "GET", "/v1/me").status)
	r = refresh(newest["refresh_token"].(string))
	require.Equal(t, 400, r.status)
	require.Equal(t, "invalid_grant", r.json(t)["error"])
}

func TestOAuthRefusals(t *testing.T) { //nolint:tparallel // each case checks that nothing was issued, which a case running beside it would change
	t.Parallel()
	b := setupOAuth(t)
	br := b.signedIn()

	t.Run("wrong PKCE verifier", func(t *testing.T) {
		_, challenge := pkcePair("b")
		code := b.consent(br, b.authRequest(challenge, b.url, ""), "approve").Get("code")
		other, _ := pkcePair("c")
		r := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {other},
			"redirect_uri": {b.redirect}, "client_id": {b.clientID}})
		require.Equal(t, 400, r.status)
		require.Equal(t, "invalid_grant", r.json(t)["error"])
		require.Contains(t, r.json(t)["error_description"], "PKCE")
	})
	t.Run("mismatched redirect_uri", func(t *testing.T) {
		verifier, challenge := pkcePair("d")
		code := b.consent(br, b.authRequest(challenge, b.url, ""), "approve").Get("code")
		r := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {"http://127.0.0.1:7777/other"}, "client_id": {b.clientID}})
		require.Equal(t, 400, r.status)
		require.Equal(t, "invalid_grant", r.json(t)["error"])
		// And at the authorization endpoint: an unregistered redirect_uri is never redirected to.
		q := b.authRequest(challenge, b.url, "")
		q.Set("redirect_uri", "https://evil.example/cb")
		page := br.send("GET", "/oauth/authorize?"+q.Encode(), nil, nil)
		require.Equal(t, 400, page.status)
		require.Empty(t, page.header.Get("Location"))
	})
	t.Run("expired code", func(t *testing.T) {
		verifier, challenge := pkcePair("e")
		code := b.consent(br, b.authRequest(challenge, b.url, ""), "approve").Get("code")
		b.clock.Add(61 * time.Second)
		r := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {b.redirect}, "client_id": {b.clientID}})
		require.Equal(t, 400, r.status)
		require.Contains(t, r.json(t)["error_description"], "expired")
	})
	t.Run("resource of another server", func(t *testing.T) {
		_, challenge := pkcePair("f")
		r := br.send("GET", "/oauth/authorize?"+b.authRequest(challenge, "https://other.example", "").Encode(), nil, nil)
		require.Equal(t, 302, r.status)
		loc, err := url.Parse(r.header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, "invalid_target", loc.Query().Get("error"))
		require.Equal(t, "st-123", loc.Query().Get("state"))
		// A code for /v1 exchanged for another resource.
		verifier, challenge := pkcePair("g")
		code := b.consent(br, b.authRequest(challenge, b.url, ""), "approve").Get("code")
		tr := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"redirect_uri": {b.redirect}, "client_id": {b.clientID}, "resource": {b.url + "/mcp"}})
		require.Equal(t, 400, tr.status)
		require.Equal(t, "invalid_target", tr.json(t)["error"])
	})
	t.Run("token for the MCP endpoint does not open /v1", func(t *testing.T) {
		tok := b.grant(b.url+"/mcp", "service:read service:write posts:read")
		require.Equal(t, "service:read service:write", tok["scope"], "the MCP endpoint knows only the umbrellas")
		r := b.bearer(tok["access_token"].(string), "GET", "/v1/me")
		require.Equal(t, 401, r.status)
		require.Contains(t, r.errorMessage(t), "/mcp")
		// The MCP door's check takes it, and refuses a token for the REST API.
		p, err := b.app.OAuth.VerifyBearer("Bearer "+tok["access_token"].(string), b.app.OAuth.MCPResource())
		require.NoError(t, err)
		require.Equal(t, []string{"service:read", "service:write"}, p.Scopes)
		rest := b.grant(b.url, "")
		_, err = b.app.OAuth.VerifyBearer("Bearer "+rest["access_token"].(string), b.app.OAuth.MCPResource())
		require.ErrorIs(t, err, oauth.ErrWrongResource)
		p, err = b.app.OAuth.VerifyBearer("Bearer "+b.key, b.app.OAuth.MCPResource())
		require.NoError(t, err, "API keys open every door")
		require.False(t, p.OAuth())
	})
	t.Run("denied consent", func(t *testing.T) {
		_, challenge := pkcePair("h")
		q := b.consent(br, b.authRequest(challenge, b.url, ""), "deny")
		require.Equal(t, "access_denied", q.Get("error"))
		require.Empty(t, q.Get("code"))
	})
	t.Run("consent without the CSRF token", func(t *testing.T) {
		_, challenge := pkcePair("i")
		form := b.authRequest(challenge, b.url, "")
		form.Set("decision", "approve")
		r := br.send("POST", "/oauth/authorize", form, nil)
		require.Equal(t, 403, r.status)
	})
	t.Run("registration with a non-loopback http redirect", func(t *testing.T) {
		r := b.post("/oauth/register", "application/json", `{"client_name":"x","redirect_uris":["http://example.com/cb"]}`)
		require.Equal(t, 400, r.status)
		require.Equal(t, "invalid_redirect_uri", r.json(t)["error"])
		for _, ok := range []string{"http://localhost:3000/cb", "http://[::1]:9/cb", "https://app.example/cb"} {
			r := b.post("/oauth/register", "application/json", `{"client_name":"x","redirect_uris":["`+ok+`"]}`)
			require.Equal(t, 201, r.status, ok)
		}
		// A confidential method asked is registered as public, and the answer says so.
		r = b.post("/oauth/register", "application/json", `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`)
		require.Equal(t, 201, r.status, string(r.body))
		require.Equal(t, "none", r.json(t)["token_endpoint_auth_method"])
		require.NotContains(t, r.json(t), "client_secret")
		r = b.post("/oauth/register", "application/json", `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`)
		require.Equal(t, 400, r.status)
		require.Equal(t, "invalid_client_metadata", r.json(t)["error"])
	})
	t.Run("revoked connector key", func(t *testing.T) {
		tok := b.grant(b.url, "")
		access := tok["access_token"].(string)
		require.Equal(t, 200, b.doKey(access, "GET", "/v1/me", nil, nil).status)
		var keys struct{ Data []map[string]any }
		r := br.send("GET", "/api/keys", nil, nil)
		require.NoError(t, json.Unmarshal(r.body, &keys), string(r.body))
		id := ""
		for _, k := range keys.Data {
			if k["kind"] == "connector" && k["revoked_at"] == nil {
				id = k["id"].(string)
			}
		}
		require.NotEmpty(t, id)
		r = br.send("DELETE", "/api/keys/"+id, nil, br.csrfHeader())
		require.Less(t, r.status, 300, string(r.body))
		require.Equal(t, 401, b.bearer(access, "GET", "/v1/me").status, "refused at once")
		rr := b.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {b.clientID}})
		require.Equal(t, 400, rr.status)
	})
	t.Run("revocation endpoint", func(t *testing.T) {
		tok := b.grant(b.url, "")
		r := b.post("/oauth/revoke", "application/x-www-form-urlencoded",
			url.Values{"token": {tok["refresh_token"].(string)}, "client_id": {b.clientID}}.Encode())
		require.Equal(t, 200, r.status)
		require.Equal(t, 401, b.bearer(tok["access_token"].(string), "GET", "/v1/me").status)
	})
}

func TestOAuthRegistrationRateLimit(t *testing.T) {
	t.Parallel()
	clock := &sessionClock{now: time.Now()}
	b := &oauthBundle{testBundle: setup(t, bundleOpts{config: func(cfg *app.Config) {
		cfg.OAuthClock = clock.Now
		cfg.OAuthRegistrationsPerHour = 2
	}})}
	body := func(name string) string {
		return `{"client_name":"` + name + `","redirect_uris":["http://127.0.0.1:1/cb"]}`
	}
	require.Equal(t, 201, b.post("/oauth/register", "application/json", body("a")).status)
	require.Equal(t, 201, b.post("/oauth/register", "application/json", body("b")).status)
	r := b.post("/oauth/register", "application/json", body("c"))
	require.Equal(t, 429, r.status)
	require.NotEmpty(t, r.header.Get("Retry-After"))
	// Registering the same metadata again makes nothing, and is not counted.
	require.Equal(t, 201, b.post("/oauth/register", "application/json", body("a")).status)
}

// A token whose only scope is me:read opens GET /v1/me and nothing else: every other /v1 route
// answers 403 insufficient_scope before its handler runs.
func TestOAuthNarrowTokenOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	access := b.grant(b.url, "me:read")["access_token"].(string)
	open := map[string]bool{ // no API credential at all: public or signed URLs, the browser's connect steps
		"/v1/openapi.json": true, api.MediaUploadRoute: true, api.MediaFileRoute: true,
		accountlink.AuthorizePath: true, accountlink.CallbackPath: true,
	}
	fill := strings.NewReplacer(":id", uuid.NewString(), ":trackingId", uuid.NewString(), ":postId", uuid.NewString(),
		":commentId", "c1", ":conversationId", "d1")
	checked := 0
	for _, rt := range b.app.Server.Echo.Router().Routes() {
		if !strings.HasPrefix(rt.Path, "/v1/") || open[rt.Path] || rt.Method == http.MethodOptions || rt.Method == echo.RouteAny {
			continue
		}
		r := b.bearer(access, rt.Method, fill.Replace(rt.Path))
		if rt.Method == http.MethodGet && rt.Path == "/v1/me" {
			require.Equal(t, 200, r.status, string(r.body))
			continue
		}
		require.Equal(t, 403, r.status, "%s %s: %s", rt.Method, rt.Path, r.body)
		require.Equal(t, "forbidden", r.errorCode(t), rt.Path)
		require.Contains(t, r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`, rt.Path)
		checked++
	}
	require.Greater(t, checked, 30, "every scoped /v1 route was tried")
}
