package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
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
	revoked      bool
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
	// scope tells this store's signed tokens from another store's of the same network.
	scope string
}

func newTokenStore(s *Sim, p platforms.Platform) *TokenStore {
	lt := tokenLifetimes[p]
	return &TokenStore{sim: s, platform: p, scope: string(p), access: map[string]*accessToken{}, refresh: map[string]*refreshToken{}, AccessTTL: lt.Access, RefreshTTL: lt.Refresh}
}

// tokenKey signs the simulator's tokens. Tokens are self-describing and signed, so that a
// restarted simulator (the sandbox restarts with Herald) still honours the tokens it issued.
var tokenKey = []byte("herald-simulator-tokens")

type tokenClaims struct {
	Platform string `json:"p"`
	User     string `json:"u"`
	Handle   string `json:"h"`
	Expires  int64  `json:"e"`
	Nonce    string `json:"n"`
}

func (t *TokenStore) mint(prefix, user, handle string, expires time.Time) string {
	b, _ := json.Marshal(tokenClaims{Platform: t.scope, User: user, Handle: handle, Expires: expires.UnixNano(), Nonce: RandomID(8)})
	body := base64.RawURLEncoding.EncodeToString(b)
	mac := hmac.New(sha256.New, tokenKey)
	mac.Write([]byte(prefix + body))
	return prefix + body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// recover reads a token this store did not issue in this process (the simulator restarted):
// when its signature holds, it is taken as issued.
func (t *TokenStore) recoverToken(prefix, token string) (tokenClaims, bool) {
	var c tokenClaims
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return c, false
	}
	body, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return c, false
	}
	mac := hmac.New(sha256.New, tokenKey)
	mac.Write([]byte(prefix + body))
	want := base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return c, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Platform != t.scope {
		return c, false
	}
	return c, true
}

// lookupAccess finds an access token, recovering a signed one; the caller holds t.mu.
func (t *TokenStore) lookupAccess(token string) (*accessToken, bool) {
	if a, ok := t.access[token]; ok {
		return a, true
	}
	c, ok := t.recoverToken("sim_at_", token)
	if !ok {
		return nil, false
	}
	a := &accessToken{user: c.User, handle: c.Handle, expires: time.Unix(0, c.Expires)}
	t.access[token] = a
	return a, true
}

// lookupRefresh finds a refresh token, recovering a signed one; the caller holds t.mu.
func (t *TokenStore) lookupRefresh(token string) (*refreshToken, bool) {
	if r, ok := t.refresh[token]; ok {
		return r, true
	}
	c, ok := t.recoverToken("sim_rt_", token)
	if !ok {
		return nil, false
	}
	r := &refreshToken{user: c.User, handle: c.Handle, expires: time.Unix(0, c.Expires)}
	t.refresh[token] = r
	return r, true
}

// Issue creates a fresh access (and refresh, when the network has them) token for a user.
func (t *TokenStore) Issue(userID, handle string) platforms.Credentials {
	now := t.sim.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	at := t.mint("sim_at_", userID, handle, now.Add(t.AccessTTL))
	t.access[at] = &accessToken{user: userID, handle: handle, expires: now.Add(t.AccessTTL)}
	c := platforms.Credentials{AccessToken: at, ExpiresAt: now.Add(t.AccessTTL).UTC(), UserID: userID, Handle: handle}
	if t.RefreshTTL > 0 {
		rt := t.mint("sim_rt_", userID, handle, now.Add(t.RefreshTTL))
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
	a, ok := t.lookupAccess(token)
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
	r, ok := t.lookupRefresh(token)
	if !ok || r.revoked || !now.Before(r.expires) || (r.used && (t.RefreshGrace == 0 || now.Sub(r.usedAt) > t.RefreshGrace)) {
		t.mu.Unlock()
		return platforms.Credentials{}, false
	}
	at := t.mint("sim_at_", r.user, r.handle, now.Add(t.AccessTTL))
	t.access[at] = &accessToken{user: r.user, handle: r.handle, expires: now.Add(t.AccessTTL)}
	c := platforms.Credentials{AccessToken: at, ExpiresAt: now.Add(t.AccessTTL).UTC(), UserID: r.user, Handle: r.handle, RefreshToken: token, RefreshExpiresAt: r.expires.UTC()}
	if t.RotateRefresh {
		if !r.used {
			// The grace period runs from the first rotation; reusing the old token does not
			// extend it.
			r.used, r.usedAt = true, now
		}
		nt := t.mint("sim_rt_", r.user, r.handle, now.Add(t.RefreshTTL))
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
	at := t.mint("sim_at_", user, handle, now.Add(t.AccessTTL))
	t.access[at] = &accessToken{user: user, handle: handle, expires: now.Add(t.AccessTTL)}
	return platforms.Credentials{AccessToken: at, ExpiresAt: now.Add(t.AccessTTL).UTC(), UserID: user, Handle: handle}, true
}

// Revoke revokes an access or refresh token and every access token of the same user, and records
// the revocation.
func (t *TokenStore) Revoke(token string) bool {
	t.mu.Lock()
	user, already := "", false
	if a, ok := t.lookupAccess(token); ok {
		user, already = a.user, a.revoked
	} else if r, ok := t.lookupRefresh(token); ok {
		user, already = r.user, r.revoked
	}
	if user == "" {
		t.mu.Unlock()
		return false
	}
	if already {
		// Revoking a revoked token (or one of a revoked grant) changes nothing.
		t.mu.Unlock()
		return true
	}
	for _, a := range t.access {
		if a.user == user {
			a.revoked = true
		}
	}
	for _, r := range t.refresh {
		if r.user == user {
			r.revoked = true
		}
	}
	t.mu.Unlock()
	t.sim.mu.Lock()
	t.sim.revocations = append(t.sim.revocations, Revocation{Platform: string(t.platform), Account: user, At: t.sim.Now().UTC()})
	t.sim.mu.Unlock()
	return true
}

// RevokeUser revokes every token issued so far to a network user, as when the user withdraws
// the app's consent in the network's settings (not through a revoke endpoint, so no Revocation is
// recorded). It reports whether the user had tokens.
func (t *TokenStore) RevokeUser(user string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	found := false
	for _, a := range t.access {
		if a.user == user {
			a.revoked, found = true, true
		}
	}
	for _, r := range t.refresh {
		if r.user == user {
			r.revoked, found = true, true
		}
	}
	return found
}

// SetLifetimes changes the lifetimes of the tokens issued from now on; 0 keeps a lifetime as it
// is.
func (t *TokenStore) SetLifetimes(access, refresh time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if access > 0 {
		t.AccessTTL = access
	}
	if refresh > 0 {
		t.RefreshTTL = refresh
	}
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
