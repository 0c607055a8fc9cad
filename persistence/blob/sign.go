package blob

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Herald's own media routes, served by http/api: the local backend's upload URL and the signed
// file URL handed to networks that fetch media themselves.
const (
	// UploadPathPrefix + key is the path of the local backend's upload URL.
	UploadPathPrefix = "/v1/media/"
	// FilePathPrefix + storage filename is the path of a media file's signed URL.
	FilePathPrefix = "/v1/media/files/"
)

// Signature errors.
var (
	ErrBadSignature = errors.New("blob: the URL's signature does not match")
	ErrExpired      = errors.New("blob: the URL has expired")
)

// KeyFileName is the signing key's file in the data directory.
const KeyFileName = "media-signing.key"

// LoadOrCreateKey reads the URL signing key from dir, creating a random 32-byte key (mode 0600)
// on first use.
func LoadOrCreateKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, KeyFileName)
	raw, err := os.ReadFile(path)
	if err == nil {
		key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil || len(key) < 32 {
			return nil, fmt.Errorf("blob: %s is not a hex key of at least 32 bytes", path)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("blob: read signing key: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	// The data directory may not exist yet: on PostgreSQL with the secret key in the environment
	// (HERALD_SECRET_KEY), nothing before this wrote to it.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blob: create signing key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return LoadOrCreateKey(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: create signing key: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("blob: write signing key: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return key, f.Close()
}

// Signer signs and checks Herald's media URLs with HMAC-SHA256. A signature covers the method,
// the object, every property the URL grants (content type and size for an upload) and the expiry,
// so changing any of them in the URL breaks it.
type Signer struct {
	key []byte
}

// NewSigner returns a signer with this secret key.
func NewSigner(key []byte) *Signer { return &Signer{key: append([]byte(nil), key...)} }

func (s *Signer) sign(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("herald-media-v1"))
	for _, p := range parts {
		m.Write([]byte{'\n'})
		m.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// check verifies the expires and signature query parameters of a URL against parts.
func (s *Signer) check(q url.Values, now time.Time, parts ...string) error {
	exp := q.Get("expires")
	sig, err := base64.RawURLEncoding.DecodeString(q.Get("signature"))
	if err != nil || len(sig) != sha256.Size || exp == "" {
		return ErrBadSignature
	}
	want, _ := base64.RawURLEncoding.DecodeString(s.sign(append(parts, exp)...))
	if !hmac.Equal(sig, want) {
		return ErrBadSignature
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if !now.Before(time.Unix(unix, 0)) {
		return ErrExpired
	}
	return nil
}

func signedURL(base, path, exp, sig string) string {
	return strings.TrimRight(base, "/") + path + "?expires=" + exp + "&signature=" + sig
}

// UploadURL is the local backend's upload URL for key: one PUT of size bytes of contentType.
func (s *Signer) UploadURL(base, key, contentType string, size int64, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return signedURL(base, UploadPathPrefix+key, exp, s.sign("PUT", key, contentType, strconv.FormatInt(size, 10), exp))
}

// CheckUpload verifies an upload URL's query against what the key was presigned for.
func (s *Signer) CheckUpload(q url.Values, now time.Time, key, contentType string, size int64) error {
	return s.check(q, now, "PUT", key, contentType, strconv.FormatInt(size, 10))
}

// FileURL is a signed URL that serves the file stored under key until expires.
func (s *Signer) FileURL(base, key string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return signedURL(base, FilePathPrefix+filepath.Base(key), exp, s.sign("GET", key, exp))
}

// CheckFile verifies a file URL's query for key.
func (s *Signer) CheckFile(q url.Values, now time.Time, key string) error {
	return s.check(q, now, "GET", key)
}
