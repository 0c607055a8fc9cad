package oauth

import (
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

func TestCheckRedirectURI(t *testing.T) {
	t.Parallel()
	for uri, ok := range map[string]bool{
		"https://app.example/cb":                                      true,
		"https://app.example:8443/cb?x=1":                             true,
		"https://192.0.2.1/cb":                                        true,
		"http://127.0.0.1:6276/callback":                              true,
		"http://[::1]:9/cb":                                           true,
		"http://localhost/cb":                                         true,
		"cursor://anysphere.cursor-retrieval/oauth/user-mcp/callback": true,
		"com.example.app:/cb":                                         true,
		"vscode://vscode.github-authentication/did-authenticate":      true,
		"http://example.com/cb":                                       false,
		"http://127.0.0.2/cb":                                         false,
		"http://127.1/cb":                                             false, // 127.0.0.1 written otherwise
		"https://app.example/cb#frag":                                 false,
		"https://app.example/cb#":                                     false,
		"ftp://app.example/cb":                                        false,
		"javascript://app.example/%0aalert(1)":                        false,
		"data:text/html,x":                                            false,
		"file:///etc/passwd":                                          false,
		"com.example.app:cb":                                          false, // opaque
		"/relative":                                                   false,
		"https://user@app.example/cb":                                 false,
		"https://user:pw@app.example/cb":                              false,
		"http://localhost.evil.example/x":                             false,
		"https://*/cb":                                                false,
		"https://*.example/cb":                                        false,
		"https://exa%2Ample.example/cb":                               false,
		"https://app.example:0/cb":                                    false,
		"https://app.example:99999/cb":                                false,
		"https://app.example:/cb":                                     false,
		"https://APP.example/cb":                                      false,
		"https://app_x.example/cb":                                    false,
		"https://-app.example/cb":                                     false,
		"https://app.example;/cb":                                     false,
		"https://app.example'/cb":                                     false,
		"https:///cb":                                                 false,
		"cursor://a*b/cb":                                             false,
		" https://app.example/cb":                                     false,
		"https://app.example/c b":                                     false,
	} {
		require.Equal(t, ok, checkRedirectURI(uri) == "", "%s: %s", uri, checkRedirectURI(uri))
	}
}

func TestRedirectMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		registered, requested string
		ok                    bool
	}{
		{"http://127.0.0.1:7777/callback", "http://127.0.0.1:54321/callback", true},
		{"http://127.0.0.1/callback", "http://127.0.0.1:54321/callback", true},
		{"http://[::1]:1/cb", "http://[::1]:2/cb", true},
		{"http://localhost:3000/cb", "http://localhost:4000/cb", true},
		{"http://127.0.0.1:7777/callback", "http://127.0.0.1:7777/other", false},
		{"http://127.0.0.1:7777/callback", "http://localhost:7777/callback", false},
		{"http://127.0.0.1:7777/callback?a=1", "http://127.0.0.1:1/callback?a=2", false},
		{"https://app.example:8443/cb", "https://app.example:9443/cb", false},
		{"https://app.example/cb", "https://app.example/cb", true},
		{"cursor://anysphere.cursor-retrieval/cb", "cursor://anysphere.cursor-retrieval/cb", true},
		{"cursor://anysphere.cursor-retrieval/cb", "cursor://other/cb", false},
	} {
		require.Equal(t, c.ok, redirectMatches(c.registered, c.requested), "%s %s", c.registered, c.requested)
	}
}

// A loopback redirect registered on one port is used on another (RFC 8252 7.3): the consent
// page accepts it, the answer goes to that port, and the code is exchanged with it.
func TestLoopbackAnyPort(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	for _, c := range [][2]string{
		{"http://127.0.0.1:7777/callback", "http://127.0.0.1:54321/callback"},
		{"http://[::1]:7777/callback", "http://[::1]:40000/callback"},
		{"http://localhost/callback", "http://localhost:3118/callback"},
	} {
		id := b.registerClient("Desktop", c[0])
		verifier, challenge := pkcePair("l")
		loc := b.consent(b.authRequest(id, c[1], challenge), "approve", b.cookie)
		want, _ := url.Parse(c[1])
		require.Equal(t, want.Host, loc.Host)
		r := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier},
			"redirect_uri": {c[1]}, "client_id": {id}})
		require.Equal(t, 200, r.status, string(r.body))
	}
	// Not so for https.
	id := b.registerClient("Web", "https://app.example:8443/cb")
	_, challenge := pkcePair("m")
	r := b.page(b.authRequest(id, "https://app.example:9443/cb", challenge), b.cookie)
	require.Equal(t, 400, r.status)
	require.Empty(t, r.header.Get("Location"))
}

