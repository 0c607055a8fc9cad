package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// list_accounts tells a member's profile from the organisation they administer: each account
// with its kind and display name.
func TestListAccountsShowsKinds(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	name := "Acme Corp"
	org := h.NewAccount(h.User.ID, string(platforms.LinkedIn))
	org.Kind, org.DisplayName = persistence.AccountOrganization, &name
	require.NoError(t, h.App.Store.Update(t.Context(), func(tx *persistence.Tx) error { return tx.PutAccount(org) }))
	s := h.MCPSession(h.Key)
	accts := apptest.OKJSON(t, apptest.CallTool(t, s, "list_accounts", map[string]any{"platform": "linkedin"}))["accounts"].([]any)
	require.Len(t, accts, 2)
	kinds := map[string]any{}
	for _, a := range accts {
		m := a.(map[string]any)
		kinds[m["account_id"].(string)] = m["kind"]
		if m["account_id"] == org.ID {
			require.Equal(t, name, m["display_name"])
		}
	}
	require.Equal(t, "organization", kinds[org.ID])
	require.Equal(t, "profile", kinds[h.Account(platforms.LinkedIn).ID])
	fb := apptest.OKJSON(t, apptest.CallTool(t, s, "list_accounts", map[string]any{"platform": "facebook"}))["accounts"].([]any)
	require.Equal(t, "page", fb[0].(map[string]any)["kind"], "a Facebook account stored without a kind is a Page")
}
