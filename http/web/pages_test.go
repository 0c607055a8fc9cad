package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

var pagePaths = []string{"/", "/compose", "/posts", "/calendar", "/approvals", "/accounts", "/developer", "/settings", "/workspaces", "/campaigns", "/analytics", "/inbox"}

// A page without a session sends the browser to the sign-in page, which comes back to it.
func TestSignedOutPagesRedirectToSignIn(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range append(pagePaths, "/posts?status=draft&search=a%20b", "/posts/"+uuid.NewString()) {
		resp, err := client.Get(h.url + p)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, p)
		require.Equal(t, "/signin?next="+url.QueryEscape(p), resp.Header.Get("Location"), p)
		require.Equal(t, server.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), p)
	}
	// An API key opens no page.
	req, _ := http.NewRequest("GET", h.url+"/", nil)
	req.Header.Set("Authorization", "Bearer "+h.key)
	resp, err := client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

// Every page answers with the dashboard's security headers, links only its own assets, and has
// no inline script or style.
func TestPagesCarryTheStrictPolicy(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	body := strings.NewReader(`{"email":"` + h.user.Email + `","password":"` + h.password + `"}`)
	resp, err := client.Post(h.url+"/api/session", "application/json", body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	for _, p := range pagePaths {
		resp, err := client.Get(h.url + p)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, p)
		require.Equal(t, server.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), p)
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), p)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), p)
		page := string(raw)
		require.Contains(t, page, `<meta name="csrf-token" content="`, p)
		require.NotContains(t, page, "<script>", p)
		require.NotContains(t, page, "<style", p)
		require.NotContains(t, page, " style=", p)
		require.NotContains(t, page, " onclick=", p)
		require.Contains(t, page, `<main id="main"`, p)
	}
	for _, a := range []string{"app.css", "app.js"} {
		resp, err := client.Get(h.url + "/static/" + a)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, a)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	}
	resp, err = client.Get(h.url + "/static/..%2fweb.go")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode)
}

// Every page renders in Chromium without a script error or a refused resource, at a phone's
// width and a wide screen's; the screenshots are written for a person to look at.
func TestBrowserEveryPage(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	// Something to show: a published post, a scheduled one, a draft.
	publish(t, h, "Hello from the overview walk", 3)
	schedule(t, h, "A post for next week", time.Now().Add(72*time.Hour))
	draft(t, h, "A draft that waits")

	tb.signIn(h.url, h.user.Email, h.password, "/")
	loc := get(tb, chromedp.Location())
	require.Equal(t, h.url+"/", loc, "signing in lands on the overview")
	titles := map[string]string{"/": "Overview", "/compose": "Compose", "/posts": "Posts", "/calendar": "Calendar",
		"/accounts": "Accounts", "/developer": "Developer", "/settings": "Settings", "/approvals": "Approvals", "/workspaces": "Workspaces", "/campaigns": "Campaigns",
		"/analytics": "Analytics", "/inbox": "Inbox"}
	for _, p := range pagePaths {
		tb.do(chromedp.Navigate(h.url+p), chromedp.WaitReady(chromedp.CSS("body")))
		h1 := get(tb, chromedp.Text(chromedp.CSS("main h1")))
		if p == "/workspaces" { // reached from the workspace switcher, not the navigation
			require.Equal(t, "Workspaces", h1)
			require.Equal(t, "/workspaces", get(tb, chromedp.AttributeValue(chromedp.CSS(`#ws-switch a[aria-current=page]`), "href")).Value)
			tb.shoot(dir, "workspaces")
			continue
		}
		current := get(tb, chromedp.Text(chromedp.CSS(`nav[aria-label=Main] a[aria-current=page]`)))
		require.Equal(t, titles[p], h1, p)
		require.Equal(t, titles[p], current, p)
		name := strings.Trim(strings.ReplaceAll(p, "/", ""), " ")
		if name == "" {
			name = "overview"
		}
		if p == "/settings" || p == "/compose" {
			n := eval[int](tb, `document.querySelectorAll('select[data-timezones] option').length`)
			require.Greater(t, n, 100, "the zone select lists the IANA zones")
		}
		tb.shoot(dir, name)
	}
	// The post page with its timeline.
	tb.do(chromedp.Navigate(h.url + "/posts"))
	first := get(tb, chromedp.AttributeValue(chromedp.CSS(`#posts a.post-text`), "href")).Value
	tb.do(chromedp.Navigate(h.url+first), chromedp.WaitNotPresent(chromedp.CSS(`#events[aria-busy]`)))
	tb.shoot(dir, "post")
	tb.noErrors()
}

