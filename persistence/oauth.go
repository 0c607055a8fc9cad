package persistence

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"time"
)

// The OAuth authorization server's records (http/oauth). Every secret is stored as its SHA-256
// only: authorization codes, access and refresh tokens; the one exception, a rotated refresh
// token's successor pair kept for the rotation's grace, is sealed (persistence/secret). Clients
// are public (no client secret: token_endpoint_auth_method none), so none is stored.
//
//	oauth_clients  client id (string) → OAuthClient (JSON): a registered client (RFC 7591)
//	oauth_clients_meta  SHA-256 of the client's metadata (name, redirect URIs) (32) → client id:
//	               an identical registration finds the client it made before
//	oauth_codes    SHA-256 of the code (32) → OAuthCode (JSON): single use, short-lived
//	oauth_grants   key id (16) → OAuthGrant (JSON): a user's approval of a client, backed by the
//	               connector API key of that id (apikeys); revoking the key ends the grant
//	oauth_tokens   SHA-256 of the token (32) → OAuthToken (JSON): access and refresh tokens
var (
	bOAuthClients = []byte("oauth_clients")
	bOAuthCodes   = []byte("oauth_codes")
	bOAuthGrants  = []byte("oauth_grants")
	bOAuthTokens  = []byte("oauth_tokens")
	bOAuthMeta    = []byte("oauth_clients_meta")
)

func init() { registerBuckets(bOAuthClients, bOAuthCodes, bOAuthGrants, bOAuthTokens, bOAuthMeta) }

// OAuthClient is a registered OAuth client.
type OAuthClient struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	RedirectURIs []string  `json:"redirect_uris"`
	CreatedAt    time.Time `json:"created_at"`
	// RegisteredAt is the last time the same metadata was registered again (the client was
	// handed out once more); zero when it never was. An unused client's lifetime counts from it.
	RegisteredAt time.Time `json:"registered_at,omitzero"`
}

// LastRegistered is when the client was last registered: CreatedAt or a later RegisteredAt.
func (c *OAuthClient) LastRegistered() time.Time {
	if c.RegisteredAt.After(c.CreatedAt) {
		return c.RegisteredAt
	}
	return c.CreatedAt
}

// oauthMetaKey is the key of a client's metadata in oauth_clients_meta.
func oauthMetaKey(name string, redirectURIs []string) []byte {
	b, _ := json.Marshal(struct {
		Name string   `json:"n"`
		URIs []string `json:"u"`
	}{name, redirectURIs})
	sum := sha256.Sum256(b)
	return sum[:]
}

// OAuthCode is an authorization code waiting for its exchange.
type OAuthCode struct {
	// KeyID is the grant (and connector key) the approval made.
	KeyID         string    `json:"key_id"`
	ClientID      string    `json:"client_id"`
	RedirectURI   string    `json:"redirect_uri"`
	CodeChallenge string    `json:"code_challenge"`
	ExpiresAt     time.Time `json:"expires_at"`
	// UsedAt is set by the exchange: a code is good once.
	UsedAt *time.Time `json:"used_at,omitempty"`
}

