// Package auth authenticates API keys, hashes the dashboard passwords (password.go: argon2id in
// PHC form), and manages users, passwords and keys.
//
// Keys have the form sk_live_ followed by 40 random base62 characters (about 238 bits). Keys of
// the legacy form, hk_ followed by at least 32 base62 characters, are accepted as well: they were
// issued by Herald's first releases and are still valid until revoked. Only the SHA-256 of a key is
// stored. A lookup is cached in memory; every revocation or regeneration bumps the cache's epoch
// before it returns, so the very next request with the old key is refused, and the streams the
// old key opened end (hold.go); the other nodes on the same store do the same when its
// notification reaches them, within a second. A key's last use is noted in memory and written at most once a
// minute (keyuse.go).
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/holds"
	"github.com/heraldhq/herald/persistence"
)

// Key prefixes.
const (
	LivePrefix   = "sk_live_"
	LegacyPrefix = "hk_"
	secretLen    = 40
	minSecretLen = 32
	displayLen   = 4 // characters of the secret shown in a key's prefix
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Principal is who a request acts for.
type Principal struct {
	User *persistence.User
	Key  *persistence.APIKey
	// Resource, Scopes and TokenExpiresAt are set for an OAuth access token (its Key is then the
	// connector key behind the grant): the resource (RFC 8707) it was issued for, the scopes its
	// owner approved, and when it expires. An API key has none and full access.
	Resource       string
	Scopes         []string
	TokenExpiresAt time.Time

	// WorkspaceID is the API id of the workspace the request acts in (persistence.MainWorkspace
	// or a workspace's id), set by the door that admitted it (http/server: the Herald-Workspace
	// header, else the key's own workspace, else the dashboard's choice, else main). Principals
	// are shared between requests until then: the door sets it on its own copy.
	WorkspaceID string

	// Member is set when a member of User's team (persistence.Member) makes the request on the
	// dashboard: User is then the owner the member acts for (whose plan and data the request
	// uses), Member the member's own user, and Role their role (roles.go). nil for the owner
	// themselves and for keys.
	Member *persistence.User
	Role   string

	// cred is the credential the principal was authenticated with (the hash of the key or the
	// access token), for Hold; set when held is true.
	cred  [32]byte
	held  bool
	token bool
}

// Failure reasons, for logs and messages; every one is a 401 invalid_api_key at the edge.
var (
	ErrMissing   = errors.New("missing API key: send Authorization: Bearer sk_live_…")
	ErrMalformed = errors.New("malformed API key: expected Authorization: Bearer sk_live_ followed by the secret")
	ErrUnknown   = errors.New("invalid API key")
	ErrRevoked   = errors.New("API key has been revoked")
	ErrExpired   = errors.New("API key has expired")
	// ErrTokenExpired is an OAuth access token past its hour: the client refreshes it.
	ErrTokenExpired = errors.New("access token has expired: refresh it at /oauth/token")
)

// OAuth token prefixes (http/oauth): access tokens, refresh tokens, authorization codes, each
// followed by 40 random base62 characters; only their SHA-256 is stored.
const (
	AccessTokenPrefix  = "hoa_"
	RefreshTokenPrefix = "hor_"
	CodePrefix         = "hoc_"
)

// GenerateToken returns prefix followed by 40 random base62 characters, and its hash.
func GenerateToken(prefix string) (raw string, hash []byte) {
	raw = prefix + randomBase62(secretLen)
	return raw, Hash(raw)
}

func randomBase62(n int) string {
	var b strings.Builder
	max := big.NewInt(int64(len(base62)))
	for i := 0; i < n; i++ {
		r, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("auth: crypto/rand failed: " + err.Error()) // the OS entropy source is gone
		}
		b.WriteByte(base62[r.Int64()])
	}
	return b.String()
}

// WellFormedToken reports whether raw is prefix followed by 40 base62 characters.
func WellFormedToken(raw, prefix string) bool {
	if !strings.HasPrefix(raw, prefix) || len(raw) != len(prefix)+secretLen {
		return false
	}
	for i := len(prefix); i < len(raw); i++ {
		if strings.IndexByte(base62, raw[i]) < 0 {
			return false
		}
	}
	return true
}

// GenerateKey returns a new raw key, its display prefix and its hash.
func GenerateKey() (raw, prefix string, hash []byte) {
	raw = LivePrefix + randomBase62(secretLen)
	return raw, raw[:len(LivePrefix)+displayLen], Hash(raw)
}

// Hash is the stored form of a key.
func Hash(raw string) []byte {
	s := sha256.Sum256([]byte(raw))
	return s[:]
}

// WellFormed reports whether raw has a key's form.
func WellFormed(raw string) bool {
	var secret string
	switch {
	case strings.HasPrefix(raw, LivePrefix):
		secret = raw[len(LivePrefix):]
	case strings.HasPrefix(raw, LegacyPrefix):
		secret = raw[len(LegacyPrefix):]
	default:
		return false
	}
	if len(secret) < minSecretLen || len(secret) > 128 {
		return false
	}
	for i := 0; i < len(secret); i++ {
		if strings.IndexByte(base62, secret[i]) < 0 {
			return false
		}
	}
	return true
}

