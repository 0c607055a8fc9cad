package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// The overview leads with a "Create post" button, then what needs attention (a partly failed
// post, an account to reconnect) and the next scheduled posts, soonest first; a job that
// completed with a failed target reads "partial". The account is reconnected from the Accounts
// page through the network's consent, and publishes again.
func TestBrowserOverviewNeedsAttention(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	ig, th := accountOf(t, h, platforms.Instagram), accountOf(t, h, platforms.Threads)
	out := postJSON(t, h, "/v1/posts/publish", map[string]any{"content": "A broken photo", "platforms": []string{ig, th},
		"media": []string{unconvertiblePhoto(t, h)}}, 202)
	partial := out["post_id"].(string)
	waitJob(t, h, out["tracking_id"].(string))
	later := schedule(t, h, "Later in the week", time.Now().Add(96*time.Hour))
	sooner := schedule(t, h, "Tomorrow's post", time.Now().Add(24*time.Hour))
	tb := newTab(t)
	dir := screenshots(t)
	// A LinkedIn account connected through the browser, which then stops publishing.
	tb.signIn(h.url, h.user.Email, h.password, "/accounts")
	tb.do(chromedp.Click(chromedp.CSS(`button.connect-linkedin`)), chromedp.WaitVisible(chromedp.CSS(`#back-to-accounts`)))
	li := listedAccount(t, h, platforms.LinkedIn, "sim-user")["id"].(string)
	require.NoError(t, h.app.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		a, err := tx.Account(li)
		if err != nil {
			return err
		}
		a.IsActive, a.ReconnectReason = false, "the network revoked the token"
		return tx.PutAccount(a)
	}))

	tb.do(chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#attention`)))
	require.Equal(t, "/compose", get(tb, chromedp.AttributeValue(chromedp.CSS(`#create-post`), "href")).Value)
	require.Equal(t, []string{"/posts/" + partial},
		eval[[]string](tb, `Array.from(document.querySelectorAll('#attention a.post-text')).map(a => a.getAttribute('href'))`))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#attention`))), "Some networks failed")
	require.Equal(t, []string{"/accounts#acc-" + li},
		eval[[]string](tb, `Array.from(document.querySelectorAll('#attention a[href^="/accounts"]')).map(a => a.getAttribute('href'))`))
	require.Equal(t, []string{"/posts/" + sooner, "/posts/" + later},
		eval[[]string](tb, `Array.from(document.querySelectorAll('#upcoming a.post-text')).map(a => a.getAttribute('href'))`))
	require.Equal(t, "partial", get(tb, chromedp.Text(chromedp.CSS(`#jobs-h ~ table .badge`))), "a job with a failed target is partial")
	tb.shoot(dir, "overview")

	// On a phone the navigation folds behind its Menu button.
	tb.do(chromedp.EmulateViewport(390, 844))
	require.False(t, eval[bool](tb, `document.querySelector('#nav-links').checkVisibility()`))
	tb.do(chromedp.Click(chromedp.CSS(`.nav-toggle`)), chromedp.WaitVisible(chromedp.CSS(`#nav-links`)))
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(`.nav-toggle`), "aria-expanded")).Value)
	small := eval[[]string](tb, `Array.from(document.querySelectorAll('#nav-links a, main a.button, main button'))
		.filter(e => e.checkVisibility() && e.getBoundingClientRect().height < 44).map(e => e.outerHTML)`)
	require.Empty(t, small, "touch targets of at least 44 px")
	tb.do(chromedp.EmulateViewport(1280, 900))

	// Reconnect, from the account's row, through the network's consent.
	tb.do(chromedp.Click(chromedp.CSS(`#attention a[href^="/accounts"]`)), chromedp.WaitVisible(chromedp.CSS(`#accounts`)))
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#acc-` + li + ` form.reconnect button`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#acc-`+li))), "the network revoked the token")
	require.Zero(t, eval[int](tb, `document.querySelectorAll('#accounts form.reconnect').length - 1`), "only the account that needs it")
	tb.shoot(dir, "accounts")
	tb.do(chromedp.Click(chromedp.CSS(`#acc-`+li+` form.reconnect button`)), chromedp.WaitVisible(chromedp.CSS(`#back-to-accounts`)))
	_, list := getJSON(t, h, "/v1/accounts")
	var linked []map[string]any
	for _, a := range list["data"].([]any) {
		if acc := a.(map[string]any); acc["platform"] == "linkedin" && acc["username"] == "sim-user" {
			linked = append(linked, acc)
		}
	}
	require.Len(t, linked, 1, "the same account, reconnected")
	require.Equal(t, li, linked[0]["id"])
	require.Equal(t, true, linked[0]["is_active"])
	tb.do(chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#attention`)))
	require.NotContains(t, get(tb, chromedp.Text(chromedp.CSS(`#attention`))), "LinkedIn", "nothing to reconnect")
	tb.noErrors()
}

