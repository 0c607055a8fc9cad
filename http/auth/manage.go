package auth

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
)

// Plans and their hourly request quotas.
var Plans = map[string]int{"free": 60, "starter": 300, "growth": 1000, "pro": 5000, "max": 10000}

// ErrInvalid wraps a refused management input.
var ErrInvalid = errors.New("invalid input")

// NewUser describes a user to create.
type NewUser struct {
	Email    string `json:"email"`
	Name     string `json:"name,omitempty"`
	Plan     string `json:"plan,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	Sandbox  bool   `json:"sandbox,omitempty"`
	// Password, when set, lets the user sign in to the dashboard (hashed with PasswordParams,
	// DefaultPasswordParams when zero).
	Password       string         `json:"password,omitempty"`
	PasswordParams PasswordParams `json:"-"`
}

// CreateUser validates and stores a new user.
func CreateUser(ctx context.Context, s *persistence.Store, in NewUser, now time.Time) (*persistence.User, error) {
	addr, err := mail.ParseAddress(in.Email)
	if err != nil || addr.Address != strings.TrimSpace(in.Email) {
		return nil, fmt.Errorf("%w: %q is not an e-mail address", ErrInvalid, in.Email)
	}
	if in.Plan == "" {
		in.Plan = "free"
	}
	if _, ok := Plans[in.Plan]; !ok {
		return nil, fmt.Errorf("%w: plan must be one of free, starter, growth, pro, max", ErrInvalid)
	}
	if in.Timezone == "" {
		in.Timezone = "UTC"
	}
	if _, err := time.LoadLocation(in.Timezone); err != nil || in.Timezone == "Local" {
		return nil, fmt.Errorf("%w: %q is not an IANA time zone", ErrInvalid, in.Timezone)
	}
	var phc string
	if in.Password != "" {
		if err := ValidatePassword(in.Password); err != nil {
			return nil, err
		}
		if in.PasswordParams == (PasswordParams{}) {
			in.PasswordParams = DefaultPasswordParams
		}
		if phc, err = HashPassword(in.Password, in.PasswordParams); err != nil {
			return nil, err
		}
	}
	u := &persistence.User{
		ID: uuid.Must(uuid.NewV7()).String(), Email: addr.Address, Plan: in.Plan,
		Timezone: in.Timezone, CreatedAt: now.UTC(), Sandbox: in.Sandbox,
	}
	if in.Name != "" {
		u.Name = &in.Name
	}
	err = s.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.CreateUser(u); err != nil || phc == "" {
			return err
		}
		return tx.SetPassword(u.ID, phc)
	})
	if errors.Is(err, persistence.ErrExists) {
		return nil, fmt.Errorf("%w: a user with e-mail %s already exists", ErrInvalid, addr.Address)
	}
	return u, err
}

// Key management refusals besides ErrInvalid's: the key does not exist, or it is another
// user's. Both wrap into ErrInvalid for the command line, which manages every user's keys.
var (
	ErrNoKey        = errors.New("no key with id")
	ErrForeignKey   = errors.New("the key belongs to another user")
	errNoUserWithID = errors.New("no user with id")
)

// MaxKeyName is the longest key name, in characters.
const MaxKeyName = 100

// CreatedKey is a new key as shown once to its owner.
type CreatedKey struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Key       string     `json:"key"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	// Scopes and WorkspaceID are the key's limits (KeyLimits); null: none.
	Scopes      []string `json:"scopes"`
	WorkspaceID *string  `json:"workspace_id"`
}

// KeyLimits limit a key: to one workspace of its owner (MainWorkspace or a workspace's id; "" for
// every workspace) and to scopes (KeyScopes; none for full access).
type KeyLimits struct {
	WorkspaceID string
	Scopes      []string
}

func workspacePtr(id string) *string {
	if id == "" {
		return nil
	}
	return &id
}

// KeyInfo is a key as listed (never the secret nor its hash).
type KeyInfo struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// Kind is "standard" (made by its owner) or "connector" (made by approving an OAuth
	// connector; revoking it ends the connector's tokens).
	Kind string `json:"kind"`
	// Scopes and WorkspaceID are the key's limits; null: none.
	Scopes      []string `json:"scopes"`
	WorkspaceID *string  `json:"workspace_id"`
}

// Key kinds as listed.
const (
	KindStandard  = "standard"
	KindConnector = "connector"
)

func keyInfo(k *persistence.APIKey) KeyInfo {
	kind := KindStandard
	if k.Kind == persistence.KeyKindConnector {
		kind = KindConnector
	}
	return KeyInfo{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt,
		LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt, Kind: kind, Scopes: k.Scopes, WorkspaceID: workspacePtr(k.WorkspaceID)}
}

// ConnectorKeyName is the name of the connector key made for an OAuth client.
func ConnectorKeyName(clientName string) string {
	name := "MCP connector: " + strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, clientName)
	if utf8.RuneCountInString(name) > MaxKeyName {
		name = string([]rune(name)[:MaxKeyName])
	}
	return name
}

