package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// clockedTokens is the token source of the SDK's handler with the test's clock: oauth2's own
// source decides expiry by the wall clock, which the test cannot advance. When the access token
// is due by the injected clock, it refreshes through the handler's oauth2 config (the
// refresh_token grant at Herald's token endpoint), exactly as oauth2 does on expiry.
type clockedTokens struct {
	ctx       context.Context
	cfg       *oauth2.Config
	now       func() time.Time
	mu        sync.Mutex
	tok       *oauth2.Token
	due       time.Time
	refreshes int
}

func (s *clockedTokens) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().Before(s.due) {
		return s.tok, nil
	}
	next, err := s.cfg.TokenSource(s.ctx, &oauth2.Token{RefreshToken: s.tok.RefreshToken}).Token()
	if err != nil {
		return nil, err
	}
	s.refreshes++
	s.set(next)
	return next, nil
}

func (s *clockedTokens) set(t *oauth2.Token) {
	s.tok = t
	s.due = s.now().Add(time.Duration(t.ExpiresIn)*time.Second - 10*time.Second)
}

// The official Go SDK client connects to /mcp with no credentials and its OAuth handler does the
// rest: the 401's challenge, the protected resource metadata, the authorization server metadata,
// dynamic registration, the authorization code with PKCE and resource, the iss check, the token
// exchange; then refresh after the access token's hour, and a refusal once the user revokes the
// connector key.
func TestMCPOAuthWithTheSDKClient(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	br := h.SignedIn()
	cb, redirect := apptest.NewConsentBrowser(t, br)
	var tokens *clockedTokens
	handler, err := sdkauth.NewAuthorizationCodeHandler(&sdkauth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &sdkauth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "SDK host", RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		AuthorizationCodeFetcher: cb.Fetch,
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			tokens = &clockedTokens{ctx: ctx, cfg: cfg, now: h.Clock.Now}
			tokens.set(tok)
			return tokens, nil
		},
	})
	require.NoError(t, err)

	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "herald-sdk-oauth-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: h.URL + "/mcp", OAuthHandler: handler, DisableStandaloneSSE: true,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	// One authorization, with what the spec asks of the request.
	opened := cb.URLs()
	require.Len(t, opened, 1)
	au, err := url.Parse(opened[0])
	require.NoError(t, err)
	require.Equal(t, h.URL+"/oauth/authorize", au.Scheme+"://"+au.Host+au.Path)
	q := au.Query()
	require.Equal(t, h.URL+"/mcp", q.Get("resource"), "RFC 8707: the MCP endpoint's resource")
	// RFC 6749 §3.3: a scope is a set; the SDK client does not keep the challenge's order.
	require.ElementsMatch(t, []string{"service:read", "service:write"}, strings.Fields(q.Get("scope")), "the scopes of the 401's challenge")
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.True(t, strings.HasPrefix(q.Get("client_id"), "hcl_"), "registered dynamically: %s", q.Get("client_id"))
	require.Equal(t, redirect, q.Get("redirect_uri"))
	require.NotNil(t, tokens)
	require.Equal(t, "service:read service:write", tokens.tok.Extra("scope"))

	// The tools, with both scopes granted.
	me := apptest.OKJSON(t, apptest.CallTool(t, s, "whoami", nil))
	require.Equal(t, h.User.Email, me["email"])
	accts := apptest.OKJSON(t, apptest.CallTool(t, s, "list_accounts", nil))["accounts"].([]any)
	require.Len(t, accts, len(h.Accounts))
	d := apptest.OKJSON(t, apptest.CallTool(t, s, "create_draft", map[string]any{"content": "drafted over OAuth", "accounts": []string{h.Accounts[0].ID}}))
	require.NotEmpty(t, d["post_id"], "%v", d)
	first := tokens.tok.AccessToken

	// An hour later Herald refuses the access token; the client refreshes (rotation) and goes on,
	// without asking the user again.
	h.Clock.Add(61 * time.Minute)
	require.Equal(t, 401, h.Bearer(first, "POST", "/mcp").Status, "the first access token has expired")
	apptest.OKJSON(t, apptest.CallTool(t, s, "get_post", map[string]any{"post_id": d["post_id"]}))
	require.Equal(t, 1, tokens.refreshes)
	require.NotEqual(t, first, tokens.tok.AccessToken)
	require.Len(t, cb.URLs(), 1, "no new authorization")
	h.Clock.Add(61 * time.Minute)
	apptest.OKJSON(t, apptest.CallTool(t, s, "whoami", nil))
	require.Equal(t, 2, tokens.refreshes)
	metrics := apptest.Scrape(t, h.App.MetricsURL())
	require.Contains(t, metrics, `herald_oauth_token_requests_total{grant_type="refresh_token",outcome="issued"} 2`)
	require.Contains(t, metrics, `herald_oauth_token_requests_total{grant_type="authorization_code",outcome="issued"} 1`)

	// The user revokes the connector key on the Developer page: the next call is refused. The
	// SDK answers a 401 by authorizing again, so the user is asked, and says no this time.
	var keys struct{ Data []map[string]any }
	r := br.Send("GET", "/api/keys", nil, nil)
	require.NoError(t, json.Unmarshal(r.Body, &keys), string(r.Body))
	id := ""
	for _, k := range keys.Data {
		if k["kind"] == "connector" && k["name"] == "MCP connector: SDK host" {
			id = k["id"].(string)
		}
	}
	require.NotEmpty(t, id, string(r.Body))
	r = br.Send("DELETE", "/api/keys/"+id, nil, br.CSRFHeader())
	require.Less(t, r.Status, 300, string(r.Body))
	cb.SetDecision("deny")
	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "access_denied")
	again := cb.URLs()
	require.Len(t, again, 2, "the revoked grant sent the client back to the user")
	au2, err := url.Parse(again[1])
	require.NoError(t, err)
	require.Equal(t, q.Get("client_id"), au2.Query().Get("client_id"), "the SDK registers again on every authorization, and is answered with its client")
	require.Equal(t, 401, h.Bearer(tokens.tok.AccessToken, "POST", "/mcp").Status)
	_, err = tokens.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: tokens.tok.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re, "%v", err)
	require.Equal(t, "invalid_grant", re.ErrorCode, "the revoked grant's refresh token is refused too")
}

