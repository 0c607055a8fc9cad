package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMetricLabels(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		require.Equal(t, m, methodLabel(m))
	}
	for _, m := range []string{"get", "TRACE", "CONNECT", "PROPFIND", "M1X", ""} {
		require.Equal(t, "other", methodLabel(m), "%q", m)
	}
	require.Equal(t, "200", statusLabel(http.StatusOK))
	require.Equal(t, "503", statusLabel(http.StatusServiceUnavailable))
	require.Equal(t, "other", statusLabel(0))
	require.Equal(t, "other", statusLabel(999))
}
