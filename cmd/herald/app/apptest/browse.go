package apptest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/accountlink"
)

// The browser routes answer with HTML pages; the validator reads them as text.
func init() { openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder) }

// ConnectURL starts a connection and returns the authorization_url.
func (h *Herald) ConnectURL(platform string) string {
	h.T.Helper()
	r := h.Do("POST", "/v1/accounts/connect", map[string]any{"platform": platform})
	require.Equal(h.T, 200, r.Status, string(r.Body))
	u := r.JSON(h.T)["authorization_url"].(string)
	require.True(h.T, strings.HasPrefix(u, h.URL+accountlink.AuthorizePath+"?state="), u)
	return u
}

// Browse opens u the way `curl -L -b jar` does: following every redirect, with the cookies of
// the user signed in to the dashboard and no API key. It returns the last response and
// every URL visited.
func (h *Herald) Browse(u string) (*Response, []*url.URL) {
	h.T.Helper()
	return h.BrowseWith(h.SignedIn().Client.Jar, u)
}

// BrowseWith is Browse with another browser's cookies (nil: none).
func (h *Herald) BrowseWith(jar http.CookieJar, u string) (*Response, []*url.URL) {
	h.T.Helper()
	var chain []*url.URL
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		chain = append(chain, req.URL)
		if len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(h.T, err)
	chain = append(chain, req.URL)
	resp, err := c.Do(req)
	require.NoError(h.T, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(h.T, err)
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if strings.HasPrefix(resp.Request.URL.String(), h.URL) && !DashboardPath(resp.Request.URL.Path) {
		h.Validate(resp.Request, r)
	}
	return r, chain
}

// Get sends one GET without following redirects (validated when it is Herald's), with the
// cookies of the user signed in to the dashboard.
func (h *Herald) Get(u string) *Response {
	h.T.Helper()
	c := &http.Client{Jar: h.SignedIn().Client.Jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(h.T, err)
	resp, err := c.Do(req)
	require.NoError(h.T, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(h.T, err)
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if strings.HasPrefix(u, h.URL) {
		h.Validate(req, r)
	}
	return r
}

// RequirePage checks that r is an HTML page of status, not cached, that contains contains.
func RequirePage(t testing.TB, r *Response, status int, contains string) {
	t.Helper()
	require.Equal(t, status, r.Status, string(r.Body))
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/html"), r.Header.Get("Content-Type"))
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	require.Contains(t, string(r.Body), contains)
}