// Text that users and networks wrote is shown as text: a script in a post, a username or a
// search never runs, and the page shows it literally.
func TestBrowserEscapesWhatUsersWrote(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	const evil = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`
	// A network account whose username is markup.
	name := "eve" + evil
	require.NoError(t, h.app.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		acc, err := tx.AccountsIn(h.user.ID)
		if err != nil {
			return err
		}
		acc[0].Username = &name
		return tx.PutAccount(acc[0])
	}))
	id := draft(t, h, "Hi "+evil)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/posts/"+id)
	tb.do(chromedp.WaitNotPresent(chromedp.CSS(`#events[aria-busy]`)))
	content := get(tb, chromedp.TextContent(chromedp.CSS("#post-content")))
	pwned := eval[bool](tb, `window.__pwned !== undefined`)
	require.Equal(t, "Hi "+evil, content)
	require.False(t, pwned, "no script ran")
	tb.shoot(dir, "post")
	for _, p := range []string{"/", "/accounts", "/compose", "/posts?search=" + url.QueryEscape(evil)} {
		tb.do(chromedp.Navigate(h.url+p), chromedp.WaitReady(chromedp.CSS("body")))
		// textContent, not innerText: the overview folds its account table when nothing is wrong.
		found := eval[bool](tb, `document.body.textContent.includes(`+jsString(evil)+`)`)
		pwned = eval[bool](tb, `window.__pwned !== undefined`)
		require.True(t, found, "%s shows the text literally", p)
		require.False(t, pwned, "%s ran no script", p)
	}
	n := eval[int](tb, `document.querySelectorAll('main script, main img').length`)
	require.Zero(t, n)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// An API key is created on the developer page and shown once; it opens /v1; revoked there, the
// next call is refused.
func TestBrowserCreateAndRevokeKey(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/developer")
	key := createKey(tb, "from the browser")
	tb.shoot(dir, "key-shown")
	resp := apiCall(t, "GET", h.url+"/v1/me", key, nil)
	require.Equal(t, 200, resp.StatusCode)

	tb.do(chromedp.Click(chromedp.CSS(`#secret-reveal [data-reload]`)), chromedp.Sleep(300*time.Millisecond), chromedp.WaitReady(chromedp.CSS(`#keys`)))
	shownAgain := eval[bool](tb, `document.body.innerText.includes(`+jsString(key)+`)`)
	require.False(t, shownAgain, "the key is shown once")
	revokeKey(tb, "from the browser")
	resp = apiCall(t, "GET", h.url+"/v1/me", key, nil)
	require.Equal(t, 401, resp.StatusCode)
	tb.noErrors()
}

// createKey creates a key on the developer page and reads it from the reveal box.
func createKey(tb *tab, name string) string {
	tb.t.Helper()
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`#key-name`), name),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/keys"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	key := get(tb, chromedp.Text(chromedp.CSS(`#reveal-value`)))
	require.True(tb.t, strings.HasPrefix(key, "sk_"), key)
	return key
}

// revokeKey revokes the key of that name through its confirmation dialog.
func revokeKey(tb *tab, name string) {
	tb.t.Helper()
	row := `//tr[td[@class="key-name" and text()=` + xpathString(name) + `]]`
	tb.do(
		chromedp.Click(chromedp.Search(row+`//form[@data-method="DELETE"]/button`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-dialog`)),
		chromedp.Click(chromedp.CSS(`#confirm-ok`)),
		chromedp.WaitVisible(chromedp.Search(row+`//span[contains(@class,"badge-revoked")]`)),
	)
}

func xpathString(s string) string { return `"` + s + `"` }
