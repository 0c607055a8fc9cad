package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// wsRow is the selector of a workspace's card on the Workspaces page.
func wsRow(id string) string { return `article.workspace[data-workspace="` + id + `"]` }

// switchTo opens the header's switcher and chooses the workspace of that name.
func (tb *tab) switchTo(name string) string {
	tb.t.Helper()
	return tb.flashAfter(
		chromedp.Click(chromedp.CSS(`#ws-switch summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#ws-switch .ws-menu`)),
		chromedp.Click(chromedp.Search(`//button[contains(@class,"ws-choice") and text()=`+xpathString(name)+`]`)),
	)
}

func (tb *tab) currentWorkspace() string {
	tb.t.Helper()
	return eval[string](tb, `document.querySelector('#ws-switch .ws-current').textContent`)
}

// storedWorkspace reads a workspace of the demo user from the store (nil when it is gone).
func storedWorkspace(t *testing.T, h *herald, id string) *persistence.Workspace {
	t.Helper()
	var w *persistence.Workspace
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		var err error
		w, err = tx.Workspace(h.user.ID, id)
		if err == persistence.ErrNotFound {
			return nil
		}
		return err
	}))
	return w
}

// An agency's day in the dashboard: a workspace created on the Workspaces page (its name shown
// as written, never as markup), switched to in the header, where the posts list is empty; an
// account connected and a draft composed there land in it; back in main the draft is not listed
// and its page is not found. The Workspaces page shows each refusal beside its form with nothing
// changed (a limit below what is used, deleting a workspace that holds an account), saves a
// change, shows this month's usage as the API counts it and downloads it as CSV.
func TestBrowserWorkspaces(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	publish(t, h, "Counted in main's usage", 1)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/workspaces")
	require.Equal(t, "Main", tb.currentWorkspace())

	// Create.
	name := `Client <b>A</b> & Co`
	msg := tb.flashAfter(
		chromedp.SendKeys(chromedp.CSS(`#ws-name`), name),
		chromedp.Click(chromedp.CSS(`#new-workspace button[type=submit]`)),
	)
	require.Equal(t, "Workspace created.", msg)
	var wsID string
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.Workspaces(h.user.ID)
		require.Len(t, list, 2)
		wsID = list[1].ID
		return err
	}))
	require.Equal(t, name, eval[string](tb, `document.querySelector('`+wsRow(wsID)+` .ws-name').textContent`))
	require.Zero(t, eval[int](tb, `document.querySelectorAll('`+wsRow(wsID)+` b').length`), "the name is text, not markup")
	tb.shoot(dir, "workspaces")

	// Main's usage is the API's.
	code, usage := getJSON(t, h, "/v1/workspaces/main/usage")
	require.Equal(t, 200, code)
	for cls, want := range map[string]any{
		"u-posts-published":   usage["posts"].(map[string]any)["published"],
		"u-targets-published": usage["targets"].(map[string]any)["published"],
		"u-posts-failed":      usage["posts"].(map[string]any)["failed"],
		"u-posts-accepted":    usage["posts_accepted"],
	} {
		got := eval[string](tb, `document.querySelector('`+wsRow("main")+` .`+cls+`').textContent`)
		require.Equal(t, fmt.Sprint(want), got, cls)
	}
	require.Equal(t, "1", eval[string](tb, `document.querySelector('`+wsRow("main")+` .u-posts-published').textContent`))

	// Switch: the header names it, the posts list is empty.
	msg = tb.switchTo(name)
	require.Contains(t, msg, name)
	require.Equal(t, name, tb.currentWorkspace())
	tb.do(chromedp.Navigate(h.url+"/posts"), chromedp.WaitVisible(chromedp.CSS(`p[role=status]`)))
	require.Equal(t, "0 posts", get(tb, chromedp.Text(chromedp.CSS(`main p[role=status]`))))
	tb.do(chromedp.Click(chromedp.CSS(`#ws-switch summary`)), chromedp.WaitVisible(chromedp.CSS(`#ws-switch .ws-menu`)))
	tb.shoot(dir, "switcher-open")

	// An account connected and a draft composed here land in the workspace.
	tb.do(chromedp.Navigate(h.url + "/accounts"))
	msg = tb.flashAfter(
		chromedp.SendKeys(chromedp.CSS(`#bsky-handle`), "walker.bsky.social"),
		chromedp.SendKeys(chromedp.CSS(`#bsky-pass`), "abcd-efgh-ijkl-mnop"),
		chromedp.Click(chromedp.CSS(`form[data-api="/api/accounts/bluesky"] button`)),
	)
	require.Equal(t, "Bluesky account connected.", msg)
	var accID string
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.AccountsIn(wsID)
		require.Len(t, list, 1)
		accID = list[0].ID
		require.Equal(t, wsID, list[0].WorkspaceID)
		return err
	}))
	tb.do(
		chromedp.Navigate(h.url+"/compose"),
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
	)
	require.Equal(t, 1, eval[int](tb, `document.querySelectorAll('input[name=platforms]').length`), "compose offers the workspace's account only")
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`#content`), "A draft for Client A"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+accID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(section(accID)+`[data-ready]`)),
		chromedp.Click(chromedp.CSS(`#save-draft`)),
		chromedp.WaitVisible(chromedp.CSS(`#post-content`)),
	)
	postPath := strings.TrimPrefix(get(tb, chromedp.Location()), h.url)
	postID := strings.TrimPrefix(postPath, "/posts/")
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(postID)
		require.NoError(t, err)
		require.Equal(t, wsID, p.WorkspaceID, "the draft is the workspace's")
		require.Equal(t, "draft", string(p.Status))
		return nil
	}))
	tb.do(chromedp.Navigate(h.url+"/posts"), chromedp.WaitVisible(chromedp.CSS(`#posts`)))
	require.Equal(t, []string{"A draft for Client A"}, eval[[]string](tb, `Array.from(document.querySelectorAll('#posts .post-text')).map(a => a.textContent)`))

	// Back to main from the post's page: the switcher goes to the posts list, without the draft.
	tb.do(chromedp.Navigate(h.url+postPath), chromedp.WaitVisible(chromedp.CSS(`#post-content`)))
	tb.switchTo("Main")
	require.Equal(t, h.url+"/posts", get(tb, chromedp.Location()))
	require.Equal(t, "Main", tb.currentWorkspace())
	require.False(t, eval[bool](tb, `document.body.innerText.includes('A draft for Client A')`), "main does not list the workspace's draft")
	require.NotZero(t, eval[int](tb, `document.querySelectorAll('#posts .post-text').length`), "main lists its own posts")
	tb.do(chromedp.Navigate(h.url + postPath))
	require.Equal(t, "There is nothing here.", get(tb, chromedp.Text(chromedp.CSS(`main p`))))

	// The Workspaces page's refusals, beside their forms; nothing changes.
	tb.do(chromedp.Navigate(h.url+"/workspaces"), chromedp.WaitVisible(chromedp.CSS(wsRow(wsID))))
	edit := wsRow(wsID) + ` form.ws-edit`
	tb.do(
		chromedp.Click(chromedp.CSS(wsRow(wsID)+` details summary`)),
		chromedp.WaitVisible(chromedp.CSS(edit+` input[name="limits.accounts"]`)),
		chromedp.SendKeys(chromedp.CSS(edit+` input[name="limits.accounts"]`), "0"),
		chromedp.Click(chromedp.CSS(edit+` button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(edit+` [data-error]`)),
	)
	errText := get(tb, chromedp.Text(chromedp.CSS(edit+` [data-error]`)))
	require.Contains(t, errText, "holds 1 connected accounts already")
	require.True(t, eval[bool](tb, `document.getElementById('flash').hidden`), "the error is shown beside the form")
	require.Nil(t, storedWorkspace(t, h, wsID).Limits.Accounts, "nothing changed")
	tb.shoot(dir, "workspaces-limit-refused")

	del := wsRow(wsID) + ` form.ws-delete`
	tb.do(chromedp.Click(chromedp.CSS(del + ` button`)))
	tb.confirm()
	tb.do(chromedp.WaitVisible(chromedp.CSS(del + ` [data-error]`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(del+` [data-error]`))), "holds 1 connected accounts; disconnect them")
	require.NotNil(t, storedWorkspace(t, h, wsID), "the workspace is kept")

	// A change that fits is saved: the earlier error goes away with the new submission.
	tb.setText(edit+` input[name="limits.accounts"]`, "")
	tb.setText(edit+` input[name="limits.posts_per_month"]`, "50")
	tb.setText(edit+` input[name="name"]`, "Client B")
	msg = tb.flashAfter(
		chromedp.Click(chromedp.CSS(edit+` input[name="approval_required"]`)),
		chromedp.Click(chromedp.CSS(edit+` button[type=submit]`)),
	)
	require.Equal(t, "Workspace saved.", msg)
	w := storedWorkspace(t, h, wsID)
	require.Equal(t, "Client B", w.Name)
	require.True(t, w.ApprovalRequired)
	require.NotNil(t, w.Limits.PostsPerMonth)
	require.Equal(t, 50, *w.Limits.PostsPerMonth)
	require.Nil(t, w.Limits.Accounts)
	require.Equal(t, "0 accepted of 50 allowed", get(tb, chromedp.Text(chromedp.CSS(wsRow(wsID)+` .ws-posts-limit`))))
	require.Equal(t, "1, no limit", get(tb, chromedp.Text(chromedp.CSS(wsRow(wsID)+` .ws-accounts-limit`))))

	// The month's usage as CSV, fetched as the download link does.
	tb.do(chromedp.Evaluate[chromedp.Void](`(() => { window.__csv = null; const make = URL.createObjectURL;
		URL.createObjectURL = b => { b.text().then(t => { window.__csv = t; }); return make(b); }; })()`))
	tb.do(chromedp.Click(chromedp.CSS(wsRow("main") + ` a[data-usage-csv]`)))
	var csv string
	require.Eventually(t, func() bool {
		csv = eval[string](tb, `window.__csv || ''`)
		return csv != ""
	}, 10*time.Second, 50*time.Millisecond)
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	require.Equal(t, "workspace_id,month,network,posts_published,posts_failed,targets_published,targets_failed,posts_accepted,api_requests", lines[0])
	require.True(t, strings.HasPrefix(lines[len(lines)-1], "main,"+time.Now().UTC().Format("2006-01")+",all,1,"), lines[len(lines)-1])

	tb.noErrorsBut("status of 400 (Bad Request) ("+h.url+"/api/workspaces/"+wsID+")",
		"status of 409 (Conflict) ("+h.url+"/api/workspaces/"+wsID+")",
		"status of 404 (Not Found) ("+h.url+postPath+")")
}

// The Developer page's key form binds a key to a workspace and limits it to scopes: /v1/me shows
// them, the key is refused elsewhere, and the list shows each key's limits.
func TestBrowserKeyLimits(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	out := postJSON(t, h, "/v1/workspaces", map[string]any{"name": "Client A"}, 201)
	wsID := out["id"].(string)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/developer")

	tb.do(
		chromedp.SendKeys(chromedp.CSS(`#key-name`), "client reader"),
		chromedp.Click(chromedp.CSS(`details.key-limits summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#key-workspace`)),
	)
	tb.choose(`#key-workspace`, wsID)
	tb.do(
		chromedp.Click(chromedp.CSS(`input[name=scopes][value="me:read"]`)),
		chromedp.Click(chromedp.CSS(`input[name=scopes][value="posts:read"]`)),
	)
	tb.shoot(dir, "key-form")
	tb.do(
		chromedp.Click(chromedp.CSS(`form[data-api="/api/keys"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret-reveal`)),
	)
	key := get(tb, chromedp.Text(chromedp.CSS(`#reveal-value`)))
	require.True(t, strings.HasPrefix(key, "sk_"), key)

	resp := apiCall(t, "GET", h.url+"/v1/me", key, nil)
	require.Equal(t, 200, resp.StatusCode)
	var me map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&me))
	require.Equal(t, wsID, me["workspace_id"])
	require.Equal(t, wsID, me["api_key"].(map[string]any)["workspace_id"])
	require.Equal(t, []any{"me:read", "posts:read"}, me["api_key"].(map[string]any)["scopes"])
	resp = apiCall(t, "POST", h.url+"/v1/posts", key, strings.NewReader(`{"content":"x","platforms":[]}`))
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "outside its scopes")
	req, _ := http.NewRequest("GET", h.url+"/v1/posts", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Herald-Workspace", "main")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "outside its workspace")

	// A key with no limit chosen has full access, as before.
	tb.do(chromedp.Click(chromedp.CSS(`#secret-reveal [data-reload]`)), chromedp.Sleep(300*time.Millisecond), chromedp.WaitReady(chromedp.CSS(`#keys`)))
	full := createKey(tb, "full access")
	resp = apiCall(t, "GET", h.url+"/v1/me", full, nil)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&me))
	require.Nil(t, me["api_key"].(map[string]any)["scopes"])
	require.Nil(t, me["api_key"].(map[string]any)["workspace_id"])

	tb.do(chromedp.Click(chromedp.CSS(`#secret-reveal [data-reload]`)), chromedp.Sleep(300*time.Millisecond), chromedp.WaitReady(chromedp.CSS(`#keys`)))
	limits := func(name string) string {
		return eval[string](tb, `Array.from(document.querySelectorAll('#keys tr')).find(tr => tr.querySelector('.key-name')?.textContent === `+jsString(name)+`).querySelector('.key-limits-cell').innerText`)
	}
	require.Equal(t, "only Client A\nme:read, posts:read", limits("client reader"))
	require.Equal(t, "every workspace\nfull access", limits("full access"))
	tb.shoot(dir, "key-list")
	tb.noErrors()
}
