package web_test

import (
	"context"
	"html"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// page gets a dashboard page through the signed-in browser and answers its status and body.
func page(h *apptest.Herald, path string) (int, string) {
	h.T.Helper()
	r := h.SignedIn().Send("GET", path, nil, nil)
	return r.Status, string(r.Body)
}

// The inbox page prints a stranger's comment and direct message as text, never as markup, and
// pages its comments by following has_more and next_before as GET /v1/inbox/comments does.
func TestInboxPageEscapesAndPages(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	// Six posts on two networks: twelve publications, more than one page of the inbox (ten).
	oldest := h.PublishAndWait("The oldest post", nil, x, bsky)
	for i := range 5 {
		h.PublishAndWait("A later post, number "+strconv.Itoa(i+1), nil, x, bsky)
	}
	const markup = `<script>alert(1)</script><b onmouseover="x()">bold</b>`
	_, err := s.AddComment(platforms.X, apptest.Target(oldest, platforms.X), "Old comment "+markup, "mallory")
	require.NoError(t, err)
	_, err = s.AddDM(platforms.X, x.NetworkUserID, "eve", "Hello "+markup)
	require.NoError(t, err)

	status, body := page(h, "/inbox")
	require.Equal(t, 200, status, body)
	require.NotContains(t, body, "<script>alert")
	require.NotContains(t, body, "<b onmouseover")
	require.Contains(t, body, html.EscapeString("Hello "+markup), "the message is printed as text")
	require.NotContains(t, body, "Old comment", "the oldest publication is on a later page")

	// The first page says there is more, and the link carries the API's cursor.
	api := h.Do("GET", "/v1/inbox/comments", nil)
	require.Equal(t, 200, api.Status, string(api.Body))
	require.Equal(t, true, api.JSON(t)["has_more"])
	next := api.JSON(t)["next_before"].(string)
	older := "/inbox?before=" + url.QueryEscape(next)
	require.Contains(t, body, `id="older-comments"`)
	require.Contains(t, body, html.EscapeString(older))

	status, body = page(h, older)
	require.Equal(t, 200, status, body)
	require.Contains(t, body, html.EscapeString("Old comment "+markup))
	require.NotContains(t, body, "<script>alert")
	require.NotContains(t, body, `id="older-comments"`, "the last page has no older link")
	require.Contains(t, body, `>Newest</a>`)
	// The reply form names the comment's publication, as the API's reply needs.
	require.Contains(t, body, `value="`+apptest.PublicationID(oldest, platforms.X)+`"`)

	// A viewer reads the threads but is offered no reply, like or hide (the /api routes need an
	// editor); an editor is.
	r := h.Member("viewer@example.com", "viewer").Send("GET", older, nil, nil)
	require.Equal(t, 200, r.Status)
	require.Contains(t, string(r.Body), html.EscapeString("Old comment "+markup))
	require.NotContains(t, string(r.Body), "/api/inbox/")
	r = h.Member("editor@example.com", "editor").Send("GET", older, nil, nil)
	require.Contains(t, string(r.Body), `/reply"`)
	require.Contains(t, string(r.Body), `/like"`)

	// A conversation opened by its listing's link shows its messages, escaped; one named with
	// an account that is not the user's is refused as GET /v1/inbox/dms/:id refuses it.
	dms := h.Do("GET", "/v1/inbox/dms", nil).JSON(t)["conversations"].([]any)
	require.Len(t, dms, 1)
	conv := dms[0].(map[string]any)
	status, body = page(h, "/inbox?conversation="+url.QueryEscape(conv["id"].(string))+"&account_id="+x.ID+"&peer_id="+url.QueryEscape(conv["peer"].(map[string]any)["id"].(string)))
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `id="conversation-messages"`)
	require.Contains(t, body, html.EscapeString("Hello "+markup))
	require.NotContains(t, body, "<b onmouseover")
	stranger := uuid.NewString()
	apiRefusal := h.Do("GET", "/v1/inbox/dms/"+url.PathEscape(conv["id"].(string))+"?account_id="+stranger, nil)
	status, body = page(h, "/inbox?conversation="+url.QueryEscape(conv["id"].(string))+"&account_id="+stranger)
	require.Equal(t, apiRefusal.Status, status)
	require.Contains(t, body, html.EscapeString(apiRefusal.ErrorMessage(t)))
	status, _ = page(h, "/inbox?conversation=c&account_id=not-an-id")
	require.Equal(t, 400, status)

	// A cursor changed by hand is refused in the API's words, changing nothing.
	status, body = page(h, "/inbox?before="+url.QueryEscape(next[:len(next)-2]+"AA"))
	require.Equal(t, 400, status)
	require.Contains(t, body, "before: invalid cursor")
}