// NewConnectorKey stores, in the caller's transaction, the connector key behind a new OAuth
// grant of the user to the client, bound to the user's workspace workspaceID (the API id the
// consent page's choice names: persistence.MainWorkspace or a workspace's id, which the caller
// has checked is the user's), and revokes the user's earlier connector keys for the same client
// (reconnecting replaces the connector's key, whichever workspace it was bound to: a host holds
// one connection to Herald). Its secret is never shown: the key is the grant's handle, listed and
// revoked like any key. The caller invalidates the Authenticator's cache once the transaction
// commits.
func NewConnectorKey(tx *persistence.Tx, userID, workspaceID string, client *persistence.OAuthClient, now time.Time) (*persistence.APIKey, error) {
	keys, err := tx.APIKeysOfUser(userID)
	if err != nil {
		return nil, err
	}
	now = now.UTC()
	for _, k := range keys {
		if k.Kind == persistence.KeyKindConnector && k.ClientID == client.ID && k.RevokedAt == nil {
			t := now
			k.RevokedAt = &t
			if err := tx.PutAPIKey(k, nil); err != nil {
				return nil, err
			}
		}
	}
	_, prefix, hash := GenerateKey()
	k := &persistence.APIKey{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: ConnectorKeyName(client.Name),
		Prefix: prefix, Hash: hash, CreatedAt: now, Kind: persistence.KeyKindConnector, ClientID: client.ID, WorkspaceID: workspaceID}
	return k, tx.PutAPIKey(k, nil)
}

// KeyName validates a key's name: trimmed, 1 to MaxKeyName characters, no control characters.
func KeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxKeyName {
		return "", fmt.Errorf("%w: a key needs a name of 1 to %d characters", ErrInvalid, MaxKeyName)
	}
	if !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return "", fmt.Errorf("%w: a key's name must not contain control characters", ErrInvalid)
	}
	return name, nil
}

// KeyExpiry checks an expiry a caller gave for a new key: it must be positive. A key that does
// not expire is made by giving no expiry at all, never by a zero or negative one: every door that
// takes an expiry (the command line's --expires-in, the admin socket's expires_in, the
// dashboard's expires_in_days) refuses those rather than make a key that never expires.
func KeyExpiry(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: --expires-in must be positive, such as 720h (%s is not); omit it for a key that does not expire", ErrInvalid, d)
	}
	return nil
}

// CreateKey creates a key for the user with this e-mail. expiresIn 0 means no expiry (the caller
// had none); a negative one is refused.
func CreateKey(ctx context.Context, s *persistence.Store, email, name string, expiresIn time.Duration, now time.Time) (*CreatedKey, error) {
	k, err := createKey(ctx, s, func(tx *persistence.Tx) (*persistence.User, error) { return tx.UserByEmail(email) }, name, expiresIn, KeyLimits{}, now)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: no user with e-mail %s", ErrInvalid, email)
	}
	return k, err
}

// CreateUserKey creates a key for the user with this id (the dashboard's POST /api/keys).
func CreateUserKey(ctx context.Context, s *persistence.Store, userID, name string, expiresIn time.Duration, now time.Time) (*CreatedKey, error) {
	return CreateLimitedKey(ctx, s, userID, name, expiresIn, KeyLimits{}, now)
}

// CreateLimitedKey is CreateUserKey of a key with limits: a workspace that is not the user's is
// ErrInvalid, as is an unknown scope.
func CreateLimitedKey(ctx context.Context, s *persistence.Store, userID, name string, expiresIn time.Duration, limits KeyLimits, now time.Time) (*CreatedKey, error) {
	k, err := createKey(ctx, s, func(tx *persistence.Tx) (*persistence.User, error) { return tx.User(userID) }, name, expiresIn, limits, now)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w %s", ErrInvalid, errNoUserWithID, userID)
	}
	return k, err
}

func createKey(ctx context.Context, s *persistence.Store, user func(*persistence.Tx) (*persistence.User, error), name string, expiresIn time.Duration, limits KeyLimits, now time.Time) (*CreatedKey, error) {
	name, err := KeyName(name)
	if err != nil {
		return nil, err
	}
	if expiresIn != 0 {
		if err := KeyExpiry(expiresIn); err != nil {
			return nil, err
		}
	}
	raw, prefix, hash := GenerateKey()
	scopes, ok := ParseKeyScopes(limits.Scopes)
	if !ok {
		return nil, fmt.Errorf("%w: scopes: unknown scope; a key's scopes are %s", ErrInvalid, strings.Join(KeyScopes, ", "))
	}
	k := &persistence.APIKey{ID: uuid.Must(uuid.NewV7()).String(), Name: name, Prefix: prefix, Hash: hash, CreatedAt: now.UTC(), Scopes: scopes}
	if expiresIn > 0 {
		t := now.Add(expiresIn).UTC()
		k.ExpiresAt = &t
	}
	err = s.Update(ctx, func(tx *persistence.Tx) error {
		u, err := user(tx)
		if err != nil {
			return err
		}
		k.UserID = u.ID
		if limits.WorkspaceID != "" {
			w, err := tx.Workspace(u.ID, limits.WorkspaceID)
			if errors.Is(err, persistence.ErrNotFound) {
				return fmt.Errorf("%w: workspace_id: no workspace %s of this user", ErrInvalid, limits.WorkspaceID)
			}
			if err != nil {
				return err
			}
			k.WorkspaceID = w.ID
		}
		return tx.PutAPIKey(k, nil)
	})
	if err != nil {
		return nil, err
	}
	return &CreatedKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Key: raw, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt,
		Scopes: k.Scopes, WorkspaceID: workspacePtr(k.WorkspaceID)}, nil
}

