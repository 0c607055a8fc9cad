package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// A CSV campaign through the Campaigns page: the dry run shows the row X refuses with its
// network named, the fixed CSV passes, is submitted and followed on the campaign's one stream to
// its end; the post Instagram failed is retried from the page; the posts list and the post's
// page name the campaign.
func TestBrowserCampaignFromCSV(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	x, bsky, ig := accountOf(t, h, platforms.X), accountOf(t, h, platforms.Bluesky), accountOf(t, h, platforms.Instagram)
	broken := unconvertiblePhoto(t, h)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/campaigns")
	require.Equal(t, "page", eval[string](tb, `document.querySelector('nav a[href="/campaigns"]').getAttribute('aria-current')`))

	long := strings.Repeat("word ", 70) // 350 characters: more than X allows
	bad := "content,platforms,media\n" +
		"\"Launch day, at last\"," + x + " " + bsky + ",\n" +
		long + "," + x + ",\n" +
		"With a photo," + ig + "," + broken + "\n"
	tb.do(
		chromedp.SetValue(chromedp.CSS(`#camp-name`), "Spring <launch>"),
		chromedp.SetValue(chromedp.CSS(`#camp-csv`), bad),
		chromedp.Click(chromedp.CSS(`#camp-check`)),
		chromedp.WaitVisible(chromedp.CSS(`#dry-rows`)),
	)
	rows := eval[[]string](tb, `Array.from(document.querySelectorAll('#dry-rows tbody tr')).map(r => r.getAttribute('data-row'))`)
	require.Equal(t, []string{"2"}, rows, "only the second data row is wrong")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#dry-bad`))), "1 row has errors")
	errText := get(tb, chromedp.Text(chromedp.CSS(`#dry-rows tbody tr td[data-label=Errors]`)))
	require.Contains(t, errText, "X: ", "the target's error names its network")
	require.Contains(t, errText, "280")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#dry-rows tbody tr td[data-label=Text]`))), "word word")
	require.True(t, eval[bool](tb, `document.getElementById('camp-submit').disabled`), "no submit before a dry run passes")
	tb.shoot(dir, "dry-run-error")
	var n int
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		_, n, _ = tx.ListCampaigns(persistence.Scope(h.user.ID, ""), 0, 10)
		return nil
	}))
	require.Zero(t, n, "a dry run creates nothing")

	fixed := strings.Replace(bad, long, "A short one", 1)
	tb.do(
		chromedp.SetValue(chromedp.CSS(`#camp-csv`), fixed),
		chromedp.Click(chromedp.CSS(`#camp-check`)),
		chromedp.WaitVisible(chromedp.CSS(`#dry-ok`)),
	)
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#dry-ok`))), "All 3 posts are valid: 4 network posts")
	require.Zero(t, eval[int](tb, `document.querySelectorAll('#dry-rows').length`), "the old errors are gone")
	tb.shoot(dir, "dry-run-ok")

	tb.do(
		chromedp.Click(chromedp.CSS(`#camp-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#camp-posts`)),
		// Followed on the stream to its done, after which the page shows the outcome.
		chromedp.WaitVisible(chromedp.CSS(`#camp-retry`)),
	)
	require.Equal(t, "Campaign: Spring <launch>", get(tb, chromedp.Text(chromedp.CSS(`h1`))), "the name, as text")
	require.Equal(t, "completed", get(tb, chromedp.Text(chromedp.CSS(`#camp-status`))))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#camp-live`))), "Every post has its outcome")
	states := eval[[]string](tb, `Array.from(document.querySelectorAll('#camp-posts [data-state]')).map(s => s.textContent)`)
	require.Equal(t, []string{"published", "published", "published", "failed"}, states, "each target in request order")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#camp-retry`))), "Retry the 1 failed network post")
	tb.shoot(dir, "campaign-done")

	campID := eval[string](tb, `document.getElementById('campaign').getAttribute('data-campaign-id')`)
	events := func() int {
		var evs []persistence.CampaignEvent
		require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
			var err error
			evs, err = tx.CampaignEventsAfter(campID, 0, 10_000)
			return err
		}))
		return len(evs)
	}
	before := events()

	// The retry publishes Instagram again (the photo is still broken, so it fails again) and the
	// page follows it to its own end.
	tb.do(chromedp.Evaluate[chromedp.Void](`window.beforeRetry = true`), chromedp.Click(chromedp.CSS(`#camp-retry`)))
	// The page reloads twice (the retry, then the stream's done): a check that meets a page
	// being replaced is asked again.
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!window.beforeRetry && document.readyState === 'complete' && !!document.getElementById('camp-retry')`))
		return err == nil && ok
	}, 30*time.Second, 50*time.Millisecond, "the page reloaded after the retry's done")
	require.Greater(t, events(), before, "the retry published again, on the campaign's timeline")
	require.Equal(t, "completed", get(tb, chromedp.Text(chromedp.CSS(`#camp-status`))))

	// The list's totals, and the campaign named on the posts.
	tb.do(chromedp.Navigate(h.url+"/campaigns"), chromedp.WaitVisible(chromedp.CSS(`#campaigns`)))
	cells := eval[[]string](tb, `Array.from(document.querySelectorAll('#campaigns tbody tr:first-child td')).map(c => c.textContent.trim())`)
	require.Equal(t, []string{"Spring <launch>", "completed", "3", "2", "0", "1", "0"}, cells[:7])
	tb.shoot(dir, "campaigns")
	tb.do(chromedp.Navigate(h.url+"/posts"), chromedp.WaitVisible(chromedp.CSS(`#posts`)))
	require.Equal(t, 3, eval[int](tb, `Array.from(document.querySelectorAll('#posts .campaign-name')).filter(a => a.textContent === 'Campaign: Spring <launch>').length`))
	tb.do(chromedp.Click(chromedp.CSS(`#posts a.post-text`)), chromedp.WaitVisible(chromedp.CSS(`#post-campaign`)))
	require.Equal(t, "/campaigns/"+campID, eval[string](tb, `document.querySelector('#post-campaign a').getAttribute('href')`))
	tb.noErrorsBut("status of 400 (Bad Request)")
}

