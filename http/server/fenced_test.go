package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// A write its fence refused (the object's shard moved to another node mid-request) changed
// nothing: the client hears a retriable 503 with Retry-After in the spec's error shape, not a 500.
func TestAFencedWriteIsARetriable503(t *testing.T) {
	t.Parallel()
	srv := server.New(server.Config{Registry: prometheus.NewRegistry(), Log: slog.New(slog.DiscardHandler)})
	srv.Echo.POST("/v1/things", func(*echo.Context) error {
		return fmt.Errorf("storing the thing: %w", persistence.ErrFenced)
	})
	hs := httptest.NewServer(srv.Echo)
	t.Cleanup(hs.Close)
	resp, err := http.Post(hs.URL+"/v1/things", "application/json", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Contains(t, string(body), "moved to another Herald node")
}
