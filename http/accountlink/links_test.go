package accountlink_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// linkWorkspace stores a workspace of the owner, with at most accounts connected accounts (nil:
// no limit).
func linkWorkspace(h *apptest.Herald, name string, accounts *int) *persistence.Workspace {
	h.T.Helper()
	w := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, Name: name, CreatedAt: time.Now().UTC(),
		Limits: persistence.WorkspaceLimits{Accounts: accounts}}
	require.NoError(h.T, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutWorkspace(w) }))
	return w
}

// newLink creates a connect link of the workspace through the API and returns it.
func newLink(h *apptest.Herald, ws string, body map[string]any) map[string]any {
	h.T.Helper()
	if body == nil {
		body = map[string]any{}
	}
	r := h.Do("POST", "/v1/workspaces/"+ws+"/connect-links", body)
	require.Equal(h.T, 201, r.Status, string(r.Body))
	return r.JSON(h.T)
}

// linkOf reads a link as the API lists it.
func linkOf(h *apptest.Herald, ws, id string) map[string]any {
	h.T.Helper()
	r := h.Do("GET", "/v1/workspaces/"+ws+"/connect-links", nil)
	require.Equal(h.T, 200, r.Status, string(r.Body))
	for _, l := range r.JSON(h.T)["data"].([]any) {
		if l.(map[string]any)["id"] == id {
			return l.(map[string]any)
		}
	}
	h.T.Fatalf("no link %s", id)
	return nil
}

// client is a browser with no Herald session: the agency's client.
type client struct {
	h    *apptest.Herald
	jar  http.CookieJar
	http *http.Client // follows no redirect
}

func newClient(h *apptest.Herald) *client {
	h.T.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(h.T, err)
	return &client{h: h, jar: jar, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfInput = regexp.MustCompile(`<input type="hidden" name="csrf_token" value="([^"]*)">`)

// open opens the link's page and returns it and its form's token.
func (c *client) open(link string) (*apptest.Response, string) {
	c.h.T.Helper()
	r, _ := c.h.BrowseWith(c.jar, link)
	csrf := ""
	if m := csrfInput.FindStringSubmatch(string(r.Body)); m != nil {
		csrf = html.UnescapeString(m[1])
	}
	return r, csrf
}

// post sends a form from this browser, validated against the OpenAPI document.
func (c *client) post(path string, form url.Values) *apptest.Response {
	c.h.T.Helper()
	req, err := http.NewRequest("POST", c.h.URL+path, strings.NewReader(form.Encode()))
	require.NoError(c.h.T, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(req)
	require.NoError(c.h.T, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.h.T, err)
	r := &apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	vreq, _ := http.NewRequest("POST", c.h.URL+path, strings.NewReader(form.Encode()))
	vreq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	c.h.Validate(vreq, r)
	return r
}

// start opens the link's page and chooses platform: the network's consent URL.
func (c *client) start(link string, p platforms.Platform) string {
	c.h.T.Helper()
	page, csrf := c.open(link)
	require.Equal(c.h.T, 200, page.Status, string(page.Body))
	r := c.post(strings.TrimPrefix(link, c.h.URL), url.Values{"csrf_token": {csrf}, "platform": {string(p)}})
	require.Equal(c.h.T, 303, r.Status, string(r.Body))
	consent := r.Header.Get("Location")
	require.True(c.h.T, strings.HasPrefix(consent, c.h.App.Sim.BaseURL()), consent)
	return consent
}

// accountsIn lists the accounts of a workspace (scope).
func accountsIn(h *apptest.Herald, scope string) []*persistence.Account {
	h.T.Helper()
	var out []*persistence.Account
	require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) (err error) {
		out, err = tx.AccountsIn(scope)
		return err
	}))
	return out
}

