package app_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// cheapPasswords and passwordOf are apptest's.
var cheapPasswords = apptest.CheapPasswords

func passwordOf(email string) string { return apptest.PasswordOf(email) }

// browser is a person's browser (apptest.Browser), its requests answered as the wiring's tests
// read them.
type browser struct {
	*apptest.Browser
	b      *testBundle
	client *http.Client
}

func (b *testBundle) wrap(br *apptest.Browser) *browser {
	return &browser{Browser: br, b: b, client: br.Client}
}

func (b *testBundle) newBrowser() *browser {
	b.t.Helper()
	return b.wrap(b.h.NewBrowser())
}

// signedIn is the browser of the bundle's user, signed in on first use.
func (b *testBundle) signedIn() *browser {
	b.t.Helper()
	return b.wrap(b.h.SignedIn())
}

func asResponse(r *apptest.Response) *response {
	return &response{status: r.Status, header: r.Header, body: r.Body}
}

// send sends one request from the browser. body is JSON (any), a url.Values form, or raw bytes.
func (br *browser) send(method, path string, body any, hdr http.Header) *response {
	br.b.t.Helper()
	return asResponse(br.Send(method, path, body, hdr))
}

// csrfHeader carries the session's CSRF token.
func (br *browser) csrfHeader() http.Header { return br.CSRFHeader() }

// signIn posts the JSON sign-in and keeps the CSRF token of a success.
func (br *browser) signIn(email, password string) *response {
	br.b.t.Helper()
	return asResponse(br.SignIn(email, password))
}

// sessionClock is the sessions' injected clock.
type sessionClock = apptest.Clock

func withSessionClock(c *sessionClock) func(*app.Config) {
	return func(cfg *app.Config) { cfg.SessionClock = c.Now }
}

func requireSecurityHeaders(t *testing.T, r *response) {
	t.Helper()
	apptest.RequireSecurityHeaders(t, r.api())
}

// The HTML sign-in form: a plain form, no script, posted as a form; next must be a path on this
// server; a cross-site post is refused; a huge form is refused in the error shape.
func TestSignInForm(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.newBrowser()
	r := br.send("GET", "/signin?next="+url.QueryEscape("/v1/accounts/connect/authorize?state=x"), nil, nil)
	require.Equal(t, 200, r.status)
	requireSecurityHeaders(t, r)
	page := string(r.body)
	require.Contains(t, page, `<form method="post" action="/signin">`)
	require.Contains(t, page, `value="/v1/accounts/connect/authorize?state=x"`)
	require.NotContains(t, page, "<script")

	form := url.Values{"email": {b.user.Email}, "password": {"wrong password"}, "next": {"/api/me"}}
	r = br.send("POST", "/signin", form, nil)
	require.Equal(t, 401, r.status)
	require.Contains(t, string(r.body), "invalid e-mail or password")

	for _, next := range []string{"//evil.example", "https://evil.example", "/\\evil.example", "http:/evil.example", "evil.example"} {
		form = url.Values{"email": {b.user.Email}, "password": {b.password}, "next": {next}}
		r = b.newBrowser().send("POST", "/signin", form, nil)
		require.Equal(t, 303, r.status, next)
		require.Equal(t, "/", r.header.Get("Location"), "the open redirect %q is refused: the overview instead", next)
		page := string(b.newBrowser().send("GET", "/signin?next="+url.QueryEscape(next), nil, nil).body)
		require.NotContains(t, page, "evil.example", next)
	}
	form = url.Values{"email": {b.user.Email}, "password": {b.password}, "next": {"/api/me"}}
	r = br.send("POST", "/signin", form, nil)
	require.Equal(t, 303, r.status)
	require.Equal(t, "/api/me", r.header.Get("Location"))
	require.Equal(t, 200, br.send("GET", "/api/me", nil, nil).status, "the cookie was set")
	r = br.send("GET", "/signin", nil, nil)
	require.Contains(t, string(r.body), "signed in to Herald as owner@example.com")

	// Cross-site sign-in posts are refused, as a form and as JSON.
	for _, hdr := range []http.Header{{"Origin": {"https://evil.example"}}, {"Sec-Fetch-Site": {"cross-site"}}, {"Origin": {"null"}}} {
		r = b.newBrowser().send("POST", "/signin", form, hdr)
		require.Equal(t, 403, r.status, "%v", hdr)
		r = b.newBrowser().send("POST", "/api/session", map[string]any{"email": b.user.Email, "password": b.password}, hdr)
		require.Equal(t, 403, r.status, "%v", hdr)
		require.Equal(t, "forbidden", r.errorCode(t))
		require.Empty(t, r.header.Values("Set-Cookie"))
	}
	r = b.newBrowser().send("POST", "/api/session", map[string]any{"email": b.user.Email, "password": b.password},
		http.Header{"Origin": {b.url}, "Sec-Fetch-Site": {"same-origin"}})
	require.Equal(t, 200, r.status, "Herald's own origin")

	// A 2 MiB form.
	big := url.Values{"email": {b.user.Email}, "password": {strings.Repeat("x", 2<<20)}}
	r = b.newBrowser().send("POST", "/signin", big, nil)
	require.Equal(t, 413, r.status)
	require.Equal(t, "validation_error", r.errorCode(t))
	r = b.newBrowser().send("POST", "/api/session", map[string]any{"email": b.user.Email, "password": strings.Repeat("x", 2<<20)}, nil)
	require.Equal(t, 413, r.status)
	require.Equal(t, "validation_error", r.errorCode(t))
}

