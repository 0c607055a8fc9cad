package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A reply written on the inbox page reaches the network (the simulator's record of replies);
// a stranger's markup stays text; the analytics page draws its charts and a post's page its
// live counters, all without a script or policy error.
func TestBrowserInboxReplyAndAnalytics(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	p := h.PublishAndWait("Launch day", nil, x, bsky)
	require.NoError(t, s.SetMetrics(platforms.X, apptest.Target(p, platforms.X), sim.Counters{Views: 1200, Likes: 40, Comments: 2, Shares: 5}))
	cid, err := s.AddComment(platforms.X, apptest.Target(p, platforms.X), `Nice! <img src=x onerror="document.title='pwned'">`, "mallory")
	require.NoError(t, err)
	_, err = s.AddComment(platforms.Bluesky, apptest.Target(p, platforms.Bluesky), "Congratulations", "ann.bsky.social")
	require.NoError(t, err)
	_, err = s.AddDM(platforms.X, x.NetworkUserID, "eve", "Can we talk <b>business</b>?")
	require.NoError(t, err)
	conv, err := s.AddDM(platforms.Bluesky, bsky.NetworkUserID, "bob.bsky.social", "Are you open on Sunday?")
	require.NoError(t, err)
	dir := screenshots(t)

	tb := newTab(t)
	tb.signIn(h.URL, h.User.Email, h.Password, "/inbox")
	thread := `.thread[data-comment-id="` + cid + `"]`
	tb.do(chromedp.WaitVisible(chromedp.CSS(thread)))
	require.Equal(t, `Nice! <img src=x onerror="document.title='pwned'">`, get(tb, chromedp.Text(chromedp.CSS(thread+` .comment-text`))))
	require.Zero(t, eval[int64](tb, `document.querySelectorAll('.threads img, .threads b').length`), "no stranger's markup became an element")
	require.NotEqual(t, "pwned", eval[string](tb, `document.title`))
	tb.shoot(dir, "inbox")

	msg := tb.flashAfter(
		chromedp.Click(chromedp.CSS(thread+` summary`)),
		chromedp.WaitVisible(chromedp.CSS(thread+` textarea[name=text]`)),
		chromedp.SendKeys(chromedp.CSS(thread+` textarea[name=text]`), "Thank you, Mallory"),
		chromedp.Click(chromedp.CSS(thread+` .reply-form button[type=submit]`)),
	)
	require.Equal(t, "Reply sent.", msg)
	replies := s.Replies(platforms.X)
	require.Len(t, replies, 1)
	require.Equal(t, "Thank you, Mallory", replies[0].Text)
	require.Equal(t, cid, replies[0].InReplyTo)
	// The page read again shows the reply under the comment, the thread answered.
	tb.do(chromedp.WaitVisible(chromedp.CSS(thread + ` .replies .own`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(thread+` .replies`))), "Thank you, Mallory")

	// A like, through the /api route.
	require.Equal(t, "Liked.", tb.flashAfter(chromedp.Click(chromedp.CSS(thread+` form[data-api$="/like"] button`))))
	require.Len(t, s.Likes(platforms.X), 1)

	// A direct message on Bluesky: the conversation opened, then answered from the page.
	item := `#conversations .thread[data-conversation-id="` + conv + `"]`
	tb.do(chromedp.Click(chromedp.CSS(item+` a.open-conversation`)), chromedp.WaitVisible(chromedp.CSS(`#conversation-messages`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#conversation-messages`))), "bob.bsky.social: Are you open on Sunday?")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#conversation-h`))), "with bob.bsky.social", "named as the listing names them")
	msg = tb.flashAfter(
		chromedp.Click(chromedp.CSS(item+` summary`)),
		chromedp.WaitVisible(chromedp.CSS(item+` textarea[name=text]`)),
		chromedp.SendKeys(chromedp.CSS(item+` textarea[name=text]`), "Yes, from ten"),
		chromedp.Click(chromedp.CSS(item+` .reply-form button[type=submit]`)),
	)
	require.Equal(t, "Message sent.", msg)
	dms := s.DMs(platforms.Bluesky)
	require.Len(t, dms, 1)
	require.Equal(t, "Yes, from ten", dms[0].Text)
	require.Equal(t, conv, dms[0].ConversationID)
	// The page read again (the same address) shows the answer in the conversation.
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#conversation-messages li.own`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#conversation-messages li.own`))), "Yes, from ten")
	tb.shoot(dir, "inbox-conversation")

	// The analytics page: three charts, the totals the simulator reports.
	tb.do(chromedp.Navigate(h.URL+"/analytics?range=7d"), chromedp.WaitVisible(chromedp.CSS(`#chart-engagement`)))
	require.Equal(t, "1200", get(tb, chromedp.Text(chromedp.CSS(`#an-totals div:first-child dd`))))
	require.Equal(t, int64(3), eval[int64](tb, `document.querySelectorAll('figure.chart svg').length`))
	tb.shoot(dir, "analytics")

	// The post's page reads its publications' counters.
	tb.do(chromedp.Navigate(h.URL+"/posts/"+p.ID), chromedp.WaitVisible(chromedp.CSS(`#post-analytics:not([aria-busy]) tr[data-platform="twitter_x"]`)))
	row := get(tb, chromedp.Text(chromedp.CSS(`#post-analytics tr[data-platform="twitter_x"]`)))
	require.True(t, strings.Contains(row, "1200") && strings.Contains(row, "40"), row)
	tb.shoot(dir, "post-analytics")
	tb.noErrors()
}
