package auth

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

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

// CreatedKey is a new key as shown once to its owner.
type CreatedKey struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Key       string     `json:"key"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// KeyInfo is a key as listed (never the secret).
type KeyInfo struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// CreateKey creates a key for the user with this e-mail. expiresIn 0 means no expiry.
func CreateKey(ctx context.Context, s *persistence.Store, email, name string, expiresIn time.Duration, now time.Time) (*CreatedKey, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, fmt.Errorf("%w: a key needs a name of 1 to 200 characters", ErrInvalid)
	}
	if expiresIn < 0 {
		return nil, fmt.Errorf("%w: --expires-in must be positive", ErrInvalid)
	}
	raw, prefix, hash := GenerateKey()
	k := &persistence.APIKey{ID: uuid.Must(uuid.NewV7()).String(), Name: name, Prefix: prefix, Hash: hash, CreatedAt: now.UTC()}
	if expiresIn > 0 {
		t := now.Add(expiresIn).UTC()
		k.ExpiresAt = &t
	}
	err := s.Update(ctx, func(tx *persistence.Tx) error {
		u, err := tx.UserByEmail(email)
		if err != nil {
			return err
		}
		k.UserID = u.ID
		return tx.PutAPIKey(k, nil)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: no user with e-mail %s", ErrInvalid, email)
	}
	if err != nil {
		return nil, err
	}
	return &CreatedKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Key: raw, ExpiresAt: k.ExpiresAt}, nil
}

// ListKeys lists the keys of the user with this e-mail.
func ListKeys(s *persistence.Store, email string) ([]KeyInfo, error) {
	var out []KeyInfo
	err := s.View(func(tx *persistence.Tx) error {
		u, err := tx.UserByEmail(email)
		if err != nil {
			return err
		}
		keys, err := tx.APIKeysOfUser(u.ID)
		for _, k := range keys {
			out = append(out, KeyInfo{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt})
		}
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: no user with e-mail %s", ErrInvalid, email)
	}
	if out == nil {
		out = []KeyInfo{}
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

// RevokeKey revokes a key at once. Revoking a revoked key succeeds and changes nothing.
func RevokeKey(ctx context.Context, s *persistence.Store, id string, now time.Time) (*KeyInfo, error) {
	id, err := keyID(id)
	if err != nil {
		return nil, err
	}
	var info KeyInfo
	err = s.Update(ctx, func(tx *persistence.Tx) error {
		k, err := tx.APIKey(id)
		if err != nil {
			return err
		}
		if k.RevokedAt == nil {
			t := now.UTC()
			k.RevokedAt = &t
			if err := tx.PutAPIKey(k, nil); err != nil {
				return err
			}
		}
		info = KeyInfo{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt}
		return nil
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: no key with id %s", ErrInvalid, id)
	}
	return &info, err
}

// RegenerateKey gives a live key a new secret and revokes the old secret at once. The key keeps
// its id, name and expiry.
func RegenerateKey(ctx context.Context, s *persistence.Store, id string) (*CreatedKey, error) {
	id, err := keyID(id)
	if err != nil {
		return nil, err
	}
	raw, prefix, hash := GenerateKey()
	var out CreatedKey
	err = s.Update(ctx, func(tx *persistence.Tx) error {
		k, err := tx.APIKey(id)
		if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return fmt.Errorf("%w: key %s is revoked; create a new one", ErrInvalid, id)
		}
		old := k.Hash
		k.Hash, k.Prefix = hash, prefix
		if err := tx.PutAPIKey(k, old); err != nil {
			return err
		}
		out = CreatedKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Key: raw, ExpiresAt: k.ExpiresAt}
		return nil
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w: no key with id %s", ErrInvalid, id)
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}
