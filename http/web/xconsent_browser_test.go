package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// With an X app (the sandbox's), the Accounts page offers X among the networks that connect on
// their own page: X's consent (the simulator's) connects an X account, which reconnects from its
// row through the same consent; connect links may offer X; the token form stays, folded, for a
// team with an X app of its own.
func TestBrowserXConsent(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/accounts")
	tb.do(chromedp.WaitVisible(chromedp.CSS(`button.connect-twitter_x`)))
	require.False(t, eval[bool](tb, `document.getElementById('x-tokens').open`))
	require.False(t, eval[bool](tb, `document.getElementById('x-client').checkVisibility()`), "the token form is folded")
	require.True(t, eval[bool](tb, `!!document.querySelector('#link-form input[value="twitter_x"]')`), "a connect link may offer X")
	tb.shoot(dir, "accounts-with-x-app")
	tb.shootSection(dir, "x-card", `#cred-twitter_x`)

	tb.do(chromedp.Click(chromedp.CSS(`button.connect-twitter_x`)), chromedp.WaitVisible(chromedp.CSS(`#back-to-accounts`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`h1`))), "X")
	tb.shoot(dir, "x-connected")
	acc := listedAccount(t, h, platforms.X, "sim-user")
	require.NotNil(t, acc, "the X account is connected")
	id := acc["id"].(string)
	require.Equal(t, true, acc["is_active"])

	// X refused the token for good: the row offers Reconnect, through X's consent again.
	require.NoError(t, h.app.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		a, err := tx.Account(id)
		if err != nil {
			return err
		}
		a.IsActive, a.ReconnectReason = false, "X refused the refresh token"
		return tx.PutAccount(a)
	}))
	tb.do(chromedp.Click(chromedp.CSS(`#back-to-accounts`)), chromedp.WaitVisible(chromedp.CSS(`#acc-`+id+` form.reconnect button`)))
	tb.shoot(dir, "x-to-reconnect")
	tb.do(chromedp.Click(chromedp.CSS(`#acc-`+id+` form.reconnect button`)), chromedp.WaitVisible(chromedp.CSS(`#back-to-accounts`)))
	acc = listedAccount(t, h, platforms.X, "sim-user")
	require.Equal(t, id, acc["id"], "the same account, reconnected")
	require.Equal(t, true, acc["is_active"])
	tb.noErrors()
}

// Without an X app, the Accounts page keeps X's token form open and says why: no X button among
// the networks that connect on their own page, none in the connect link's choices, and X
// accounts are reconnected through the form.
func TestBrowserAccountsWithoutAnXApp(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	x := h.Account(platforms.X)
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		x.IsActive = false
		return tx.PutAccount(x)
	}))
	r := h.SignedIn().Send("GET", "/accounts", nil, nil)
	require.Equal(t, 200, r.Status)
	body := string(r.Body)
	require.NotContains(t, body, "connect-twitter_x")
	require.NotContains(t, body, `value="twitter_x" data-array`)
	require.NotContains(t, body, `id="x-tokens"`, "the form is not folded")
	require.Contains(t, body, `data-api="/api/accounts/x"`)
	require.Contains(t, body, "This Herald server has no X app of its own")
	require.Contains(t, body, `href="#cred-twitter_x"`, "the inactive X account's Reconnect goes to the form")
	require.Equal(t, 7, strings.Count(body, `class="connect connect-`), "the seven browser networks' buttons")

	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.URL, h.User.Email, h.Password, "/accounts")
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#x-client`)))
	tb.shootSection(dir, "x-card-without-app", `#cred-twitter_x`)
	tb.noErrors()
}
