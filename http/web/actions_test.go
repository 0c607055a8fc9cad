package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// getJSON calls /v1 with the demo key and decodes the answer.
func getJSON(t *testing.T, h *herald, path string) (int, map[string]any) {
	t.Helper()
	resp := apiCall(t, "GET", h.url+path, h.key, nil)
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// accountOf is the demo user's first account on a network.
func accountOf(t *testing.T, h *herald, p platforms.Platform) string {
	t.Helper()
	var id string
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		acc, err := tx.AccountsIn(h.user.ID)
		for _, a := range acc {
			if a.Platform == string(p) && id == "" {
				id = a.ID
			}
		}
		return err
	}))
	require.NotEmpty(t, id)
	return id
}

// listedAccount is the account of that network and username in GET /v1/accounts, or nil.
func listedAccount(t *testing.T, h *herald, p platforms.Platform, username string) map[string]any {
	t.Helper()
	status, out := getJSON(t, h, "/v1/accounts")
	require.Equal(t, 200, status)
	for _, a := range out["data"].([]any) {
		acc := a.(map[string]any)
		if acc["platform"] == string(p) && acc["username"] == username {
			return acc
		}
	}
	return nil
}

// flashAfter empties the page's message box, runs the steps, then waits for the message they
// bring (on this page or the one reloaded) and reads it.
func (tb *tab) flashAfter(steps ...chromedp.Action[chromedp.Void]) string {
	tb.t.Helper()
	tb.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('flash'); f.hidden = true; f.textContent = ''; })()`))
	tb.do(steps...)
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#flash`)))
	return get(tb, chromedp.Text(chromedp.CSS(`#flash`)))
}

// confirm accepts the page's confirmation dialog.
func (tb *tab) confirm() {
	tb.t.Helper()
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#confirm-dialog`)), chromedp.Click(chromedp.CSS(`#confirm-ok`)))
}

