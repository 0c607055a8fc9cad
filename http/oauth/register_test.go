package oauth

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// claudeRegistration is the body claude.ai's connector registers with.
const claudeRegistration = `{"redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"token_endpoint_auth_method":"client_secret_post",` +
	`"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"client_name":"Claude"}`

// A registration asking for client_secret_post or client_secret_basic is registered as a public
// client, and the answer says so (token_endpoint_auth_method none, no secret); the token
// endpoint then takes the client's id from the form or from Basic credentials.
func TestRegisterSecretMethodsArePublic(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	r := b.register(claudeRegistration)
	require.Equal(t, 201, r.status, string(r.body))
	reg := r.json(t)
	require.Equal(t, "none", reg["token_endpoint_auth_method"])
	require.NotContains(t, reg, "client_secret")
	require.Equal(t, "Claude", reg["client_name"])
	require.Equal(t, []any{"https://claude.ai/api/mcp/auth_callback"}, reg["redirect_uris"])
	require.NotZero(t, reg["client_id_issued_at"])
	claude := reg["client_id"].(string)

	r = b.register(`{"client_name":"Basic","redirect_uris":["https://basic.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`)
	require.Equal(t, 201, r.status, string(r.body))
	require.Equal(t, "none", r.json(t)["token_endpoint_auth_method"])
	basic := r.json(t)["client_id"].(string)

	for _, m := range []string{"private_key_jwt", "tls_client_auth", "nonsense"} {
		r = b.register(`{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"` + m + `"}`)
		require.Equal(t, 400, r.status, m)
		require.Equal(t, "invalid_client_metadata", r.json(t)["error"], m)
	}

	// claude.ai posts its client_id (and whatever secret it holds) in the form.
	tok := b.grant(claude, "https://claude.ai/api/mcp/auth_callback", "approve")
	r = b.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)},
		"client_id": {claude}, "client_secret": {"anything"}})
	require.Equal(t, 200, r.status, string(r.body))

	// Basic credentials carry the client id as their user name.
	tok = b.grant(basic, "https://basic.example/cb", "approve")
	withBasic := func(user string) func(*http.Request) {
		return func(req *http.Request) {
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(user)+":")))
		}
	}
	r = b.post(TokenPath, "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}.Encode(), withBasic(basic))
	require.Equal(t, 200, r.status, string(r.body))
	next := r.json(t)["refresh_token"].(string)
	// A Basic user name that contradicts the form's client_id is refused.
	r = b.post(TokenPath, "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"refresh_token"}, "refresh_token": {next}, "client_id": {claude}}.Encode(), withBasic(basic))
	require.Equal(t, 400, r.status, string(r.body))
	require.Equal(t, "invalid_request", r.json(t)["error"])
}

// Registering the same metadata again is answered with the client made before; different
// metadata makes a new client.
func TestRegistrationReuse(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	first := b.register(claudeRegistration).json(t)["client_id"].(string)
	for range 3 {
		r := b.register(claudeRegistration)
		require.Equal(t, 201, r.status, string(r.body))
		require.Equal(t, first, r.json(t)["client_id"])
	}
	// The same metadata asked with another auth method is the same client: both are public.
	r := b.register(strings.Replace(claudeRegistration, "client_secret_post", "none", 1))
	require.Equal(t, first, r.json(t)["client_id"])
	other := b.registerClient("Claude", "https://claude.ai/other")
	require.NotEqual(t, first, other)
	require.NotEqual(t, first, b.registerClient("Claude Desktop", "https://claude.ai/api/mcp/auth_callback"))
	var clients int
	require.NoError(t, b.store.View(func(tx *persistence.Tx) error { clients, _, _ = tx.CountOAuth(); return nil }))
	require.Equal(t, 3, clients)
	require.Equal(t, 4.0, b.metric("herald_oauth_registrations_total", map[string]string{"outcome": "reused"}))
	require.Equal(t, 3.0, b.metric("herald_oauth_registrations_total", map[string]string{"outcome": "registered"}))
}

// The budget counts new clients per client address; a registration that finds its client is
// never refused, so a host that registers again on every authorization is never locked out.
func TestRegistrationBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{perHour: 2})
	claude := b.register(claudeRegistration).json(t)["client_id"].(string)
	b.registerClient("two", "https://two.example/cb")
	r := b.register(`{"client_name":"three","redirect_uris":["https://three.example/cb"]}`)
	require.Equal(t, 429, r.status, string(r.body))
	require.NotEmpty(t, r.header.Get("Retry-After"))
	for range 5 {
		r := b.register(claudeRegistration)
		require.Equal(t, 201, r.status, string(r.body))
		require.Equal(t, claude, r.json(t)["client_id"])
	}
	b.clock.Add(time.Hour)
	b.registerClient("three", "https://three.example/cb")
}

