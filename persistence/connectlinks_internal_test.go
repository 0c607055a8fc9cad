package persistence

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// herald check finds a connect link's index entries whose link is gone, and one of a workspace
// that does not exist.
func TestCheckFindsBrokenConnectLinkIndexes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedStore(t, dir, 5)
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	var userID string
	require.NoError(t, s.View(func(tx *Tx) error {
		k, _ := tx.kv.Bucket(bUsers).Cursor().First()
		userID = idString(k)
		return nil
	}))
	h := sha256.Sum256([]byte("secret"))
	l := &ConnectLink{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Hash: h[:], Prefix: "secret", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	stray := &ConnectLink{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, WorkspaceID: uuid.Must(uuid.NewV7()).String(), Hash: make([]byte, 32), Prefix: "x"}
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.PutConnectLink(l); err != nil {
			return err
		}
		return tx.PutConnectLink(stray)
	}))
	require.NoError(t, s.Close())

	path := filepath.Join(dir, FileName)
	r, err := CheckFile(path, time.Second)
	require.NoError(t, err)
	text := strings.Join(r.Problems, "\n")
	require.Contains(t, text, "connect_links_scope: entry", "the stray link's workspace does not exist")
	require.NotContains(t, text, l.ID)

	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bConnectLinks).Delete(mustID(l.ID)) }))
	require.NoError(t, db.Close())
	r, err = CheckFile(path, time.Second)
	require.NoError(t, err)
	text = strings.Join(r.Problems, "\n")
	require.Contains(t, text, "connect_links_hash: entry")
	require.Contains(t, text, "names connect link "+l.ID)
}