// The Accounts page's credential forms send the fields POST /api/accounts/bluesky and /x take:
// a Bluesky app password and X tokens the simulator accepts connect accounts that /v1 then
// lists; a refused app password shows the network's reason and saves nothing.
func TestBrowserCredentialForms(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/accounts")

	// Refused by the network first.
	msg := tb.flashAfter(
		chromedp.SendKeys(chromedp.CSS(`#bsky-handle`), "walker.bsky.social"),
		chromedp.SendKeys(chromedp.CSS(`#bsky-pass`), "not an app password"),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/accounts/bluesky"] button`)),
	)
	require.Contains(t, msg, "invalid handle or app password")
	tb.shoot(dir, "bluesky-refused")
	require.Nil(t, listedAccount(t, h, platforms.Bluesky, "walker.bsky.social"), "nothing saved")

	msg = tb.flashAfter(
		chromedp.SetValue(chromedp.CSS(`#bsky-pass`), "abcd-efgh-ijkl-mnop"),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/accounts/bluesky"] button`)),
	)
	require.Equal(t, "Bluesky account connected.", msg)
	acc := listedAccount(t, h, platforms.Bluesky, "walker.bsky.social")
	require.NotNil(t, acc, "the account is connected")
	require.Equal(t, true, acc["is_active"])
	rows := eval[int](tb, `Array.from(document.querySelectorAll('#accounts tr[data-platform=bluesky] td.username')).filter(td => td.textContent === 'walker.bsky.social').length`)
	require.Equal(t, 1, rows)
	tb.shoot(dir, "bluesky-connected")

	// X with the tokens of a team's own X app, and their lifetime: the sandbox has an X app of
	// its own, so the form is folded under the consent's button.
	xc, err := h.app.Sim.NewAccount(platforms.X, "formwriter")
	require.NoError(t, err)
	tb.do(chromedp.Click(chromedp.CSS(`#x-tokens summary`)), chromedp.WaitVisible(chromedp.CSS(`#x-client`)))
	msg = tb.flashAfter(
		chromedp.SendKeys(chromedp.CSS(`#x-client`), sim.ClientID),
		chromedp.SendKeys(chromedp.CSS(`#x-secret`), sim.ClientSecret),
		chromedp.SendKeys(chromedp.CSS(`#x-access`), xc.AccessToken),
		chromedp.SendKeys(chromedp.CSS(`#x-refresh`), xc.RefreshToken),
		chromedp.SendKeys(chromedp.CSS(`#x-expires`), "7200"),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/accounts/x"] button`)),
	)
	require.Equal(t, "X account connected.", msg)
	var xacc map[string]any
	_, out := getJSON(t, h, "/v1/accounts")
	for _, a := range out["data"].([]any) {
		if a.(map[string]any)["platform"] == "twitter_x" && a.(map[string]any)["username"] != "demo-twitter_x" {
			xacc = a.(map[string]any)
		}
	}
	require.NotNil(t, xacc, "the X account is connected")
	exp, err := time.Parse(time.RFC3339Nano, xacc["access_token_expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, exp, time.Now().Add(2*time.Hour), 2*time.Minute, "expires_in was sent as a number")
	tb.noErrorsBut("status of 400 (Bad Request) (" + h.url + "/api/accounts/bluesky)")
}

// Settings: the name and zone are saved and shown; a zone the server does not know shows its
// error; a new password replaces the old one for signing in.
func TestBrowserSettings(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/settings")

	msg := tb.flashAfter(
		chromedp.SetValue(chromedp.CSS(`#name`), "Ada Lovelace"),
		chromedp.SetValue(chromedp.CSS(`#timezone`), "Asia/Tokyo"),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/profile"] button`)),
	)
	require.Equal(t, "Saved.", msg)
	require.Equal(t, "Ada Lovelace", get(tb, chromedp.Text(chromedp.CSS(`header .who`))))
	require.Equal(t, "Asia/Tokyo", get(tb, chromedp.Value(chromedp.CSS(`#timezone`))))
	require.Equal(t, "Asia/Tokyo", get(tb, chromedp.AttributeValue(chromedp.CSS(`meta[name=user-timezone]`), "content")).Value)
	_, me := getJSON(t, h, "/v1/me")
	require.Equal(t, "Ada Lovelace", me["name"])
	require.Equal(t, "Asia/Tokyo", me["timezone"])
	tb.shoot(dir, "profile-saved")

	// A zone the browser offers but the server refuses (or a tampered form) shows the error.
	msg = tb.flashAfter(
		chromedp.Evaluate[chromedp.Void](`(() => { const o = document.createElement('option'); o.value = o.textContent = 'Mars/Olympus'; document.getElementById('timezone').appendChild(o); })()`),
		chromedp.SetValue(chromedp.CSS(`#timezone`), "Mars/Olympus"),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/profile"] button`)),
	)
	require.Contains(t, msg, "timezone")
	require.Equal(t, "flash error", get(tb, chromedp.AttributeValue(chromedp.CSS(`#flash`), "class")).Value)
	tb.shoot(dir, "zone-refused")
	_, me = getJSON(t, h, "/v1/me")
	require.Equal(t, "Asia/Tokyo", me["timezone"], "nothing saved")

	// The password.
	const newPassword = "a much better passphrase"
	msg = tb.flashAfter(
		chromedp.SendKeys(chromedp.CSS(`#cur-pw`), h.password),
		chromedp.SendKeys(chromedp.CSS(`#new-pw`), newPassword),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/profile/password"] button`)),
	)
	require.Contains(t, msg, "Password changed.")
	require.Empty(t, get(tb, chromedp.Value(chromedp.CSS(`#new-pw`))), "the form is emptied")
	tb.shoot(dir, "password-changed")
	require.Equal(t, 401, signInStatus(t, h, h.password), "the old password is refused")
	require.Equal(t, 200, signInStatus(t, h, newPassword))

	// In the browser too: signed out, the old password no longer signs in.
	tb.do(chromedp.Click(chromedp.CSS(`form.signout button`)), chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)))
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), h.user.Email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), h.password),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash.error`)),
	)
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`.flash.error`))), "invalid e-mail or password")
	tb.shoot(dir, "old-password-refused")
	tb.signIn(h.url, h.user.Email, newPassword, "/settings")
	require.Equal(t, "Settings", get(tb, chromedp.Text(chromedp.CSS(`main h1`))))
	tb.noErrorsBut("status of 400 (Bad Request) ("+h.url+"/api/profile)", "status of 401 (Unauthorized) ("+h.url+"/signin)")
}

// signInStatus is the status of POST /api/session with that password.
func signInStatus(t *testing.T, h *herald, password string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	body, _ := json.Marshal(map[string]string{"email": h.user.Email, "password": password})
	resp, err := (&http.Client{Jar: jar}).Post(h.url+"/api/session", "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Posts: a draft is edited and deleted (through the confirmation dialog; cancelling keeps it);
// a failed network is published again, alone.
func TestBrowserPostActions(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	id := draft(t, h, "A first thought")
	tb.signIn(h.url, h.user.Email, h.password, "/posts/"+id)

	msg := tb.flashAfter(
		chromedp.Click(chromedp.CSS(`#edit summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#edit-content`)),
		chromedp.SetValue(chromedp.CSS(`#edit-content`), "A second thought"),
		chromedp.Click(chromedp.CSS(`#edit button`)),
	)
	require.Equal(t, "Saved.", msg)
	require.Equal(t, "A second thought", get(tb, chromedp.Text(chromedp.CSS(`#post-content`))))
	_, p := getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, "A second thought", p["content"])
	tb.shoot(dir, "draft-edited")

	deleteButton := chromedp.CSS(`form[data-method=DELETE] button`)
	tb.do(chromedp.Click(deleteButton), chromedp.WaitVisible(chromedp.CSS(`#confirm-dialog`)))
	require.Equal(t, "Delete this draft post?", get(tb, chromedp.Text(chromedp.CSS(`#confirm-message`))))
	tb.shoot(dir, "delete-confirm")
	tb.do(chromedp.Click(chromedp.CSS(`#confirm-dialog button[value=cancel]`)), chromedp.WaitNotVisible(chromedp.CSS(`#confirm-dialog`)))
	status, _ := getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, 200, status, "cancelled: the draft stays")
	tb.do(chromedp.Click(deleteButton))
	tb.confirm()
	tb.do(chromedp.WaitVisible(chromedp.CSS(`form[role=search]`)))
	require.Equal(t, h.url+"/posts", get(tb, chromedp.Location()))
	status, _ = getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, 404, status, "deleted")

	// Instagram cannot convert the photo; Threads takes it: partial.
	ig, th := accountOf(t, h, platforms.Instagram), accountOf(t, h, platforms.Threads)
	out := postJSON(t, h, "/v1/posts/publish", map[string]any{"content": "A broken photo", "platforms": []string{ig, th},
		"media": []string{unconvertiblePhoto(t, h)}}, 202)
	postID, firstJob := out["post_id"].(string), out["tracking_id"].(string)
	waitJob(t, h, firstJob)
	_, p = getJSON(t, h, "/v1/posts/"+postID)
	require.Equal(t, "partial", p["status"])
	tb.do(chromedp.Navigate(h.url+"/posts/"+postID), chromedp.WaitVisible(chromedp.CSS(`#targets tr[data-platform=instagram] .target-error`)))
	tb.shoot(dir, "partial")
	msg = tb.flashAfter(chromedp.Click(chromedp.CSS(`form[data-api$="/publish"] button`)))
	require.Equal(t, "Publishing again to the networks that failed.", msg)
	var again string
	require.Eventually(t, func() bool {
		_, p = getJSON(t, h, "/v1/posts/"+postID)
		again, _ = p["tracking_id"].(string)
		return again != "" && again != firstJob
	}, 10*time.Second, 50*time.Millisecond, "a new job")
	job := waitJob(t, h, again)
	var targets []string
	for _, s := range job["platform_statuses"].([]any) {
		targets = append(targets, s.(map[string]any)["platform"].(string))
	}
	require.Equal(t, []string{"instagram"}, targets, "the failed network only")
	require.Len(t, h.app.Sim.Publications(platforms.Threads), 1, "Threads is not sent twice")
	tb.noErrors()
}

