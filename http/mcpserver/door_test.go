package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence"
)

// doorBundle is /mcp's HTTP door on loopback in front of the real tool set (whose tools are not
// called here: the door's answers come before them), with real API keys in a bbolt store.
type doorBundle struct {
	t        *testing.T
	store    *persistence.Store
	auth     *auth.Authenticator
	tools    *Tools
	registry *prometheus.Registry
	url      string // the server's base URL; /mcp is url + Path
	key      string // every scope
	readKey  string // service:read only (narrowed)
}

// narrowed grants only service:read to one key, as an OAuth token with that scope would be.
type narrowed struct {
	APIKeys
	readKey string
}

func (v narrowed) Verify(ctx context.Context, token string) (*Grant, error) {
	g, err := v.APIKeys.Verify(ctx, token)
	if err == nil && token == v.readKey {
		g.Scopes = []string{ScopeRead}
	}
	return g, err
}

func setupDoor(t *testing.T, origins ...string) *doorBundle {
	t.Helper()
	ctx := context.Background()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = auth.CreateUser(ctx, s, auth.NewUser{Email: "user@example.com"}, time.Now())
	require.NoError(t, err)
	b := &doorBundle{t: t, store: s, auth: auth.NewAuthenticator(s, nil), registry: prometheus.NewRegistry()}
	full, err := auth.CreateKey(ctx, s, "user@example.com", "full", 0, time.Now())
	require.NoError(t, err)
	read, err := auth.CreateKey(ctx, s, "user@example.com", "read", 0, time.Now())
	require.NoError(t, err)
	b.key, b.readKey = full.Key, read.Key
	o, err := NewOrigins(origins)
	require.NoError(t, err)
	b.tools = NewTools(ToolsConfig{})
	var base string
	srv := httptest.NewServer(Handler(HandlerConfig{Tools: b.tools, Verifier: narrowed{APIKeys{Auth: b.auth}, b.readKey},
		BaseURL: func() string { return base }, Origins: o, Registry: b.registry}))
	t.Cleanup(srv.Close)
	base, b.url = srv.URL, srv.URL
	return b
}

// post sends one JSON-RPC message to /mcp with a token (none when "") and headers.
func (b *doorBundle) post(token, body string, header ...string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+Path, strings.NewReader(body))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp, string(out)
}

// session connects the Go SDK client with a token.
func (b *doorBundle) session(token string) *mcp.ClientSession {
	b.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "herald-test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: b.url + Path, HTTPClient: &http.Client{Transport: bearerTransport(token)}, DisableStandaloneSSE: true,
	}, nil)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = s.Close() })
	return s
}

type bearerTransport string

func (k bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(k))
	return http.DefaultTransport.RoundTrip(r)
}

func (b *doorBundle) refusals(reason string) float64 {
	return testkit.Gathered(b.t, b.registry, "herald_mcp_refusals_total", "reason", reason)
}

const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// The Origin of a browser's request: one that is not allowed is refused with 403 before the
// token is even looked at; an allowed one (configured, or the base URL's own) gets the CORS
// headers, on the 401 too; none at all (a program) passes.
func TestMCPOriginCheck(t *testing.T) {
	t.Parallel()
	b := setupDoor(t, "https://host.example", "http://localhost:*")
	for _, origin := range []string{"https://evil.example", "http://host.example", "https://host.example:8443", "null", "http://localhost.evil.example:3000"} {
		for _, token := range []string{"", b.key} {
			resp, body := b.post(token, listTools, "Origin", origin)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %q", origin, token)
			require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), origin)
			require.Empty(t, resp.Header.Get("WWW-Authenticate"), "refused before the bearer check")
			var e rpcErrorResponse
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.Equal(t, "null", string(e.ID), "a JSON-RPC error that answers no request")
			require.Contains(t, e.Error.Message, "Origin "+origin+" is not allowed")
		}
	}
	require.EqualValues(t, 10, b.refusals("origin"))

	for _, origin := range []string{"https://host.example", "https://HOST.example:443", "http://localhost:5173", b.url} {
		resp, _ := b.post("", listTools, "Origin", origin)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, origin)
		require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
		require.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate", "the page reads the challenge")
		require.Contains(t, resp.Header.Values("Vary"), "Origin")
		resp, body := b.post(b.key, listTools, "Origin", origin)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	// A page on another site entirely: allowed by its origin alone (no other cross-origin
	// protection in front of the SDK's handler).
	resp, body := b.post(b.key, listTools, "Origin", "https://host.example", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)

	resp, body = b.post(b.key, listTools)
	require.Equal(t, http.StatusOK, resp.StatusCode, "no Origin: not a browser")
	require.Contains(t, body, `"create_draft"`)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

