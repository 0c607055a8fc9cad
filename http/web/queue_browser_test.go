package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The posting queue in a real browser: two weekly slots are set on the Settings page; a draft's
// "Add to queue" lands in the second, the first being taken by another post of its accounts,
// and Compose's "Add to queue" for an account with nothing scheduled lands in the first.
func TestBrowserQueue(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/settings")
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#queue-form`)))
	zone := get(tb, chromedp.Value(chromedp.CSS(`#queue-zone`)))
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err, "the queue's zone %q", zone)

	// Slots tomorrow and the day after at 10:00 in the queue's zone: tomorrow's is the first.
	now := time.Now().In(loc)
	slotA := time.Date(now.Year(), now.Month(), now.Day()+1, 10, 0, 0, 0, loc)
	slotB := time.Date(now.Year(), now.Month(), now.Day()+2, 10, 0, 0, 0, loc)
	day := func(at time.Time) string { return strings.ToLower(at.Weekday().String()) }
	tb.do(
		chromedp.Click(chromedp.CSS(`[data-slot-add]`)),
		chromedp.Click(chromedp.CSS(`[data-slot-add]`)),
		chromedp.WaitVisible(chromedp.CSS(`.queue-slot:nth-child(2) [data-slot-time]`)),
		chromedp.SetValue(chromedp.CSS(`.queue-slot:nth-child(1) [data-slot-day]`), day(slotB)),
		chromedp.SetValue(chromedp.CSS(`.queue-slot:nth-child(1) [data-slot-time]`), "10:00"),
		chromedp.SetValue(chromedp.CSS(`.queue-slot:nth-child(2) [data-slot-day]`), day(slotA)),
		chromedp.SetValue(chromedp.CSS(`.queue-slot:nth-child(2) [data-slot-time]`), "10:00"),
	)
	msg := tb.flashAfter(chromedp.Click(chromedp.CSS(`#queue-form button[type=submit]`)))
	require.Equal(t, "Queue saved.", msg)
	tb.do(chromedp.WaitVisible(chromedp.CSS(`.queue-slot:nth-child(2)`)))
	tb.shoot(dir, "settings-queue")
	_, q := getJSON(t, h, "/v1/queue")
	require.Equal(t, zone, q["timezone"])
	require.Len(t, q["slots"], 2)

	// A post of the draft's accounts takes tomorrow's slot: the draft lands in the next one.
	accounts := accountIDs(t, h, 3)
	schedule(t, h, "already there", slotA)
	id := draft(t, h, "queued from its page")
	tb.do(chromedp.Navigate(h.url+"/posts/"+id), chromedp.WaitVisible(chromedp.CSS(`#add-to-queue`)))
	tb.shoot(dir, "draft")
	msg = tb.flashAfter(chromedp.Click(chromedp.CSS(`#add-to-queue button`)))
	require.Contains(t, msg, "Added to the queue")
	_, p := getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, "scheduled", p["status"])
	require.Equal(t, slotB.UTC().Format(time.RFC3339), p["scheduled_at"], "the first free slot")
	require.Zero(t, eval[int](tb, `document.querySelectorAll('#add-to-queue').length`), "a scheduled post is not added again")

	// Compose: a post to an account with nothing scheduled lands in tomorrow's slot.
	tb.do(
		chromedp.Navigate(h.url+"/compose"),
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SendKeys(chromedp.CSS(`#content`), "queued from compose"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+accounts[2]+`"]`)),
	)
	tb.shoot(dir, "compose")
	msg = tb.flashAfter(chromedp.Click(chromedp.CSS(`#add-queue`)))
	require.Contains(t, msg, "Added to the queue")
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#post[data-post-id]`)))
	composed := eval[string](tb, `document.getElementById('post').dataset.postId`)
	_, p = getJSON(t, h, "/v1/posts/"+composed)
	require.Equal(t, "queued from compose", p["content"])
	require.Equal(t, slotA.UTC().Format(time.RFC3339), p["scheduled_at"], "another account's slot is free")
	tb.noErrors()
}
