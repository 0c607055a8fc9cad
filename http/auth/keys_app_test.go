package auth_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
)

// Every way a key fails is refused 401 invalid_api_key with a message that says which, through a
// running Herald and from the key cache alike.
func TestKeyFailures(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	revoked, err := auth.CreateKey(ctx, h.App.Store, "owner@example.com", "to revoke", 0, time.Now())
	require.NoError(t, err)
	_, err = auth.RevokeKey(ctx, h.App.Store, revoked.ID, time.Now())
	require.NoError(t, err)
	regen, err := auth.CreateKey(ctx, h.App.Store, "owner@example.com", "to regenerate", 0, time.Now())
	require.NoError(t, err)
	fresh, err := auth.RegenerateKey(ctx, h.App.Store, regen.ID)
	require.NoError(t, err)
	expired, err := auth.CreateKey(ctx, h.App.Store, "owner@example.com", "short", time.Millisecond, time.Now())
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	h.App.Auth.Invalidate()

	wrong, _, _ := auth.GenerateKey()
	// The message says which failure it was (docs/decisions.md, API keys).
	for name, c := range map[string]struct{ header, message string }{
		"missing":     {"", "missing API key"},
		"not bearer":  {"Basic " + h.Key, "malformed API key"},
		"malformed":   {"Bearer sk_live_short", "malformed API key"},
		"bad prefix":  {"Bearer pk_live_0123456789012345678901234567890123456789", "malformed API key"},
		"bad chars":   {"Bearer sk_live_0123456789012345678901234567890123456789!", "malformed API key"},
		"wrong":       {"Bearer " + wrong, "invalid API key"},
		"revoked":     {"Bearer " + revoked.Key, "API key has been revoked"},
		"regenerated": {"Bearer " + regen.Key, "invalid API key"},
		"expired":     {"Bearer " + expired.Key, "API key has expired"},
	} {
		for range 2 { // the second request is answered from the key cache
			r := h.DoKey("", "GET", "/v1/me", nil, http.Header{"Authorization": {c.header}})
			require.Equal(t, 401, r.Status, name)
			require.Equal(t, "invalid_api_key", r.ErrorCode(t), name)
			require.NotEmpty(t, r.Header.Get("WWW-Authenticate"), name)
			require.Contains(t, r.ErrorMessage(t), c.message, name)
		}
	}
	r := h.DoKey(fresh.Key, "GET", "/v1/me", nil, nil)
	require.Equal(t, 200, r.Status, "the regenerated key works")
	require.Equal(t, regen.ID, r.JSON(t)["api_key"].(map[string]any)["id"])

	legacy := auth.LegacyPrefix + "abcdefghijklmnopqrstuvwxyz0123456789"
	require.True(t, auth.WellFormed(legacy))
}
