package oauth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The consent page offers a read-only approval beside full access: it grants service:read
// only, whose tokens the MCP door takes with that scope alone; the form keeps its CSRF check
// and the page escapes what the client wrote.
func TestReadOnlyConsent(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	cb := "https://claude.ai/api/mcp/auth_callback"
	id := b.registerClient(`Claude <b>"x"</b>`, cb)
	_, challenge := pkcePair("r")
	q := b.authRequest(id, cb, challenge)
	page := b.page(q, b.cookie)
	require.Equal(t, 200, page.status)
	body := string(page.body)
	require.Contains(t, body, `value="approve_read"`)
	require.Contains(t, body, `value="approve"`)
	require.Contains(t, body, "Claude &lt;b&gt;&#34;x&#34;&lt;/b&gt;")
	require.NotContains(t, body, "<b>")

	tok := b.grant(id, cb, "approve_read")
	require.Equal(t, "service:read", tok["scope"])
	p, err := b.svc.VerifyBearer("Bearer "+tok["access_token"].(string), b.svc.MCPResource())
	require.NoError(t, err)
	require.Equal(t, []string{"service:read"}, p.Scopes)
	// Its refresh keeps the read-only scope.
	r := b.refresh(id, tok["refresh_token"].(string))
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "service:read", r.json(t)["scope"])

	// Without the CSRF token the read-only approval is refused like the other.
	form := b.authRequest(id, cb, challenge)
	form.Set("decision", "approve_read")
	req, err := http.NewRequest(http.MethodPost, b.url+AuthorizePath, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(b.cookie)
	require.Equal(t, 403, b.do(req).status)

	// A request for reads only has no read-only choice; posting one anyway is refused.
	q.Set("scope", "service:read")
	page = b.page(q, b.cookie)
	require.Equal(t, 200, page.status)
	require.NotContains(t, string(page.body), `value="approve_read"`)
	form = url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(page.body), -1) {
		form.Add(m[1], htmlUnescape(m[2]))
	}
	form.Set("decision", "approve_read")
	req, err = http.NewRequest(http.MethodPost, b.url+AuthorizePath, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(b.cookie)
	require.Equal(t, 400, b.do(req).status)
}

func TestReadOnlyScopes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"service:read service:write":    "service:read",
		"service:write":                 "service:read",
		"me:read posts:write":           "me:read posts:read",
		"posts:read posts:write":        "posts:read",
		"media:write":                   "",
		"service:read":                  "",
		"me:read accounts:read":         "",
		"webhooks:write accounts:write": "webhooks:read accounts:read",
	} {
		require.Equal(t, want, strings.Join(readOnly(strings.Fields(in)), " "), in)
	}
}