// waitJob waits until a job is final and returns it.
func waitJob(t *testing.T, h *herald, id string) map[string]any {
	t.Helper()
	var j map[string]any
	require.Eventually(t, func() bool {
		_, j = getJSON(t, h, "/v1/jobs/"+id)
		return j["status"] == "completed" || j["status"] == "failed"
	}, 20*time.Second, 50*time.Millisecond)
	return j
}

// Developer, webhooks: a new webhook's signing secret is shown once; deleting it (confirmed)
// removes it.
func TestBrowserWebhooks(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/developer")
	const hook = "https://hooks.example.com/herald"
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`#hook-url`), hook),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/webhooks"] input[value="post.deleted"]`)),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/webhooks"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	secret := get(tb, chromedp.Text(chromedp.CSS(`#reveal-value`)))
	require.NotEmpty(t, secret)
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#reveal-h`))), "signing secret")
	tb.shoot(dir, "secret-shown")
	status, out := getJSON(t, h, "/v1/webhooks")
	require.Equal(t, 200, status)
	hooks := out["data"].([]any)
	require.Len(t, hooks, 1)
	w := hooks[0].(map[string]any)
	require.Equal(t, hook, w["url"])
	require.ElementsMatch(t, []any{"post.published", "post.failed", "post.scheduled", "campaign.completed"}, w["events"])
	require.NotContains(t, mustJSON(t, out), secret, "the listing never shows the secret")

	tb.do(chromedp.Click(chromedp.CSS(`#secret-reveal [data-reload]`)), chromedp.WaitVisible(chromedp.CSS(`article.webhook`)))
	require.False(t, eval[bool](tb, `document.body.innerText.includes(`+jsString(secret)+`)`), "the secret is shown once")
	require.Equal(t, hook, get(tb, chromedp.Text(chromedp.CSS(`article.webhook .hook-url`))))
	tb.shoot(dir, "webhook-listed")

	tb.do(chromedp.Click(chromedp.CSS(`article.webhook form[data-method=DELETE] button`)))
	msg := tb.flashAfter(chromedp.WaitVisible(chromedp.CSS(`#confirm-dialog`)), chromedp.Click(chromedp.CSS(`#confirm-ok`)))
	require.Equal(t, "Webhook deleted.", msg)
	require.Zero(t, eval[int](tb, `document.querySelectorAll('article.webhook').length`))
	_, out = getJSON(t, h, "/v1/webhooks")
	require.Empty(t, out["data"])
	tb.shoot(dir, "webhook-deleted")
	tb.noErrors()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
