package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// The browser routes answer with HTML pages; the validator reads them as text.
func init() { openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder) }

// connectURL starts a connection and returns the authorization_url.
func (b *testBundle) connectURL(platform string) string {
	b.t.Helper()
	r := b.do("POST", "/v1/accounts/connect", map[string]any{"platform": platform})
	require.Equal(b.t, 200, r.status, string(r.body))
	u := r.json(b.t)["authorization_url"].(string)
	require.True(b.t, strings.HasPrefix(u, b.url+accountlink.AuthorizePath+"?state="), u)
	return u
}

// browse opens u the way `curl -L -b jar` does: following every redirect, with the cookies of
// the bundle's user signed in to the dashboard and no API key. It returns the last response and
// every URL visited.
func (b *testBundle) browse(u string) (*response, []*url.URL) {
	b.t.Helper()
	return b.browseWith(b.signedIn().client.Jar, u)
}

// browseWith is browse with another browser's cookies (nil: none).
func (b *testBundle) browseWith(jar http.CookieJar, u string) (*response, []*url.URL) {
	b.t.Helper()
	var chain []*url.URL
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		chain = append(chain, req.URL)
		if len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(b.t, err)
	chain = append(chain, req.URL)
	resp, err := c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	r := &response{status: resp.StatusCode, header: resp.Header, body: body}
	if strings.HasPrefix(resp.Request.URL.String(), b.url) && !dashboardPath(resp.Request.URL.Path) {
		b.validate(resp.Request, r)
	}
	return r, chain
}

// get sends one GET without following redirects (validated when it is Herald's), with the
// cookies of the bundle's user signed in to the dashboard.
func (b *testBundle) get(u string) *response {
	b.t.Helper()
	c := &http.Client{Jar: b.signedIn().client.Jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest("GET", u, nil)
	require.NoError(b.t, err)
	resp, err := c.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	r := &response{status: resp.StatusCode, header: resp.Header, body: body}
	if strings.HasPrefix(u, b.url) {
		b.validate(req, r)
	}
	return r
}

// listed returns the accounts GET /v1/accounts shows on a platform, apart from those setup made.
func (b *testBundle) listed(platform string) []map[string]any {
	b.t.Helper()
	r := b.do("GET", "/v1/accounts", nil)
	require.Equal(b.t, 200, r.status)
	premade := map[string]bool{}
	for _, a := range b.accounts {
		premade[a.ID] = true
	}
	var out []map[string]any
	for _, a := range r.json(b.t)["data"].([]any) {
		m := a.(map[string]any)
		if m["platform"] == platform && !premade[m["id"].(string)] {
			out = append(out, m)
		}
	}
	return out
}

// accountCount counts every stored account of every user.
func (b *testBundle) accountCount() int {
	b.t.Helper()
	n := 0
	for _, u := range []string{b.user.ID} {
		require.NoError(b.t, b.app.Store.View(func(tx *persistence.Tx) error {
			l, err := tx.AccountsOfUser(u)
			n += len(l)
			return err
		}))
	}
	return n
}

func (b *testBundle) simPost(path string, body any) {
	b.t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(b.t, err)
	resp, err := http.Post(b.app.Sim.BaseURL()+path, "application/json", bytes.NewReader(raw))
	require.NoError(b.t, err)
	_ = resp.Body.Close()
	require.Equal(b.t, 200, resp.StatusCode)
}

func requirePage(t *testing.T, r *response, status int, contains string) {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	require.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "text/html"), r.header.Get("Content-Type"))
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	require.Contains(t, string(r.body), contains)
}

