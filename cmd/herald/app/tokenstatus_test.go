package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// A refresh token that itself expires within the expiring_soon window (7 days) asks the user to
// act.
func TestRefreshTokenExpiringSoon(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	b.app.Sim.Tokens(platforms.TikTok).SetLifetimes(0, 3*24*time.Hour)
	r, _ := b.browse(b.connectURL("tiktok"))
	requirePage(t, r, 200, "is now connected to Herald")
	got := b.listed("tiktok")
	require.Len(t, got, 1)
	m := got[0]
	require.Equal(t, "expiring_soon", m["token_status"])
	require.WithinDuration(t, time.Now().Add(3*24*time.Hour), apptest.TimeField(t, m, "token_expires_at"), time.Minute, "the refresh token's expiry")
	require.WithinDuration(t, time.Now().Add(24*time.Hour), apptest.TimeField(t, m, "access_token_expires_at"), time.Minute, "the access token's own")
	require.Equal(t, "ok", b.h.AccountsByID()[b.account(platforms.TikTok).ID]["token_status"], "the sandbox's own TikTok account keeps its year")
}