// Behind a trusted proxy (here: loopback, where the test's requests come from), the budget is
// counted per forwarded client address; without one, X-Forwarded-For is not believed.
func TestRegistrationBudgetPerForwardedAddress(t *testing.T) {
	t.Parallel()
	from := func(xff string) func(*http.Request) {
		return func(req *http.Request) { req.Header.Set("X-Forwarded-For", xff) }
	}
	body := func(name string) string {
		return `{"client_name":"` + name + `","redirect_uris":["https://app.example/cb"]}`
	}
	b := setup(t, bundleOpts{perHour: 2, trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	require.Equal(t, 201, b.register(body("a1"), from("192.0.2.1")).status)
	require.Equal(t, 201, b.register(body("a2"), from("192.0.2.1")).status)
	r := b.register(body("a3"), from("192.0.2.1"))
	require.Equal(t, 429, r.status, string(r.body))
	// The client's own claim in front of the proxy's entry does not move it elsewhere.
	require.Equal(t, 429, b.register(body("a3"), from("198.51.100.9, 192.0.2.1")).status)
	// Another client behind the same proxy has a budget of its own.
	require.Equal(t, 201, b.register(body("b1"), from("192.0.2.2")).status)
	require.Equal(t, 201, b.register(body("b2"), from("2001:db8:1:2::7")).status)
	require.Equal(t, 201, b.register(body("b3"), from("2001:db8:1:2::8")).status)
	require.Equal(t, 429, b.register(body("b4"), from("2001:db8:1:2::9")).status, "an IPv6 /64 is one client")

	// No trusted proxy: every request counts against the peer, whatever it claims.
	p := setup(t, bundleOpts{perHour: 2})
	require.Equal(t, 201, p.register(body("c1"), from("192.0.2.1")).status)
	require.Equal(t, 201, p.register(body("c2"), from("192.0.2.2")).status)
	require.Equal(t, 429, p.register(body("c3"), from("192.0.2.3")).status)
}

// An IPv6 client is counted by its /64, an IPv4 one by its address.
func TestRegistrationAddress(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]string{
		"192.0.2.7:5000":           "192.0.2.7",
		"[2001:db8:1:2:3::9]:5000": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:1":     "192.0.2.7",
	} {
		b := setup(t, bundleOpts{})
		req, err := http.NewRequest(http.MethodPost, "/", nil)
		require.NoError(t, err)
		req.RemoteAddr = remote
		c := b.srv.Echo.NewContext(req, nil)
		require.Equal(t, want, registrationAddress(c), remote)
	}
}

// A client never approved goes a day after its last registration; one that a grant names
// stays; registering again keeps an unused client alive.
func TestSweepUnusedClients(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	unused := b.registerClient("unused", "https://unused.example/cb")
	again := b.registerClient("again", "https://again.example/cb")
	used := b.registerClient("used", "https://used.example/cb")
	b.grant(used, "https://used.example/cb", "approve")

	b.clock.Add(20 * time.Hour)
	require.Equal(t, again, b.registerClient("again", "https://again.example/cb"))
	w, err := b.svc.Sweep(context.Background())
	require.NoError(t, err)
	require.Zero(t, w.Clients)

	b.clock.Add(5 * time.Hour) // 25 hours after the first registrations
	w, err = b.svc.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, w.Clients)
	exists := func(id string) bool {
		var err error
		require.NoError(t, b.store.View(func(tx *persistence.Tx) error { _, err = tx.OAuthClient(id); return nil }))
		return err == nil
	}
	require.False(t, exists(unused))
	require.True(t, exists(again))
	require.True(t, exists(used))
	// Registering the swept metadata makes a new client.
	require.NotEqual(t, unused, b.registerClient("unused", "https://unused.example/cb"))

	b.clock.Add(20 * time.Hour)
	w, err = b.svc.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, w.Clients)
	require.False(t, exists(again))
	require.True(t, exists(used))
}

// Approving makes one connector key per client and user: approving the same client again
// replaces it (the old grant's tokens stop), another user has their own, and a registration
// makes none.
func TestConnectorKeyPerClientAndUser(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	cb := "https://claude.ai/api/mcp/auth_callback"
	claude := b.register(claudeRegistration).json(t)["client_id"].(string)
	require.Empty(t, b.connectorKeys(b.user.ID), "registering makes no key")
	first := b.grant(claude, cb, "approve")
	require.Len(t, b.connectorKeys(b.user.ID), 1)
	for range 3 {
		require.Equal(t, claude, b.register(claudeRegistration).json(t)["client_id"])
	}
	second := b.grant(claude, cb, "approve")
	keys := b.connectorKeys(b.user.ID)
	require.Len(t, keys, 1, "approving again replaced the key")
	require.Equal(t, claude, keys[0].ClientID)
	require.False(t, b.live(first["access_token"].(string)), "the replaced key's tokens stop")
	require.True(t, b.live(second["access_token"].(string)))

	other, cookie, _ := b.signIn("other@example.com")
	_, challenge := pkcePair("o")
	require.NotEmpty(t, b.consent(b.authRequest(claude, cb, challenge), "approve", cookie).Query().Get("code"))
	require.Len(t, b.connectorKeys(other.ID), 1)
	require.Len(t, b.connectorKeys(b.user.ID), 1, "another user's approval leaves this one's key")
	require.True(t, b.live(second["access_token"].(string)))
}