// A client with no Herald session opens the link, sees the agency and the workspace before any
// consent, connects LinkedIn through the simulator's consent, and the account lands in the link's
// workspace; the use is recorded on the link.
func TestConnectLinkConnectsToItsWorkspace(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := linkWorkspace(h, "Acme <Shoes>", nil)
	link := newLink(h, ws.ID, map[string]any{"platforms": []string{"linkedin", "threads"}, "note": "Hello from the agency"})
	mainBefore := len(accountsIn(h, h.User.ID))

	cl := newClient(h)
	page, csrf := cl.open(link["url"].(string))
	apptest.RequirePage(t, page, 200, h.User.Email)
	body := string(page.Body)
	require.Contains(t, body, "Acme &lt;Shoes&gt;", "the workspace, escaped")
	require.Contains(t, body, "Hello from the agency")
	require.Contains(t, body, `value="linkedin"`)
	require.Contains(t, body, `value="threads"`)
	require.NotContains(t, body, `value="youtube"`, "only the link's networks")
	require.NotContains(t, body, "back-to-accounts", "no dashboard for a client")
	require.NotEmpty(t, csrf)
	require.Contains(t, page.Header.Get("Content-Security-Policy"), "form-action 'self' "+h.App.Sim.BaseURL())
	var cookie *http.Cookie
	for _, c := range page.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, accountlink.LinkCookie+"=") {
			cookie, _ = http.ParseSetCookie(c)
		}
	}
	require.NotNil(t, cookie, "the page binds the browser")
	require.True(t, cookie.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, cookie.SameSite)

	// A network the link does not offer starts nothing.
	r := cl.post("/connect/l/"+strings.TrimPrefix(link["url"].(string), h.URL+"/connect/l/"), url.Values{"csrf_token": {csrf}, "platform": {"youtube"}})
	apptest.RequirePage(t, r, 400, "does not offer")
	// A forged form token starts nothing.
	r = cl.post(strings.TrimPrefix(link["url"].(string), h.URL), url.Values{"csrf_token": {"forged"}, "platform": {"linkedin"}})
	apptest.RequirePage(t, r, 403, "Nothing was started")
	require.EqualValues(t, 0, linkOf(h, ws.ID, link["id"].(string))["uses"])

	consent := cl.start(link["url"].(string), platforms.LinkedIn)
	r, chain := h.BrowseWith(cl.jar, consent)
	apptest.RequirePage(t, r, 200, "LinkedIn is connected")
	require.Equal(t, accountlink.CallbackPath, chain[len(chain)-1].Path)
	require.NotContains(t, string(r.Body), "back-to-accounts")

	got := accountsIn(h, ws.ID)
	require.Len(t, got, 1, "the account landed in the link's workspace")
	require.Equal(t, "linkedin", got[0].Platform)
	require.Equal(t, ws.ID, got[0].WorkspaceID)
	require.Equal(t, h.User.ID, got[0].UserID)
	require.Len(t, accountsIn(h, h.User.ID), mainBefore, "nothing in main")

	l := linkOf(h, ws.ID, link["id"].(string))
	require.EqualValues(t, 2, l["uses"])
	log := l["log"].([]any)
	require.Equal(t, "started", log[0].(map[string]any)["event"])
	require.Equal(t, "connected", log[1].(map[string]any)["event"])
	require.Equal(t, "linkedin", log[1].(map[string]any)["platform"])
	require.NotNil(t, l["last_used_at"])
}

