package accountlink

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// StateTTL is how long a connect state (and so an authorization_url) stays valid.
const StateTTL = 10 * time.Minute

// stateKeyInfo separates the state-signing key from every other use of the data directory's
// secret.
const stateKeyInfo = "herald connect state v1"

// StateKey derives the 32-byte HMAC key that signs connect states from the data directory's
// secret (the AES key that seals account tokens: HERALD_SECRET_KEY or DIR/secret.key) with
// HKDF-SHA256. Nothing new is stored, and changing the secret invalidates the states in flight.
func StateKey(secret []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, secret, nil, stateKeyInfo, 32)
}

// A state token is base64url (no padding) of
//
//	id (16 bytes, UUIDv7) | expiry (8 bytes, Unix seconds, big-endian) | HMAC-SHA256 of the first 24 bytes (32 bytes)
//
// 75 characters in all. The signature lets a forged or altered token be refused before any
// storage read, and the expiry inside it lets an expired token be named as such even after its
// record was purged.
const (
	payloadLen = 16 + 8
	macLen     = sha256.Size
	tokenLen   = payloadLen + macLen
)

type signer struct{ key []byte }

func (s signer) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)
}

// sign returns the token of a state id and expiry.
func (s signer) sign(id uuid.UUID, expires time.Time) string {
	b := make([]byte, 0, tokenLen)
	b = append(b, id[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(expires.Unix()))
	b = append(b, s.mac(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// verify checks a token's signature and returns its state id and expiry. ErrBadState when the
// token is malformed or its signature does not match.
func (s signer) verify(token string) (id uuid.UUID, expires time.Time, err error) {
	if base64.RawURLEncoding.DecodedLen(len(token)) != tokenLen {
		return id, expires, ErrBadState
	}
	// Strict: a token differing in its unused trailing bits is not the token that was issued.
	b, derr := base64.RawURLEncoding.Strict().DecodeString(token)
	if derr != nil || len(b) != tokenLen {
		return id, expires, ErrBadState
	}
	if !hmac.Equal(b[payloadLen:], s.mac(b[:payloadLen])) {
		return id, expires, ErrBadState
	}
	copy(id[:], b[:16])
	return id, time.Unix(int64(binary.BigEndian.Uint64(b[16:24])), 0), nil
}

// newVerifier returns a PKCE code verifier (43 characters from 32 random bytes, RFC 7636 §4.1)
// and its S256 challenge.
func newVerifier() (verifier, challenge string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	return verifier, challengeOf(verifier)
}

func challengeOf(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
