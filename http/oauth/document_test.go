package oauth

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/persistence"
)

// docServer serves client ID metadata documents over TLS on loopback, counting the fetches.
type docServer struct {
	*httptest.Server
	mu      sync.Mutex
	docs    map[string]string
	fetches atomic.Int32
}

func newDocServer(t *testing.T) *docServer {
	d := &docServer{docs: map[string]string{}}
	d.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.fetches.Add(1)
		d.mu.Lock()
		doc, ok := d.docs[r.URL.Path]
		d.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(d.Close)
	return d
}

// put publishes a document at path; {id} in it is the document's own URL.
func (d *docServer) put(path, doc string) string {
	id := d.URL + path
	d.mu.Lock()
	d.docs[path] = strings.ReplaceAll(doc, "{id}", id)
	d.mu.Unlock()
	return id
}

// guard is the webhooks' egress as the webhook tests use it: loopback allowed, the test
// server's certificate trusted.
func (d *docServer) guard() *webhook.Guard {
	pool := x509.NewCertPool()
	pool.AddCert(d.Certificate())
	return webhook.NewGuard(webhook.EgressOptions{AllowPrivate: true, RootCAs: pool})
}

// A client whose client_id is the URL of its metadata document is authorized without
// registering: the document is fetched through the egress once and cached, its redirect URIs
// are checked as registered ones, and its tokens are issued and refreshed under that id.
func TestClientIDMetadataDocument(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	b := setup(t, bundleOpts{egress: d.guard()})
	meta := b.do(mustGet(t, b.url+AuthorizationServerPath)).json(t)
	require.Equal(t, true, meta["client_id_metadata_document_supported"])

	id := d.put("/oauth/client.json", `{"client_id":"{id}","client_name":"Doc Host","redirect_uris":["https://app.example/cb","http://127.0.0.1:9/cb"],`+
		`"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`)
	_, challenge := pkcePair("d")
	page := b.page(b.authRequest(id, "https://app.example/cb", challenge), b.cookie)
	require.Equal(t, 200, page.status, string(page.body))
	u, _ := url.Parse(id)
	require.Contains(t, string(page.body), "Connect Doc Host?")
	require.Contains(t, string(page.body), "published by <strong>"+u.Host+"</strong>")

	tok := b.grant(id, "https://app.example/cb", "approve")
	require.True(t, b.live(tok["access_token"].(string)))
	// As the Go SDK sends it for such a client: the URL, form-encoded, as Basic's user name.
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":"))
	r := b.post(TokenPath, "application/x-www-form-urlencoded", url.Values{"grant_type": {"refresh_token"},
		"refresh_token": {tok["refresh_token"].(string)}}.Encode(), func(req *http.Request) { req.Header.Set("Authorization", "Basic "+basic) })
	require.Equal(t, 200, r.status, string(r.body))
	keys := b.connectorKeys(b.user.ID)
	require.Len(t, keys, 1)
	require.Equal(t, id, keys[0].ClientID)
	require.Equal(t, "MCP connector: Doc Host", keys[0].Name)
	// A loopback redirect of the document on another port.
	verifier, challenge := pkcePair("e")
	loc := b.consent(b.authRequest(id, "http://127.0.0.1:5555/cb", challenge), "approve", b.cookie)
	require.Equal(t, "127.0.0.1:5555", loc.Host)
	r = b.token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {"http://127.0.0.1:5555/cb"}, "client_id": {id}})
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, int32(1), d.fetches.Load(), "fetched once, then cached")
	require.Equal(t, 1.0, b.metric("herald_oauth_client_documents_total", map[string]string{"outcome": "accepted"}))

	// An address the document does not list is refused, never redirected to.
	r = b.page(b.authRequest(id, "https://evil.example/cb", challenge), b.cookie)
	require.Equal(t, 400, r.status)
	require.Empty(t, r.header.Get("Location"))

	refused := map[string][2]string{
		"/mismatch.json": {`{"client_id":"https://other.example/client.json","redirect_uris":["https://app.example/cb"]}`, "differs from the URL"},
		"/secret.json":   {`{"client_id":"{id}","client_secret":"s3cret","redirect_uris":["https://app.example/cb"]}`, "client_secret"},
		"/jwt.json":      {`{"client_id":"{id}","token_endpoint_auth_method":"private_key_jwt","redirect_uris":["https://app.example/cb"]}`, "must be none"},
		"/wild.json":     {`{"client_id":"{id}","redirect_uris":["https://*/cb"]}`, "not a host name"},
		"/none.json":     {`{"client_id":"{id}"}`, "1 to 10 URIs"},
		"/array.json":    {`["{id}"]`, "not a JSON object"},
		"/large.json":    {`{"client_id":"{id}","redirect_uris":["https://app.example/cb"],"client_name":"` + strings.Repeat("x", MaxDocumentBytes) + `"}`, "larger than 5120 bytes"},
	}
	for path, c := range refused {
		id := d.put(path, c[0])
		r := b.page(b.authRequest(id, "https://app.example/cb", challenge), b.cookie)
		require.Equal(t, 400, r.status, path)
		require.Contains(t, htmlUnescape(string(r.body)), c[1], path)
		require.Empty(t, r.header.Get("Location"), path)
	}
	for _, id := range []string{d.URL + "/missing.json", d.URL + "/", d.URL, d.URL + "/a/../client.json", d.URL + "/client.json?x=1"} {
		r := b.page(b.authRequest(id, "https://app.example/cb", challenge), b.cookie)
		require.Equal(t, 400, r.status, id)
	}
}

// Under the egress's own rules (no private addresses), a document on loopback is refused
// before anything is fetched; without an egress, documents are not supported at all.
func TestClientIDMetadataDocumentEgress(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	id := d.put("/client.json", `{"client_id":"{id}","redirect_uris":["https://app.example/cb"]}`)
	b := setup(t, bundleOpts{egress: webhook.NewGuard(webhook.EgressOptions{})})
	_, challenge := pkcePair("f")
	r := b.page(b.authRequest(id, "https://app.example/cb", challenge), b.cookie)
	require.Equal(t, 400, r.status)
	require.Contains(t, string(r.body), "not allowed")
	require.Zero(t, d.fetches.Load())

	plain := setup(t, bundleOpts{})
	require.Equal(t, false, plain.do(mustGet(t, plain.url+AuthorizationServerPath)).json(t)["client_id_metadata_document_supported"])
	r = plain.page(plain.authRequest(id, "https://app.example/cb", challenge), plain.cookie)
	require.Equal(t, 400, r.status)
	require.Zero(t, d.fetches.Load())
}

// The cache holds at most maxDocuments entries.
func TestDocumentCacheBound(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	c := b.svc.documents
	for i := range maxDocuments + 50 {
		c.get(t.Context(), fmt.Sprintf("https://h.example/%d", i), func(context.Context) (*persistence.OAuthClient, string, string) {
			return nil, "no", "failed"
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.LessOrEqual(t, len(c.entries), maxDocuments)
}

func mustGet(t *testing.T, u string) *http.Request {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	return req
}
