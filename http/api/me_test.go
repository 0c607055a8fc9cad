package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// GET /v1/me: the caller, and the key it used.
func TestMe(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	r := h.Do("GET", "/v1/me", nil)
	require.Equal(t, 200, r.Status)
	m := r.JSON(t)
	require.Equal(t, h.User.ID, m["id"])
	require.Equal(t, "owner@example.com", m["email"])
	require.Equal(t, "pro", m["plan"])
	require.Equal(t, "UTC", m["timezone"])
	k := m["api_key"].(map[string]any)
	require.Equal(t, "test", k["name"])
	require.Equal(t, h.Key[:12], k["prefix"])
}