// The whole browser flow, followed like `curl -L`, on each of the seven browser networks of the
// sandbox simulator: the account appears in GET /v1/accounts, with PKCE where the network takes it.
func TestConnectFlowEveryBrowserNetwork(t *testing.T) { //nolint:tparallel // the cases run in turn against one Herald and its simulator
	t.Parallel()
	b := setup(t, bundleOpts{sandbox: true})
	for _, p := range accountlink.Browser {
		t.Run(string(p), func(t *testing.T) {
			b := *b
			b.t = t
			require.Empty(t, b.listed(string(p)))
			r, chain := b.browse(b.connectURL(string(p)))
			requirePage(t, r, 200, "is now connected to Herald")
			require.GreaterOrEqual(t, len(chain), 3, "Herald → network consent page → Herald callback")
			consent := chain[1]
			require.True(t, strings.HasPrefix(consent.String(), b.app.Sim.BaseURL()+sim.Prefix(p)), consent.String())
			require.Equal(t, b.url+accountlink.CallbackPath, consent.Query().Get("redirect_uri"))
			require.NotEmpty(t, consent.Query().Get("state"))
			if p == platforms.YouTube || p == platforms.TikTok {
				require.Len(t, consent.Query().Get("code_challenge"), 43, "PKCE S256 challenge")
				require.Equal(t, "S256", consent.Query().Get("code_challenge_method"))
			} else {
				require.Empty(t, consent.Query().Get("code_challenge"))
			}
			require.Equal(t, accountlink.CallbackPath, chain[len(chain)-1].Path)

			got := b.listed(string(p))
			require.Len(t, got, 1)
			require.Equal(t, true, got[0]["is_active"])
			require.NotNil(t, got[0]["username"])
			require.Contains(t, []any{"ok", "expiring_soon"}, got[0]["token_status"])
			// The stored account holds sealed tokens and the network's id of the user.
			var acc *persistence.Account
			require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) (err error) {
				acc, err = tx.Account(got[0]["id"].(string))
				return err
			}))
			require.NotEmpty(t, acc.NetworkUserID)
			require.NotEmpty(t, acc.Secret)
			require.NotContains(t, string(acc.Secret), "access_token")
		})
	}
}

// Connecting the same network user again renews the tokens of the existing account; another
// network user on the same network is another account.
func TestConnectAgainUpdatesInsteadOfDuplicating(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{sandbox: true})
	r, _ := b.browse(b.connectURL("linkedin"))
	requirePage(t, r, 200, "is now connected")
	first := b.listed("linkedin")
	require.Len(t, first, 1)
	id := first[0]["id"].(string)
	sealed := func() []byte {
		var acc *persistence.Account
		require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) (err error) {
			acc, err = tx.Account(id)
			return err
		}))
		return acc.Secret
	}
	before := sealed()

	r, _ = b.browse(b.connectURL("linkedin"))
	requirePage(t, r, 200, "its access was renewed")
	again := b.listed("linkedin")
	require.Len(t, again, 1, "never a duplicate")
	require.Equal(t, id, again[0]["id"])
	require.Equal(t, first[0]["created_at"], again[0]["created_at"])
	require.NotEqual(t, before, sealed(), "the tokens were replaced")

	// Step by step, naming another simulated network user on the consent page.
	loc := b.get(b.connectURL("linkedin")).header.Get("Location")
	consent, err := url.Parse(loc)
	require.NoError(t, err)
	q := consent.Query()
	q.Set("login_hint", "someone-else")
	consent.RawQuery = q.Encode()
	r, _ = b.browse(consent.String())
	requirePage(t, r, 200, "is now connected")
	require.Len(t, b.listed("linkedin"), 2)
}

