package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A fresh sandbox asks nothing of the user: the short-lived access tokens (X, Bluesky, YouTube,
// TikTok) are Herald's to refresh, so every account is ok and token_expires_at is the refresh
// token's expiry where there is one.
func TestFreshSandboxAccountsAreOK(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	got := h.AccountsByID()
	require.Len(t, got, 9)
	now := time.Now()
	for _, a := range h.Accounts {
		m := got[a.ID]
		require.Equal(t, "ok", m["token_status"], "%s: %v", a.Platform, m)
		access := apptest.TimeField(t, m, "access_token_expires_at")
		require.True(t, access.After(now), a.Platform)
		switch platforms.Platform(a.Platform) {
		case platforms.X, platforms.Bluesky, platforms.YouTube, platforms.TikTok:
			require.Less(t, access.Sub(now), 25*time.Hour, "%s: a short-lived access token", a.Platform)
			require.Greater(t, apptest.TimeField(t, m, "token_expires_at").Sub(now), 80*24*time.Hour, "%s: the refresh token's expiry", a.Platform)
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
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X)
	h.PublishAndWait("before the consent was withdrawn", nil, x)
	require.True(t, h.App.Sim.Tokens(platforms.X).RevokeUser(x.NetworkUserID))

	ov := h.Do("GET", "/v1/analytics/overview", nil)
	require.Equal(t, 200, ov.Status, string(ov.Body))
	require.Equal(t, []any{map[string]any{"id": x.ID, "platform": "twitter_x", "username": *x.Username, "token_status": "expired"}},
		ov.JSON(t)["accounts_needing_reconnect"])
	m := h.AccountsByID()[x.ID]
	require.Equal(t, "expired", m["token_status"])
	var stored *persistence.Account
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) (err error) { stored, err = tx.Account(x.ID); return err }))
	require.NotNil(t, stored.ReconnectAt, "durable on the account record")
	require.Contains(t, stored.ReconnectReason, "refused the token refresh")
	for id, other := range h.AccountsByID() {
		if id != x.ID {
			require.Equal(t, "ok", other["token_status"], other["platform"])
		}
	}

	// The same rule, without reading the network again: the inbox, and the overview of another
	// range, list it; a scope without X does not.
	inbox := h.Do("GET", "/v1/inbox/comments", nil)
	require.Equal(t, 200, inbox.Status, string(inbox.Body))
	require.Len(t, inbox.JSON(t)["accounts_needing_reconnect"], 1)
	require.Equal(t, x.ID, inbox.JSON(t)["accounts_needing_reconnect"].([]any)[0].(map[string]any)["id"])
	require.Empty(t, h.Do("GET", "/v1/inbox/comments?platform=bluesky", nil).JSON(t)["accounts_needing_reconnect"])
	require.Empty(t, h.Do("GET", "/v1/analytics/overview?account_id="+h.Account(platforms.Bluesky).ID, nil).JSON(t)["accounts_needing_reconnect"])
	require.Len(t, h.Do("GET", "/v1/analytics/overview?range=28d", nil).JSON(t)["accounts_needing_reconnect"], 1)

	// Connecting it again (new tokens for the same X user) clears it.
	creds, err := h.App.Sim.NewAccount(platforms.X, *x.Username)
	require.NoError(t, err)
	require.Equal(t, x.NetworkUserID, creds.UserID)
	res, err := h.App.Connect.Add(context.Background(), accountlink.Add{Email: h.User.Email, Platform: "twitter_x", ClientID: sim.ClientID,
		AccessToken: creds.AccessToken, RefreshToken: creds.RefreshToken, ExpiresIn: 7200})
	require.NoError(t, err)
	require.False(t, res.Created)
	require.Equal(t, x.ID, res.Account.ID)
	require.Equal(t, "ok", h.AccountsByID()[x.ID]["token_status"])
	require.Empty(t, h.Do("GET", "/v1/analytics/overview?range=14d", nil).JSON(t)["accounts_needing_reconnect"])
}

// A refresh token that itself expires within the expiring_soon window (7 days) asks the user to
// act.
func TestRefreshTokenExpiringSoon(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	h.App.Sim.Tokens(platforms.TikTok).SetLifetimes(0, 3*24*time.Hour)
	premade := h.AccountsByID()
	r, _ := h.Browse(h.ConnectURL("tiktok"))
	apptest.RequirePage(t, r, 200, "is now connected to Herald")
	var got []map[string]any
	for id, a := range h.AccountsByID() {
		if _, old := premade[id]; !old && a["platform"] == "tiktok" {
			got = append(got, a)
		}
	}
	require.Len(t, got, 1)
	m := got[0]
	require.Equal(t, "expiring_soon", m["token_status"])
	require.WithinDuration(t, time.Now().Add(3*24*time.Hour), apptest.TimeField(t, m, "token_expires_at"), time.Minute, "the refresh token's expiry")
	require.WithinDuration(t, time.Now().Add(24*time.Hour), apptest.TimeField(t, m, "access_token_expires_at"), time.Minute, "the access token's own")
	require.Equal(t, "ok", h.AccountsByID()[h.Account(platforms.TikTok).ID]["token_status"], "the sandbox's own TikTok account keeps its year")
}