// OAuthGrant is what a user approved: a client, a resource, scopes and a workspace.
type OAuthGrant struct {
	KeyID    string   `json:"key_id"`
	UserID   string   `json:"user_id"`
	ClientID string   `json:"client_id"`
	Resource string   `json:"resource"`
	Scopes   []string `json:"scopes"`
	// WorkspaceID is the workspace the user chose on the consent page (MainWorkspace or a
	// workspace's id), to which the grant's connector key is bound (APIKey.WorkspaceID, which is
	// what requests are held to); "" for a grant made before workspaces, whose key is bound to
	// none.
	WorkspaceID string    `json:"workspace_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// OAuth token kinds.
const (
	TokenAccess  = "access"
	TokenRefresh = "refresh"
)

// OAuthToken is an access or refresh token of a grant.
type OAuthToken struct {
	Kind      string    `json:"kind"`
	KeyID     string    `json:"key_id"`
	ExpiresAt time.Time `json:"expires_at"`
	// RotatedAt is set on a refresh token once it has been exchanged: presenting it again after
	// the rotation's grace is a reuse, and ends the grant.
	RotatedAt *time.Time `json:"rotated_at,omitempty"`
	// Successor is the pair the rotation issued, sealed (persistence/secret): presented again
	// within the grace, the token gets the same pair.
	Successor []byte `json:"successor,omitempty"`
}

// PutOAuthClient stores a client, and indexes its metadata (FindOAuthClient).
func (t *Tx) PutOAuthClient(c *OAuthClient) error {
	if err := t.put(bOAuthClients, []byte(c.ID), c); err != nil {
		return err
	}
	return t.kv.Bucket(bOAuthMeta).Put(oauthMetaKey(c.Name, c.RedirectURIs), []byte(c.ID))
}

// FindOAuthClient returns the client registered with exactly this name and these redirect URIs
// (in this order); ErrNotFound when there is none.
func (t *Tx) FindOAuthClient(name string, redirectURIs []string) (*OAuthClient, error) {
	b := t.kv.Bucket(bOAuthMeta)
	if b == nil {
		return nil, ErrNotFound
	}
	id := b.Get(oauthMetaKey(name, redirectURIs))
	if id == nil {
		return nil, ErrNotFound
	}
	c, err := t.OAuthClient(string(id))
	if err != nil {
		return nil, err
	}
	if c.Name != name || !slices.Equal(c.RedirectURIs, redirectURIs) {
		return nil, ErrNotFound
	}
	return c, nil
}

// OAuthClient returns a client; ErrNotFound when there is none.
func (t *Tx) OAuthClient(id string) (*OAuthClient, error) {
	var c OAuthClient
	if err := t.get(bOAuthClients, []byte(id), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutOAuthCode stores a code under its hash.
func (t *Tx) PutOAuthCode(hash []byte, c *OAuthCode) error { return t.put(bOAuthCodes, hash, c) }

// OAuthCode returns the code stored under a hash; ErrNotFound when there is none.
func (t *Tx) OAuthCode(hash []byte) (*OAuthCode, error) {
	var c OAuthCode
	if err := t.get(bOAuthCodes, hash, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutOAuthGrant stores a grant under its key id.
func (t *Tx) PutOAuthGrant(g *OAuthGrant) error { return t.put(bOAuthGrants, mustID(g.KeyID), g) }

// OAuthGrant returns the grant of a connector key; ErrNotFound when there is none.
func (t *Tx) OAuthGrant(keyID string) (*OAuthGrant, error) {
	var g OAuthGrant
	if err := t.get(bOAuthGrants, mustID(keyID), &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// PutOAuthToken stores a token under its hash.
func (t *Tx) PutOAuthToken(hash []byte, tok *OAuthToken) error { return t.put(bOAuthTokens, hash, tok) }

// OAuthToken returns the token stored under a hash; ErrNotFound when there is none.
func (t *Tx) OAuthToken(hash []byte) (*OAuthToken, error) {
	var tok OAuthToken
	if err := t.get(bOAuthTokens, hash, &tok); err != nil {
		return nil, err
	}
	return &tok, nil
}

// DeleteOAuthToken removes a token (revocation, RFC 7009); removing one that is gone succeeds.
func (t *Tx) DeleteOAuthToken(hash []byte) error { return t.kv.Bucket(bOAuthTokens).Delete(hash) }

// DeleteOAuthCodes deletes up to max codes for which dead is true, and any record that does not
// decode, in the bucket's order; it returns how many it deleted.
func (t *Tx) DeleteOAuthCodes(dead func(*OAuthCode) bool, max int) (int, error) {
	return t.deleteWhere(bOAuthCodes, max, func(v []byte) bool {
		var c OAuthCode
		return Decode(v, &c) != nil || dead(&c)
	})
}

// DeleteOAuthTokens deletes up to max access and refresh tokens for which dead is true, and any
// record that does not decode; it returns how many of each kind it deleted.
func (t *Tx) DeleteOAuthTokens(dead func(*OAuthToken) bool, max int) (access, refresh int, err error) {
	_, err = t.deleteWhere(bOAuthTokens, max, func(v []byte) bool {
		var tok OAuthToken
		if Decode(v, &tok) != nil {
			return true
		}
		if !dead(&tok) {
			return false
		}
		if tok.Kind == TokenRefresh {
			refresh++
		} else {
			access++
		}
		return true
	})
	return access, refresh, err
}

// DeleteOAuthClients deletes up to max clients for which dead is true, with their metadata's
// index entries, and any record that does not decode; it returns how many it deleted.
func (t *Tx) DeleteOAuthClients(dead func(*OAuthClient) bool, max int) (int, error) {
	meta := t.kv.Bucket(bOAuthMeta)
	var unindex [][]byte
	n, err := t.deleteWhere(bOAuthClients, max, func(v []byte) bool {
		var c OAuthClient
		if Decode(v, &c) != nil {
			return true
		}
		if !dead(&c) {
			return false
		}
		if k := oauthMetaKey(c.Name, c.RedirectURIs); meta != nil && string(meta.Get(k)) == c.ID {
			unindex = append(unindex, k)
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	for _, k := range unindex {
		if err := meta.Delete(k); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// OAuthClientsInUse returns the ids of the clients that a grant or a code names.
func (t *Tx) OAuthClientsInUse() (map[string]bool, error) {
	used := map[string]bool{}
	err := forEach(t.kv.Bucket(bOAuthGrants), func(_, v []byte) error {
		var g OAuthGrant
		if Decode(v, &g) == nil {
			used[g.ClientID] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = forEach(t.kv.Bucket(bOAuthCodes), func(_, v []byte) error {
		var c OAuthCode
		if Decode(v, &c) == nil {
			used[c.ClientID] = true
		}
		return nil
	})
	return used, err
}

// CountOAuth counts the stored clients, codes and tokens by walking their keys.
func (t *Tx) CountOAuth() (clients, codes, tokens int) {
	count := func(bucket []byte) int {
		n := 0
		c := t.kv.Bucket(bucket).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		return n
	}
	return count(bOAuthClients), count(bOAuthCodes), count(bOAuthTokens)
}

// deleteWhere deletes up to max records of a bucket for which dead(value) is true; the records
// are chosen in one pass of a cursor and deleted after it.
func (t *Tx) deleteWhere(bucket []byte, max int, dead func(v []byte) bool) (int, error) {
	b := t.kv.Bucket(bucket)
	var gone [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(gone) < max; k, v = c.Next() {
		if dead(v) {
			gone = append(gone, append([]byte(nil), k...))
		}
	}
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}