// The flow is bound to the browser that opened the link, not to a session: the consent URL (and
// so its callback) forwarded to another browser, to a browser that opened the same link itself,
// or to the agency's own signed-in browser attaches nothing and leaves the flow to its browser.
func TestConnectLinkForwardedCallbackAttachesNothing(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := linkWorkspace(h, "Acme", nil)
	link := newLink(h, ws.ID, nil)["url"].(string)
	mallory, _ := h.NewUser("mallory@example.com", "pro")
	count := func() int {
		return len(accountsIn(h, ws.ID)) + len(accountsIn(h, h.User.ID)) + len(accountsIn(h, mallory.ID))
	}
	before := count()

	victim := newClient(h)
	consent := victim.start(link, platforms.LinkedIn)

	stranger := newClient(h) // no cookie at all
	r, chain := h.BrowseWith(stranger.jar, consent)
	apptest.RequirePage(t, r, 403, "started in another browser")
	require.Equal(t, accountlink.CallbackPath, chain[len(chain)-1].Path)

	other := newClient(h) // opened the same link: a cookie of its own
	other.open(link)
	r, _ = h.BrowseWith(other.jar, consent)
	apptest.RequirePage(t, r, 403, "started in another browser")

	signedIn := h.NewBrowser() // a Herald session (mallory's), no link cookie
	require.Equal(t, 200, signedIn.SignIn(mallory.Email, apptest.PasswordOf(mallory.Email)).Status)
	r, _ = h.BrowseWith(signedIn.Client.Jar, consent)
	apptest.RequirePage(t, r, 403, "started in another browser")
	r, _ = h.BrowseWith(h.SignedIn().Client.Jar, consent)
	apptest.RequirePage(t, r, 403, "started in another browser")
	require.Equal(t, before, count(), "nothing attached to anyone")

	// The refusals did not use the flow up: its own browser still finishes it.
	r, _ = h.BrowseWith(victim.jar, consent)
	apptest.RequirePage(t, r, 200, "LinkedIn is connected")
	require.Len(t, accountsIn(h, ws.ID), 1)
	require.Equal(t, before+1, count())
}

// A consent that grants several accounts ends on the picker in the link's browser; the picker's
// form submitted from another browser connects nothing; from its own it connects to the link's
// workspace.
func TestConnectLinkForwardedPickAttachesNothing(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := linkWorkspace(h, "Acme", nil)
	link := newLink(h, ws.ID, map[string]any{"platforms": []string{"linkedin"}})["url"].(string)
	h.App.Sim.SetMember(platforms.LinkedIn, sim.MemberOrgAdmin)

	cl := newClient(h)
	r, _ := h.BrowseWith(cl.jar, cl.start(link, platforms.LinkedIn))
	apptest.RequirePage(t, r, 200, `action="`+accountlink.PickPath+`"`)
	pk := picker{page: string(r.Body)}
	for _, m := range hiddenInput.FindAllStringSubmatch(pk.page, -1) {
		if m[1] == "csrf_token" {
			pk.csrf = html.UnescapeString(m[2])
		} else {
			pk.state = html.UnescapeString(m[2])
		}
	}
	for _, m := range choiceInput.FindAllStringSubmatch(pk.page, -1) {
		pk.choices = append(pk.choices, html.UnescapeString(m[1]))
	}
	require.Len(t, pk.choices, 3)
	form := url.Values{"csrf_token": {pk.csrf}, "state": {pk.state}, "choice": pk.choices}

	stranger := newClient(h)
	r = stranger.post(accountlink.PickPath, form)
	apptest.RequirePage(t, r, 403, "started in another browser")
	other := newClient(h)
	_, otherCSRF := other.open(link)
	r = other.post(accountlink.PickPath, url.Values{"csrf_token": {otherCSRF}, "state": {pk.state}, "choice": pk.choices})
	apptest.RequirePage(t, r, 403, "started in another browser")
	r = h.SignedIn().Send("POST", accountlink.PickPath, url.Values{"csrf_token": {h.SignedIn().CSRF}, "state": {pk.state}, "choice": pk.choices}, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Empty(t, accountsIn(h, ws.ID))

	r = cl.post(accountlink.PickPath, form)
	apptest.RequirePage(t, r, 200, "is connected")
	got := accountsIn(h, ws.ID)
	require.Len(t, got, 3, "every account ticked, in the link's workspace")
	for _, a := range got {
		require.Equal(t, ws.ID, a.WorkspaceID)
	}
}

// A revoked or expired link shows a page saying so and starts nothing; a link that is not valid
// is 404.
func TestConnectLinkRevokedOrExpired(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := linkWorkspace(h, "Acme", nil)
	revoked := newLink(h, ws.ID, nil)
	expired := newLink(h, ws.ID, nil)
	cl := newClient(h)
	// The browser opens both while they work, so it holds the cookie and their forms' token.
	_, csrf := cl.open(revoked["url"].(string))
	require.NotEmpty(t, csrf)

	r := h.Do("DELETE", "/v1/workspaces/"+ws.ID+"/connect-links/"+revoked["id"].(string), nil)
	require.Equal(t, 204, r.Status)
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		l, err := tx.ConnectLink(expired["id"].(string))
		if err != nil {
			return err
		}
		l.ExpiresAt = time.Now().Add(-time.Minute).UTC()
		return tx.PutConnectLink(l)
	}))

	for _, c := range []struct {
		link   map[string]any
		status int
		says   string
	}{{revoked, 410, "withdrawn"}, {expired, 410, "expired"}} {
		page, _ := cl.open(c.link["url"].(string))
		apptest.RequirePage(t, page, c.status, c.says)
		require.NotContains(t, string(page.Body), "<form")
		r := cl.post(strings.TrimPrefix(c.link["url"].(string), h.URL), url.Values{"csrf_token": {csrf}, "platform": {"linkedin"}})
		apptest.RequirePage(t, r, c.status, c.says)
		require.EqualValues(t, 0, linkOf(h, ws.ID, c.link["id"].(string))["uses"], "nothing started")
	}
	page, _ := cl.open(h.URL + "/connect/l/" + strings.Repeat("x", 43))
	apptest.RequirePage(t, page, 404, "not valid")
	require.Empty(t, accountsIn(h, ws.ID))
}

