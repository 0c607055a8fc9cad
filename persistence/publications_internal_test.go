package persistence

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// A store of layout 3, written before publication ids, is indexed when opened.
func TestLayout3StoreGetsItsPublicationsIndexed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	user := uuid.NewString()
	p := &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "hi", Status: PostPublished,
		Targets: []Target{{AccountID: uuid.NewString(), Platform: "bluesky", Status: TargetPublished, PublicationID: "at://x"}}}
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.PutPost(p, nil) }))
	require.NoError(t, s.db.Update(func(tx *bolt.Tx) error {
		require.NoError(t, tx.DeleteBucket(bPublications))
		if _, err := tx.CreateBucket(bPublications); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("schema"), u64(3))
	}))
	missing := func(s *Store) bool {
		var err error
		require.NoError(t, s.View(func(tx *Tx) error { _, _, err = tx.PublicationOf(user, PublicationUUID(p.ID, 0)); return nil }))
		return err != nil
	}
	require.True(t, missing(s))
	require.NoError(t, s.Close())

	s, err = Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, missing(s))
}
