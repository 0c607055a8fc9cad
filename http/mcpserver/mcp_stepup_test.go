package mcpserver_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/require"
)

// Step-up authorization with the official Go SDK client: the user first grants service:read
// only, so the write tools are not listed; when the host calls one anyway, /mcp's 403
// insufficient_scope sends the client back to the user with the scopes it names, and the call
// goes through on the new token.
func TestMCPStepUpWithTheSDKClient(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	cb, redirect := apptest.NewConsentBrowser(t, h.SignedIn())
	var mu sync.Mutex
	var asked []string
	handler, err := sdkauth.NewAuthorizationCodeHandler(&sdkauth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &sdkauth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "SDK host", RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		AuthorizationCodeFetcher: func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
			u, err := url.Parse(args.URL)
			if err != nil {
				return nil, err
			}
			q := u.Query()
			mu.Lock()
			asked = append(asked, q.Get("scope"))
			first := len(asked) == 1
			mu.Unlock()
			if first { // the user narrows the first grant to reading
				q.Set("scope", "service:read")
				u.RawQuery = q.Encode()
				args = &sdkauth.AuthorizationArgs{URL: u.String()}
			}
			return cb.Fetch(ctx, args)
		},
	})
	require.NoError(t, err)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "herald-sdk-stepup-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.URL + "/mcp", OAuthHandler: handler, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	list, err := s.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tool := range list.Tools {
		require.NotEqual(t, "create_draft", tool.Name, "a read-only grant lists no write tool")
	}
	d := apptest.OKJSON(t, apptest.CallTool(t, s, "create_draft", map[string]any{"content": "after step-up", "accounts": []string{h.Accounts[0].ID}}))
	require.NotEmpty(t, d["post_id"])
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, asked, 2, "one authorization, then one step-up")
	require.ElementsMatch(t, []string{"service:read", "service:write"}, strings.Fields(asked[1]), "the 403's scopes: the held one and the missing one")
	list, err = s.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, len(h.App.MCPTools.Scopes()), "the new token sees every tool")
}
