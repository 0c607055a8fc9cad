// Package secret seals connected accounts' credentials at rest with AES-256-GCM. The key comes
// from configuration (HERALD_SECRET_KEY, 64 hex characters) or is generated into DIR/secret.key
// (mode 0600) on first start. Losing the key makes stored tokens unreadable: accounts then need
// to be connected again.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile is the key's file name inside the data directory.
const KeyFile = "secret.key"

// Box seals and opens secrets.
type Box struct{ aead cipher.AEAD }

// ErrOpen means a sealed value could not be opened (wrong key or tampered data).
var ErrOpen = errors.New("secret: cannot open sealed value (wrong key or corrupted data)")

// NewBox makes a box from a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secret: key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// LoadKey returns the key from hexKey when given, else from DIR/secret.key, creating it with a
// fresh random key when it does not exist.
func LoadKey(dir, hexKey string) ([]byte, error) {
	if hexKey = strings.TrimSpace(hexKey); hexKey != "" {
		k, err := hex.DecodeString(hexKey)
		if err != nil || len(k) != 32 {
			return nil, errors.New("secret: HERALD_SECRET_KEY must be 64 hexadecimal characters (32 bytes)")
		}
		return k, nil
	}
	path := filepath.Join(dir, KeyFile)
	if b, err := os.ReadFile(path); err == nil {
		k, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("secret: %s does not hold a 32-byte hex key", path)
		}
		return k, nil
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if os.IsExist(err) { // created concurrently: read that one
			return LoadKey(dir, "")
		}
		return nil, err
	}
	if _, err := f.WriteString(hex.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}

// Seal encrypts plaintext; the result carries its random nonce.
func (b *Box) Seal(plaintext []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("secret: crypto/rand failed: " + err.Error()) // the OS entropy source is gone
	}
	return b.aead.Seal(nonce, nonce, plaintext, nil)
}

// Open decrypts what Seal produced.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, ErrOpen
	}
	out, err := b.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}
