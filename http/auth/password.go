package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/heraldhq/herald/persistence"
)

// Passwords of the people who sign in to the dashboard are hashed with argon2id and stored in
// PHC string form, "$argon2id$v=19$m=65536,t=2,p=2$<salt>$<hash>" (base64 without padding), so
// that the parameters travel with each hash: a hash made under older parameters still verifies
// after they change.
//
// DefaultPasswordParams: 2 passes over 64 MiB with 2 lanes, a 16-byte salt and a 32-byte key.
// It is RFC 9106's second recommended option with half its passes and lanes (about 150 ms on one
// core of a small server), above OWASP's floor (19 MiB, 2 passes). The memory is the cost: the
// session package runs at most a few hashes at once (a 2-core server holds 128 MiB for them at
// worst) and throttles failed sign-ins, so that guessing costs an attacker time and Herald
// little.
var DefaultPasswordParams = PasswordParams{Time: 2, MemoryKiB: 64 * 1024, Threads: 2}

// PasswordParams are argon2id's cost parameters.
type PasswordParams struct {
	Time      uint32 // passes
	MemoryKiB uint32 // memory in KiB
	Threads   uint8  // lanes
}

// Password length bounds: at least MinPasswordLen characters, at most MaxPasswordBytes bytes.
const (
	MinPasswordLen   = 10
	MaxPasswordBytes = 1024
)

const (
	saltLen = 16
	hashLen = 32
)

// ErrWrongPassword means a password does not match its hash.
var ErrWrongPassword = errors.New("invalid e-mail or password")

// ValidatePassword checks a new password's length.
func ValidatePassword(pw string) error {
	switch {
	case !utf8.ValidString(pw):
		return fmt.Errorf("%w: the password is not valid UTF-8", ErrInvalid)
	case len(pw) > MaxPasswordBytes:
		return fmt.Errorf("%w: the password is longer than %d bytes", ErrInvalid, MaxPasswordBytes)
	case utf8.RuneCountInString(pw) < MinPasswordLen:
		return fmt.Errorf("%w: the password must have at least %d characters", ErrInvalid, MinPasswordLen)
	}
	return nil
}

// HashPassword hashes a password with p, in PHC string form.
func HashPassword(pw string, p PasswordParams) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return phcString(p, salt, argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, hashLen)), nil
}

// DummyHash is a PHC string under p that no password matches: a random salt and a random key,
// made without hashing. Verifying a password against it costs what verifying against a real
// hash costs, so a sign-in with an unknown e-mail takes as long as one with a known e-mail,
// and making it costs no argon2 run (and none of its memory) at start-up.
func DummyHash(p PasswordParams) (string, error) {
	b := make([]byte, saltLen+hashLen)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return phcString(p, b[:saltLen], b[saltLen:]), nil
}

func phcString(p PasswordParams, salt, key []byte) string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// VerifyPassword reports whether pw matches a PHC hash, with a constant-time comparison. An
// unreadable hash is an error.
func VerifyPassword(phc, pw string) (bool, error) {
	p, salt, want, err := parsePHC(phc)
	if err != nil {
		return false, err
	}
	if len(pw) > MaxPasswordBytes {
		pw = "" // never hash megabytes; the comparison below still runs and fails
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1 && pw != "", nil
}

func parsePHC(phc string) (p PasswordParams, salt, key []byte, err error) {
	bad := func() (PasswordParams, []byte, []byte, error) {
		return PasswordParams{}, nil, nil, errors.New("auth: unreadable password hash")
	}
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return bad()
	}
	var m, t, th uint32
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &th); err != nil || n != 3 || m < 8 || t < 1 || th < 1 || th > 255 || m > 4<<20 {
		return bad()
	}
	if salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(salt) < 8 {
		return bad()
	}
	if key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(key) < 16 {
		return bad()
	}
	return PasswordParams{Time: t, MemoryKiB: m, Threads: uint8(th)}, salt, key, nil
}

// SetPassword gives the user with this e-mail a new password and ends every session the user
// has (a password change signs out every browser). It returns the user and how many sessions it
// ended.
func SetPassword(ctx context.Context, s *persistence.Store, email, pw string, p PasswordParams) (*persistence.User, int, error) {
	if err := ValidatePassword(pw); err != nil {
		return nil, 0, err
	}
	if p == (PasswordParams{}) {
		p = DefaultPasswordParams
	}
	phc, err := HashPassword(pw, p)
	if err != nil {
		return nil, 0, err
	}
	var u *persistence.User
	ended := 0
	err = s.Update(ctx, func(tx *persistence.Tx) error {
		var err error
		if u, err = tx.UserByEmail(email); err != nil {
			return err
		}
		if err := tx.SetPassword(u.ID, phc); err != nil {
			return err
		}
		ended, err = tx.DeleteSessionsOfUser(u.ID, nil)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: no user with e-mail %s", ErrInvalid, email)
	}
	if err != nil {
		return nil, 0, err
	}
	return u, ended, nil
}
