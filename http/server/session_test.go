package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// The dashboard door's middleware (session.go) as a browser meets it, through a whole Herald
// (apptest): the CSRF check, the two doors, the security headers and the cookie's Secure flag.

// Every state-changing /api request needs the session's CSRF token, in the header or, for a
// form, in the csrf_token field.
func TestCSRF(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	for name, hdr := range map[string]http.Header{
		"missing": nil,
		"wrong":   {"X-Csrf-Token": {strings.Repeat("A", 43)}},
		"empty":   {"X-Csrf-Token": {""}},
	} {
		r := br.Send("PATCH", "/api/profile", map[string]any{"name": "Mallory"}, hdr)
		require.Equal(t, 403, r.Status, name)
		require.Equal(t, "forbidden", r.ErrorCode(t), name)
		r = br.Send("DELETE", "/api/session", nil, hdr)
		require.Equal(t, 403, r.Status, name)
	}
	r := br.Send("POST", "/signout", url.Values{"csrf_token": {"wrong"}}, nil)
	require.Equal(t, 403, r.Status)
	require.Equal(t, 200, br.Send("GET", "/api/me", nil, nil).Status, "still signed in, nothing changed")
	r = h.Do("GET", "/v1/me", nil)
	require.Nil(t, r.JSON(t)["name"])

	// The form field works where the header is not sent.
	r = br.Send("POST", "/signout", url.Values{"csrf_token": {br.CSRF}}, nil)
	require.Equal(t, 303, r.Status, string(r.Body))
	require.Equal(t, "/signin", r.Header.Get("Location"))
	require.Equal(t, 401, br.Send("GET", "/api/me", nil, nil).Status)
}

// The two doors: an API key never opens /api/*, a session cookie never opens /v1/*.
func TestTwoDoors(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	r := br.Send("GET", "/v1/me", nil, nil)
	require.Equal(t, 401, r.Status, "a cookie alone on /v1")
	require.Equal(t, "invalid_api_key", r.ErrorCode(t))

	bearer := http.Header{"Authorization": {"Bearer " + h.Key}}
	r = h.NewBrowser().Send("GET", "/api/me", nil, bearer)
	require.Equal(t, 401, r.Status, "a key on /api")
	require.Equal(t, "unauthorized", r.ErrorCode(t))
	r = br.Send("GET", "/api/me", nil, bearer)
	require.Equal(t, 401, r.Status, "a key next to a valid cookie is refused too")
	r = h.NewBrowser().Send("GET", "/api/session", nil, bearer)
	require.Equal(t, 401, r.Status)
	require.Equal(t, 200, h.Do("GET", "/v1/me", nil).Status, "the key still opens /v1")
}

// HSTS and Secure cookies behind an https base URL.
func TestHTTPSBaseURL(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Config: func(c *app.Config) { c.BaseURL = "https://herald.example" }})
	r := h.NewBrowser().SignIn(h.User.Email, h.Password)
	require.Equal(t, 200, r.Status)
	require.Contains(t, r.Header.Get("Strict-Transport-Security"), "max-age=")
	require.Contains(t, r.Header.Get("Set-Cookie"), "Secure")
}

// Answers that leave before the /api group's middleware (the body limit's 413, an unknown
// path's 404, a method the route does not take) carry the security headers too; /v1's do not.
func TestSecurityHeadersOnEarlyRefusals(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	big := make([]byte, 3<<20)
	for name, c := range map[string]struct {
		method, path string
		body         any
		status       int
	}{
		"declared body over the cap": {"POST", "/api/posts", big, 413},
		"unknown /api path":          {"GET", "/api/nothing-here", nil, 404},
		"unknown page":               {"GET", "/nothing-here", nil, 404},
		"method not taken":           {"PUT", "/api/session", nil, 405},
	} {
		r := br.Send(c.method, c.path, c.body, br.CSRFHeader())
		require.Equal(t, c.status, r.Status, "%s: %s", name, r.Body)
		apptest.RequireSecurityHeaders(t, r)
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"), name)
	}
	r := h.Do("GET", "/v1/nothing-here", nil)
	require.Equal(t, 404, r.Status)
	require.Empty(t, r.Header.Get("Content-Security-Policy"), "/v1 answers are not the dashboard's")
}