// Developer, webhooks: a test event is sent from the page and reaches the receiver; its delivery
// shows the body sent and the answer, and is sent again from its row.
func TestBrowserWebhookTestEventAndRedeliver(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	a := apptest.Start(t, apptest.Options{Demo: true, Config: apptest.WithReceivers(ca)})
	// The first answer is text a stranger wrote (escaped on the page), the second bytes that are
	// not text.
	rcv := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, _ *http.Request) int {
		w.WriteHeader(http.StatusOK)
		if n == 1 {
			_, _ = w.Write([]byte(`{"received":true,"note":"<img src=x onerror=alert(1)>"}`))
		} else {
			_, _ = w.Write([]byte{0x89, 'P', 'N', 'G', 0, 0, 0, 0})
		}
		return 0
	})
	id, _ := a.CreateWebhook(rcv.URL)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(a.URL, a.User.Email, a.Password, "/developer")

	msg := tb.flashAfter(chromedp.Click(chromedp.CSS(`article.webhook form.send-test button`)))
	require.Equal(t, "Test event sent: its delivery is listed below.", msg)
	first := rcv.Next(t)
	require.Equal(t, "webhook.test", first.Header.Get("X-Service-Event"))
	// The page shows the delivery once its answer is recorded.
	require.Eventually(t, func() bool {
		tb.do(chromedp.Navigate(a.URL+"/developer"), chromedp.WaitVisible(chromedp.CSS(`article.webhook`)))
		return eval[bool](tb, `!!document.querySelector('table.deliveries .badge-succeeded')`)
	}, 10*time.Second, 100*time.Millisecond)
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`table.deliveries td[data-label="Last answer"]`))), "HTTP 200")
	tb.do(chromedp.Click(chromedp.CSS(`table.deliveries details.payload summary`)), chromedp.WaitVisible(chromedp.CSS(`table.deliveries pre.payload-body`)))
	body := get(tb, chromedp.TextContent(chromedp.CSS(`table.deliveries pre.payload-body`)))
	require.Contains(t, body, `"webhook_id": "`+id+`"`)
	require.Contains(t, body, `"id": "`+first.Header.Get("X-Service-Delivery-Id")+`"`)
	tb.do(chromedp.Click(chromedp.CSS(`table.deliveries details.answer summary`)), chromedp.WaitVisible(chromedp.CSS(`table.deliveries pre.answer-body`)))
	shown := get(tb, chromedp.TextContent(chromedp.CSS(`table.deliveries pre.answer-body`)))
	require.Contains(t, shown, `"note":"<img src=x onerror=alert(1)>"`, "the bytes as received, as text")
	require.JSONEq(t, `{"received":true,"note":"<img src=x onerror=alert(1)>"}`, shown)
	require.False(t, eval[bool](tb, `!!document.querySelector('table.deliveries img')`), "the answer is printed as text")
	tb.shoot(dir, "delivery")
	tb.shoot(dir, "delivery")

	msg = tb.flashAfter(chromedp.Click(chromedp.CSS(`table.deliveries form.redeliver button`)))
	require.Equal(t, "Sent again as a new delivery.", msg)
	again := rcv.Next(t)
	require.Equal(t, "webhook.test", again.Header.Get("X-Service-Event"))
	require.NotEqual(t, first.Header.Get("X-Service-Delivery-Id"), again.Header.Get("X-Service-Delivery-Id"))
	tb.do(chromedp.WaitVisible(chromedp.CSS(`table.deliveries tbody tr:nth-child(2)`)))
	require.Eventually(t, func() bool {
		tb.do(chromedp.Navigate(a.URL+"/developer"), chromedp.WaitVisible(chromedp.CSS(`article.webhook`)))
		return eval[int](tb, `document.querySelectorAll('table.deliveries .badge-succeeded').length`) == 2
	}, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, "Answer: 8 bytes, not text", get(tb, chromedp.Text(chromedp.CSS(`table.deliveries tbody tr:first-child .answer-binary`))))
	tb.shoot(dir, "delivery-binary")
	tb.noErrors()
}

