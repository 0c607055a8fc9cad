package account_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
)

func TestTokenStatusRule(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	day := 24 * time.Hour
	tests := []struct {
		name    string
		acc     persistence.Account
		horizon *time.Time
		status  string
	}{
		// Herald refreshes the access token: only the refresh token's expiry asks anything of the user.
		{"refreshed, access token expires in 2 hours", persistence.Account{TokenExpiresAt: at(2 * time.Hour), Refreshes: true, RefreshExpiresAt: at(180 * day)}, at(180 * day), "ok"},
		{"refreshed, access token already past", persistence.Account{TokenExpiresAt: at(-time.Hour), Refreshes: true, RefreshExpiresAt: at(90 * day)}, at(90 * day), "ok"},
		{"refreshed, no refresh expiry known", persistence.Account{TokenExpiresAt: at(time.Hour), Refreshes: true}, nil, "ok"},
		{"refreshed, refresh token expires in 3 days", persistence.Account{TokenExpiresAt: at(time.Hour), Refreshes: true, RefreshExpiresAt: at(3 * day)}, at(3 * day), "expiring_soon"},
		{"refreshed, refresh token expires in exactly 7 days", persistence.Account{Refreshes: true, RefreshExpiresAt: at(7 * day)}, at(7 * day), "expiring_soon"},
		{"refreshed, refresh token expires in 7 days and a second", persistence.Account{Refreshes: true, RefreshExpiresAt: at(7*day + time.Second)}, at(7*day + time.Second), "ok"},
		{"refreshed, refresh token past", persistence.Account{TokenExpiresAt: at(time.Hour), Refreshes: true, RefreshExpiresAt: at(-time.Minute)}, at(-time.Minute), "expired"},
		{"refreshed, refresh expires now", persistence.Account{Refreshes: true, RefreshExpiresAt: at(0)}, at(0), "expired"},
		// No refresh: the access token's own expiry.
		{"not refreshed, 60 days", persistence.Account{TokenExpiresAt: at(60 * day)}, at(60 * day), "ok"},
		{"not refreshed, 2 hours", persistence.Account{TokenExpiresAt: at(2 * time.Hour)}, at(2 * time.Hour), "expiring_soon"},
		{"not refreshed, past", persistence.Account{TokenExpiresAt: at(-time.Second)}, at(-time.Second), "expired"},
		{"not refreshed, never expires", persistence.Account{}, nil, "ok"},
		{"a refresh expiry without a refresh token is ignored", persistence.Account{TokenExpiresAt: at(time.Hour), RefreshExpiresAt: at(90 * day)}, at(time.Hour), "expiring_soon"},
		// A refresh refused for good: expired whatever the dates say, until reconnected.
		{"refresh refused, refresh token far", persistence.Account{TokenExpiresAt: at(time.Hour), Refreshes: true, RefreshExpiresAt: at(90 * day), ReconnectAt: at(-time.Minute)}, at(90 * day), "expired"},
		{"refused, no expiry at all", persistence.Account{ReconnectAt: at(-day)}, nil, "expired"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.horizon, account.TokenHorizon(&tc.acc))
			require.Equal(t, tc.status, account.TokenStatus(&tc.acc, now))
		})
	}
}
