package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// accountsByID lists GET /v1/accounts by id.
func (b *testBundle) accountsByID() map[string]map[string]any {
	b.t.Helper()
	r := b.do("GET", "/v1/accounts", nil)
	require.Equal(b.t, 200, r.status, string(r.body))
	out := map[string]map[string]any{}
	for _, a := range r.json(b.t)["data"].([]any) {
		m := a.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

func timeField(t *testing.T, m map[string]any, field string) time.Time {
	t.Helper()
	s, ok := m[field].(string)
	require.True(t, ok, "%s is %v", field, m[field])
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

// A fresh sandbox asks nothing of the user: the short-lived access tokens (X, Bluesky, YouTube,
// TikTok) are Herald's to refresh, so every account is ok and token_expires_at is the refresh
// token's expiry where there is one.
func TestFreshSandboxAccountsAreOK(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	got := b.accountsByID()
	require.Len(t, got, 9)
	now := time.Now()
	for _, a := range b.accounts {
		m := got[a.ID]
		require.Equal(t, "ok", m["token_status"], "%s: %v", a.Platform, m)
		access := timeField(t, m, "access_token_expires_at")
		require.True(t, access.After(now), a.Platform)
		switch platforms.Platform(a.Platform) {
		case platforms.X, platforms.Bluesky, platforms.YouTube, platforms.TikTok:
			require.Less(t, access.Sub(now), 25*time.Hour, "%s: a short-lived access token", a.Platform)
			require.Greater(t, timeField(t, m, "token_expires_at").Sub(now), 80*24*time.Hour, "%s: the refresh token's expiry", a.Platform)
		case platforms.Instagram, platforms.Threads:
			require.Equal(t, m["access_token_expires_at"], m["token_expires_at"], "%s: renewed only while valid: the token's own expiry", a.Platform)
		}
	}
}

// The user withdraws Herald's access on X: the refresh is refused for good, the account shows
// expired in GET /v1/accounts and in accounts_needing_reconnect, and connecting it again clears
// both.
func TestRefusedRefreshShowsExpiredUntilReconnected(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x := b.account(platforms.X)
	b.publishAndWait("before the consent was withdrawn", nil, x)
	require.True(t, b.app.Sim.Tokens(platforms.X).RevokeUser(x.NetworkUserID))

	ov := b.do("GET", "/v1/analytics/overview", nil)
	require.Equal(t, 200, ov.status, string(ov.body))
	require.Equal(t, []any{map[string]any{"id": x.ID, "platform": "twitter_x", "username": *x.Username, "token_status": "expired"}},
		ov.json(t)["accounts_needing_reconnect"])
	m := b.accountsByID()[x.ID]
	require.Equal(t, "expired", m["token_status"])
	var stored *persistence.Account
	require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) (err error) { stored, err = tx.Account(x.ID); return err }))
	require.NotNil(t, stored.ReconnectAt, "durable on the account record")
	require.Contains(t, stored.ReconnectReason, "refused the token refresh")
	for id, other := range b.accountsByID() {
		if id != x.ID {
			require.Equal(t, "ok", other["token_status"], other["platform"])
		}
	}

	// The same rule, without reading the network again: the inbox, and the overview of another
	// range, list it; a scope without X does not.
	inbox := b.do("GET", "/v1/inbox/comments", nil)
	require.Equal(t, 200, inbox.status, string(inbox.body))
	require.Len(t, inbox.json(t)["accounts_needing_reconnect"], 1)
	require.Equal(t, x.ID, inbox.json(t)["accounts_needing_reconnect"].([]any)[0].(map[string]any)["id"])
	require.Empty(t, b.do("GET", "/v1/inbox/comments?platform=bluesky", nil).json(t)["accounts_needing_reconnect"])
	require.Empty(t, b.do("GET", "/v1/analytics/overview?account_id="+b.account(platforms.Bluesky).ID, nil).json(t)["accounts_needing_reconnect"])
	require.Len(t, b.do("GET", "/v1/analytics/overview?range=28d", nil).json(t)["accounts_needing_reconnect"], 1)

	// Connecting it again (new tokens for the same X user) clears it.
	creds, err := b.app.Sim.NewAccount(platforms.X, *x.Username)
	require.NoError(t, err)
	require.Equal(t, x.NetworkUserID, creds.UserID)
	res, err := b.app.Connect.Add(context.Background(), accountlink.Add{Email: b.user.Email, Platform: "twitter_x", ClientID: sim.ClientID,
		AccessToken: creds.AccessToken, RefreshToken: creds.RefreshToken, ExpiresIn: 7200})
	require.NoError(t, err)
	require.False(t, res.Created)
	require.Equal(t, x.ID, res.Account.ID)
	require.Equal(t, "ok", b.accountsByID()[x.ID]["token_status"])
	require.Empty(t, b.do("GET", "/v1/analytics/overview?range=14d", nil).json(t)["accounts_needing_reconnect"])
}

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
	require.WithinDuration(t, time.Now().Add(3*24*time.Hour), timeField(t, m, "token_expires_at"), time.Minute, "the refresh token's expiry")
	require.WithinDuration(t, time.Now().Add(24*time.Hour), timeField(t, m, "access_token_expires_at"), time.Minute, "the access token's own")
	require.Equal(t, "ok", b.accountsByID()[b.account(platforms.TikTok).ID]["token_status"], "the sandbox's own TikTok account keeps its year")
}
