package oauth

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// newWorkspace stores a workspace of userID named name.
func (b *testBundle) newWorkspace(userID, name string) *persistence.Workspace {
	b.t.Helper()
	w := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: name, CreatedAt: b.clock.Now()}
	require.NoError(b.t, b.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutWorkspace(w) }))
	return w
}

// postConsent posts the consent form of the page for q with decision, its workspace field set
// to workspace (left out when ""), as the signed-in user.
func (b *testBundle) postConsent(q url.Values, decision, workspace string) *response {
	b.t.Helper()
	page := b.page(q, b.cookie)
	require.Equal(b.t, 200, page.status, string(page.body))
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(page.body), -1) {
		form.Add(m[1], htmlUnescape(m[2]))
	}
	form.Set("decision", decision)
	if workspace != "" {
		form.Set("workspace", workspace)
	}
	req, err := http.NewRequest(http.MethodPost, b.url+AuthorizePath, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(b.cookie)
	return b.do(req)
}

// The consent page lists the user's workspaces, main first, and names the one the connector
// will act in; the connector key made at approval, and the grant, are bound to the one chosen,
// and the token's principal carries that key.
func TestConsentBindsTheChosenWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	cb := "https://claude.ai/api/mcp/auth_callback"
	id := b.registerClient("Claude", cb)
	verifier, challenge := pkcePair("w")
	q := b.authRequest(id, cb, challenge)

	// With main alone, the page names it and the form carries it.
	page := string(b.page(q, b.cookie).body)
	require.Contains(t, page, "It will act only in your workspace <strong>Main</strong>")
	require.Contains(t, page, `<input type="hidden" name="workspace" value="main">`)

	ws := b.newWorkspace(b.user.ID, `Client <b>Acme</b>`)
	other, _, _ := b.signIn("other@example.com")
	foreign := b.newWorkspace(other.ID, "Not yours")
	page = string(b.page(q, b.cookie).body)
	require.Contains(t, page, `<select id="workspace" name="workspace"><option value="main">Main</option><option value="`+ws.ID+`">Client &lt;b&gt;Acme&lt;/b&gt;</option></select>`)
	require.NotContains(t, page, foreign.ID)
	require.NotContains(t, page, "Not yours")

	r := b.postConsent(q, "approve", ws.ID)
	require.Equal(t, 303, r.status, string(r.body))
	loc, err := url.Parse(r.header.Get("Location"))
	require.NoError(t, err)
	tr := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {cb}, "client_id": {id}, "resource": {b.url + MCPPath}})
	require.Equal(t, 200, tr.status, string(tr.body))
	p, err := b.svc.VerifyBearer("Bearer "+tr.json(t)["access_token"].(string), b.svc.MCPResource())
	require.NoError(t, err)
	require.Equal(t, ws.ID, p.Key.WorkspaceID, "the token's key is bound to the workspace chosen")

	keys := b.connectorKeys(b.user.ID)
	require.Len(t, keys, 1)
	require.Equal(t, ws.ID, keys[0].WorkspaceID)
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		g, err := tx.OAuthGrant(keys[0].ID)
		require.NoError(t, err)
		require.Equal(t, ws.ID, g.WorkspaceID, "the grant shows its workspace")
		return nil
	}))

	// Approving again without a choice binds main: reconnecting replaces the key.
	b.clock.Add(time.Second)
	b.grant(id, cb, "approve")
	keys = b.connectorKeys(b.user.ID)
	require.Len(t, keys, 1)
	require.Equal(t, persistence.MainWorkspace, keys[0].WorkspaceID)
}

// A consent naming a workspace that is not the user's (another user's, a deleted one, a made-up
// id) is refused on a page: no code goes to the client, and no key or grant is made or replaced.
func TestConsentRefusesAWorkspaceOfAnotherUser(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	cb := "https://claude.ai/api/mcp/auth_callback"
	id := b.registerClient("Claude", cb)
	b.grant(id, cb, "approve")
	before := b.connectorKeys(b.user.ID)
	require.Len(t, before, 1)

	other, _, _ := b.signIn("other@example.com")
	foreign := b.newWorkspace(other.ID, "Theirs")
	deleted := b.newWorkspace(b.user.ID, "Gone")
	require.NoError(t, b.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.DeleteWorkspace(deleted) }))
	_, challenge := pkcePair("x")
	for _, ws := range []string{foreign.ID, deleted.ID, other.ID, "nope"} {
		r := b.postConsent(b.authRequest(id, cb, challenge), "approve", ws)
		require.Equal(t, 400, r.status, ws)
		require.Contains(t, string(r.body), "The workspace chosen is not one of yours", ws)
		require.Empty(t, r.header.Get("Location"), ws)
	}
	after := b.connectorKeys(b.user.ID)
	require.Len(t, after, 1)
	require.Equal(t, before[0].ID, after[0].ID, "the earlier key is neither replaced nor revoked")
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error {
		keys, err := tx.APIKeysOfUser(b.user.ID)
		require.NoError(t, err)
		require.Len(t, keys, 1, "no key was made")
		keys, err = tx.APIKeysOfUser(other.ID)
		require.NoError(t, err)
		require.Empty(t, keys, "nothing was made for the other user")
		return nil
	}))
}
