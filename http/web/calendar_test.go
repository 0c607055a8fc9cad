package web_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// brokenPNG is a PNG whose bytes are corrupt after its header: every network takes it at
// submission, and Instagram (which converts it to JPEG) fails its target when it publishes.
func brokenPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 32, 16))))
	return append(buf.Bytes()[:60:60], bytes.Repeat([]byte{0x5A}, 200)...)
}

// publishedAs publishes a post and waits for its job to end, whatever its outcome.
func publishedAs(t *testing.T, h *apptest.Herald, text string, media []string, accts ...*persistence.Account) string {
	t.Helper()
	ids := []string{}
	for _, a := range accts {
		ids = append(ids, a.ID)
	}
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": text, "platforms": ids, "media": media})
	require.Equal(t, 202, r.Status, string(r.Body))
	h.WaitJob(r.JSON(t)["tracking_id"].(string))
	return r.JSON(t)["post_id"].(string)
}

// chipOf is the calendar's entry of a post, from its <li> to its </li>.
func chipOf(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<li class="cal-post [^"]*" data-post="` + id + `".*?</li>`).FindString(page)
	require.NotEmpty(t, m, "post %s is on the calendar", id)
	return m
}

// The calendar shows published, partial and failed posts as well as scheduled ones, each with
// its own colour class and its status in words and its networks' icons; a crowded day shows a
// few and "+N more"; a future day and hour link to Compose with their time, which Compose
// fills in. Only a person who may schedule gets the Move buttons and those links.
func TestCalendarShowsEveryStatus(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	ig, th, bsky := h.Account(platforms.Instagram), h.Account(platforms.Threads), h.Account(platforms.Bluesky)
	broken := h.UploadMedia("broken.png", "image/png", brokenPNG(t))
	partial := publishedAs(t, h, "Half went out", []string{broken}, ig, th)
	failed := publishedAs(t, h, "Nothing went out", []string{broken}, ig)
	published := publishedAs(t, h, "All went out", []string{}, bsky)

	// Thirteen posts on one day, a week ahead (UTC: the demo user's zone).
	day := time.Now().UTC().AddDate(0, 0, 7)
	var crowd []string
	for i := range 13 {
		at := time.Date(day.Year(), day.Month(), day.Day(), 8+i, 5, 0, 0, time.UTC)
		r := h.Do("POST", "/v1/posts/schedule", map[string]any{"content": fmt.Sprintf("Crowd %d", i), "platforms": []string{bsky.ID, th.ID},
			"scheduledAt": at.Format(time.RFC3339)})
		require.Equal(t, 201, r.Status, string(r.Body))
		crowd = append(crowd, r.JSON(t)["id"].(string))
	}

	owner := h.SignedIn()
	r := owner.Send("GET", "/calendar?view=month&date="+time.Now().UTC().Format("2006-01-02"), nil, nil)
	require.Equal(t, 200, r.Status)
	page := string(r.Body)
	for id, status := range map[string]string{partial: "partial", failed: "failed", published: "published"} {
		c := chipOf(t, page, id)
		require.Contains(t, c, `class="cal-post st-`+status+`"`, "its colour")
		require.Contains(t, c, `<span class="cal-status">`+status+`</span>`, "its word")
		require.NotContains(t, c, "cal-move", "only a scheduled post moves")
	}
	require.Regexp(t, `#instagram"></use></svg><span class="sr-only">Instagram</span>`, chipOf(t, page, failed), "the network's icon, named")
	require.Regexp(t, `#threads".*#instagram"|#instagram".*#threads"`, chipOf(t, page, partial))

	r = owner.Send("GET", "/calendar?view=month&date="+day.Format("2006-01-02"), nil, nil)
	page = string(r.Body)
	cell := regexp.MustCompile(`(?s)data-date="` + day.Format("2006-01-02") + `".*?</details>`).FindString(page)
	require.Contains(t, cell, "<summary>+11 more</summary>", "two shown, the rest behind +N more")
	for i, id := range crowd {
		c := chipOf(t, cell, id)
		require.Contains(t, c, `<span class="cal-status">scheduled</span>`)
		require.Contains(t, c, `class="cal-move"`, "post %d can be moved", i)
	}
	next := day.AddDate(0, 0, 1).Format("2006-01-02")
	require.Contains(t, page, `data-compose="/compose?date=`+next+`&amp;time=09:00"`, "a later day composes at 09:00")
	require.Contains(t, page, `href="/compose?date=`+next+`&amp;time=09:00" aria-label="New post on `)
	past := time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
	if strings.Contains(page, `data-date="`+past+`"`) {
		require.NotRegexp(t, `data-date="`+past+`"[^>]*data-compose`, page, "no compose for a day gone")
	}

	// The week: each post in its hour; an hour composes at that hour.
	r = owner.Send("GET", "/calendar?view=week&date="+day.Format("2006-01-02"), nil, nil)
	page = string(r.Body)
	slot := regexp.MustCompile(`(?s)data-date="` + day.Format("2006-01-02") + `" data-hour="10".*?</ul>`).FindString(page)
	require.Contains(t, slot, `data-post="`+crowd[2]+`"`, "10:05 is in the 10 o'clock row")
	require.Contains(t, slot, `data-compose="/compose?date=`+day.Format("2006-01-02")+`&amp;time=10:00"`)
	require.Equal(t, 24*7, strings.Count(page, `data-drop data-date=`), "every hour of the week")

	// Compose from the calendar: scheduling, at that time, in the person's zone.
	r = owner.Send("GET", "/compose?date="+next+"&time=14:00", nil, nil)
	page = string(r.Body)
	require.Contains(t, page, `<input type="radio" name="when" value="later" checked>`)
	require.Contains(t, page, `<input id="sched-date" type="date" value="`+next+`">`)
	require.Contains(t, page, `<input id="sched-time" type="time" value="14:00">`)
	require.Contains(t, page, `<div id="schedule-fields" class="schedule">`, "the schedule fields shown")
	page = string(owner.Send("GET", "/compose?date=tomorrow&time=14:00", nil, nil).Body)
	require.Contains(t, page, `<input type="radio" name="when" value="now" checked>`, "a bad date is ignored")

	// A viewer sees the posts, and no way to move them or to write one.
	viewer := h.Member("viewer@example.com", "viewer")
	r = viewer.Send("GET", "/calendar?view=month&date="+day.Format("2006-01-02"), nil, nil)
	require.Equal(t, 200, r.Status)
	page = string(r.Body)
	require.Contains(t, page, `data-post="`+crowd[0]+`"`)
	for _, no := range []string{"cal-move", "data-movable", "data-compose", "cal-add"} {
		require.NotContains(t, page, no)
	}
}
