package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A client is found again by its exact metadata (name and redirect URIs, in order), and the
// sweep's deletion takes its index entry with it; a rotated token keeps its sealed successor.
func TestOAuthClientsByMetadata(t *testing.T) { EachStore(t, oauthClientsByMetadata) }

func oauthClientsByMetadata(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	a := &OAuthClient{ID: "hcl_a", Name: "Claude", RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback"}, CreatedAt: now}
	b := &OAuthClient{ID: "hcl_b", Name: "Claude", RedirectURIs: []string{"https://claude.ai/other"}, CreatedAt: now}
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		require.NoError(t, tx.PutOAuthClient(a))
		return tx.PutOAuthClient(b)
	}))
	find := func(name string, uris ...string) (string, error) {
		var id string
		err := s.View(func(tx *Tx) error {
			c, err := tx.FindOAuthClient(name, uris)
			if err == nil {
				id = c.ID
			}
			return err
		})
		return id, err
	}
	id, err := find("Claude", "https://claude.ai/api/mcp/auth_callback")
	require.NoError(t, err)
	require.Equal(t, "hcl_a", id)
	id, err = find("Claude", "https://claude.ai/other")
	require.NoError(t, err)
	require.Equal(t, "hcl_b", id)
	for _, miss := range [][]string{{"ChatGPT", "https://claude.ai/other"}, {"Claude", "https://claude.ai/other", "https://claude.ai/api/mcp/auth_callback"}} {
		_, err = find(miss[0], miss[1:]...)
		require.ErrorIs(t, err, ErrNotFound, "%v", miss)
	}

	// Re-registered: the lifetime counts from the last registration.
	a.RegisteredAt = now.Add(time.Hour)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutOAuthClient(a) }))
	require.NoError(t, s.View(func(tx *Tx) error {
		c, err := tx.FindOAuthClient(a.Name, a.RedirectURIs)
		require.NoError(t, err)
		require.Equal(t, now.Add(time.Hour), c.LastRegistered().UTC())
		return nil
	}))

	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		n, err := tx.DeleteOAuthClients(func(c *OAuthClient) bool { return c.ID == "hcl_a" }, 10)
		require.Equal(t, 1, n)
		return err
	}))
	_, err = find("Claude", "https://claude.ai/api/mcp/auth_callback")
	require.ErrorIs(t, err, ErrNotFound, "the index entry went with the client")
	_, err = find("Claude", "https://claude.ai/other")
	require.NoError(t, err)

	h := make([]byte, 32)
	rot := now
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		return tx.PutOAuthToken(h, &OAuthToken{Kind: TokenRefresh, KeyID: "k", ExpiresAt: now, RotatedAt: &rot, Successor: []byte{1, 2, 3}})
	}))
	require.NoError(t, s.View(func(tx *Tx) error {
		tok, err := tx.OAuthToken(h)
		require.NoError(t, err)
		require.Equal(t, []byte{1, 2, 3}, tok.Successor)
		return nil
	}))
}
