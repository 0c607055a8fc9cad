package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// In a workspace that requires approval, publish_post by a credential that cannot approve holds
// the post: the tool says so and names no job, and nothing is published.
func TestMCPPublishHeldForApproval(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	ctx := context.Background()
	require.NoError(t, h.App.Store.Update(ctx, func(tx *persistence.Tx) error {
		return tx.PutWorkspace(&persistence.Workspace{ID: persistence.MainWorkspace, UserID: h.User.ID, Name: persistence.MainWorkspaceName,
			ApprovalRequired: true, CreatedAt: h.User.CreatedAt})
	}))
	k, err := auth.CreateKey(ctx, h.App.Store, h.User.Email, "connector", 0, time.Now())
	require.NoError(t, err)
	require.NoError(t, h.App.Store.Update(ctx, func(tx *persistence.Tx) error {
		rec, err := tx.APIKey(k.ID)
		if err != nil {
			return err
		}
		rec.Scopes = []string{auth.ScopeServiceRead, auth.ScopePostsWrite}
		return tx.PutAPIKey(rec, nil)
	}))
	h.App.Auth.Invalidate()
	s := h.MCPSession(k.Key)
	pub := apptest.OKJSON(t, apptest.CallTool(t, s, "publish_post", map[string]any{"content": "Held by MCP", "accounts": []string{"bluesky"}}))
	require.Equal(t, "pending_approval", pub["status"])
	require.NotContains(t, pub, "tracking_id")
	require.Contains(t, pub["next"], "approv")
	post := apptest.OKJSON(t, apptest.CallTool(t, s, "get_post", map[string]any{"post_id": pub["post_id"]}))
	require.Equal(t, "pending_approval", post["status"])
	require.Nil(t, post["tracking_id"])
}
