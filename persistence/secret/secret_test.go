package secret_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/secret"
)

func TestKeyFileAndRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k1, err := secret.LoadKey(dir, "")
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, secret.KeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	k2, err := secret.LoadKey(dir, "")
	require.NoError(t, err)
	require.Equal(t, k1, k2, "the key is generated once")

	box, err := secret.NewBox(k1)
	require.NoError(t, err)
	sealed := box.Seal([]byte("access-token"))
	require.NotContains(t, string(sealed), "access-token")
	plain, err := box.Open(sealed)
	require.NoError(t, err)
	require.Equal(t, "access-token", string(plain))

	sealed[len(sealed)-1] ^= 1
	_, err = box.Open(sealed)
	require.ErrorIs(t, err, secret.ErrOpen)

	_, err = secret.LoadKey(dir, "not-hex")
	require.Error(t, err)
	other, err := secret.LoadKey(dir, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	require.NoError(t, err)
	box2, _ := secret.NewBox(other)
	_, err = box2.Open(box.Seal([]byte("x")))
	require.ErrorIs(t, err, secret.ErrOpen, "another key cannot open it")
}
