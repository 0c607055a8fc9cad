package accountlink_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
	"github.com/heraldhq/herald/platforms/x"
)

// With an X app (sandbox mode configures the simulator's), the dashboard's POST
// /api/accounts/connect starts X's consent, and the account lands in the session's workspace,
// while POST /v1/accounts/connect keeps the spec's 400 for twitter_x.
func TestXConsentFromTheDashboard(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	r := h.Do("POST", "/v1/accounts/connect", map[string]any{"platform": "twitter_x"})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "twitter_x is not connected through the API")

	ws := h.Do("POST", "/v1/workspaces", map[string]any{"name": "Client"}).JSON(t)["id"].(string)
	br := h.SignedIn()
	hdr := br.CSRFHeader()
	hdr.Set("Herald-Workspace", ws)
	r = br.Send("POST", "/api/accounts/connect", map[string]any{"platform": "twitter_x"}, nil)
	require.Equal(t, 403, r.Status, "no CSRF token")
	ed := h.Member("ed@example.com", "editor")
	r = ed.Send("POST", "/api/accounts/connect", map[string]any{"platform": "twitter_x"}, ed.CSRFHeader())
	require.Equal(t, 403, r.Status, "connecting accounts is an admin's: %s", r.Body)
	r = br.Send("POST", "/api/accounts/connect", map[string]any{"platform": "twitter_x"}, hdr)
	require.Equal(t, 200, r.Status, string(r.Body))
	u := r.JSON(t)["authorization_url"].(string)
	require.True(t, strings.HasPrefix(u, h.URL+accountlink.AuthorizePath+"?state="), u)

	page, chain := h.Browse(u)
	apptest.RequirePage(t, page, 200, "is now connected to Herald")
	require.GreaterOrEqual(t, len(chain), 3, "Herald → X's consent page → Herald callback")
	consent := chain[1]
	require.Equal(t, h.App.Sim.BaseURL()+sim.Prefix(platforms.X)+"/i/oauth2/authorize", consent.Scheme+"://"+consent.Host+consent.Path)
	require.Equal(t, h.URL+accountlink.CallbackPath, consent.Query().Get("redirect_uri"))
	require.Equal(t, x.Scopes, consent.Query().Get("scope"))
	require.Len(t, consent.Query().Get("code_challenge"), 43, "PKCE S256 challenge")
	require.Equal(t, "S256", consent.Query().Get("code_challenge_method"))

	got := h.DoKey(h.Key, "GET", "/v1/accounts", nil, http.Header{"Herald-Workspace": {ws}}).JSON(t)["data"].([]any)
	require.Len(t, got, 1, "the account landed in the session's workspace")
	acc := got[0].(map[string]any)
	require.Equal(t, "twitter_x", acc["platform"])
	require.Equal(t, "sim-user", acc["username"])
	require.Equal(t, true, acc["is_active"])
	require.Empty(t, listed(h, "twitter_x"), "nothing in main")

	// The account publishes: its tokens are X's.
	hw := h.WithHeader("Herald-Workspace", ws)
	r = hw.Do("POST", "/v1/posts/publish", map[string]any{"content": "hello from the consent", "platforms": []string{acc["id"].(string)}})
	require.Equal(t, 202, r.Status, string(r.Body))
	job := hw.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, "completed", job["status"], "%v", job)
}

// A connect link offers X when the server has an X app: a client with no Herald session
// connects it through X's consent into the link's workspace.
func TestConnectLinkOffersX(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := linkWorkspace(h, "Acme", nil)
	link := newLink(h, ws.ID, map[string]any{"platforms": []string{"twitter_x"}})
	cl := newClient(h)
	page, _ := cl.open(link["url"].(string))
	apptest.RequirePage(t, page, 200, `value="twitter_x"`)
	consent := cl.start(link["url"].(string), platforms.X)
	require.Contains(t, consent, sim.Prefix(platforms.X)+"/i/oauth2/authorize?")
	require.Contains(t, consent, "code_challenge_method=S256")
	r, _ := h.BrowseWith(cl.jar, consent)
	apptest.RequirePage(t, r, 200, "X is connected")
	got := accountsIn(h, ws.ID)
	require.Len(t, got, 1)
	require.Equal(t, "twitter_x", got[0].Platform)
	require.Equal(t, ws.ID, got[0].WorkspaceID)
	require.Equal(t, "connected", linkOf(h, ws.ID, link["id"].(string))["log"].([]any)[1].(map[string]any)["event"])

	// A link offering every network offers X too.
	page, _ = newClient(h).open(newLink(h, ws.ID, nil)["url"].(string))
	apptest.RequirePage(t, page, 200, `value="twitter_x"`)
}

// Without an X app, neither the dashboard nor a link runs X's consent: the dashboard's answer
// points to the credential form, and a link refuses twitter_x as not configured.
func TestXConsentWithoutAnXApp(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	r := br.Send("POST", "/api/accounts/connect", map[string]any{"platform": "twitter_x"}, br.CSRFHeader())
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "/api/accounts/x")
	r = h.Do("POST", "/v1/workspaces/main/connect-links", map[string]any{"platforms": []string{"twitter_x"}})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "twitter_x is not configured on this server")
	r = h.Do("POST", "/v1/workspaces/main/connect-links", map[string]any{"platforms": []string{"bluesky"}})
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "bluesky connects with credentials the user brings")
}