// Authenticator resolves API keys to principals, with a cache.
type Authenticator struct {
	store *persistence.Store
	now   func() time.Time
	ttl   time.Duration

	epoch   atomic.Uint64
	mu      sync.RWMutex
	cache   map[[32]byte]cached
	wsMu    sync.RWMutex
	ws      map[string]cachedWorkspace                        // by user id | API id (workspace.go)
	use     keyUse                                            // uses noted for last_used_at (keyuse.go)
	streams holds.Registry[heldCred, context.CancelCauseFunc] // open streams by credential (hold.go)
}

type cached struct {
	p      *Principal
	epoch  uint64
	loaded time.Time
}

const maxCached = 100000

// NewAuthenticator builds an authenticator over the store. now may be nil.
func NewAuthenticator(store *persistence.Store, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	a := &Authenticator{store: store, now: now, ttl: 5 * time.Minute, cache: map[[32]byte]cached{}, ws: map[string]cachedWorkspace{}}
	if store != nil {
		// Another node revoked or changed something: this node forgets too, within the
		// notification's delay (persistence.Store.Broadcast).
		store.OnSignal(persistence.SignalAuth, a.forget)
	}
	return a
}

// Authenticate resolves the value of an Authorization header.
func (a *Authenticator) Authenticate(header string) (*Principal, error) {
	if strings.TrimSpace(header) == "" {
		return nil, ErrMissing
	}
	scheme, raw, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, ErrMalformed
	}
	raw = strings.TrimSpace(raw)
	token := strings.HasPrefix(raw, AccessTokenPrefix)
	if token && !WellFormedToken(raw, AccessTokenPrefix) || !token && !WellFormed(raw) {
		return nil, ErrMalformed
	}
	h := sha256.Sum256([]byte(raw)) // Hash's, without its copy on the heap
	now := a.now()
	epoch := a.epoch.Load()
	a.mu.RLock()
	c, hit := a.cache[h]
	a.mu.RUnlock()
	if !hit || c.epoch != epoch || now.Sub(c.loaded) > a.ttl {
		read := keyPrincipal
		if token {
			read = tokenPrincipal
		}
		p, err := a.principalIn(func(tx *persistence.Tx) (Principal, error) { return read(tx, h[:]) })
		if err != nil {
			return nil, err
		}
		p.cred, p.held, p.token = h, true, token
		c = cached{p: p, epoch: epoch, loaded: now}
		a.mu.Lock()
		if len(a.cache) >= maxCached {
			a.cache = map[[32]byte]cached{}
		}
		a.cache[h] = c
		a.mu.Unlock()
	}
	if c.p.Key.ExpiresAt != nil && !now.Before(*c.p.Key.ExpiresAt) {
		return nil, ErrExpired
	}
	if token && !now.Before(c.p.TokenExpiresAt) {
		return nil, ErrTokenExpired
	}
	a.use.note(c.p.Key.ID, now)
	return c.p, nil
}

// keyPrincipal reads the principal of an API key by its hash: the key and its owner.
func keyPrincipal(tx *persistence.Tx, hash []byte) (Principal, error) {
	k, err := tx.APIKeyByHash(hash)
	if err != nil {
		return Principal{}, err
	}
	u, err := tx.User(k.UserID)
	if err != nil {
		return Principal{}, err
	}
	return Principal{User: u, Key: k}, nil
}

// tokenPrincipal reads the principal of an OAuth access token by its hash: the token, its grant,
// the connector key behind it (revoked: the token is refused at once) and its owner.
func tokenPrincipal(tx *persistence.Tx, hash []byte) (Principal, error) {
	tok, err := tx.OAuthToken(hash)
	if err != nil {
		return Principal{}, err
	}
	if tok.Kind != persistence.TokenAccess {
		return Principal{}, persistence.ErrNotFound
	}
	g, err := tx.OAuthGrant(tok.KeyID)
	if err != nil {
		return Principal{}, err
	}
	k, err := tx.APIKey(tok.KeyID)
	if err != nil {
		return Principal{}, err
	}
	u, err := tx.User(k.UserID)
	if err != nil {
		return Principal{}, err
	}
	return Principal{User: u, Key: k, Resource: g.Resource, Scopes: g.Scopes, TokenExpiresAt: tok.ExpiresAt}, nil
}

// principalIn reads a principal in one read transaction: a record that is not there is
// ErrUnknown, and a principal whose key is revoked is ErrRevoked.
func (a *Authenticator) principalIn(read func(tx *persistence.Tx) (Principal, error)) (*Principal, error) {
	var p Principal
	err := a.store.View(func(tx *persistence.Tx) error {
		var err error
		p, err = read(tx)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, err
	}
	if p.Key.RevokedAt != nil {
		return nil, ErrRevoked
	}
	return &p, nil
}

// Invalidate drops every cached lookup, and has the streams open with a credential that no
// longer authenticates ended (hold.go). Callers that revoke or regenerate a key (or change a
// user) call it after their write commits and before they report success. On a store that
// several nodes share, it tells the others, which do the same (docs/cluster.md).
func (a *Authenticator) Invalidate() {
	a.forget()
	if a.store != nil {
		a.store.Broadcast(persistence.SignalAuth)
	}
}

// forget is Invalidate within this process.
func (a *Authenticator) forget() {
	a.epoch.Add(1)
	a.mu.Lock()
	a.cache = map[[32]byte]cached{}
	a.mu.Unlock()
	a.wsMu.Lock()
	a.ws = map[string]cachedWorkspace{}
	a.wsMu.Unlock()
	a.recheck()
}
