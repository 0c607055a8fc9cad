package accountlink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// listed returns the accounts GET /v1/accounts shows on a platform, apart from those setup made.
func listed(h *apptest.Herald, platform string) []map[string]any {
	h.T.Helper()
	r := h.Do("GET", "/v1/accounts", nil)
	require.Equal(h.T, 200, r.Status)
	premade := map[string]bool{}
	for _, a := range h.Accounts {
		premade[a.ID] = true
	}
	var out []map[string]any
	for _, a := range r.JSON(h.T)["data"].([]any) {
		m := a.(map[string]any)
		if m["platform"] == platform && !premade[m["id"].(string)] {
			out = append(out, m)
		}
	}
	return out
}

// accountCount counts every stored account of every user.
func accountCount(h *apptest.Herald) int {
	h.T.Helper()
	n := 0
	for _, u := range []string{h.User.ID} {
		require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) error {
			l, err := tx.AccountsIn(u)
			n += len(l)
			return err
		}))
	}
	return n
}

func simPost(h *apptest.Herald, path string, body any) {
	h.T.Helper()
	raw, err := json.Marshal(body)
	require.NoError(h.T, err)
	resp, err := http.Post(h.App.Sim.BaseURL()+path, "application/json", bytes.NewReader(raw))
	require.NoError(h.T, err)
	_ = resp.Body.Close()
	require.Equal(h.T, 200, resp.StatusCode)
}

// The whole browser flow, followed like `curl -L`, on each of the seven browser networks of the
// sandbox simulator: the account appears in GET /v1/accounts, with PKCE where the network takes it.
func TestConnectFlowEveryBrowserNetwork(t *testing.T) { //nolint:tparallel // the cases run in turn against one Herald and its simulator
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	for _, p := range accountlink.Browser {
		t.Run(string(p), func(t *testing.T) {
			h := h.In(t)
			require.Empty(t, listed(h, string(p)))
			r, chain := h.Browse(h.ConnectURL(string(p)))
			apptest.RequirePage(t, r, 200, "is now connected to Herald")
			require.GreaterOrEqual(t, len(chain), 3, "Herald → network consent page → Herald callback")
			consent := chain[1]
			require.True(t, strings.HasPrefix(consent.String(), h.App.Sim.BaseURL()+sim.Prefix(p)), consent.String())
			require.Equal(t, h.URL+accountlink.CallbackPath, consent.Query().Get("redirect_uri"))
			require.NotEmpty(t, consent.Query().Get("state"))
			if p == platforms.YouTube || p == platforms.TikTok {
				require.Len(t, consent.Query().Get("code_challenge"), 43, "PKCE S256 challenge")
				require.Equal(t, "S256", consent.Query().Get("code_challenge_method"))
			} else {
				require.Empty(t, consent.Query().Get("code_challenge"))
			}
			require.Equal(t, accountlink.CallbackPath, chain[len(chain)-1].Path)

			got := listed(h, string(p))
			require.Len(t, got, 1)
			require.Equal(t, true, got[0]["is_active"])
			require.NotNil(t, got[0]["username"])
			require.Contains(t, []any{"ok", "expiring_soon"}, got[0]["token_status"])
			// The stored account holds sealed tokens and the network's id of the user.
			var acc *persistence.Account
			require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) (err error) {
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
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	r, _ := h.Browse(h.ConnectURL("linkedin"))
	apptest.RequirePage(t, r, 200, "is now connected")
	first := listed(h, "linkedin")
	require.Len(t, first, 1)
	id := first[0]["id"].(string)
	sealed := func() []byte {
		var acc *persistence.Account
		require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) (err error) {
			acc, err = tx.Account(id)
			return err
		}))
		return acc.Secret
	}
	before := sealed()

	r, _ = h.Browse(h.ConnectURL("linkedin"))
	apptest.RequirePage(t, r, 200, "its access was renewed")
	again := listed(h, "linkedin")
	require.Len(t, again, 1, "never a duplicate")
	require.Equal(t, id, again[0]["id"])
	require.Equal(t, first[0]["created_at"], again[0]["created_at"])
	require.NotEqual(t, before, sealed(), "the tokens were replaced")

	// Step by step, naming another simulated network user on the consent page.
	loc := h.Get(h.ConnectURL("linkedin")).Header.Get("Location")
	consent, err := url.Parse(loc)
	require.NoError(t, err)
	q := consent.Query()
	q.Set("login_hint", "someone-else")
	consent.RawQuery = q.Encode()
	r, _ = h.Browse(consent.String())
	apptest.RequirePage(t, r, 200, "is now connected")
	require.Len(t, listed(h, "linkedin"), 2)
}

