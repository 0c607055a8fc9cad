package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/persistence/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testClock is the service's clock, moved by the test.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testBundle is the authorization server on a real store and a real HTTP server on loopback,
// with a signed-in user (a dashboard session in the store).
type testBundle struct {
	t      *testing.T
	store  *persistence.Store
	svc    *Service
	srv    *server.Server
	authn  *auth.Authenticator
	url    string
	clock  *testClock
	reg    *prometheus.Registry
	user   *persistence.User
	cookie *http.Cookie
	csrf   string
	http   *http.Client // no cookies, no redirects followed
}

type bundleOpts struct {
	egress  *webhook.Guard
	perHour int
	trusted []netip.Prefix // the server's trusted proxies
}

func setup(t *testing.T, o bundleOpts) *testBundle {
	t.Helper()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	b := &testBundle{t: t, store: store, clock: &testClock{now: time.Now().UTC()}, reg: prometheus.NewRegistry()}
	sessions, err := session.New(session.Config{Store: store, Now: b.clock.Now})
	require.NoError(t, err)
	b.authn = auth.NewAuthenticator(store, b.clock.Now)
	base := func() string { return b.url }
	b.srv = server.New(server.Config{Auth: b.authn, Sessions: sessions, BaseURL: base, TrustedProxies: o.trusted})
	key := make([]byte, 32)
	box, err := secret.NewBox(key)
	require.NoError(t, err)
	b.svc = New(Config{Server: b.srv, Store: store, Auth: b.authn, BaseURL: base, Now: b.clock.Now, Registry: b.reg,
		Sealer: box, Egress: o.egress, RegistrationsPerHour: o.perHour})
	b.svc.Register()
	hs := httptest.NewServer(b.srv.Echo)
	t.Cleanup(hs.Close)
	b.url = hs.URL
	b.http = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	b.user, b.cookie, b.csrf = b.signIn("user@example.com")
	return b
}

// signIn stores a user and a dashboard session of theirs; it returns the session's cookie.
func (b *testBundle) signIn(email string) (*persistence.User, *http.Cookie, string) {
	b.t.Helper()
	u := &persistence.User{ID: uuid.Must(uuid.NewV7()).String(), Email: email, Plan: "free", CreatedAt: b.clock.Now()}
	token, csrf := uuid.NewString(), uuid.NewString()
	require.NoError(b.t, b.store.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		now := b.clock.Now()
		return tx.PutSession(session.HashToken(token), &persistence.Session{UserID: u.ID, CreatedAt: now, LastSeenAt: now, CSRFToken: csrf})
	}))
	return u, &http.Cookie{Name: session.CookieName, Value: token}, csrf
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

func (b *testBundle) do(req *http.Request) *response {
	b.t.Helper()
	resp, err := b.http.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return &response{status: resp.StatusCode, header: resp.Header, body: out}
}

func (b *testBundle) post(path, ct, body string, mod ...func(*http.Request)) *response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(body))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", ct)
	for _, m := range mod {
		m(req)
	}
	return b.do(req)
}

// register registers a client and returns the answer.
func (b *testBundle) register(body string, mod ...func(*http.Request)) *response {
	b.t.Helper()
	return b.post(RegisterPath, "application/json", body, mod...)
}

func (b *testBundle) registerClient(name string, uris ...string) string {
	b.t.Helper()
	bs, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": uris})
	r := b.register(string(bs))
	require.Equal(b.t, 201, r.status, string(r.body))
	return r.json(b.t)["client_id"].(string)
}

func (b *testBundle) token(form url.Values) *response {
	return b.post(TokenPath, "application/x-www-form-urlencoded", form.Encode())
}

func pkcePair(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 64)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authRequest is an authorization request's parameters for the MCP endpoint.
func (b *testBundle) authRequest(clientID, redirect, challenge string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"st-1"},
		"resource": {b.url + MCPPath}, "scope": {"service:read service:write"}}
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&#43;", "+").Replace(s)
}

// page loads the consent page as the signed-in user.
func (b *testBundle) page(q url.Values, cookie *http.Cookie) *response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.url+AuthorizePath+"?"+q.Encode(), nil)
	require.NoError(b.t, err)
	req.AddCookie(cookie)
	return b.do(req)
}

// consent loads the consent page and posts its form with decision; it returns the redirect's
// Location.
func (b *testBundle) consent(q url.Values, decision string, cookie *http.Cookie) *url.URL {
	b.t.Helper()
	page := b.page(q, cookie)
	require.Equal(b.t, 200, page.status, string(page.body))
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(string(page.body), -1) {
		form.Add(m[1], htmlUnescape(m[2]))
	}
	require.NotEmpty(b.t, form.Get("csrf_token"))
	form.Set("decision", decision)
	req, err := http.NewRequest(http.MethodPost, b.url+AuthorizePath, strings.NewReader(form.Encode()))
	require.NoError(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	r := b.do(req)
	require.Equal(b.t, 303, r.status, string(r.body))
	loc, err := url.Parse(r.header.Get("Location"))
	require.NoError(b.t, err)
	return loc
}

// grant runs the whole flow for a client and returns the token answer.
func (b *testBundle) grant(clientID, redirect, decision string) map[string]any {
	b.t.Helper()
	verifier, challenge := pkcePair("v")
	loc := b.consent(b.authRequest(clientID, redirect, challenge), decision, b.cookie)
	code := loc.Query().Get("code")
	require.NotEmpty(b.t, code, loc.String())
	r := b.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"redirect_uri": {redirect}, "client_id": {clientID}, "resource": {b.url + MCPPath}})
	require.Equal(b.t, 200, r.status, string(r.body))
	return r.json(b.t)
}

func (b *testBundle) refresh(clientID, rt string) *response {
	return b.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}})
}

// live reports whether an access token is accepted at the MCP endpoint's door.
func (b *testBundle) live(access string) bool {
	_, err := b.svc.VerifyBearer("Bearer "+access, b.svc.MCPResource())
	return err == nil
}

// connectorKeys returns the user's connector keys that are not revoked.
func (b *testBundle) connectorKeys(userID string) []*persistence.APIKey {
	b.t.Helper()
	var out []*persistence.APIKey
	require.NoError(b.t, b.store.View(func(tx *persistence.Tx) error {
		keys, err := tx.APIKeysOfUser(userID)
		for _, k := range keys {
			if k.Kind == persistence.KeyKindConnector && k.RevokedAt == nil {
				out = append(out, k)
			}
		}
		return err
	}))
	return out
}

// metric returns one sample of a counter as the registry gathers it, 0 when absent.
func (b *testBundle) metric(name string, labels map[string]string) float64 {
	b.t.Helper()
	mfs, err := b.reg.Gather()
	require.NoError(b.t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
