package oauth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"
)

// A browser's script on any origin may call the token endpoint: the preflight allows the JSON
// body, the Authorization and MCP-Protocol-Version headers; the answer lets it read the 401's
// challenge of a refused client.
func TestCORSOnTheOAuthEndpoints(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.OPTIONS(TokenPath, preflight)
	e.POST(TokenPath, func(c *echo.Context) error {
		return writeError(c, fail(http.StatusUnauthorized, "invalid_client", "unknown client"))
	}, cors)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	req, err := http.NewRequest(http.MethodOptions, srv.URL+TokenPath, nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://host.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,mcp-protocol-version")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
	for _, h := range []string{"Authorization", "Content-Type", "MCP-Protocol-Version"} {
		require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), h)
	}
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Credentials"), "no cookies")

	req, err = http.NewRequest(http.MethodPost, srv.URL+TokenPath, nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://host.example")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate")
	require.Equal(t, `Bearer error="invalid_client"`, resp.Header.Get("WWW-Authenticate"))
}