// Compose sends an Idempotency-Key with each publish: the same key and body again (a retry after
// a lost answer) is answered with the first post, never published twice; the next submission
// has a key of its own.
func TestBrowserComposeIdempotencyKey(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	bsky := accountOf(t, h, platforms.Bluesky)
	tb := newTab(t)
	tb.signIn(h.url, h.user.Email, h.password, "/compose")
	// The page's own fetch, watched: each publish's key and body.
	tb.do(chromedp.Evaluate[chromedp.Void](`window.__sent = []; const f = window.fetch; window.fetch = (u, o) => {
		if (String(u).endsWith('/api/posts/publish')) { window.__sent.push({key: o.headers['Idempotency-Key'] || '', body: o.body}); }
		return f(u, o); }`))
	sent := func() []map[string]string { return eval[[]map[string]string](tb, `window.__sent`) }
	// The post the finished progress links to ("" while none is finished). The first
	// submission's finished progress stays on the page until the second's answer comes back,
	// so each submission waits for a link to a post other than the one before.
	shown := func() string {
		return eval[string](tb, `(document.querySelector('#progress[data-done] #progress-links a') || {}).href || ''`)
	}
	last := ""
	for _, text := range []string{"First of two", "Second of two"} {
		tb.do(
			chromedp.WaitVisible(chromedp.CSS(`#content`)),
			chromedp.SendKeys(chromedp.CSS(`#content`), text),
		)
		if text == "First of two" {
			tb.do(chromedp.Click(chromedp.CSS(`input[name=platforms][value="` + bsky + `"]`)))
		}
		// The live check's answer adds to the network's section and moves the button: click once
		// it is in (a click while the page moves lands beside the button).
		tb.checked()
		tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)))
		require.Eventually(t, func() bool { u := shown(); return u != "" && u != last }, 15*time.Second, 50*time.Millisecond, "the progress of %q", text)
		last = shown()
	}
	s := sent()
	require.Len(t, s, 2)
	require.NotEmpty(t, s[0]["key"])
	require.NotEqual(t, s[0]["key"], s[1]["key"], "a key per submission")

	// The first submission sent again with its key (the key is the user's, whichever the door):
	// the first post, not a new one.
	status, list := getJSON(t, h, "/v1/posts")
	require.Equal(t, 200, status)
	before := len(list["data"].([]any))
	var firstID string
	for _, p := range list["data"].([]any) {
		if po := p.(map[string]any); po["content"] == "First of two" {
			firstID = po["id"].(string)
		}
	}
	require.NotEmpty(t, firstID)
	req, err := http.NewRequest("POST", h.url+"/v1/posts/publish", strings.NewReader(s[0]["body"]))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", s[0]["key"])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, 202, resp.StatusCode, "%v", out)
	require.Equal(t, firstID, out["post_id"], "the first submission's post")
	_, list = getJSON(t, h, "/v1/posts")
	require.Len(t, list["data"], before, "nothing new was published")
	tb.noErrors()
}

// Compose shows an uploaded image's thumbnail, and a failed upload with the reason and a Remove
// button that takes its row away; nothing of it is sent with the post.
func TestBrowserComposeThumbnailsAndFailedUploads(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 64, 48))))
	photo, notes := filepath.Join(t.TempDir(), "photo.png"), filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(photo, buf.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(notes, []byte("not a picture"), 0o644))
	tb.signIn(h.url, h.user.Email, h.password, "/compose")
	tb.do(
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#media-file`), []string{photo}),
		chromedp.WaitVisible(chromedp.CSS(`#media-list li[data-media-id]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#media-file`), []string{notes}),
		chromedp.WaitVisible(chromedp.CSS(`#media-list li[data-failed] button`)),
	)
	require.Eventually(t, func() bool {
		return eval[bool](tb, `(i => i.src.startsWith('data:image/png') && i.complete && i.naturalWidth === 64)(document.querySelector('#media-list li[data-media-id] img.thumb'))`)
	}, 10*time.Second, 20*time.Millisecond, "the image's thumbnail")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#media-list li[data-failed] .media-state`))), "failed")
	tb.shoot(dir, "uploads")
	tb.do(chromedp.Click(chromedp.CSS(`#media-list li[data-failed] button`)), chromedp.WaitNotPresent(chromedp.CSS(`#media-list li[data-failed]`)))
	require.Equal(t, 1, eval[int](tb, `document.querySelectorAll('#media-list li').length`), "the image stays")
	tb.noErrorsBut("status of 400 (Bad Request)")
}
