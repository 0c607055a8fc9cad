package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// The approval queue in Chromium: the main workspace requires approval, a key limited to
// posts:write submits two posts (one a schedule whose time has passed while it waited); the
// owner sees both with their previews, the late one flagged, sends one back with a reason and
// approves the other; the client's approval page renders too. Screenshots at 390 and 1280 px.
func TestBrowserApprovals(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	ctx := context.Background()
	require.NoError(t, h.app.Store.Update(ctx, func(tx *persistence.Tx) error {
		return tx.PutWorkspace(&persistence.Workspace{ID: persistence.MainWorkspace, UserID: h.user.ID, Name: persistence.MainWorkspaceName,
			ApprovalRequired: true, CreatedAt: h.user.CreatedAt})
	}))
	k, err := auth.CreateKey(ctx, h.app.Store, h.user.Email, "editor", 0, time.Now())
	require.NoError(t, err)
	require.NoError(t, h.app.Store.Update(ctx, func(tx *persistence.Tx) error {
		rec, err := tx.APIKey(k.ID)
		if err != nil {
			return err
		}
		rec.Scopes = []string{auth.ScopePostsWrite}
		return tx.PutAPIKey(rec, nil)
	}))
	h.app.Auth.Invalidate()
	editor := &herald{app: h.app, url: h.url, key: k.Key, user: h.user}
	now := postJSON(t, editor, "/v1/posts/publish", map[string]any{"content": "Spring menu: three new dishes <b>today</b>", "platforms": accountIDs(t, h, 2)}, 202)
	require.Equal(t, "pending_approval", now["status"])
	soon := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	later := postJSON(t, editor, "/v1/posts/schedule", map[string]any{"content": "Weekend brunch is back", "platforms": accountIDs(t, h, 1), "scheduledAt": soon}, 201)
	lateID := later["id"].(string)
	// Its time passes while it waits (the record is changed in place, as time would).
	require.NoError(t, h.app.Store.Update(ctx, func(tx *persistence.Tx) error {
		p, err := tx.Post(lateID)
		if err != nil {
			return err
		}
		past := time.Now().Add(-time.Hour).UTC()
		p.Approval.ScheduledAt, p.ScheduledAt = &past, &past
		return tx.PutPost(p, nil)
	}))

	tb.signIn(h.url, h.user.Email, h.password, "/approvals")
	require.Equal(t, 2, eval[int](tb, `document.querySelectorAll('section.approval').length`))
	require.Equal(t, 1, eval[int](tb, `document.querySelectorAll('.badge-late').length`), "the late one is flagged")
	text := get(tb, chromedp.Text(chromedp.CSS(`main`)))
	require.Contains(t, text, "Spring menu: three new dishes <b>today</b>", "shown as text")
	require.Contains(t, text, "approving publishes it now")
	require.Contains(t, text, "by API key “editor”")
	tb.shoot(dir, "approvals")

	// Send the late one back with a reason.
	sel := `section[data-post-id="` + lateID + `"]`
	tb.do(
		chromedp.Click(chromedp.CSS(sel+` details summary`)),
		chromedp.SendKeys(chromedp.CSS(sel+` textarea[name=reason]`), "Brunch starts in May"),
		chromedp.Click(chromedp.CSS(sel+` form[data-api$="/reject"] button`)),
		chromedp.WaitNotPresent(chromedp.CSS(sel)),
	)
	require.Equal(t, 1, eval[int](tb, `document.querySelectorAll('section.approval').length`))
	var p *persistence.Post
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error { p, err = tx.Post(lateID); return err }))
	require.Equal(t, persistence.PostDraft, p.Status)
	require.Equal(t, "Brunch starts in May", *p.RejectionReason)
	tb.do(chromedp.Navigate(h.url+"/posts/"+lateID), chromedp.WaitVisible(chromedp.CSS(`#rejection`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#rejection`))), "Brunch starts in May", "the post's page says why it came back")
	tb.do(chromedp.Navigate(h.url+"/posts/"+now["id"].(string)), chromedp.WaitVisible(chromedp.CSS(`#approval`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#approval`))), "Waiting for approval")
	tb.shoot(dir, "post-pending")
	tb.do(chromedp.Navigate(h.url + "/approvals"))

	// The client's page for the other one, then the owner approves it here.
	id := now["id"].(string)
	link := postJSON(t, editor, "/v1/posts/"+id+"/approval-link", map[string]any{"expires_in_hours": 24}, 201)["url"].(string)
	require.True(t, strings.HasPrefix(link, h.url+"/approve/"))
	tb.do(chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`form button`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`main`))), "Request changes")
	tb.shoot(dir, "approval-link")

	tb.do(chromedp.Navigate(h.url+"/approvals"), chromedp.WaitVisible(chromedp.CSS(`section.approval`)),
		chromedp.Click(chromedp.CSS(`form[data-api$="/approve"] button`)),
		chromedp.WaitNotPresent(chromedp.CSS(`section.approval`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`main`))), "Nothing is waiting for approval.")
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error { p, err = tx.Post(id); return err }))
	require.NotEqual(t, persistence.PostPendingApproval, p.Status)
	require.NotNil(t, p.TrackingID, "approved: its job started")
	tb.noErrors()
}
