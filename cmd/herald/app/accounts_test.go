// The account tools of `herald accounts add` are tested here rather than beside http/accountlink:
// they are the binary's command-line wiring (app.AddAccount, app.OpenAccountTools, app.AccountOut,
// the admin socket's /accounts routes and app.SimNetworks), which only cmd/herald/app has.

package app_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

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
