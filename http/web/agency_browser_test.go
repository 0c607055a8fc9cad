package web_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// An agency's client, from start to finish, in three browsers: the agency's owner creates a
// workspace that requires approval and a connect link for it; the client, with no Herald session,
// connects their Instagram through the link; an editor the owner invited, limited to that
// workspace, composes a post with a photo and submits it, which holds it for approval; the owner
// sends the client an approval link; the client approves, and the post is published once, on the
// client's Instagram only.
func TestBrowserAgencyClientFlow(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	dir := screenshots(t)
	const clientHandle = "corner.shop"
	h.app.Sim.SetMember(platforms.Instagram, clientHandle)

	// The owner: a workspace for the client, approval required.
	owner := newTab(t)
	owner.signIn(h.url, h.user.Email, h.password, "/workspaces")
	msg := owner.flashAfter(
		chromedp.SendKeys(chromedp.CSS(`#ws-name`), "Corner Shop"),
		chromedp.Click(chromedp.CSS(`#new-workspace input[name=approval_required]`)),
		chromedp.Click(chromedp.CSS(`#new-workspace button[type=submit]`)),
	)
	require.Equal(t, "Workspace created.", msg)
	var ws *persistence.Workspace
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.Workspaces(h.user.ID)
		require.Len(t, list, 2)
		ws = list[1]
		return err
	}))
	require.True(t, ws.ApprovalRequired)
	require.Contains(t, owner.switchTo("Corner Shop"), "Corner Shop")

	// A connect link for Instagram, from the Accounts page.
	owner.do(
		chromedp.Navigate(h.url+"/accounts"),
		chromedp.WaitVisible(chromedp.CSS(`#link-form`)),
		chromedp.Click(chromedp.CSS(`#link-form input[value="instagram"]`)),
		chromedp.SendKeys(chromedp.CSS(`#link-note`), "Your Instagram, for the spring posts"),
		chromedp.Click(chromedp.CSS(`#link-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	link := get(owner, chromedp.Text(chromedp.CSS(`#reveal-value`)))
	require.True(t, strings.HasPrefix(link, h.url+"/connect/l/"), link)
	owner.noErrors()

	// The client: no Herald session; the page names the agency and the workspace first.
	client := newTab(t)
	client.do(chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`#link-networks`)))
	require.Equal(t, "Corner Shop", get(client, chromedp.Text(chromedp.CSS(`#link-workspace`))))
	client.shoot(dir, "agency-connect-link")
	client.do(
		chromedp.Click(chromedp.CSS(`#link-instagram`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#link-networks`)),
		chromedp.WaitVisible(chromedp.CSS(`h1`)),
	)
	require.Equal(t, "Instagram is connected", get(client, chromedp.Text(chromedp.CSS(`h1`))))
	client.noErrors()
	var ig *persistence.Account
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.AccountsIn(ws.ID)
		require.Len(t, list, 1, "the client's account is in the client's workspace")
		ig = list[0]
		return err
	}))
	require.Equal(t, "instagram", ig.Platform)
	require.Equal(t, clientHandle, *ig.Username)

	// The owner invites an editor, limited to the client's workspace.
	owner.do(
		chromedp.Navigate(h.url+"/members"),
		chromedp.WaitVisible(chromedp.CSS(`#invite-form`)),
		chromedp.SendKeys(chromedp.CSS(`#invite-email`), "ed@agency.example"),
		chromedp.SetValue(chromedp.CSS(`#invite-role`), "editor"),
		chromedp.Click(chromedp.CSS(`#invite-form input[name=workspaces][value="`+ws.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`#invite-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	invitation, err := url.Parse(get(owner, chromedp.Text(chromedp.CSS(`#reveal-value`))))
	require.NoError(t, err)

	// The editor joins in a browser of their own, and lands in the client's workspace.
	editor := newTab(t)
	editor.do(
		chromedp.Navigate(h.url+invitation.Path),
		chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Ed"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "ed's long enough password"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`header.top nav`)),
	)
	require.Equal(t, "Corner Shop", editor.currentWorkspace())

	// The editor composes a post with a photo for the client's Instagram and submits it: held.
	photo := filepath.Join(t.TempDir(), "shopfront.jpg")
	require.NoError(t, os.WriteFile(photo, apptest.JPEGFile, 0o644))
	editor.do(
		chromedp.Navigate(h.url+"/compose"),
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SendKeys(chromedp.CSS(`#content`), "Spring is here: new flowers in the shop window"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+ig.ID+`"]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#media-file`), []string{photo}),
		chromedp.WaitVisible(chromedp.CSS(`#media-list li[data-media-id]`)),
	)
	require.Equal(t, 1, eval[int](editor, `document.querySelectorAll('input[name=platforms]').length`), "the editor sees the client's account only")
	editor.checked()
	editor.do(
		chromedp.Click(chromedp.CSS(`#submit-post`)),
		chromedp.WaitVisible(chromedp.CSS(`#approval`)),
	)
	require.Contains(t, get(editor, chromedp.Text(chromedp.CSS(`#approval`))), "Waiting for approval")
	require.Contains(t, get(editor, chromedp.Text(chromedp.CSS(`main`))), "submitted for approval by ed@agency.example", "the timeline names the editor")
	postID := strings.TrimPrefix(get(editor, chromedp.Location()), h.url+"/posts/")
	editor.shoot(dir, "agency-held")
	editor.noErrors()
	post := func() *persistence.Post {
		var p *persistence.Post
		require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
			var err error
			p, err = tx.Post(postID)
			return err
		}))
		return p
	}
	require.Equal(t, persistence.PostPendingApproval, post().Status)
	require.Equal(t, ws.ID, post().WorkspaceID)
	require.Empty(t, h.app.Sim.Publications(platforms.Instagram), "nothing is published without approval")

	// The owner sends the client an approval link from the approval queue.
	owner.do(
		chromedp.Navigate(h.url+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`section.approval[data-post-id="`+postID+`"]`)),
		chromedp.Click(chromedp.CSS(`section.approval[data-post-id="`+postID+`"] form[data-api$="/approval-link"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	approval := get(owner, chromedp.Text(chromedp.CSS(`#reveal-value`)))
	require.True(t, strings.HasPrefix(approval, h.url+"/approve/"), approval)
	owner.noErrors()

	// The client approves, still without a Herald session, after seeing the preview.
	client.do(chromedp.Navigate(approval), chromedp.WaitVisible(chromedp.CSS(`form button`)))
	page := get(client, chromedp.Text(chromedp.CSS(`main`)))
	require.Contains(t, page, "Spring is here: new flowers in the shop window")
	require.Contains(t, page, "Instagram")
	client.shoot(dir, "agency-approval-page")
	client.do(
		chromedp.Click(chromedp.Search(`//button[text()="Approve"]`)),
		chromedp.WaitNotPresent(chromedp.Search(`//button[text()="Approve"]`)),
	)
	client.shoot(dir, "agency-approved")

	// Published once, on the client's Instagram only.
	require.Eventually(t, func() bool { return post().Status == persistence.PostPublished }, 30*time.Second, 50*time.Millisecond)
	pubs := h.app.Sim.Publications(platforms.Instagram)
	require.Len(t, pubs, 1, "published once")
	p := post()
	require.Equal(t, pubs[0].ID, p.Targets[0].PublicationID)
	// The link is used: opening it again approves nothing more.
	resp, err := http.Get(approval)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusGone, resp.StatusCode)
	time.Sleep(200 * time.Millisecond)
	require.Len(t, h.app.Sim.Publications(platforms.Instagram), 1)
}
