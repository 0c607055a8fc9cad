package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
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
