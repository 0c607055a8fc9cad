package admin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/auth"
)

// A key revoked through the admin socket is refused on the very next request.
func TestRevocationThroughAdminSocketIsImmediate(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{AdminSocket: true})
	require.Equal(t, 200, h.Do("GET", "/v1/me", nil).Status) // warms the key cache
	c := admin.Dial(h.App.Cfg.DataDir)
	require.NotNil(t, c, "the server answers on its admin socket")
	var keys []auth.KeyInfo
	require.NoError(t, c.Do("GET", "/keys?email=owner@example.com", nil, &keys))
	require.Len(t, keys, 1)
	var info auth.KeyInfo
	require.NoError(t, c.Do("POST", "/keys/"+keys[0].ID+"/revoke", nil, &info))
	require.NotNil(t, info.RevokedAt)
	r := h.Do("GET", "/v1/me", nil)
	require.Equal(t, 401, r.Status, "refused on the very next request")
	require.Equal(t, "API key has been revoked", r.ErrorMessage(t))
}