// A link starts at most LinkStartsPerHour consents in an hour; the next is refused with 429 and
// Retry-After, starts nothing, and is recorded.
func TestConnectLinkIsRateLimited(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	ws := linkWorkspace(h, "Acme", nil)
	link := newLink(h, ws.ID, nil)
	cl := newClient(h)
	for range accountlink.LinkStartsPerHour {
		cl.start(link["url"].(string), platforms.LinkedIn)
	}
	_, csrf := cl.open(link["url"].(string))
	r := cl.post(strings.TrimPrefix(link["url"].(string), h.URL), url.Values{"csrf_token": {csrf}, "platform": {"linkedin"}})
	apptest.RequirePage(t, r, 429, "used too often")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Empty(t, r.Header.Get("Location"))
	l := linkOf(h, ws.ID, link["id"].(string))
	require.EqualValues(t, accountlink.LinkStartsPerHour+1, l["uses"])
	log := l["log"].([]any)
	last := log[len(log)-1].(map[string]any)
	require.Equal(t, "refused", last["event"])

	// Another link of the same workspace is counted apart.
	other := newLink(h, ws.ID, nil)
	cl.start(other["url"].(string), platforms.LinkedIn)
}

// A workspace at its limit of accounts: the client's consent completes on the network, the page
// says no more accounts can be connected, nothing is connected, and the refusal is recorded.
func TestConnectLinkRespectsTheWorkspaceLimit(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	zero := 0
	ws := linkWorkspace(h, "Full", &zero)
	link := newLink(h, ws.ID, nil)
	cl := newClient(h)
	r, _ := h.BrowseWith(cl.jar, cl.start(link["url"].(string), platforms.LinkedIn))
	apptest.RequirePage(t, r, 409, "No more accounts can be connected here")
	require.Empty(t, accountsIn(h, ws.ID))
	log := linkOf(h, ws.ID, link["id"].(string))["log"].([]any)
	last := log[len(log)-1].(map[string]any)
	require.Equal(t, "refused", last["event"])
	require.Contains(t, last["detail"], "limit")
}
