package persistence_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestConnectLinks(t *testing.T) { persistence.EachStore(t, connectLinks) }

// A link is found by the hash of its secret and listed in its workspace only; its uses are
// counted and its log stays bounded.
func connectLinks(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	user, ws := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	put := func(l *persistence.ConnectLink) {
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutConnectLink(l) }))
	}
	mk := func(secret, workspace string) *persistence.ConnectLink {
		h := sha256.Sum256([]byte(secret))
		l := &persistence.ConnectLink{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, WorkspaceID: workspace, Hash: h[:],
			Prefix: secret[:4], Platforms: []string{"linkedin"}, CreatedAt: now, ExpiresAt: now.Add(72 * time.Hour)}
		put(l)
		return l
	}
	inMain, inWS := mk("main-secret", ""), mk("ws-secret", ws)
	mk("ws-secret-2", ws)

	var byHash *persistence.ConnectLink
	var mainList, wsList []*persistence.ConnectLink
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		h := sha256.Sum256([]byte("ws-secret"))
		var err error
		if byHash, err = tx.ConnectLinkByHash(h[:]); err != nil {
			return err
		}
		if mainList, err = tx.ConnectLinks(user); err != nil {
			return err
		}
		wsList, err = tx.ConnectLinks(ws)
		return err
	}))
	require.Equal(t, inWS.ID, byHash.ID)
	require.Equal(t, ws, byHash.WorkspaceID)
	require.Len(t, mainList, 1)
	require.Equal(t, inMain.ID, mainList[0].ID)
	require.Len(t, wsList, 2)
	require.Equal(t, inWS.ID, wsList[0].ID, "oldest first")

	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		h := sha256.Sum256([]byte("unknown"))
		_, err := tx.ConnectLinkByHash(h[:])
		require.ErrorIs(t, err, persistence.ErrNotFound)
		_, err = tx.ConnectLinkByHash([]byte("short"))
		require.ErrorIs(t, err, persistence.ErrNotFound)
		_, err = tx.ConnectLink("not-an-id")
		require.ErrorIs(t, err, persistence.ErrNotFound)
		return nil
	}))

	for i := range persistence.ConnectLinkLogSize + 5 {
		inWS.Record(persistence.ConnectLinkUse{At: now.Add(time.Duration(i) * time.Second), Event: "started", Platform: "linkedin"})
	}
	revoked := now.Add(time.Hour)
	inWS.RevokedAt = &revoked
	put(inWS)
	var got *persistence.ConnectLink
	require.NoError(t, s.View(func(tx *persistence.Tx) (err error) {
		got, err = tx.ConnectLink(inWS.ID)
		return err
	}))
	require.Equal(t, persistence.ConnectLinkLogSize+5, got.Uses)
	require.Len(t, got.Log, persistence.ConnectLinkLogSize)
	require.Equal(t, now.Add(5*time.Second), got.Log[0].At, "the oldest uses leave the log")
	require.Equal(t, now.Add(time.Duration(persistence.ConnectLinkLogSize+4)*time.Second), *got.LastUsedAt)
	require.NotNil(t, got.RevokedAt)
	require.True(t, revoked.Equal(*got.RevokedAt))
}

func TestConnectLinksGoWithTheirWorkspace(t *testing.T) {
	persistence.EachStore(t, connectLinksGoWithTheirWorkspace)
}

// Deleting a workspace deletes its connect links and their index entries; the links of the
// user's other workspaces stay.
func connectLinksGoWithTheirWorkspace(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	user := uuid.Must(uuid.NewV7()).String()
	w := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Name: "Acme", CreatedAt: now}
	put := func(secret, workspace string) {
		h := sha256.Sum256([]byte(secret))
		l := &persistence.ConnectLink{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, WorkspaceID: workspace, Hash: h[:],
			Prefix: secret[:4], CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutConnectLink(l) }))
	}
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.PutWorkspace(w) }))
	put("gone-1", w.ID)
	put("gone-2", w.ID)
	put("kept-1", "")
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.DeleteWorkspace(w) }))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		l, err := tx.ConnectLinks(w.ID)
		require.NoError(t, err)
		require.Empty(t, l)
		for _, secret := range []string{"gone-1", "gone-2"} {
			h := sha256.Sum256([]byte(secret))
			_, err := tx.ConnectLinkByHash(h[:])
			require.ErrorIs(t, err, persistence.ErrNotFound, secret)
		}
		h := sha256.Sum256([]byte("kept-1"))
		_, err = tx.ConnectLinkByHash(h[:])
		require.NoError(t, err)
		l, err = tx.ConnectLinks(user)
		require.NoError(t, err)
		require.Len(t, l, 1)
		return nil
	}))
}
