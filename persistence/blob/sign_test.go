package blob_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/blob"
)

func query(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Query()
}

func TestUploadURLSignature(t *testing.T) {
	t.Parallel()
	s := signer()
	now := time.Unix(1_800_000_000, 0)
	key := "uploads/0190a3b4-0000-7000-8000-000000000001/0190a3b4-0000-7000-8000-000000000002.png"
	raw := s.UploadURL("https://h.example/", key, "image/png", 1234, now.Add(15*time.Minute))
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "/v1/media/"+key, u.Path)
	require.Equal(t, "h.example", u.Host)
	q := u.Query()
	require.NoError(t, s.CheckUpload(q, now, key, "image/png", 1234))

	// Every property the URL grants is covered by the signature.
	require.ErrorIs(t, s.CheckUpload(q, now, key, "image/jpeg", 1234), blob.ErrBadSignature)
	require.ErrorIs(t, s.CheckUpload(q, now, key, "image/png", 1235), blob.ErrBadSignature)
	require.ErrorIs(t, s.CheckUpload(q, now, key[:len(key)-4]+".jpg", "image/png", 1234), blob.ErrBadSignature)
	require.ErrorIs(t, blob.NewSigner([]byte("another key of thirty-two bytes!")).CheckUpload(q, now, key, "image/png", 1234), blob.ErrBadSignature)

	tampered := url.Values{"expires": {strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}, "signature": q["signature"]}
	require.ErrorIs(t, s.CheckUpload(tampered, now, key, "image/png", 1234), blob.ErrBadSignature, "a later expiry breaks the signature")
	sig := []byte(q.Get("signature"))
	sig[3] ^= 1
	require.ErrorIs(t, s.CheckUpload(url.Values{"expires": q["expires"], "signature": {string(sig)}}, now, key, "image/png", 1234), blob.ErrBadSignature)
	require.ErrorIs(t, s.CheckUpload(url.Values{"expires": q["expires"]}, now, key, "image/png", 1234), blob.ErrBadSignature)
	require.ErrorIs(t, s.CheckUpload(url.Values{"signature": q["signature"]}, now, key, "image/png", 1234), blob.ErrBadSignature)

	// Expiry is checked once the signature holds.
	require.NoError(t, s.CheckUpload(q, now.Add(15*time.Minute-time.Second), key, "image/png", 1234))
	require.ErrorIs(t, s.CheckUpload(q, now.Add(15*time.Minute), key, "image/png", 1234), blob.ErrExpired)

	// A file URL is not an upload URL.
	file := query(t, s.FileURL("https://h.example", key, now.Add(time.Hour)))
	require.NoError(t, s.CheckFile(file, now, key))
	require.ErrorIs(t, s.CheckUpload(file, now, key, "image/png", 1234), blob.ErrBadSignature)
	require.ErrorIs(t, s.CheckFile(q, now, key), blob.ErrBadSignature)
	require.ErrorIs(t, s.CheckFile(file, now.Add(time.Hour), key), blob.ErrExpired)
}

func TestSigningKeyIsGeneratedOnceAndKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1, err := blob.LoadOrCreateKey(dir)
	require.NoError(t, err)
	require.Len(t, k1, 32)
	k2, err := blob.LoadOrCreateKey(dir)
	require.NoError(t, err)
	require.Equal(t, k1, k2)
	fi, err := os.Stat(filepath.Join(dir, blob.KeyFileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.NoError(t, os.WriteFile(filepath.Join(dir, blob.KeyFileName), []byte("short"), 0o600))
	_, err = blob.LoadOrCreateKey(dir)
	require.Error(t, err)
}

// The key is created in a data directory that does not exist yet, as it is on PostgreSQL with the
// secret key in the environment, where nothing else wrote to the directory before.
func TestSigningKeyIsCreatedInANewDataDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	k, err := blob.LoadOrCreateKey(dir)
	require.NoError(t, err)
	require.Len(t, k, 32)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	again, err := blob.LoadOrCreateKey(dir)
	require.NoError(t, err)
	require.Equal(t, k, again)
}