// The preflight of a browser's POST names the transport's methods and headers, for an allowed
// origin only.
func TestMCPPreflight(t *testing.T) {
	t.Parallel()
	b := setupDoor(t, "https://host.example")
	preflight := func(origin string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, b.url+Path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,mcp-protocol-version")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	resp := preflight("https://host.example")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	h := resp.Header
	require.Equal(t, "https://host.example", h.Get("Access-Control-Allow-Origin"))
	require.Contains(t, h.Values("Vary"), "Origin")
	for _, m := range []string{"GET", "POST", "DELETE"} {
		require.Contains(t, h.Get("Access-Control-Allow-Methods"), m)
	}
	allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
	for _, name := range []string{"authorization", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id"} {
		require.Contains(t, allowed, name)
	}
	expose := strings.ToLower(h.Get("Access-Control-Expose-Headers"))
	require.Contains(t, expose, "www-authenticate")
	require.Contains(t, expose, "mcp-session-id")
	require.NotEmpty(t, h.Get("Access-Control-Max-Age"))
	require.Empty(t, h.Get("Access-Control-Allow-Credentials"), "bearer tokens, no cookies")

	resp = preflight("https://evil.example")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
}

func TestOriginEntries(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"host.example", "ftp://host.example", "https://host.example/path", "https://host.example:8443:*",
		"https://user@host.example", "https://host.example?q=1", "https://"} {
		_, err := ParseOrigins("https://ok.example," + bad)
		require.Error(t, err, bad)
	}
	o, err := ParseOrigins(" https://A.example:443/ , http://127.0.0.1:*, http://[::1]:*,,")
	require.NoError(t, err)
	for origin, want := range map[string]bool{
		"https://a.example": true, "https://a.example:444": false, "http://a.example": false,
		"http://127.0.0.1:9": true, "http://127.0.0.1": true, "https://127.0.0.1:9": false, "http://[::1]:6274": true,
		"https://base.example": true, "https://base.example:1": false, "null": false, "": false,
	} {
		require.Equal(t, want, o.Allowed(origin, "https://base.example/herald"), origin)
	}
	anyOrigin, err := ParseOrigins("*")
	require.NoError(t, err)
	require.True(t, anyOrigin.Allowed("https://whoever.example", ""))
	var none *Origins
	require.True(t, none.Allowed("https://base.example", "https://base.example"))
	require.False(t, none.Allowed("https://other.example", "https://base.example"))
}

