package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// ConsentBrowser is the AuthorizationCodeFetcher of the SDK client: the signed-in user's browser.
// It opens the authorization URL with the user's cookies, reads the consent form, posts it with
// the decision, and follows the redirect to the client's loopback callback, which hands back the
// code, state and iss. It runs inside the SDK's transport, so it reports faults as errors.
type ConsentBrowser struct {
	client   *http.Client
	mu       sync.Mutex
	decision string
	opened   []string // the authorization URLs it was asked to open
	callback chan url.Values
}

// NewConsentBrowser is a consent browser with the cookies of signedIn, and the redirect URI of
// its callback listener.
func NewConsentBrowser(t testing.TB, signedIn *Browser) (*ConsentBrowser, string) {
	cb := &ConsentBrowser{decision: "approve", callback: make(chan url.Values, 1)}
	// The client's redirect listener on loopback, as a desktop MCP host runs one.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cb.callback <- r.URL.Query()
		_, _ = io.WriteString(w, "You may close this window.")
	}))
	t.Cleanup(srv.Close)
	cb.client = &http.Client{Jar: signedIn.Client.Jar, Timeout: 30 * time.Second}
	return cb, srv.URL + "/callback"
}

// SetDecision sets what the user answers from now on (approve or deny).
func (cb *ConsentBrowser) SetDecision(d string) {
	cb.mu.Lock()
	cb.decision = d
	cb.mu.Unlock()
}

// URLs are the authorization URLs the browser was asked to open.
func (cb *ConsentBrowser) URLs() []string {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return append([]string(nil), cb.opened...)
}

// Fetch is the AuthorizationCodeFetcher.
func (cb *ConsentBrowser) Fetch(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
	cb.mu.Lock()
	cb.opened = append(cb.opened, args.URL)
	decision := cb.decision
	cb.mu.Unlock()

	// Followed through the 303 to the callback listener.
	resp, err := SubmitConsent(ctx, cb.client, args.URL, decision)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("consent: %d %s", resp.StatusCode, body)
	}
	var q url.Values
	select {
	case q = <-cb.callback:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s", e)
	}
	return &sdkauth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// SubmitConsent opens the consent page at authURL with client (a signed-in browser's cookies),
// reads its form, and posts it with decision (approve or deny). The answer to the post is the
// caller's: client decides whether the redirect to the host's callback is followed.
func SubmitConsent(ctx context.Context, client *http.Client, authURL, decision string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("consent page: %d %s", resp.StatusCode, page)
	}
	form := url.Values{}
	for _, m := range HiddenField.FindAllStringSubmatch(string(page), -1) {
		form.Add(m[1], HTMLUnescape(m[2]))
	}
	if form.Get("csrf_token") == "" {
		return nil, fmt.Errorf("consent page without a form: %s", page)
	}
	form.Set("decision", decision)
	action, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	action.RawQuery = ""
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, action.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return client.Do(req)
}

// CallTool calls a tool and returns its result; the call itself must not be a protocol error.
func CallTool(t testing.TB, s *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	return res
}

// ResultText is the text blocks of a result.
func ResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// OKJSON requires a successful result, decodes its last text block, and checks that the
// structuredContent the host reads is the same JSON.
func OKJSON(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, ResultText(res))
	last := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(last), &m), last)
	require.NotNil(t, res.StructuredContent, "structuredContent")
	sc, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.JSONEq(t, last, string(sc), "the text block is the structuredContent")
	return m
}

// ToolError requires a failed result and returns its text.
func ToolError(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	require.True(t, res.IsError, ResultText(res))
	return ResultText(res)
}

// BearerTransport adds an Authorization header to every request of an MCP client.
type BearerTransport struct{ Key string }

// RoundTrip sends the request with the key.
func (b BearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Key)
	return http.DefaultTransport.RoundTrip(r)
}

// MCPSession connects the official Go SDK client to /mcp with key.
func (h *Herald) MCPSession(key string) *mcp.ClientSession {
	h.T.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "herald-test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: h.URL + "/mcp", HTTPClient: &http.Client{Transport: BearerTransport{key}}, DisableStandaloneSSE: true,
	}, nil)
	require.NoError(h.T, err)
	h.T.Cleanup(func() { _ = s.Close() })
	return s
}
