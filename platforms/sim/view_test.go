package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// The page of one publication shows what the network received, escaped, and answers 404 for an
// id the simulator never published; JSON on request.
func TestPublicationPage(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetBaseURL(srv.URL)
	s.networks[platforms.Bluesky].PublishWith("at://did:plc:demo/app.bsky.feed.post/3k", "did:plc:demo",
		`<script>alert("x")</script> & more`, []string{"abc123"}, map[string]any{"langs": "en"}, []string{"<b>alt</b>"})

	get := func(path, accept string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, res.Header, string(b)
	}

	path := PublicationPath(platforms.Bluesky, "at://did:plc:demo/app.bsky.feed.post/3k")
	require.Equal(t, "/_sim/publication?id=at%3A%2F%2Fdid%3Aplc%3Ademo%2Fapp.bsky.feed.post%2F3k&platform=bluesky", path)
	status, h, body := get(path, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
	require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; more")
	require.NotContains(t, body, "<script>")
	require.Contains(t, body, "alt text: &lt;b&gt;alt&lt;/b&gt;")
	require.Contains(t, body, "sha256 abc123")
	require.Contains(t, body, "not the real network")

	status, _, body = get(path, "application/json")
	require.Equal(t, http.StatusOK, status)
	var rec Record
	require.NoError(t, json.Unmarshal([]byte(body), &rec))
	require.Equal(t, "did:plc:demo", rec.Account)

	// Another network's id, an unknown id, a bad query.
	status, _, body = get(PublicationPath(platforms.X, "at://did:plc:demo/app.bsky.feed.post/3k"), "")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, "no record of this publication")
	status, _, _ = get("/_sim/publication?platform=nowhere&id=1", "")
	require.Equal(t, http.StatusBadRequest, status)
	status, _, _ = get("/_sim/publication?platform=x", "")
	require.Equal(t, http.StatusBadRequest, status)
}
