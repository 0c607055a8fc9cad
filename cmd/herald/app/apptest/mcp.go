package apptest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

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
