package persistence

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func testKey(secret string) *APIKey {
	h := sha256.Sum256([]byte(secret))
	return &APIKey{ID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.Must(uuid.NewV7()).String(), Name: "k", Hash: h[:], CreatedAt: time.Now().UTC()}
}

func keyByHash(t *testing.T, s *Store, hash []byte) (*APIKey, error) {
	t.Helper()
	var k *APIKey
	err := s.View(func(tx *Tx) error {
		var err error
		k, err = tx.APIKeyByHash(hash)
		return err
	})
	return k, err
}

// A revoked key still resolves by its hash, with RevokedAt set, so that authentication can say
// it was revoked; a regenerated key's old hash no longer resolves.
func TestRevokedKeyResolvesRegeneratedDoesNot(t *testing.T) {
	EachStore(t, revokedKeyResolvesRegeneratedDoesNot)
}

func revokedKeyResolvesRegeneratedDoesNot(t *testing.T, s *Store) {
	ctx := context.Background()

	revoked := testKey("revoked")
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAPIKey(revoked, nil) }))
	now := time.Now().UTC()
	revoked.RevokedAt = &now
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAPIKey(revoked, nil) }))
	k, err := keyByHash(t, s, revoked.Hash)
	require.NoError(t, err)
	require.Equal(t, revoked.ID, k.ID)
	require.NotNil(t, k.RevokedAt)

	regen := testKey("before")
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAPIKey(regen, nil) }))
	old := regen.Hash
	h := sha256.Sum256([]byte("after"))
	regen.Hash = h[:]
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAPIKey(regen, old) }))
	_, err = keyByHash(t, s, old)
	require.ErrorIs(t, err, ErrNotFound)
	k, err = keyByHash(t, s, regen.Hash)
	require.NoError(t, err)
	require.Equal(t, regen.ID, k.ID)
}

// A store written before layout 3 (revocation removed the hash) gets its revoked keys' hashes
// back when opened.
func TestOpenIndexesKeysRevokedBeforeLayout3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	old, err := Open(dir, Options{})
	require.NoError(t, err)
	k := testKey("revoked long ago")
	now := time.Now().UTC()
	k.RevokedAt = &now
	require.NoError(t, old.Update(ctx, func(tx *Tx) error { return tx.PutAPIKey(k, nil) }))
	require.NoError(t, old.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bAPIKeysHash).Delete(k.Hash); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("schema"), u64(2))
	}))
	_, err = keyByHash(t, old, k.Hash)
	require.ErrorIs(t, err, ErrNotFound, "the layout-2 store has no hash for the revoked key")
	require.NoError(t, old.Close())

	s, err := Open(dir, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	got, err := keyByHash(t, s, k.Hash)
	require.NoError(t, err)
	require.Equal(t, k.ID, got.ID)
	require.NotNil(t, got.RevokedAt)
}
