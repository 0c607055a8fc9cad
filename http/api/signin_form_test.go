package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// The HTML sign-in form: a plain form, no script, posted as a form; next must be a path on this
// server; a cross-site post is refused; a huge form is refused in the error shape.
func TestSignInForm(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.NewBrowser()
	r := br.Send("GET", "/signin?next="+url.QueryEscape("/v1/accounts/connect/authorize?state=x"), nil, nil)
	require.Equal(t, 200, r.Status)
	apptest.RequireSecurityHeaders(t, r)
	page := string(r.Body)
	require.Contains(t, page, `<form method="post" action="/signin">`)
	require.Contains(t, page, `value="/v1/accounts/connect/authorize?state=x"`)
	require.NotContains(t, page, "<script")

	form := url.Values{"email": {h.User.Email}, "password": {"wrong password"}, "next": {"/api/me"}}
	r = br.Send("POST", "/signin", form, nil)
	require.Equal(t, 401, r.Status)
	require.Contains(t, string(r.Body), "invalid e-mail or password")

	for _, next := range []string{"//evil.example", "https://evil.example", "/\\evil.example", "http:/evil.example", "evil.example"} {
		form = url.Values{"email": {h.User.Email}, "password": {h.Password}, "next": {next}}
		r = h.NewBrowser().Send("POST", "/signin", form, nil)
		require.Equal(t, 303, r.Status, next)
		require.Equal(t, "/", r.Header.Get("Location"), "the open redirect %q is refused: the overview instead", next)
		page := string(h.NewBrowser().Send("GET", "/signin?next="+url.QueryEscape(next), nil, nil).Body)
		require.NotContains(t, page, "evil.example", next)
	}
	form = url.Values{"email": {h.User.Email}, "password": {h.Password}, "next": {"/api/me"}}
	r = br.Send("POST", "/signin", form, nil)
	require.Equal(t, 303, r.Status)
	require.Equal(t, "/api/me", r.Header.Get("Location"))
	require.Equal(t, 200, br.Send("GET", "/api/me", nil, nil).Status, "the cookie was set")
	r = br.Send("GET", "/signin", nil, nil)
	require.Contains(t, string(r.Body), "signed in to Herald as owner@example.com")

	// Cross-site sign-in posts are refused, as a form and as JSON.
	for _, hdr := range []http.Header{{"Origin": {"https://evil.example"}}, {"Sec-Fetch-Site": {"cross-site"}}, {"Origin": {"null"}}} {
		r = h.NewBrowser().Send("POST", "/signin", form, hdr)
		require.Equal(t, 403, r.Status, "%v", hdr)
		r = h.NewBrowser().Send("POST", "/api/session", map[string]any{"email": h.User.Email, "password": h.Password}, hdr)
		require.Equal(t, 403, r.Status, "%v", hdr)
		require.Equal(t, "forbidden", r.ErrorCode(t))
		require.Empty(t, r.Header.Values("Set-Cookie"))
	}
	r = h.NewBrowser().Send("POST", "/api/session", map[string]any{"email": h.User.Email, "password": h.Password},
		http.Header{"Origin": {h.URL}, "Sec-Fetch-Site": {"same-origin"}})
	require.Equal(t, 200, r.Status, "Herald's own origin")

	// A 2 MiB form.
	big := url.Values{"email": {h.User.Email}, "password": {strings.Repeat("x", 2<<20)}}
	r = h.NewBrowser().Send("POST", "/signin", big, nil)
	require.Equal(t, 413, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	r = h.NewBrowser().Send("POST", "/api/session", map[string]any{"email": h.User.Email, "password": strings.Repeat("x", 2<<20)}, nil)
	require.Equal(t, 413, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
}