// hostedBrowser is the AuthorizationCodeFetcher of a hosted AI service (claude.ai, ChatGPT) or
// of an application with its own URI scheme (Cursor): the signed-in user approves, and the
// redirect to the host's callback is read from Location rather than followed.
type hostedBrowser struct {
	client   *http.Client
	callback string
	decision string
}

func (hb *hostedBrowser) fetch(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
	resp, err := apptest.SubmitConsent(ctx, hb.client, args.URL, hb.decision)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, hb.callback+"?") {
		return nil, fmt.Errorf("consent answered %d to %q, not the host's callback", resp.StatusCode, loc)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s", e)
	}
	return &sdkauth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// workerTokens is the token source of a host that serves one user's calls from several workers,
// each refreshing on its own when the access token is due: parallel calls refresh in parallel
// with the same refresh token.
type workerTokens struct {
	ctx       context.Context
	cfg       *oauth2.Config
	now       func() time.Time
	mu        sync.Mutex
	tok       *oauth2.Token
	due       time.Time
	refreshes int
	start     chan struct{} // closed to let the parallel refreshes go together
	waiting   atomic.Int32  // refreshes waiting for start
}

func (s *workerTokens) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	tok, due := s.tok, s.due
	s.mu.Unlock()
	if s.now().Before(due) {
		return tok, nil
	}
	if s.start != nil {
		s.waiting.Add(1)
		<-s.start
	}
	next, err := s.cfg.TokenSource(s.ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.refreshes++
	s.tok, s.due = next, s.now().Add(time.Duration(next.ExpiresIn)*time.Second-10*time.Second)
	s.mu.Unlock()
	return next, nil
}

