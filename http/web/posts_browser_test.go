package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// A draft is scheduled from its page in a zone found by city, and moved to another time and zone
// there: the post's time and zone change in the API, and the page shows the time as written
// beside UTC. A draft a network refuses is not published: the refusal stands beside the network.
func TestBrowserDraftScheduledAndMoved(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	id := draft(t, h, "Launch notes")
	tb.signIn(h.url, h.user.Email, h.password, "/posts/"+id)
	tb.shoot(dir, "draft")

	day := time.Now().UTC().Add(72 * time.Hour).Format("2006-01-02")
	tb.do(
		chromedp.Click(chromedp.CSS(`#schedule summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#post-sched-zone-find`)),
		chromedp.SetValue(chromedp.CSS(`#post-sched-date`), day),
		chromedp.SetValue(chromedp.CSS(`#post-sched-time`), "09:30"),
		chromedp.SendKeys(chromedp.CSS(`#post-sched-zone-find`), "kolkata"),
	)
	require.Equal(t, "Asia/Kolkata", eval[string](tb, `document.getElementById('post-sched-zone').value`))
	require.Contains(t, eval[string](tb, `document.getElementById('post-sched-zone').selectedOptions[0].textContent`), "UTC+05:30",
		"the picker shows each zone's offset")
	msg := tb.flashAfter(chromedp.Click(chromedp.CSS(`#schedule-submit`)))
	require.Equal(t, "Scheduled.", msg)
	at := func(wall, zone string) time.Time {
		loc, err := time.LoadLocation(zone)
		require.NoError(t, err)
		tm, err := time.ParseInLocation("2006-01-02T15:04", wall, loc)
		require.NoError(t, err)
		return tm
	}
	check := func(wall, zone string) {
		t.Helper()
		_, p := getJSON(t, h, "/v1/posts/"+id)
		require.Equal(t, "scheduled", p["status"])
		require.Equal(t, zone, p["scheduled_zone"])
		got, err := time.Parse(time.RFC3339, p["scheduled_at"].(string))
		require.NoError(t, err)
		require.True(t, at(wall, zone).Equal(got), "scheduled at %s, want %s in %s", got, wall, zone)
	}
	check(day+"T09:30", "Asia/Kolkata")
	shown := get(tb, chromedp.Text(chromedp.CSS(`#scheduled-at`)))
	require.Contains(t, shown, "09:30")
	require.Contains(t, shown, "(Asia/Kolkata)")
	require.Contains(t, shown, at(day+"T09:30", "Asia/Kolkata").UTC().Format("15:04")+" UTC")
	tb.shoot(dir, "scheduled")

	// Moved: the form is open on a scheduled post, with its time and zone.
	require.Equal(t, "09:30", eval[string](tb, `document.getElementById('post-sched-time').value`))
	require.Equal(t, "Asia/Kolkata", eval[string](tb, `document.getElementById('post-sched-zone').value`))
	tb.do(
		chromedp.SetValue(chromedp.CSS(`#post-sched-time`), "11:15"),
		chromedp.SendKeys(chromedp.CSS(`#post-sched-zone-find`), "new york"),
	)
	require.Equal(t, "America/New_York", eval[string](tb, `document.getElementById('post-sched-zone').value`))
	msg = tb.flashAfter(chromedp.Click(chromedp.CSS(`#schedule-submit`)))
	require.Equal(t, "Scheduled.", msg)
	check(day+"T11:15", "America/New_York")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#scheduled-at`))), "11:15")

	// A time in the past is refused beside the date and time, in words; nothing changes.
	tb.do(chromedp.SetValue(chromedp.CSS(`#post-sched-date`), "2020-01-01"), chromedp.Click(chromedp.CSS(`#schedule-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`#post-sched-date-error`)))
	require.Equal(t, "This time has passed: choose a later one.", get(tb, chromedp.Text(chromedp.CSS(`#post-sched-date-error`))))
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(`#post-sched-time`), "aria-invalid")).Value)
	require.Equal(t, "post-sched-date-error", get(tb, chromedp.AttributeValue(chromedp.CSS(`#post-sched-date`), "aria-describedby")).Value)
	tb.shoot(dir, "schedule-refused")
	check(day+"T11:15", "America/New_York")

	// A draft too long for X: Publish now is refused, the reason beside X, the draft kept.
	x := accountOf(t, h, platforms.X)
	long := postJSON(t, h, "/v1/posts", map[string]any{"content": strings.Repeat("word ", 60), "platforms": []string{x}}, 201)["id"].(string)
	tb.do(chromedp.Navigate(h.url+"/posts/"+long), chromedp.WaitVisible(chromedp.CSS(`#publish-draft`)),
		chromedp.Click(chromedp.CSS(`#publish-draft`)),
		chromedp.WaitVisible(chromedp.CSS(`#targets tr[data-platform=twitter_x] .check-error`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#targets tr[data-platform=twitter_x] .check-error`))), "280")
	_, p := getJSON(t, h, "/v1/posts/"+long)
	require.Equal(t, "draft", p["status"])
	tb.shoot(dir, "draft-refused")
	tb.noErrorsBut("status of 400 (Bad Request)")
}

// A post that failed on its network (the simulator's faults) is fixed on its page and published
// again: an over-limit text is refused naming the network and by how much, the fixed text is
// saved, and the retry publishes it.
func TestBrowserFailedPostFixedAndRetried(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	bsky := accountOf(t, h, platforms.Bluesky)
	sim := func(path string, body any) {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		resp, err := http.Post(h.app.Sim.BaseURL()+path, "application/json", bytes.NewReader(raw))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, path)
	}
	sim("/_sim/faults", map[string]any{"platform": "bluesky", "fault": "error_5xx", "count": 100})
	out := postJSON(t, h, "/v1/posts/publish", map[string]any{"content": "First try", "platforms": []string{bsky}}, 202)
	id, first := out["post_id"].(string), out["tracking_id"].(string)
	waitJob(t, h, first)
	require.Eventually(t, func() bool { _, p := getJSON(t, h, "/v1/posts/"+id); return p["status"] == "failed" }, 20*time.Second, 50*time.Millisecond)
	sim("/_sim/reset", map[string]any{}) // the network is back

	tb.signIn(h.url, h.user.Email, h.password, "/posts/"+id)
	tb.shoot(dir, "failed")
	tb.do(
		chromedp.Click(chromedp.CSS(`#edit summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#edit-content`)),
		chromedp.SetValue(chromedp.CSS(`#edit-content`), strings.Repeat("a", 310)),
		chromedp.Click(chromedp.CSS(`#edit button`)),
		chromedp.WaitVisible(chromedp.CSS(`#edit-content-error`)),
	)
	// Beside the text, in words, naming the network and by how much.
	refusal := get(tb, chromedp.Text(chromedp.CSS(`#edit-content-error`)))
	require.Equal(t, "Bluesky allows 300 characters; this text has 310 (10 too many).", refusal)
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(`#edit-content`), "aria-invalid")).Value)
	_, p := getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, "First try", p["content"], "refused: nothing changed")
	tb.shoot(dir, "fix-refused")

	tb.do(chromedp.SetValue(chromedp.CSS(`#edit-content`), "Second try"))
	msg := tb.flashAfter(chromedp.Click(chromedp.CSS(`#edit button`)))
	require.Equal(t, "Saved.", msg)
	_, p = getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, "Second try", p["content"])
	require.Equal(t, "failed", p["status"])

	msg = tb.flashAfter(chromedp.Click(chromedp.CSS(`form[data-api$="/publish"] button`)))
	require.Equal(t, "Publishing again to the networks that failed.", msg)
	require.Eventually(t, func() bool { _, p = getJSON(t, h, "/v1/posts/"+id); return p["status"] == "published" }, 20*time.Second, 50*time.Millisecond)
	pubs := h.app.Sim.Publications(platforms.Bluesky)
	require.Len(t, pubs, 1)
	require.Equal(t, "Second try", pubs[0].Text)
	tb.do(chromedp.Navigate(h.url+"/posts/"+id), chromedp.WaitVisible(chromedp.CSS(`#targets .published-link`)))
	tb.shoot(dir, "published")
	tb.noErrorsBut("status of 400 (Bad Request)")
}
