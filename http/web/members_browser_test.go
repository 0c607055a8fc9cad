package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The owner invites an editor on the Members page (the link is shown once, with a copy button);
// the editor opens it in another browser with no session, joins, composes a draft, is offered no
// Delete for it, and a delete sent all the same is refused and the draft stays. The editor has no Members
// entry and no Members page. Screenshots of the page at 390 and 1280 px.
func TestMembersInviteAnEditor(t *testing.T) {
	h := startHerald(t)
	dir := screenshots(t)
	owner := newTab(t)
	owner.signIn(h.url, h.user.Email, h.password, "/members")
	owner.do(
		chromedp.WaitVisible(chromedp.CSS(`#invite-form`)),
		chromedp.SendKeys(chromedp.CSS(`#invite-email`), "Eve.Editor@example.com"),
		chromedp.SetValue(chromedp.CSS(`#invite-role`), "editor"),
		chromedp.Click(chromedp.CSS(`#invite-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	link := get(owner, chromedp.Text(chromedp.CSS(`#reveal-value`)))
	require.Regexp(t, `/join/hmi_[0-9A-Za-z]{40}$`, link)
	require.True(t, eval[bool](owner, `!!document.querySelector('#secret-reveal [data-copy]')`), "a copy button")
	owner.shoot(dir, "members-invite-link")
	owner.do(chromedp.Click(chromedp.CSS(`#secret-reveal [data-reload]`)), chromedp.WaitVisible(chromedp.CSS(`#invitations`)))
	require.Contains(t, get(owner, chromedp.Text(chromedp.CSS(`#invitations`))), "eve.editor@example.com")
	require.NotContains(t, get(owner, chromedp.OuterHTML(chromedp.CSS(`main`))), strings.TrimPrefix(link[strings.Index(link, "/join/"):], "/join/"),
		"the link is not shown again")
	owner.noErrors()

	u, err := url.Parse(link)
	require.NoError(t, err)
	editor := newTab(t) // another browser: no session
	editor.do(
		chromedp.Navigate(h.url+u.Path),
		chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)),
	)
	page := get(editor, chromedp.Text(chromedp.CSS(`main`)))
	require.Contains(t, page, h.user.Email)
	require.Contains(t, page, "eve.editor@example.com")
	require.Contains(t, page, "editor")
	editor.do(
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Eve"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "eve's long password"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`header.top nav`)),
	)
	require.Equal(t, "Eve", get(editor, chromedp.Text(chromedp.CSS(`header .who`))))
	require.False(t, eval[bool](editor, `!!document.querySelector('header nav a[href="/members"]')`), "no Members entry for an editor")

	editor.do(chromedp.Navigate(h.url+"/settings"), chromedp.WaitVisible(chromedp.CSS(`#name`)))
	require.Equal(t, "eve.editor@example.com", get(editor, chromedp.Text(chromedp.CSS(`main .email`))), "the member's own profile")
	require.Equal(t, "Eve", eval[string](editor, `document.getElementById('name').value`))

	ids := accountIDs(t, h, 1)
	editor.do(
		chromedp.Navigate(h.url+"/compose"),
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SendKeys(chromedp.CSS(`#content`), "Drafted by the editor"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+ids[0]+`"]`)),
		chromedp.Click(chromedp.CSS(`#save-draft`)),
		chromedp.WaitVisible(chromedp.CSS(`#post-content`)),
	)
	postPath := strings.TrimPrefix(get(editor, chromedp.Location()), h.url)
	status, post := getJSON(t, h, "/v1"+postPath)
	require.Equal(t, 200, status, "the draft is the owner's: the owner's key reads it")
	require.Equal(t, "draft", post["status"])

	// The page offers no Delete to an editor; a delete sent all the same is refused by the server.
	require.False(t, eval[bool](editor, `!!document.querySelector('form[data-method=DELETE]')`), "no Delete for an editor")
	refusal := get(editor, chromedp.Evaluate[string](`fetch('/api`+postPath+`', {method: 'DELETE', credentials: 'same-origin',
		headers: {'Accept': 'application/json', 'X-CSRF-Token': document.querySelector('meta[name="csrf-token"]').content}})
		.then(r => r.status + ' ' + r.headers.get('Content-Type')).then(s => s)`, chromedp.EvalAwaitPromise))
	require.True(t, strings.HasPrefix(refusal, "403 "), refusal)
	status, _ = getJSON(t, h, "/v1"+postPath)
	require.Equal(t, 200, status, "the draft was not deleted")
	editor.noErrorsBut("status of 403 (Forbidden)")

	editor.do(chromedp.Navigate(h.url+"/members"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	require.Contains(t, get(editor, chromedp.Text(chromedp.CSS(`main`))), "needs the owner role")

	owner.do(chromedp.Navigate(h.url+"/members"), chromedp.WaitVisible(chromedp.CSS(`#members`)))
	require.Contains(t, get(owner, chromedp.Text(chromedp.CSS(`#members`))), "eve.editor@example.com")
	owner.shoot(dir, "members")
	owner.noErrors()
}