// The analytics page draws the overview of GET /v1/analytics/overview: its totals, a bar per
// day, the networks and the top posts, with the sampled and partial flags in words.
func TestAnalyticsPageShowsTheOverview(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.App.Sim
	x, bsky := h.Account(platforms.X), h.Account(platforms.Bluesky)
	p := h.PublishAndWait("Counted <i>post</i>", nil, x, bsky)
	require.NoError(t, s.SetMetrics(platforms.X, apptest.Target(p, platforms.X), sim.Counters{Views: 4321, Likes: 17, Comments: 3, Shares: 2}))
	require.NoError(t, s.SetMetrics(platforms.Bluesky, apptest.Target(p, platforms.Bluesky), sim.Counters{Likes: 5}))

	// An X account whose token ran out and cannot be refreshed: listed to reconnect.
	handle := "lapsed <x>"
	_, err := actors.Ask[*account.Reply](context.Background(), h.App.Accounts.To(uuid.Must(uuid.NewV7()).String()), &account.Create{
		Account: &persistence.Account{UserID: h.User.ID, Platform: string(platforms.X), Username: &handle, IsActive: true, CreatedAt: time.Now().UTC()},
		Creds:   platforms.Credentials{AccessToken: "t", ExpiresAt: time.Now().Add(-time.Hour)},
	})
	require.NoError(t, err)

	status, body := page(h, "/analytics?range=7d")
	require.Equal(t, 200, status, body)
	api := h.Do("GET", "/v1/analytics/overview?range=7d", nil)
	require.Equal(t, 200, api.Status, string(api.Body))
	totals := api.JSON(t)["totals"].(map[string]any)
	require.InDelta(t, 4321, totals["views"], 0)
	require.Contains(t, body, "<dt>Views</dt><dd>4321</dd>")
	require.Contains(t, body, "<dt>Likes</dt><dd>22</dd>")
	// One bar per day of the window: eight days (today and the seven before).
	require.Equal(t, len(api.JSON(t)["series"].([]any))*3, strings.Count(body, "<rect "))
	require.Contains(t, body, `<svg id="chart-engagement"`)
	// Both networks, Bluesky's views as not reported.
	require.Contains(t, body, `<tr data-platform="twitter_x"><td data-label="Network">X</td><td data-label="Publications">1</td><td data-label="Views">4321</td>`)
	require.Contains(t, body, `<tr data-platform="bluesky"><td data-label="Network">Bluesky</td><td data-label="Publications">1</td><td data-label="Views">–</td>`)
	// The top post links to its page, its text escaped.
	require.Contains(t, body, `<a href="/posts/`+p.ID+`" class="post-text">Counted &lt;i&gt;post&lt;/i&gt;</a>`)
	require.Len(t, api.JSON(t)["accounts_needing_reconnect"], 1)
	require.Contains(t, body, `<ul id="an-reconnect"><li>X <span class="username">lapsed &lt;x&gt;</span> <a href="/accounts">Reconnect</a></li></ul>`)
	require.NotContains(t, body, "an-partial")
	require.NotContains(t, body, "an-sampled")

	// A period the page does not offer falls back to its default rather than failing.
	status, body = page(h, "/analytics?range=bogus")
	require.Equal(t, 200, status)
	require.Contains(t, body, `<option value="28d" selected>`)
}
