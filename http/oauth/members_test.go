package oauth_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// A grant makes a key of the team's owner: a member below admin cannot approve one (a page says
// so and nothing is issued), and an admin member's approval gives a key and grant of the owner,
// whose token reads the owner's data.
func TestMembersConsent(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	editor := h.Member("ed@example.com", "editor")
	_, challenge := apptest.PKCEPair("e")
	r := editor.Send("GET", "/oauth/authorize?"+h.AuthRequest(challenge, h.URL, "").Encode(), nil, nil)
	require.Equal(t, 403, r.Status)
	require.Contains(t, string(r.Body), "admin role")
	require.NotContains(t, string(r.Body), "csrf_token")

	admin := h.Member("ad@example.com", "admin")
	_, challenge = apptest.PKCEPair("a")
	require.NotEmpty(t, h.Consent(admin, h.AuthRequest(challenge, h.URL, ""), "approve").Get("code"))
	var connectors int
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		keys, err := tx.APIKeysOfUser(h.User.ID)
		for _, k := range keys {
			if k.Kind == persistence.KeyKindConnector {
				g, gerr := tx.OAuthGrant(k.ID)
				require.NoError(t, gerr)
				require.Equal(t, h.User.ID, g.UserID)
				connectors++
			}
		}
		return err
	}))
	require.Equal(t, 1, connectors, "the grant and its key are the owner's")
}
