package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// setZone sets the signed-in person's time zone through the Settings page's route.
func (tb *tab) setZone(zone string) {
	tb.t.Helper()
	status := get(tb, chromedp.Evaluate[int](`fetch('/api/profile', {method: 'PATCH', credentials: 'same-origin', headers: {'Content-Type': 'application/json',
		'X-CSRF-Token': document.querySelector('meta[name="csrf-token"]').content}, body: JSON.stringify({timezone: `+"`"+zone+"`"+`})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	require.Equal(tb.t, 200, status)
}

// scheduledAt is a post's scheduled_at as /v1 answers it.
func scheduledAt(t *testing.T, h *herald, id string) time.Time {
	t.Helper()
	code, p := getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, 200, code, "%v", p)
	s, _ := p["scheduled_at"].(string)
	at, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err, "scheduled_at %q", s)
	return at
}

// A draft made through the API, scheduled through the API, is moved on the calendar: dragged to
// another day in the month (it keeps its time of day, in the person's zone), then with the
// keyboard alone to another day and hour in the week (Move, arrow keys, Enter). Each move is
// POST /api/posts/:id/schedule, so /v1 answers the new time.
func TestBrowserCalendarMovesAPost(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/calendar")
	tb.setZone("Asia/Kolkata") // +05:30 all year: a wall time there is never the UTC one
	zone, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)

	id := draft(t, h, "Moved on the calendar")
	now := time.Now().In(zone)
	src := time.Date(now.Year(), now.Month(), now.Day()+3, 10, 30, 0, 0, zone)
	postJSON(t, h, "/v1/posts/"+id+"/schedule", map[string]any{"scheduledAt": src.UTC().Format(time.RFC3339)}, 200)
	// The next day, unless the post is on the month grid's last day.
	dst := src.AddDate(0, 0, 1)
	if dst.Month() != src.Month() && src.Weekday() == time.Sunday {
		dst = src.AddDate(0, 0, -1)
	}
	chip := `#calendar li[data-post="` + id + `"]`
	day := func(t time.Time) string { return `#calendar [data-drop][data-date="` + t.Format("2006-01-02") + `"]` }

	tb.do(
		chromedp.Navigate(h.url+"/calendar?view=month&date="+src.Format("2006-01-02")),
		chromedp.WaitVisible(chromedp.CSS(day(src)+` li[data-post="`+id+`"]`)),
	)
	require.Equal(t, "scheduled", eval[string](tb, `document.querySelector('`+chip+` .cal-status').textContent`), "the status in words")
	tb.do(
		chromedp.DragAndDrop(chromedp.CSS(chip+` a`), chromedp.CSS(day(dst))),
		chromedp.WaitVisible(chromedp.CSS(day(dst)+` li[data-post="`+id+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#flash.ok`)),
	)
	want := time.Date(dst.Year(), dst.Month(), dst.Day(), 10, 30, 0, 0, zone)
	require.True(t, want.Equal(scheduledAt(t, h, id)), "moved to %s, /v1 says %s", want, scheduledAt(t, h, id))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#flash`))), "at 10:30")

	// For the screenshots: a partial, a failed and a published post today, and a crowded day.
	ig, th := accountOf(t, h, platforms.Instagram), accountOf(t, h, platforms.Threads)
	broken := unconvertiblePhoto(t, h)
	for _, p := range []struct {
		text     string
		accounts []string
	}{{"Half of it went out", []string{ig, th}}, {"None of it went out", []string{ig}}, {"All of it went out", []string{th}}} {
		out := postJSON(t, h, "/v1/posts/publish", map[string]any{"content": p.text, "platforms": p.accounts, "media": []string{broken}}, 202)
		waitJob(t, h, out["tracking_id"].(string))
	}
	for i := range 8 {
		at := time.Date(dst.Year(), dst.Month(), dst.Day(), 13+i, 15, 0, 0, zone)
		postJSON(t, h, "/v1/posts/schedule", map[string]any{"content": fmt.Sprintf("Launch note %d", i+1), "platforms": accountIDs(t, h, 1+i%3),
			"scheduledAt": at.UTC().Format(time.RFC3339)}, 201)
	}
	tb.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(day(dst)+` details.cal-more summary`)))
	tb.shoot(dir, "month", 1440, 390)
	// "+N more" opens in place.
	tb.do(chromedp.Click(chromedp.CSS(day(dst)+` details.cal-more summary`)), chromedp.WaitVisible(chromedp.CSS(chip)))

	// The keyboard's way, in the week: two hours later and a day over.
	over, side := kb.ArrowRight, 1
	if dst.Weekday() == time.Sunday {
		over, side = kb.ArrowLeft, -1
	}
	tb.do(
		chromedp.Navigate(h.url+"/calendar?view=week&date="+dst.Format("2006-01-02")),
		chromedp.WaitVisible(chromedp.CSS(chip+` .cal-move`)),
	)
	tb.shoot(dir, "week", 1440, 390)
	tb.do(
		chromedp.Focus(chromedp.CSS(chip+` .cal-move`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(chip+`.picked`)),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(kb.ArrowDown),
		chromedp.KeyEvent(over),
	)
	to := dst.AddDate(0, 0, side)
	slot := day(to) + `[data-hour="12"]`
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#cal-live`))), "at 12:30", "the place chosen is said")
	tb.do(
		chromedp.WaitVisible(chromedp.CSS(slot+`.drop-target`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(slot+` li[data-post="`+id+`"]`)),
	)
	want = time.Date(to.Year(), to.Month(), to.Day(), 12, 30, 0, 0, zone)
	require.True(t, want.Equal(scheduledAt(t, h, id)), "moved to %s, /v1 says %s", want, scheduledAt(t, h, id))

	// Escape puts a picked-up post back, and nothing is asked.
	tb.do(
		chromedp.Focus(chromedp.CSS(chip+` .cal-move`)),
		chromedp.KeyEvent(kb.Enter),
		chromedp.KeyEvent(kb.ArrowUp),
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotPresent(chromedp.CSS(`#calendar .drop-target`)),
	)
	require.True(t, want.Equal(scheduledAt(t, h, id)))

	// A click on an empty hour opens Compose scheduling at that hour, in the person's zone.
	tb.do(
		chromedp.Click(chromedp.CSS(day(to)+`[data-hour="16"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#sched-date`)),
	)
	require.Equal(t, to.Format("2006-01-02"), get(tb, chromedp.Value(chromedp.CSS(`#sched-date`))))
	require.Equal(t, "16:00", get(tb, chromedp.Value(chromedp.CSS(`#sched-time`))))
	require.Equal(t, "Asia/Kolkata", get(tb, chromedp.Value(chromedp.CSS(`#sched-zone`))))
	require.True(t, eval[bool](tb, `document.querySelector('input[name=when][value=later]').checked`))
	require.Equal(t, "Schedule", get(tb, chromedp.Text(chromedp.CSS(`#submit-post`))))
	tb.noErrors()
}
