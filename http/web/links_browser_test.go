package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// The agency creates a connect link on the Accounts page (shown once, with a copy button); a
// client's browser with no Herald session opens it, sees who asks, and connects LinkedIn through
// the network's consent; the agency sees the use and revokes the link.
func TestBrowserConnectLink(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	owner := newTab(t)
	dir := screenshots(t)
	owner.signIn(h.url, h.user.Email, h.password, "/accounts")

	owner.do(
		chromedp.Click(chromedp.CSS(`#link-form input[value="linkedin"]`)),
		chromedp.SetValue(chromedp.CSS(`#link-hours`), "48"),
		chromedp.SendKeys(chromedp.CSS(`#link-note`), "For the spring campaign"),
		chromedp.Click(chromedp.CSS(`#link-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	link := get(owner, chromedp.Text(chromedp.CSS(`#reveal-value`)))
	require.True(t, strings.HasPrefix(link, h.url+"/connect/l/"), link)
	require.True(t, eval[bool](owner, `!!document.querySelector('#secret-reveal button[data-copy="#reveal-value"]')`))
	owner.shoot(dir, "link-created")
	owner.shootSection(dir, "link-created-section", `#connect-links`)
	owner.noErrors()

	var before int
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		l, err := tx.AccountsIn(h.user.ID)
		before = len(l)
		return err
	}))

	client := newTab(t) // a browser of its own: no Herald session
	client.do(chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`#link-networks`)))
	require.NotNil(t, h.user.Name)
	require.Equal(t, "Connect an account for "+*h.user.Name, get(client, chromedp.Text(chromedp.CSS(`h1`))), "the agency: the user's name")
	require.Equal(t, persistence.MainWorkspaceName, get(client, chromedp.Text(chromedp.CSS(`#link-workspace`))))
	require.Contains(t, get(client, chromedp.Text(chromedp.CSS(`#link-note`))), "For the spring campaign")
	require.Equal(t, 1, eval[int](client, `document.querySelectorAll('#link-networks button').length`))
	client.shoot(dir, "link-page")
	client.do(
		chromedp.Click(chromedp.CSS(`#link-linkedin`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#link-networks`)),
		chromedp.WaitVisible(chromedp.CSS(`h1`)),
	)
	require.Equal(t, "LinkedIn is connected", get(client, chromedp.Text(chromedp.CSS(`h1`))))
	client.shoot(dir, "link-connected")
	client.noErrors()
	var after int
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		l, err := tx.AccountsIn(h.user.ID)
		after = len(l)
		return err
	}))
	require.GreaterOrEqual(t, after, before, "connected (or renewed: the demo user has a LinkedIn account already)")

	owner.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#links`)))
	require.Equal(t, "active", eval[string](owner, `document.querySelector('#links tbody tr').dataset.status`))
	require.Contains(t, eval[string](owner, `document.querySelector('#links tbody tr td[data-label=Uses]').textContent`), "2")
	owner.shoot(dir, "links-listed")
	owner.shootSection(dir, "links-listed-section", `#connect-links`)
	owner.do(
		chromedp.Click(chromedp.CSS(`#links tbody tr button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-dialog`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
		chromedp.WaitVisible(chromedp.CSS(`#links tbody tr[data-status=revoked]`)),
	)
	owner.noErrors()

	client.do(chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	require.Equal(t, "This link was withdrawn", get(client, chromedp.Text(chromedp.CSS(`h1`))))
}

// shootSection writes a screenshot of one element at a phone's width and a wide screen's.
func (tb *tab) shootSection(dir, name, sel string) {
	tb.t.Helper()
	for _, w := range []int64{390, 1280} {
		tb.do(chromedp.EmulateViewport(w, 844), chromedp.Sleep(50*time.Millisecond))
		png := get(tb, chromedp.Screenshot(chromedp.CSS(sel)))
		require.NoError(tb.t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, w)), png, 0o644))
	}
	tb.do(chromedp.EmulateViewport(1280, 900))
}