// The Go SDK's client registers as each host does (claude.ai with client_secret_post, ChatGPT
// with none and with client_secret_post, Cursor with its own URI scheme), is approved, and calls
// tools; after the access token's hour three parallel calls refresh in parallel with one refresh
// token, and all of them succeed. Every host registering again is handed its client, and each
// keeps one connector key.
func TestMCPOAuthHostedClients(t *testing.T) { //nolint:tparallel // the hosts connect in turn through one signed-in browser, each keeping one connector key the next case counts
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	br := h.SignedIn()
	for _, host := range []struct {
		name string
		meta oauthex.ClientRegistrationMetadata
	}{
		{"claude.ai", oauthex.ClientRegistrationMetadata{ClientName: "Claude", RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback"},
			TokenEndpointAuthMethod: "client_secret_post", GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}},
		{"ChatGPT", oauthex.ClientRegistrationMetadata{ClientName: "ChatGPT", RedirectURIs: []string{"https://chatgpt.com/connector_platform_oauth_redirect"},
			TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}},
		{"ChatGPT with a secret", oauthex.ClientRegistrationMetadata{ClientName: "ChatGPT connector", RedirectURIs: []string{"https://chatgpt.com/connector_platform_oauth_redirect"},
			TokenEndpointAuthMethod: "client_secret_post", GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}},
		{"Cursor", oauthex.ClientRegistrationMetadata{ClientName: "Cursor", RedirectURIs: []string{"cursor://anysphere.cursor-retrieval/oauth/user-mcp/callback"},
			TokenEndpointAuthMethod: "none", GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}}},
	} {
		t.Run(host.name, func(t *testing.T) {
			hb := &hostedBrowser{client: &http.Client{Jar: br.Client.Jar, Timeout: 30 * time.Second,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
				callback: host.meta.RedirectURIs[0], decision: "approve"}
			var tokens *workerTokens
			// connect opens a session; with a token source, as another worker of the host that
			// shares the user's tokens, without authorizing.
			connect := func(shared oauth2.TokenSource) *mcp.ClientSession {
				meta := host.meta
				handler, err := sdkauth.NewAuthorizationCodeHandler(&sdkauth.AuthorizationCodeHandlerConfig{
					DynamicClientRegistrationConfig: &sdkauth.DynamicClientRegistrationConfig{Metadata: &meta},
					AuthorizationCodeFetcher:        hb.fetch,
					InitialTokenSource:              shared,
					NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
						tokens = &workerTokens{ctx: ctx, cfg: cfg, now: h.Clock.Now, tok: tok,
							due: h.Clock.Now().Add(time.Duration(tok.ExpiresIn)*time.Second - 10*time.Second)}
						return tokens, nil
					},
				})
				require.NoError(t, err)
				c := mcp.NewClient(&mcp.Implementation{Name: "herald-" + host.name, Version: "1"}, nil)
				s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
					Endpoint: h.URL + "/mcp", OAuthHandler: handler, DisableStandaloneSSE: true,
				}, nil)
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			s := connect(nil)
			require.Equal(t, h.User.Email, apptest.OKJSON(t, apptest.CallTool(t, s, "whoami", nil))["email"])
			clientID := tokens.cfg.ClientID
			require.True(t, strings.HasPrefix(clientID, "hcl_"), clientID)
			require.Empty(t, tokens.cfg.ClientSecret, "registered as a public client")

			// Three workers of the host call at once after the hour: each refreshes with the
			// same refresh token (one SDK session sends one request at a time).
			workers := []*mcp.ClientSession{s, connect(tokens), connect(tokens)}
			h.Clock.Add(61 * time.Minute)
			tokens.start = make(chan struct{})
			released := false
			release := func() {
				if !released {
					released = true
					close(tokens.start)
				}
			}
			defer release()
			var wg sync.WaitGroup
			errs := make([]error, len(workers))
			for i, w := range workers {
				wg.Go(func() {
					res, err := w.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
					if err == nil && res.IsError {
						err = fmt.Errorf("tool error: %v", res.Content)
					}
					errs[i] = err
				})
			}
			require.Eventually(t, func() bool { return tokens.waiting.Load() == 3 }, 10*time.Second, time.Millisecond,
				"three refreshes with one refresh token")
			release()
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			require.Equal(t, 3, tokens.refreshes)
			tokens.start = nil
			apptest.OKJSON(t, apptest.CallTool(t, s, "whoami", nil))

			// The host connects again (a new conversation, another worker): it registers
			// again, is handed the same client, and its new approval replaces its key.
			s2 := connect(nil)
			apptest.OKJSON(t, apptest.CallTool(t, s2, "whoami", nil))
			require.Equal(t, clientID, tokens.cfg.ClientID, "the same client")
			n := 0
			require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
				keys, err := tx.APIKeysOfUser(h.User.ID)
				for _, k := range keys {
					if k.ClientID == clientID && k.RevokedAt == nil {
						n++
					}
				}
				return err
			}))
			require.Equal(t, 1, n, "one connector key per client and user")
		})
	}
}
