package web_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// whenIn is the dashboard's one date format (http/web timefmt.go), written here from its rule.
func whenIn(t time.Time, zone *time.Location, offset string) string {
	return t.In(zone).Format("Mon 2 Jan 2006, 15:04") + " " + offset
}

// Every time on the pages, written by the server or by the script, is in the person's zone,
// 24-hour, with the zone's offset: the post page's "Created" (the server) and its timeline (the
// script) read alike, as do the overview's upcoming posts and the posts list.
func TestBrowserOneDateFormat(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	id := publish(t, h, "A time for everyone", 1)
	at := time.Now().Add(48 * time.Hour).Truncate(time.Minute)
	sched := schedule(t, h, "Later, in every zone", at)

	tb := newTab(t)
	dir := screenshots(t)
	// In UTC (the user's zone until one is chosen), the zone is said "UTC", by the script too.
	tb.signIn(h.url, h.user.Email, h.password, "/posts/"+id)
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#events time`)))
	for _, tm := range eval[[]map[string]string](tb, `Array.from(document.querySelectorAll('#events time')).map(t => ({iso: t.dateTime, text: t.textContent}))`) {
		ts, err := time.Parse(time.RFC3339Nano, tm["iso"])
		require.NoError(t, err, tm["iso"])
		require.Equal(t, whenIn(ts, time.UTC, "UTC"), tm["text"])
	}
	tb.do(chromedp.Navigate(h.url+"/settings"), chromedp.WaitVisible(chromedp.CSS(`#timezone`)))
	require.Equal(t, "Saved.", tb.flashAfter(
		chromedp.SetValue(chromedp.CSS(`#timezone`), "Asia/Kolkata"),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/profile"] button`)),
	))

	shape := regexp.MustCompile(`^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}, ([01]\d|2[0-3]):[0-5]\d UTC\+05:30$`)
	tb.do(chromedp.Navigate(h.url+"/posts/"+id), chromedp.WaitVisible(chromedp.CSS(`#events time`)))
	times := eval[[]map[string]string](tb, `Array.from(document.querySelectorAll('#events time')).map(t => ({iso: t.dateTime, text: t.textContent}))`)
	require.NotEmpty(t, times)
	for _, tm := range times {
		ts, err := time.Parse(time.RFC3339Nano, tm["iso"])
		require.NoError(t, err, tm["iso"])
		require.Equal(t, whenIn(ts, kolkata, "UTC+05:30"), tm["text"], "the script writes the server's format")
		require.Regexp(t, shape, tm["text"])
	}
	published := eval[string](tb, `document.querySelector('#targets .published-link + .muted').textContent`)
	require.Regexp(t, shape, published, "the server's format")
	tb.shoot(dir, "timefmt-post")

	tb.do(chromedp.Navigate(h.url+"/posts/"+sched), chromedp.WaitVisible(chromedp.CSS(`#scheduled-at`)))
	shown := get(tb, chromedp.Text(chromedp.CSS(`#scheduled-at`)))
	require.Regexp(t, `^`+regexp.QuoteMeta(whenIn(at, kolkata, "UTC+05:30")+" (Asia/Kolkata); ")+`.*`+regexp.QuoteMeta(at.UTC().Format("15:04")+" UTC")+`$`, shown)

	tb.do(chromedp.Navigate(h.url+"/"), chromedp.WaitVisible(chromedp.CSS(`main`)))
	upcoming := eval[[]string](tb, `Array.from(document.querySelectorAll('main time')).map(t => t.textContent)`)
	require.NotEmpty(t, upcoming)
	for _, s := range upcoming {
		require.Regexp(t, shape, s)
	}
	require.Contains(t, upcoming, whenIn(at, kolkata, "UTC+05:30"))
	tb.shoot(dir, "timefmt-overview")
	tb.noErrors()
}