func TestConnectFailuresCreateNothing(t *testing.T) { //nolint:tparallel // each case checks that no account was created, which a case running beside it would change
	t.Parallel()
	b := setup(t, bundleOpts{sandbox: true})
	accounts := b.accountCount()
	nothingCreated := func(t *testing.T) {
		t.Helper()
		require.Equal(t, accounts, b.accountCount())
		require.Empty(t, b.listed("linkedin"))
	}

	t.Run("consent refused", func(t *testing.T) {
		b.simPost("/_sim/consent", map[string]any{"platform": "linkedin", "deny": true})
		r, chain := b.browse(b.connectURL("linkedin"))
		requirePage(t, r, 403, "Access was refused on LinkedIn")
		require.Equal(t, "access_denied", chain[len(chain)-1].Query().Get("error"))
		nothingCreated(t)
	})

	t.Run("tampered state", func(t *testing.T) {
		prefix := b.url + accountlink.AuthorizePath + "?state="
		state := strings.TrimPrefix(b.connectURL("linkedin"), prefix)
		require.Len(t, state, 75)
		for _, bad := range []string{
			prefix + state[:10] + flip(state[10]) + state[11:], // the id or expiry altered
			prefix + state[:74] + flip(state[74]),              // the signature altered
			prefix + state[:60],
			prefix + state + "AAAA",
			prefix,
			b.url + accountlink.AuthorizePath,
		} {
			requirePage(t, b.get(bad), 400, "This connection link is not valid")
		}
		forged := state[:10] + flip(state[10]) + state[11:]
		r := b.get(b.url + accountlink.CallbackPath + "?code=anything&state=" + url.QueryEscape(forged))
		requirePage(t, r, 400, "not valid")
		r = b.get(b.url + accountlink.CallbackPath + "?code=anything")
		requirePage(t, r, 400, "not valid")
		nothingCreated(t)
	})

	t.Run("state of another server", func(t *testing.T) {
		other := setup(t, bundleOpts{sandbox: true})
		u := other.connectURL("linkedin")
		state := strings.TrimPrefix(u, other.url+accountlink.AuthorizePath+"?state=")
		requirePage(t, b.get(b.url+accountlink.AuthorizePath+"?state="+state), 400, "not issued by this Herald server")
		nothingCreated(t)
	})

	t.Run("expired state", func(t *testing.T) {
		u, err := b.app.Connect.Begin(context.Background(), b.user.ID, platforms.LinkedIn, time.Now().Add(-accountlink.StateTTL-time.Second))
		require.NoError(t, err)
		requirePage(t, b.get(u), 410, "has expired")
		state := strings.TrimPrefix(u, b.url+accountlink.AuthorizePath+"?state=")
		requirePage(t, b.get(b.url+accountlink.CallbackPath+"?code=x&state="+state), 410, "has expired")
		nothingCreated(t)
	})

	t.Run("replayed callback", func(t *testing.T) {
		r, chain := b.browse(b.connectURL("pinterest"))
		requirePage(t, r, 200, "is now connected")
		callback := chain[len(chain)-1]
		require.Equal(t, accountlink.CallbackPath, callback.Path)
		n := b.accountCount()
		requirePage(t, b.get(callback.String()), 410, "already used")
		require.Equal(t, n, b.accountCount())
		require.Len(t, b.listed("pinterest"), 1)
		// The authorization_url of a used state refuses too.
		requirePage(t, b.get(b.url+accountlink.AuthorizePath+"?state="+url.QueryEscape(callback.Query().Get("state"))), 410, "already used")
		accounts = n
	})

	t.Run("code the network refuses", func(t *testing.T) {
		consent := b.get(b.connectURL("linkedin")).header.Get("Location")
		back := b.get(consent).header.Get("Location")
		cb, err := url.Parse(back)
		require.NoError(t, err)
		require.NotEmpty(t, cb.Query().Get("code"))
		q := cb.Query()
		q.Set("code", "not-a-code-linkedin-issued")
		cb.RawQuery = q.Encode()
		requirePage(t, b.get(cb.String()), 400, "LinkedIn refused the connection")
		nothingCreated(t)
		// The state was used up by that attempt: the genuine code cannot follow.
		requirePage(t, b.get(back), 410, "already used")
		nothingCreated(t)
	})

	t.Run("network down during the exchange", func(t *testing.T) {
		// The token call is spared by the simulator's faults; the profile read that follows it fails.
		b.simPost("/_sim/faults", map[string]any{"platform": "linkedin", "fault": "error_5xx", "count": 1})
		r, _ := b.browse(b.connectURL("linkedin"))
		requirePage(t, r, 502, "LinkedIn could not be reached")
		nothingCreated(t)
	})

	t.Run("error from the network", func(t *testing.T) {
		u := b.connectURL("threads")
		state := strings.TrimPrefix(u, b.url+accountlink.AuthorizePath+"?state=")
		r := b.get(b.url + accountlink.CallbackPath + "?error=server_error&error_description=" + url.QueryEscape("<b>busy</b>") + "&state=" + state)
		requirePage(t, r, 400, "server_error: &lt;b&gt;busy&lt;/b&gt;")
		nothingCreated(t)
		requirePage(t, b.get(b.url+accountlink.CallbackPath+"?state="+state), 410, "already used")
	})

	t.Run("no code", func(t *testing.T) {
		u := b.connectURL("tiktok")
		state := strings.TrimPrefix(u, b.url+accountlink.AuthorizePath+"?state=")
		requirePage(t, b.get(b.url+accountlink.CallbackPath+"?state="+state), 400, "neither a code nor an error")
		nothingCreated(t)
	})
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// POST /v1/accounts/connect refuses bad input with validation_error and starts nothing.
func TestConnectValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{sandbox: true})
	for _, tc := range []struct {
		name string
		body any
		msg  string
	}{
		{"unknown platform", map[string]any{"platform": "myspace"}, "platform: Invalid enum value. Expected 'linkedin' | 'instagram' | 'youtube' | 'pinterest' | 'tiktok' | 'threads' | 'facebook', received 'myspace'"},
		{"missing platform", map[string]any{}, "platform: Required"},
		{"platform not a string", map[string]any{"platform": 7}, "platform: Expected string, received number"},
		{"empty body", "", "Expected object, received nothing"},
		{"plain text", "linkedin", "Expected object, received string"},
		{"array", []string{"linkedin"}, "Expected object, received array"},
		{"malformed JSON", `{"platform":`, "Malformed JSON"},
		{"twitter_x", map[string]any{"platform": "twitter_x"}, "platform: twitter_x is not connected through the API"},
		{"bluesky", map[string]any{"platform": "bluesky"}, "platform: bluesky is not connected through the API"},
	} {
		r := b.do("POST", "/v1/accounts/connect", tc.body)
		require.Equal(t, 400, r.status, tc.name)
		require.Equal(t, "validation_error", r.errorCode(t), tc.name)
		require.Contains(t, r.errorMessage(t), tc.msg, tc.name)
	}
	r := b.doKey("", "POST", "/v1/accounts/connect", map[string]any{"platform": "linkedin"}, nil)
	require.Equal(t, 401, r.status)
	require.Equal(t, "invalid_api_key", r.errorCode(t))
}

