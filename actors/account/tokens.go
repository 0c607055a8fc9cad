package account

import (
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Token statuses of the API's Account.
const (
	TokenOK           = "ok"
	TokenExpiringSoon = "expiring_soon"
	TokenExpired      = "expired"
)

// ExpiringSoon is how close to its horizon a token is reported as expiring_soon.
const ExpiringSoon = 7 * 24 * time.Hour

// TokenHorizon is when the user must act for the account to keep working: the API's
// token_expires_at.
//
//   - Herald renews the access token with a refresh token (X, Bluesky, LinkedIn, YouTube,
//     Pinterest, TikTok): the access token's expiry asks nothing of the user, so the horizon is
//     the refresh token's expiry where the network says one, else none (nil).
//   - Otherwise (a Facebook Page token, an Instagram or Threads long-lived token, which Herald
//     renews only while it is valid and in use, an X account added without a refresh token): the
//     access token's own expiry, nil when it does not expire.
func TokenHorizon(a *persistence.Account) *time.Time {
	if a.Refreshes {
		return a.RefreshExpiresAt
	}
	return a.TokenExpiresAt
}

// TokenStatus is the API's token_status of an account: expired when a refresh failed for good
// (ReconnectAt: revoked, consent withdrawn; until the account is connected again) or when the
// horizon is past, expiring_soon within ExpiringSoon of the horizon, else ok (also when there is
// no horizon).
func TokenStatus(a *persistence.Account, now time.Time) string {
	if a.ReconnectAt != nil {
		return TokenExpired
	}
	h := TokenHorizon(a)
	switch {
	case h == nil:
		return TokenOK
	case !now.Before(*h):
		return TokenExpired
	case h.Sub(now) <= ExpiringSoon:
		return TokenExpiringSoon
	}
	return TokenOK
}