// ListKeys lists the keys of the user with this e-mail.
func ListKeys(s *persistence.Store, email string) ([]KeyInfo, error) {
	var out []KeyInfo
	err := s.View(func(tx *persistence.Tx) error {
		u, err := tx.UserByEmail(email)
		if err != nil {
			return err
		}
		out, err = keysOf(tx, u.ID)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: no user with e-mail %s", ErrInvalid, email)
	}
	return out, err
}

// ListUserKeys lists the keys of the user with this id, oldest first, revoked ones included.
func ListUserKeys(s *persistence.Store, userID string) ([]KeyInfo, error) {
	var out []KeyInfo
	err := s.View(func(tx *persistence.Tx) error {
		var err error
		out, err = keysOf(tx, userID)
		return err
	})
	return out, err
}

func keysOf(tx *persistence.Tx, userID string) ([]KeyInfo, error) {
	keys, err := tx.APIKeysOfUser(userID)
	out := make([]KeyInfo, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyInfo(k))
	}
	return out, err
}

func keyID(id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a key id", ErrInvalid, id)
	}
	return u.String(), nil
}

// updateKey runs change on the key with this id in one transaction. owner, when not "", is the
// user the key must belong to.
func updateKey(ctx context.Context, s *persistence.Store, owner, id string, change func(tx *persistence.Tx, k *persistence.APIKey) error) error {
	id, err := keyID(id)
	if err != nil {
		return err
	}
	err = s.Update(ctx, func(tx *persistence.Tx) error {
		k, err := tx.APIKey(id)
		if err != nil {
			return err
		}
		if owner != "" && k.UserID != owner {
			return fmt.Errorf("%w: %w", ErrInvalid, ErrForeignKey)
		}
		return change(tx, k)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return fmt.Errorf("%w: %w %s", ErrInvalid, ErrNoKey, id)
	}
	return err
}

// RevokeKey revokes a key at once. Revoking a revoked key succeeds and changes nothing.
func RevokeKey(ctx context.Context, s *persistence.Store, id string, now time.Time) (*KeyInfo, error) {
	return RevokeUserKey(ctx, s, "", id, now)
}

// RevokeUserKey is RevokeKey for the key's owner: another user's key is ErrForeignKey ("" owner:
// any user's, as the command line does).
func RevokeUserKey(ctx context.Context, s *persistence.Store, owner, id string, now time.Time) (*KeyInfo, error) {
	var info KeyInfo
	err := updateKey(ctx, s, owner, id, func(tx *persistence.Tx, k *persistence.APIKey) error {
		if k.RevokedAt == nil {
			t := now.UTC()
			k.RevokedAt = &t
			if err := tx.PutAPIKey(k, nil); err != nil {
				return err
			}
		}
		info = keyInfo(k)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// RenameKey gives the owner's key a new name (validated as KeyName). The key's secret, expiry and
// revocation are unchanged.
func RenameKey(ctx context.Context, s *persistence.Store, owner, id, name string) (*KeyInfo, error) {
	name, err := KeyName(name)
	if err != nil {
		return nil, err
	}
	var info KeyInfo
	err = updateKey(ctx, s, owner, id, func(tx *persistence.Tx, k *persistence.APIKey) error {
		k.Name = name
		info = keyInfo(k)
		return tx.PutAPIKey(k, nil)
	})
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// RegenerateKey gives a live key a new secret and revokes the old secret at once. The key keeps
// its id, name and expiry.
func RegenerateKey(ctx context.Context, s *persistence.Store, id string) (*CreatedKey, error) {
	return RegenerateUserKey(ctx, s, "", id)
}

// RegenerateUserKey is RegenerateKey for the key's owner ("" owner: any user's).
func RegenerateUserKey(ctx context.Context, s *persistence.Store, owner, id string) (*CreatedKey, error) {
	raw, prefix, hash := GenerateKey()
	var out CreatedKey
	err := updateKey(ctx, s, owner, id, func(tx *persistence.Tx, k *persistence.APIKey) error {
		if k.RevokedAt != nil {
			return fmt.Errorf("%w: key %s is revoked; create a new one", ErrInvalid, k.ID)
		}
		if k.Kind == persistence.KeyKindConnector {
			return fmt.Errorf("%w: key %s is a connector's key; revoke it and approve the connector again", ErrInvalid, k.ID)
		}
		old := k.Hash
		k.Hash, k.Prefix = hash, prefix
		if err := tx.PutAPIKey(k, old); err != nil {
			return err
		}
		out = CreatedKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Key: raw, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