// Without an OAuth client for a network (outside sandbox mode, none is configured here), connect
// refuses that network.
func TestConnectUnconfiguredNetwork(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	r := b.do("POST", "/v1/accounts/connect", map[string]any{"platform": "linkedin"})
	require.Equal(t, 400, r.status)
	require.Equal(t, "validation_error", r.errorCode(t))
	require.Contains(t, r.errorMessage(t), "not configured on this server")
}

// herald accounts add through the admin socket uses the server's adapters (here the sandbox
// simulator's): Bluesky with a handle and app password, X with the user's own client and tokens.
func TestAccountsAddThroughAdminSocket(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{sandbox: true, adminSocket: true})
	c := admin.Dial(b.app.Cfg.DataDir)
	require.NotNil(t, c)
	before := len(b.listed("bluesky"))

	var out app.AccountOut
	err := c.Do("POST", "/accounts", accountlink.Add{Email: b.user.Email, Platform: "bluesky", Handle: "alice.bsky.social", AppPassword: "abcd-efgh-ijkl-mnop"}, &out)
	require.NoError(t, err)
	require.Equal(t, "bluesky", out.Platform)
	require.Equal(t, "alice.bsky.social", *out.Username)
	require.True(t, *out.Created)
	require.True(t, strings.HasPrefix(out.NetworkUserID, "did:"), out.NetworkUserID)
	require.Len(t, b.listed("bluesky"), before+1)

	// The same handle again renews the session of the same account.
	var again app.AccountOut
	require.NoError(t, c.Do("POST", "/accounts", accountlink.Add{Email: b.user.Email, Platform: "bluesky", Handle: "alice.bsky.social", AppPassword: "abcd-efgh-ijkl-mnop"}, &again))
	require.Equal(t, out.ID, again.ID)
	require.False(t, *again.Created)
	require.Len(t, b.listed("bluesky"), before+1)

	// A wrong app password is refused with the network's reason, and creates nothing.
	err = c.Do("POST", "/accounts", accountlink.Add{Email: b.user.Email, Platform: "bluesky", Handle: "bob.bsky.social", AppPassword: "wrong"}, &out)
	require.ErrorContains(t, err, "invalid handle or app password")
	require.Len(t, b.listed("bluesky"), before+1)

	// X: tokens issued to the user's own client; Identify names the account.
	creds, err := b.app.Sim.NewAccount(platforms.X, "xwriter")
	require.NoError(t, err)
	var x app.AccountOut
	require.NoError(t, c.Do("POST", "/accounts", accountlink.Add{Email: b.user.Email, Platform: "twitter_x", ClientID: sim.ClientID,
		AccessToken: creds.AccessToken, RefreshToken: creds.RefreshToken, ExpiresIn: 7200}, &x))
	require.Equal(t, "xwriter", *x.Username)
	require.Equal(t, creds.UserID, x.NetworkUserID)
	require.NotNil(t, x.AccessTokenExpiresAt, "the access token's expiry is kept")
	require.WithinDuration(t, time.Now().Add(7200*time.Second), *x.AccessTokenExpiresAt, time.Minute)
	require.Nil(t, x.TokenExpiresAt, "Herald refreshes it, and the user gave no refresh token expiry: nothing to act on")
	require.Equal(t, "ok", *x.TokenStatus)
	err = c.Do("POST", "/accounts", accountlink.Add{Email: b.user.Email, Platform: "twitter_x", ClientID: sim.ClientID, AccessToken: "not-a-token"}, &x)
	require.ErrorContains(t, err, "twitter_x refused the connection")

	for _, bad := range []accountlink.Add{
		{Email: "nobody@example.com", Platform: "bluesky", Handle: "a.bsky.social", AppPassword: "abcd-efgh-ijkl-mnop"},
		{Email: b.user.Email, Platform: "bluesky", Handle: "a.bsky.social"},
		{Email: b.user.Email, Platform: "twitter_x", AccessToken: "t"},
		{Email: b.user.Email, Platform: "linkedin"},
		{Email: b.user.Email, Platform: "myspace"},
	} {
		require.Error(t, c.Do("POST", "/accounts", bad, &out), "%+v", bad)
	}

	var list []app.AccountOut
	require.NoError(t, c.Do("GET", "/accounts?email="+url.QueryEscape(b.user.Email), nil, &list))
	require.Len(t, list, len(b.do("GET", "/v1/accounts", nil).json(t)["data"].([]any)))
}