func TestConnectFailuresCreateNothing(t *testing.T) { //nolint:tparallel // each case checks that no account was created, which a case running beside it would change
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	accounts := accountCount(h)
	nothingCreated := func(t *testing.T) {
		t.Helper()
		require.Equal(t, accounts, accountCount(h))
		require.Empty(t, listed(h, "linkedin"))
	}

	t.Run("consent refused", func(t *testing.T) {
		simPost(h, "/_sim/consent", map[string]any{"platform": "linkedin", "deny": true})
		r, chain := h.Browse(h.ConnectURL("linkedin"))
		apptest.RequirePage(t, r, 403, "Access was refused on LinkedIn")
		require.Equal(t, "access_denied", chain[len(chain)-1].Query().Get("error"))
		nothingCreated(t)
	})

	t.Run("tampered state", func(t *testing.T) {
		prefix := h.URL + accountlink.AuthorizePath + "?state="
		state := strings.TrimPrefix(h.ConnectURL("linkedin"), prefix)
		require.Len(t, state, 75)
		for _, bad := range []string{
			prefix + state[:10] + flip(state[10]) + state[11:], // the id or expiry altered
			prefix + state[:74] + flip(state[74]),              // the signature altered
			prefix + state[:60],
			prefix + state + "AAAA",
			prefix,
			h.URL + accountlink.AuthorizePath,
		} {
			apptest.RequirePage(t, h.Get(bad), 400, "This connection link is not valid")
		}
		forged := state[:10] + flip(state[10]) + state[11:]
		r := h.Get(h.URL + accountlink.CallbackPath + "?code=anything&state=" + url.QueryEscape(forged))
		apptest.RequirePage(t, r, 400, "not valid")
		r = h.Get(h.URL + accountlink.CallbackPath + "?code=anything")
		apptest.RequirePage(t, r, 400, "not valid")
		nothingCreated(t)
	})

	t.Run("state of another server", func(t *testing.T) {
		other := apptest.Start(t, apptest.Options{Sandbox: true})
		u := other.ConnectURL("linkedin")
		state := strings.TrimPrefix(u, other.URL+accountlink.AuthorizePath+"?state=")
		apptest.RequirePage(t, h.Get(h.URL+accountlink.AuthorizePath+"?state="+state), 400, "not issued by this Herald server")
		nothingCreated(t)
	})

	t.Run("expired state", func(t *testing.T) {
		u, err := h.App.Connect.Begin(context.Background(), h.User.ID, "", platforms.LinkedIn, time.Now().Add(-accountlink.StateTTL-time.Second))
		require.NoError(t, err)
		apptest.RequirePage(t, h.Get(u), 410, "has expired")
		state := strings.TrimPrefix(u, h.URL+accountlink.AuthorizePath+"?state=")
		apptest.RequirePage(t, h.Get(h.URL+accountlink.CallbackPath+"?code=x&state="+state), 410, "has expired")
		nothingCreated(t)
	})

	t.Run("replayed callback", func(t *testing.T) {
		r, chain := h.Browse(h.ConnectURL("pinterest"))
		apptest.RequirePage(t, r, 200, "is now connected")
		callback := chain[len(chain)-1]
		require.Equal(t, accountlink.CallbackPath, callback.Path)
		n := accountCount(h)
		apptest.RequirePage(t, h.Get(callback.String()), 410, "already used")
		require.Equal(t, n, accountCount(h))
		require.Len(t, listed(h, "pinterest"), 1)
		// The authorization_url of a used state refuses too.
		apptest.RequirePage(t, h.Get(h.URL+accountlink.AuthorizePath+"?state="+url.QueryEscape(callback.Query().Get("state"))), 410, "already used")
		accounts = n
	})

	t.Run("code the network refuses", func(t *testing.T) {
		consent := h.Get(h.ConnectURL("linkedin")).Header.Get("Location")
		back := h.Get(consent).Header.Get("Location")
		cb, err := url.Parse(back)
		require.NoError(t, err)
		require.NotEmpty(t, cb.Query().Get("code"))
		q := cb.Query()
		q.Set("code", "not-a-code-linkedin-issued")
		cb.RawQuery = q.Encode()
		apptest.RequirePage(t, h.Get(cb.String()), 400, "LinkedIn refused the connection")
		nothingCreated(t)
		// The state was used up by that attempt: the genuine code cannot follow.
		apptest.RequirePage(t, h.Get(back), 410, "already used")
		nothingCreated(t)
	})

	t.Run("network down during the exchange", func(t *testing.T) {
		// The token call is spared by the simulator's faults; the profile read that follows it fails.
		simPost(h, "/_sim/faults", map[string]any{"platform": "linkedin", "fault": "error_5xx", "count": 1})
		r, _ := h.Browse(h.ConnectURL("linkedin"))
		apptest.RequirePage(t, r, 502, "LinkedIn could not be reached")
		nothingCreated(t)
	})

	t.Run("error from the network", func(t *testing.T) {
		u := h.ConnectURL("threads")
		state := strings.TrimPrefix(u, h.URL+accountlink.AuthorizePath+"?state=")
		r := h.Get(h.URL + accountlink.CallbackPath + "?error=server_error&error_description=" + url.QueryEscape("<b>busy</b>") + "&state=" + state)
		apptest.RequirePage(t, r, 400, "server_error: &lt;b&gt;busy&lt;/b&gt;")
		nothingCreated(t)
		apptest.RequirePage(t, h.Get(h.URL+accountlink.CallbackPath+"?state="+state), 410, "already used")
	})

	t.Run("no code", func(t *testing.T) {
		u := h.ConnectURL("tiktok")
		state := strings.TrimPrefix(u, h.URL+accountlink.AuthorizePath+"?state=")
		apptest.RequirePage(t, h.Get(h.URL+accountlink.CallbackPath+"?state="+state), 400, "neither a code nor an error")
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
	h := apptest.Start(t, apptest.Options{Sandbox: true})
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
		r := h.Do("POST", "/v1/accounts/connect", tc.body)
		require.Equal(t, 400, r.Status, tc.name)
		require.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
		require.Contains(t, r.ErrorMessage(t), tc.msg, tc.name)
	}
	r := h.DoKey("", "POST", "/v1/accounts/connect", map[string]any{"platform": "linkedin"}, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "invalid_api_key", r.ErrorCode(t))
}

// Without an OAuth client for a network (outside sandbox mode, none is configured here), connect
// refuses that network.
func TestConnectUnconfiguredNetwork(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	r := h.Do("POST", "/v1/accounts/connect", map[string]any{"platform": "linkedin"})
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "not configured on this server")
}
