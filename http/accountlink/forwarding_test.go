package accountlink_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// The connect link is bound to the browser's session: a link made by A opened with B's session
// connects nothing to either; opened signed out it ends at the sign-in page; opened with A's
// session it connects to A.
func TestConnectLinkForwardingFails(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	mallory, _ := h.NewUser("mallory@example.com", "pro")
	victim := h.NewBrowser()
	require.Equal(t, 200, victim.SignIn(mallory.Email, apptest.PasswordOf(mallory.Email)).Status)
	countOf := func(userID string) int {
		var n int
		require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
			l, err := tx.AccountsIn(userID)
			n = len(l)
			return err
		}))
		return n
	}
	ownerBefore, malloryBefore := countOf(h.User.ID), countOf(mallory.ID)

	// A's link opened in B's browser.
	link := h.ConnectURL("linkedin")
	r, chain := h.BrowseWith(victim.Client.Jar, link)
	apptest.RequirePage(t, r, 403, "belongs to another Herald user")
	require.Len(t, chain, 1, "never sent to the network's consent page")
	// Even the consent page's URL, taken from A's own browser and forwarded, connects nothing.
	consent := h.Get(link).Header.Get("Location")
	require.Contains(t, consent, h.App.Sim.BaseURL())
	r, chain = h.BrowseWith(victim.Client.Jar, consent)
	apptest.RequirePage(t, r, 403, "belongs to another Herald user")
	require.Contains(t, chain[len(chain)-1].Path, "/callback")
	require.Equal(t, ownerBefore, countOf(h.User.ID))
	require.Equal(t, malloryBefore, countOf(mallory.ID))

	// Signed out: the sign-in page, which comes back to the link.
	r, chain = h.BrowseWith(nil, link)
	require.Equal(t, 200, r.Status)
	last := chain[len(chain)-1]
	require.Equal(t, "/signin", last.Path)
	require.Equal(t, strings.TrimPrefix(link, h.URL), last.Query().Get("next"))
	require.Contains(t, string(r.Body), `action="/signin"`)
	require.Equal(t, ownerBefore, countOf(h.User.ID))

	// A signs in through that form and lands on the link, which connects to A.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.PostForm(h.URL+"/signin", url.Values{"email": {h.User.Email}, "password": {h.Password}, "next": {last.Query().Get("next")}})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Contains(t, string(body), "LinkedIn is connected")
	require.Equal(t, ownerBefore+1, countOf(h.User.ID))
	require.Equal(t, malloryBefore, countOf(mallory.ID))
}
