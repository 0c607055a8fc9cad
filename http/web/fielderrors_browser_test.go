package web_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// A refused submission on Compose is worded for people and shown beside the field it concerns
// (aria-invalid, aria-describedby naming the words); each goes when its field changes, and every
// one, with the page's message, when a submission succeeds.
func TestBrowserComposeErrorsBesideTheirFields(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	x, bsky := accountOf(t, h, platforms.X), accountOf(t, h, platforms.Bluesky)
	tb.signIn(h.url, h.user.Email, h.password, "/compose")
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#content`)))
	invalid := func(sel string) bool {
		return eval[bool](tb, `document.querySelector(`+jsString(sel)+`).getAttribute('aria-invalid') === 'true'`)
	}
	describedBy := func(sel string) string {
		return eval[string](tb, `document.querySelector(`+jsString(sel)+`).getAttribute('aria-describedby') || ''`)
	}

	// No account chosen: beside the accounts.
	tb.setText(`#content`, "Hello")
	tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#platforms-error`)))
	require.Equal(t, "Choose at least one account to publish to.", get(tb, chromedp.Text(chromedp.CSS(`#platforms-error`))))
	require.True(t, invalid(`input[name=platforms][value="`+x+`"]`))
	require.Contains(t, describedBy(`input[name=platforms][value="`+x+`"]`), "platforms-error")
	require.Equal(t, "Not published: Choose at least one account to publish to.", get(tb, chromedp.Text(chromedp.CSS(`#flash`))))
	tb.do(chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+x+`"]`)),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+bsky+`"]`)))
	require.False(t, invalid(`input[name=platforms][value="`+x+`"]`), "choosing an account clears it")
	require.False(t, eval[bool](tb, `!!document.getElementById('platforms-error').textContent`))
	require.True(t, eval[bool](tb, `document.getElementById('flash').hidden`), "the message goes with the last error")

	// Too long for X and Bluesky: each network's words beside the shared text, which keeps its count.
	tb.setText(`#content`, strings.Repeat("a", 312))
	tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#content-error`)))
	words := get(tb, chromedp.Text(chromedp.CSS(`#content-error`)))
	require.Contains(t, words, "X allows 280 characters; this text has 312 (32 too many).")
	require.Contains(t, words, "Bluesky allows 300 characters; this text has 312 (12 too many).")
	require.True(t, invalid(`#content`))
	require.Equal(t, "counts content-error", describedBy(`#content`))
	require.Equal(t, "Not published: 2 problems, each shown beside what it concerns.", get(tb, chromedp.Text(chromedp.CSS(`#flash`))))
	tb.shoot(dir, "compose-field-errors")
	axeCurrentPage(t, tb, "/compose with errors")
	tb.setText(`#content`, "Short enough")
	require.False(t, invalid(`#content`), "a change of the text clears it")
	require.Equal(t, "counts", describedBy(`#content`))
	require.True(t, eval[bool](tb, `document.getElementById('content-error').hidden`))

	// A time gone: beside the date and time; a change of the time clears it.
	tb.do(chromedp.Click(chromedp.CSS(`input[name=when][value=later]`)), chromedp.WaitVisible(chromedp.CSS(`#sched-date`)),
		chromedp.SetValue(chromedp.CSS(`#sched-date`), "2020-01-01"), chromedp.SetValue(chromedp.CSS(`#sched-time`), "09:00"),
		chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#sched-date-error`)))
	require.Equal(t, "This time has passed: choose a later one.", get(tb, chromedp.Text(chromedp.CSS(`#sched-date-error`))))
	require.True(t, invalid(`#sched-date`))
	require.True(t, invalid(`#sched-time`))
	require.Contains(t, describedBy(`#sched-time`), "sched-date-error")
	tb.shoot(dir, "compose-time-error")
	tb.setText(`#sched-time`, "10:00")
	require.False(t, invalid(`#sched-date`))
	require.False(t, invalid(`#sched-time`))

	// Refused again, then published: nothing of the refusal stays on screen.
	tb.setText(`#content`, strings.Repeat("b", 290))
	tb.do(chromedp.Click(chromedp.CSS(`input[name=when][value=now]`)),
		chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#content-error`)))
	tb.do(chromedp.Click(chromedp.CSS(`input[name=platforms][value="` + bsky + `"]`))) // not the text: its error stays
	require.True(t, invalid(`#content`))
	tb.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('content').value = 'Fits everywhere'`),
		chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#progress[data-done]`)))
	require.False(t, invalid(`#content`))
	require.Zero(t, eval[int](tb, `document.querySelectorAll('[aria-invalid=true]').length`))
	require.Zero(t, eval[int](tb, `Array.from(document.querySelectorAll('.field-error')).filter(e => !e.hidden && e.textContent).length`))
	require.True(t, eval[bool](tb, `document.getElementById('flash').hidden`))
	tb.shoot(dir, "compose-published-clean")
	tb.noErrorsBut("status of 400 (Bad Request)")
}

// axeCurrentPage runs axe-core (HERALD_AXE; skipped without it, as TestBrowserAccessibility) on
// the page as it is now, in light and dark, and fails on a serious or critical violation.
func axeCurrentPage(t *testing.T, tb *tab, what string) {
	t.Helper()
	path := os.Getenv("HERALD_AXE")
	if path == "" {
		return
	}
	axe, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, scheme := range []string{"light", "dark"} {
		tb.do(colorScheme(scheme), chromedp.Evaluate[chromedp.Void](string(axe)))
		raw := get(tb, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(
			r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
				ID: v.id, Impact: v.impact, Help: v.help, Nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' ' + n.html.slice(0, 160))}))))`,
			chromedp.EvalAwaitPromise))
		var found []axeViolation
		require.NoError(t, json.Unmarshal([]byte(raw), &found))
		for _, v := range found {
			t.Errorf("%s %s: %s (%s): %s", what, scheme, v.ID, v.Impact, v.Help+"\n\t"+strings.Join(v.Nodes, "\n\t"))
		}
	}
	tb.do(colorScheme("light"))
}