// A campaign refused when submitted, after its dry run passed (an account disconnected
// meanwhile), shows its rows' errors as the dry run does and creates nothing; the submit waits
// for a new dry run.
func TestBrowserCampaignRefusedAtSubmit(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	x, bsky := accountOf(t, h, platforms.X), accountOf(t, h, platforms.Bluesky)
	tb := newTab(t)
	tb.signIn(h.url, h.user.Email, h.password, "/campaigns")
	tb.do(
		chromedp.SetValue(chromedp.CSS(`#camp-csv`), "platforms,content\n"+x+",First\n"+bsky+",Second\n"),
		chromedp.Click(chromedp.CSS(`#camp-check`)),
		chromedp.WaitVisible(chromedp.CSS(`#dry-ok`)),
	)
	resp := apiCall(t, "DELETE", h.url+"/v1/accounts/"+bsky, h.key, nil)
	_ = resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	tb.do(chromedp.Click(chromedp.CSS(`#camp-submit`)), chromedp.WaitVisible(chromedp.CSS(`#dry-rows`)))
	require.Equal(t, []string{"2"}, eval[[]string](tb, `Array.from(document.querySelectorAll('#dry-rows tbody tr')).map(r => r.getAttribute('data-row'))`))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#dry-rows td[data-label=Errors]`))), bsky)
	require.True(t, eval[bool](tb, `document.getElementById('camp-submit').disabled`), "a new dry run first")
	var n int
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		_, n, _ = tx.ListCampaigns(persistence.Scope(h.user.ID, ""), 0, 10)
		return nil
	}))
	require.Zero(t, n)
	tb.noErrorsBut("status of 400 (Bad Request)")
}
