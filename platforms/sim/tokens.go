package sim

import (
	"sync"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Token lifetimes per network, as networks.md documents them.
var tokenLifetimes = map[platforms.Platform]struct{ Access, Refresh time.Duration }{
	platforms.X:         {2 * time.Hour, 180 * 24 * time.Hour},
	platforms.Bluesky:   {2 * time.Hour, 90 * 24 * time.Hour},
	platforms.LinkedIn:  {60 * 24 * time.Hour, 365 * 24 * time.Hour},
	platforms.Facebook:  {60 * 24 * time.Hour, 0},
	platforms.Instagram: {60 * 24 * time.Hour, 0},
	platforms.Threads:   {60 * 24 * time.Hour, 0},
	platforms.YouTube:   {time.Hour, 365 * 24 * time.Hour},
	platforms.Pinterest: {30 * 24 * time.Hour, 60 * 24 * time.Hour},
	platforms.TikTok:    {24 * time.Hour, 365 * 24 * time.Hour},
}

// TokenState is what the simulator knows of one access token.
type TokenState int

const (
	// TokenValid is a live access token.
	TokenValid TokenState = iota
	// TokenExpired is past its lifetime (or expired by the expire_tokens fault).
	TokenExpired
	// TokenRevoked was revoked.
	TokenRevoked
	// TokenUnknown was never issued.
	TokenUnknown
)

type accessToken struct {
	user, handle string
	expires      time.Time
	revoked      bool
}

type refreshToken struct {
	user, handle string
	expires      time.Time
	used         bool
	usedAt       time.Time
}

// TokenStore issues, checks, refreshes and revokes one network's tokens.
type TokenStore struct {
	sim      *Sim
	platform platforms.Platform
	mu       sync.Mutex
	access   map[string]*accessToken
	refresh  map[string]*refreshToken
	// AccessTTL and RefreshTTL default to the network's documented lifetimes.
	AccessTTL, RefreshTTL time.Duration
	// RotateRefresh makes every refresh return a new refresh token and retire the old one
	// (X, Bluesky, Pinterest, TikTok). RefreshGrace keeps a retired one valid that long
	// (Bluesky: 2 h).
	RotateRefresh bool
	RefreshGrace  time.Duration
}

func newTokenStore(s *Sim, p platforms.Platform) *TokenStore {
	lt := tokenLifetimes[p]
	return &TokenStore{sim: s, platform: p, access: map[string]*accessToken{}, refresh: map[string]*refreshToken{}, AccessTTL: lt.Access, RefreshTTL: lt.Refresh}
}

// Issue creates a fresh access (and refresh, when the network has them) token for a user.
func (t *TokenStore) Issue(userID, handle string) platforms.Credentials {
	now := t.sim.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	at := "sim_at_" + RandomID(16)
	t.access[at] = &accessToken{user: userID, handle: handle, expires: now.Add(t.AccessTTL)}
	c := platforms.Credentials{AccessToken: at, ExpiresAt: now.Add(t.AccessTTL).UTC(), UserID: userID, Handle: handle}
	if t.RefreshTTL > 0 {
		rt := "sim_rt_" + RandomID(16)
		t.refresh[rt] = &refreshToken{user: userID, handle: handle, expires: now.Add(t.RefreshTTL)}
		c.RefreshToken = rt
		c.RefreshExpiresAt = now.Add(t.RefreshTTL).UTC()
	}
	return c
}

// Check reports the state of an access token and whose it is.
func (t *TokenStore) Check(token string) (userID, handle string, state TokenState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.access[token]
	if !ok {
		return "", "", TokenUnknown
	}
	switch {
	case a.revoked:
		return a.user, a.handle, TokenRevoked
	case !t.sim.Now().Before(a.expires):
		return a.user, a.handle, TokenExpired
	}
	return a.user, a.handle, TokenValid
}

// Refresh exchanges a refresh token. ok is false when the token is unknown, expired, revoked or
// already used past its grace.
func (t *TokenStore) Refresh(token string) (platforms.Credentials, bool) {
	now := t.sim.Now()
	t.mu.Lock()
	r, ok := t.refresh[token]
	if !ok || !now.Before(r.expires) || (r.used && (t.RefreshGrace == 0 || now.Sub(r.usedAt) > t.RefreshGrace)) {
		t.mu.Unlock()
		return platforms.Credentials{}, false
	}
	at := "sim_at_" + RandomID(16)
	t.access[at] = &accessToken{user: r.user, handle: r.handle, expires: now.Add(t.AccessTTL)}
	c := platforms.Credentials{AccessToken: at, ExpiresAt: now.Add(t.AccessTTL).UTC(), UserID: r.user, Handle: r.handle, RefreshToken: token, RefreshExpiresAt: r.expires.UTC()}
	if t.RotateRefresh {
		if !r.used {
			// The grace period runs from the first rotation; reusing the old token does not
			// extend it.
			r.used, r.usedAt = true, now
		}
		nt := "sim_rt_" + RandomID(16)
		t.refresh[nt] = &refreshToken{user: r.user, handle: r.handle, expires: now.Add(t.RefreshTTL)}
		c.RefreshToken = nt
		c.RefreshExpiresAt = now.Add(t.RefreshTTL).UTC()
	}
	t.mu.Unlock()
	return c, true
}

// ExtendAccess replaces a valid access token by a longer-lived one (the Meta
// "exchange"/"refresh_access_token" model, where the token itself is refreshed).
func (t *TokenStore) ExtendAccess(token string) (platforms.Credentials, bool) {
	user, handle, state := t.Check(token)
	if state != TokenValid {
		return platforms.Credentials{}, false
	}
	now := t.sim.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	at := "sim_at_" + RandomID(16)
	t.access[at] = &accessToken{user: user, handle: handle, expires: now.Add(t.AccessTTL)}
	return platforms.Credentials{AccessToken: at, ExpiresAt: now.Add(t.AccessTTL).UTC(), UserID: user, Handle: handle}, true
}

// Revoke revokes an access or refresh token and every access token of the same user, and records
// the revocation.
func (t *TokenStore) Revoke(token string) bool {
	t.mu.Lock()
	user := ""
	if a, ok := t.access[token]; ok {
		user = a.user
	} else if r, ok := t.refresh[token]; ok {
		user = r.user
	}
	if user == "" {
		t.mu.Unlock()
		return false
	}
	for _, a := range t.access {
		if a.user == user {
			a.revoked = true
		}
	}
	for k, r := range t.refresh {
		if r.user == user {
			delete(t.refresh, k)
		}
	}
	t.mu.Unlock()
	t.sim.mu.Lock()
	t.sim.revocations = append(t.sim.revocations, Revocation{Platform: string(t.platform), Account: user, At: t.sim.Now().UTC()})
	t.sim.mu.Unlock()
	return true
}

// ExpireAll makes every access token issued so far expire now. Refresh tokens keep working.
func (t *TokenStore) ExpireAll() {
	now := t.sim.Now()
	t.mu.Lock()
	for _, a := range t.access {
		if a.expires.After(now) {
			a.expires = now
		}
	}
	t.mu.Unlock()
}