// A token sees the tools its scopes cover; a call of another is refused with 403 and the
// insufficient_scope challenge naming the scopes to ask for, before the tool runs, as the
// call's JSON-RPC error (the client's session goes on). A key sees every tool.
func TestMCPToolScopes(t *testing.T) {
	t.Parallel()
	b := setupDoor(t)
	var read, all []string
	for _, ts := range b.tools.Scopes() {
		all = append(all, ts.Tool)
		if ts.Scope == ScopeRead {
			read = append(read, ts.Tool)
		}
	}
	require.NotEmpty(t, read)
	require.Greater(t, len(all), len(read))
	names := func(s *mcp.ClientSession) []string {
		list, err := s.ListTools(context.Background(), nil)
		require.NoError(t, err)
		var out []string
		for _, tool := range list.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	require.ElementsMatch(t, all, names(b.session(b.key)))
	ro := b.session(b.readKey)
	require.ElementsMatch(t, read, names(ro))

	_, err := ro.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_draft", Arguments: map[string]any{"content": "no", "accounts": []string{"x"}}})
	require.Error(t, err)
	require.Contains(t, err.Error(), "create_draft needs the scope service:write")
	require.ElementsMatch(t, read, names(ro), "the session goes on")

	resp, body := b.post(b.readKey, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_draft","arguments":{"post_id":"x"}}}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	require.Equal(t, `Bearer error="insufficient_scope", scope="service:read service:write", resource_metadata="`+b.url+
		`/.well-known/oauth-protected-resource/mcp", error_description="delete_draft needs the scope service:write, which this token was not granted"`,
		resp.Header.Get("WWW-Authenticate"))
	var e rpcErrorResponse
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Equal(t, "7", string(e.ID))
	require.Equal(t, codeForbidden, e.Error.Code)
	require.EqualValues(t, 2, b.refusals("insufficient_scope"))

	// An old client's batch: refused when one of its calls is.
	resp, body = b.post(b.readKey, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"publish_post","arguments":{}}}]`,
		"Mcp-Protocol-Version", "2025-03-26")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	var es []rpcErrorResponse
	require.NoError(t, json.Unmarshal([]byte(body), &es), body)
	require.Len(t, es, 1)
	require.Equal(t, "2", string(es[0].ID))

	// A read tool passes the door with the read-only token (here it reaches the tool, whose
	// answer is not the door's business), and a write tool with the full key.
	resp, body = b.post(b.readKey, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "no_such_tool", "an unknown tool is the SDK's to answer")
}

// A refused token's 401 says invalid_token and why, in OAuth's words, with the resource
// metadata and the scopes; a request without a token gets the bare challenge.
func TestMCPUnauthorized(t *testing.T) {
	t.Parallel()
	b := setupDoor(t)
	ctx := context.Background()
	revoked, err := auth.CreateKey(ctx, b.store, "user@example.com", "revoked", 0, time.Now())
	require.NoError(t, err)
	_, err = auth.RevokeKey(ctx, b.store, revoked.ID, time.Now())
	require.NoError(t, err)
	expired, err := auth.CreateKey(ctx, b.store, "user@example.com", "expired", time.Hour, time.Now().Add(-2*time.Hour))
	require.NoError(t, err)
	meta := `resource_metadata="` + b.url + `/.well-known/oauth-protected-resource/mcp"`

	resp, body := b.post("", listTools)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, `Bearer `+meta+`, scope="service:read service:write"`, resp.Header.Get("WWW-Authenticate"))
	require.Contains(t, body, `"code":"invalid_api_key"`)
	resp, _ = b.post("", listTools, "Authorization", "Basic dXNlcjpwYXNz")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.NotContains(t, resp.Header.Get("WWW-Authenticate"), "error=", "another scheme is no token at all")

	for token, problem := range map[string]string{
		"sk_live_" + strings.Repeat("a", 40): "the access token is not valid",
		"hoa_" + strings.Repeat("b", 40):     "the access token is not valid",
		"hoa_short":                          "the access token is malformed",
		revoked.Key:                          "the access token was revoked",
		expired.Key:                          "the access token expired",
	} {
		resp, body := b.post(token, listTools)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, token)
		require.Equal(t, `Bearer error="invalid_token", error_description="`+problem+`", `+meta+`, scope="service:read service:write"`,
			resp.Header.Get("WWW-Authenticate"), token)
		require.NotContains(t, resp.Header.Get("WWW-Authenticate"), "API key")
		require.Contains(t, body, `"code":"invalid_api_key"`)
		require.Contains(t, body, problem)
	}
	require.EqualValues(t, 2, b.refusals("missing_token"))
	require.EqualValues(t, 5, b.refusals("invalid_token"))

	// An OAuth token for another resource (cmd/herald/app's tests send one).
	require.Equal(t, "the access token was issued for another resource, not https://h.example/mcp",
		tokenProblem(ErrWrongResource, "https://h.example"))
}

// The stateless endpoint never sends notifications/tools/list_changed, so it does not offer them.
func TestMCPAdvertisesNoListChanged(t *testing.T) {
	t.Parallel()
	b := setupDoor(t)
	caps := b.session(b.key).InitializeResult().Capabilities
	require.NotNil(t, caps.Tools, "tools are offered")
	require.False(t, caps.Tools.ListChanged)
	resp, body := b.post(b.key, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"tools":{}`)
	require.NotContains(t, body, "listChanged")
}

// A 2026-07-28 client that asks to listen for tool list changes anyway is not granted them, and
// its subscriptions/listen returns at once instead of holding a stream open that would never
// carry anything.
func TestMCPListenGrantsNoToolListChanges(t *testing.T) {
	t.Parallel()
	b := setupDoor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen",`+
		`"params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer "+b.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the stream ended by itself")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"method":"notifications/subscriptions/acknowledged"`)
	require.Contains(t, string(body), `"notifications":{}`, "nothing granted")
	require.Contains(t, string(body), `"id":1,"result"`)
}

type brokenVerifier struct{}

func (brokenVerifier) Verify(context.Context, string) (*Grant, error) {
	return nil, errors.New("store: bbolt file is gone")
}

// A token that cannot be checked (the store fails) is a 500 that says nothing of the cause.
func TestMCPVerifierFailure(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler(HandlerConfig{Tools: NewTools(ToolsConfig{}), Verifier: brokenVerifier{}, BaseURL: func() string { return "" }}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodPost, srv.URL+Path, strings.NewReader(listTools))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk_live_whatever")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Contains(t, string(body), `"code":"internal_error"`)
	require.NotContains(t, string(body), "bbolt")
}