// The consent page's CSP allows the form to reach the redirect URI's origin, or the
// application's scheme, and nothing wider: no wildcard ever.
func TestConsentCSP(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	for _, c := range []struct{ registered, requested, source string }{
		{"https://claude.ai/api/mcp/auth_callback", "", "https://claude.ai"},
		{"https://chatgpt.com/connector_platform_oauth_redirect", "", "https://chatgpt.com"},
		{"https://app.example:8443/cb", "", "https://app.example:8443"},
		{"http://127.0.0.1:7777/callback", "http://127.0.0.1:61000/callback", "http://127.0.0.1:61000"},
		{"http://[::1]:7777/callback", "", "http://[::1]:7777"},
		{"cursor://anysphere.cursor-retrieval/oauth/user-mcp/callback", "", "cursor:"},
		{"com.example.app:/cb", "", "com.example.app:"},
	} {
		req := c.requested
		if req == "" {
			req = c.registered
		}
		id := b.registerClient("CSP", c.registered)
		_, challenge := pkcePair("c")
		r := b.page(b.authRequest(id, req, challenge), b.cookie)
		require.Equal(t, 200, r.status, string(r.body))
		csp := r.header.Get("Content-Security-Policy")
		var formAction string
		for d := range strings.SplitSeq(csp, ";") {
			if d = strings.TrimSpace(d); strings.HasPrefix(d, "form-action ") {
				formAction = d
			}
		}
		require.Equal(t, "form-action 'self' "+c.source, formAction, csp)
		require.NotContains(t, csp, "*", csp)
	}
	for _, bad := range []string{"https://*/cb", "https://*.claude.ai/cb", "https://claude.ai;script-src/cb", "https://a b/cb"} {
		r := b.register(`{"client_name":"x","redirect_uris":["` + bad + `"]}`)
		require.Equal(t, 400, r.status, bad)
		require.Equal(t, "invalid_redirect_uri", r.json(t)["error"], bad)
	}
}

// A private-use scheme (Cursor's) registers, and the approval is redirected to it.
func TestPrivateUseSchemeRedirect(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	cb := "cursor://anysphere.cursor-retrieval/oauth/user-mcp/callback"
	id := b.registerClient("Cursor", cb)
	verifier, challenge := pkcePair("p")
	page := b.page(b.authRequest(id, cb, challenge), b.cookie)
	require.Contains(t, string(page.body), "the application at cursor://anysphere.cursor-retrieval")
	loc := b.consent(b.authRequest(id, cb, challenge), "approve", b.cookie)
	require.Equal(t, "cursor", loc.Scheme)
	require.Equal(t, "anysphere.cursor-retrieval", loc.Host)
	require.Equal(t, "/oauth/user-mcp/callback", loc.Path)
	r := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {cb}, "client_id": {id}})
	require.Equal(t, 200, r.status, string(r.body))
}

// Three refreshes of one token at once all succeed with the same new pair; the token presented
// again within the grace gets that pair too; after the grace it revokes the grant.
func TestRefreshGrace(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	cb := "https://claude.ai/api/mcp/auth_callback"
	id := b.register(claudeRegistration).json(t)["client_id"].(string)
	tok := b.grant(id, cb, "approve")
	rt := tok["refresh_token"].(string)

	var wg sync.WaitGroup
	answers := make([]*response, 3)
	for i := range answers {
		wg.Go(func() { answers[i] = b.refresh(id, rt) })
	}
	wg.Wait()
	for _, r := range answers {
		require.Equal(t, 200, r.status, string(r.body))
		require.Equal(t, answers[0].json(t)["access_token"], r.json(t)["access_token"])
		require.Equal(t, answers[0].json(t)["refresh_token"], r.json(t)["refresh_token"])
	}
	next := answers[0].json(t)
	require.NotEqual(t, rt, next["refresh_token"])
	require.True(t, b.live(next["access_token"].(string)))
	require.Equal(t, 1.0, b.metric("herald_oauth_token_requests_total", map[string]string{"grant_type": "refresh_token", "outcome": "issued"}))
	require.Equal(t, 2.0, b.metric("herald_oauth_token_requests_total", map[string]string{"grant_type": "refresh_token", "outcome": "reissued"}))

	// A retry 59 seconds on: the same pair, with what is left of its hour.
	b.clock.Add(59 * time.Second)
	r := b.refresh(id, rt)
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, next["refresh_token"], r.json(t)["refresh_token"])
	require.InDelta(t, 3600-59, r.json(t)["expires_in"], 1)
	// Another client's id gets nothing.
	other := b.registerClient("other", "https://other.example/cb")
	r = b.refresh(other, rt)
	require.Equal(t, 400, r.status)

	// The successor rotates as usual.
	r = b.refresh(id, next["refresh_token"].(string))
	require.Equal(t, 200, r.status, string(r.body))
	newest := r.json(t)

	// Past the grace, the first token is a reuse: the grant ends.
	b.clock.Add(2 * time.Second)
	r = b.refresh(id, rt)
	require.Equal(t, 400, r.status)
	require.Equal(t, "invalid_grant", r.json(t)["error"])
	require.Contains(t, r.json(t)["error_description"], "revoked")
	require.False(t, b.live(newest["access_token"].(string)))
	require.Equal(t, 400, b.refresh(id, newest["refresh_token"].(string)).status)

	// What the grace keeps is sealed: no token appears in the store's record.
	require.NotContains(t, strings.ToLower(string(mustRecord(t, b, rt))), strings.ToLower(next["refresh_token"].(string)[4:]))
}

// mustRecord is a refresh token's stored record, as JSON.
func mustRecord(t *testing.T, b *testBundle, raw string) []byte {
	t.Helper()
	var out []byte
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		tok, err := tx.OAuthToken(auth.Hash(raw))
		if err != nil {
			return err
		}
		require.NotEmpty(t, tok.Successor)
		out, err = json.Marshal(tok)
		return err
	}))
	return out
}