// The connect link is bound to the browser's session: a link made by A opened with B's session
// connects nothing to either; opened signed out it ends at the sign-in page; opened with A's
// session it connects to A.
func TestConnectLinkForwardingFails(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{sandbox: true})
	mallory, _ := b.newUser("mallory@example.com", "pro")
	victim := b.newBrowser()
	require.Equal(t, 200, victim.signIn(mallory.Email, passwordOf(mallory.Email)).status)
	countOf := func(userID string) int {
		var n int
		require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
			l, err := tx.AccountsOfUser(userID)
			n = len(l)
			return err
		}))
		return n
	}
	ownerBefore, malloryBefore := countOf(b.user.ID), countOf(mallory.ID)

	// A's link opened in B's browser.
	link := b.connectURL("linkedin")
	r, chain := b.browseWith(victim.client.Jar, link)
	requirePage(t, r, 403, "belongs to another Herald user")
	require.Len(t, chain, 1, "never sent to the network's consent page")
	// Even the consent page's URL, taken from A's own browser and forwarded, connects nothing.
	consent := b.get(link).header.Get("Location")
	require.Contains(t, consent, b.app.Sim.BaseURL())
	r, chain = b.browseWith(victim.client.Jar, consent)
	requirePage(t, r, 403, "belongs to another Herald user")
	require.Contains(t, chain[len(chain)-1].Path, "/callback")
	require.Equal(t, ownerBefore, countOf(b.user.ID))
	require.Equal(t, malloryBefore, countOf(mallory.ID))

	// Signed out: the sign-in page, which comes back to the link.
	r, chain = b.browseWith(nil, link)
	require.Equal(t, 200, r.status)
	last := chain[len(chain)-1]
	require.Equal(t, "/signin", last.Path)
	require.Equal(t, strings.TrimPrefix(link, b.url), last.Query().Get("next"))
	require.Contains(t, string(r.body), `action="/signin"`)
	require.Equal(t, ownerBefore, countOf(b.user.ID))

	// A signs in through that form and lands on the link, which connects to A.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.PostForm(b.url+"/signin", url.Values{"email": {b.user.Email}, "password": {b.password}, "next": {last.Query().Get("next")}})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Contains(t, string(body), "LinkedIn is connected")
	require.Equal(t, ownerBefore+1, countOf(b.user.ID))
	require.Equal(t, malloryBefore, countOf(mallory.ID))
}