// herald accounts add without a server: the account tools are built on the data directory, with
// the networks pointed at a simulator; a server started afterwards opens the sealed tokens.
func TestAccountsAddOffline(t *testing.T) {
	t.Parallel()
	s, err := sim.Start("127.0.0.1:0", sim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	dir := t.TempDir()
	store, err := persistence.Open(dir, persistence.Options{})
	require.NoError(t, err)
	cfg := app.Config{DataDir: dir, Networks: app.SimNetworks(s.BaseURL())}
	tools, err := app.OpenAccountTools(cfg, store)
	require.NoError(t, err)
	ctx := context.Background()

	_, err = app.AddAccount(ctx, tools.Connect, accountlink.Add{Email: "owner@example.com", Platform: "bluesky", Handle: "alice.bsky.social", AppPassword: "abcd-efgh-ijkl-mnop"})
	require.ErrorIs(t, err, accountlink.ErrUnknownUser)
	require.NoError(t, store.Update(ctx, func(tx *persistence.Tx) error {
		return tx.CreateUser(&persistence.User{ID: "0190a6f0-0000-7000-8000-000000000001", Email: "owner@example.com", Plan: "pro", Timezone: "UTC", CreatedAt: time.Now()})
	}))
	out, err := app.AddAccount(ctx, tools.Connect, accountlink.Add{Email: "owner@example.com", Platform: "bluesky", Handle: "alice.bsky.social", AppPassword: "abcd-efgh-ijkl-mnop"})
	require.NoError(t, err)
	require.True(t, *out.Created)
	_, err = app.AddAccount(ctx, tools.Connect, accountlink.Add{Email: "owner@example.com", Platform: "bluesky", Handle: "alice.bsky.social", AppPassword: "nope"})
	require.ErrorContains(t, err, "invalid handle or app password")
	list, err := app.ListAccounts(tools.Connect, "owner@example.com")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.NoError(t, tools.Close())
	require.NoError(t, store.Close())

	// The server built on the directory reads the account and can open its tokens.
	a, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: dir, Log: discardLog(), NoAdminSocket: true, Networks: cfg.Networks})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	var acc *persistence.Account
	require.NoError(t, a.Store.View(func(tx *persistence.Tx) (err error) {
		acc, err = tx.Account(out.ID)
		return err
	}))
	plain, err := a.Box.Open(acc.Secret)
	require.NoError(t, err)
	require.Contains(t, string(plain), out.NetworkUserID)
}
