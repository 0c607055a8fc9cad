package server_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/http/server"
)

// A request whose actor is on a node that cannot be reached is answered 503 internal_error with
// Retry-After, in the spec's error shape, whichever way the handler returns the error.
func TestClusterUnavailableIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	srv := server.New(server.Config{Registry: prometheus.NewRegistry(), Log: slog.New(slog.DiscardHandler)})
	srv.Echo.GET("/v1/things/:id", func(c *echo.Context) error {
		return fmt.Errorf("asking the thing: %w", cluster.ErrUnavailable)
	})
	srv.Echo.GET("/v1/mapped/:id", func(c *echo.Context) error {
		return server.ClusterUnavailable(c, slog.New(slog.DiscardHandler), "post")
	})
	hs := httptest.NewServer(srv.Echo)
	t.Cleanup(hs.Close)

	for _, path := range []string{"/v1/things/1", "/v1/mapped/1"} {
		res, err := http.Get(hs.URL + path)
		require.NoError(t, err)
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Status int `json:"status"`
		}
		require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
		require.NoError(t, res.Body.Close())
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, path)
		require.NotEmpty(t, res.Header.Get("Retry-After"), path)
		require.Equal(t, "application/json", res.Header.Get("Content-Type"), path)
		require.Equal(t, "internal_error", body.Error.Code, path)
		require.Contains(t, body.Error.Message, "another Herald node", path)
		require.Equal(t, http.StatusServiceUnavailable, body.Status, path)
	}
}
