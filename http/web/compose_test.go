package web_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// section is the CSS selector of an account's section on the compose page.
func section(id string) string { return `.net-section[data-account="` + id + `"]` }

// choose sets a select's value as a user does, firing its change event, and returns the value.
func (tb *tab) choose(sel, value string) string {
	tb.t.Helper()
	return eval[string](tb, `(() => { const s = document.querySelector(`+jsString(sel)+`);
		s.value = `+jsString(value)+` || s.options[1].value;
		s.dispatchEvent(new Event('change', { bubbles: true })); return s.value; })()`)
}

// setText sets a text field's value as typing does, firing its input event.
func (tb *tab) setText(sel, value string) {
	tb.t.Helper()
	tb.do(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.querySelector(` + jsString(sel) + `);
		f.value = ` + jsString(value) + `; f.dispatchEvent(new Event('input', { bubbles: true })); })()`))
}

// checked waits for the live check of the form as it is now (no change pending or in flight).
func (tb *tab) checked() {
	tb.t.Helper()
	tb.do(chromedp.WaitReady(chromedp.CSS(`#compose[data-valid]:not([data-checking])`)))
}

// A post to X, Bluesky and TikTok, each with its own section: X gets its own text and reply
// setting, X and Bluesky no media, TikTok the video; TikTok without a privacy level is shown
// refused beside its section (its select has no value chosen for the user, from the creator's
// choices or else the schema's), and publishing says so; once a level is chosen, the post goes
// out, and the post as /v1 answers it has each network's own text, media and options.
func TestBrowserComposePerNetwork(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	x, bsky, tiktok := accountOf(t, h, platforms.X), accountOf(t, h, platforms.Bluesky), accountOf(t, h, platforms.TikTok)
	noDefaults(t, h, tiktok)
	clip := filepath.Join(t.TempDir(), "clip.mp4")
	require.NoError(t, os.WriteFile(clip, apptest.MP4File, 0o644))

	tb.signIn(h.url, h.user.Email, h.password, "/compose")
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#content`)))
	require.False(t, eval[bool](tb, `!document.querySelector('`+section(tiktok)+`').hidden`), "a section shows once its account is ticked")
	tb.do(
		chromedp.SendKeys(chromedp.CSS(`#content`), "The same words for everyone"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+x+`"]`)),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+bsky+`"]`)),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+tiktok+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(section(tiktok)+`[data-ready] select[data-opt=privacy_level]`)),
		chromedp.WaitVisible(chromedp.CSS(section(x)+`[data-ready] select[data-opt=reply_settings]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#media-file`), []string{clip}),
		chromedp.WaitVisible(chromedp.CSS(`#media-list li[data-media-id]`)),
	)
	// TikTok's privacy: nothing chosen for the user, every level offered to choose.
	require.Empty(t, eval[string](tb, `document.querySelector('`+section(tiktok)+` select[data-opt=privacy_level]').value`))
	levels := eval[[]string](tb, `Array.from(document.querySelectorAll('`+section(tiktok)+` select[data-opt=privacy_level] option')).map(o => o.value).filter(Boolean)`)
	require.NotEmpty(t, levels)
	for _, l := range levels {
		require.Contains(t, platforms.TikTokPrivacyLevels, l)
	}
	require.False(t, eval[bool](tb, `document.querySelector('`+section(tiktok)+` input[data-opt=allow_comment]').checked`), "interactions are off by default")

	// X's own text (starting from the shared one) and no media for X and Bluesky.
	xText := "Only on X: shorter, with a reply setting"
	tb.do(
		chromedp.Click(chromedp.CSS(section(x)+` .net-customise`)),
		chromedp.WaitVisible(chromedp.CSS(section(x)+` .net-content`)),
	)
	require.Equal(t, "The same words for everyone", eval[string](tb, `document.querySelector('`+section(x)+` .net-content').value`))
	tb.setText(section(x)+` .net-content`, "")
	tb.do(chromedp.SendKeys(chromedp.CSS(section(x)+` .net-content`), xText))
	for _, id := range []string{x, bsky} {
		tb.do(
			chromedp.Click(chromedp.CSS(section(id)+` .net-own-media`)),
			chromedp.WaitVisible(chromedp.CSS(section(id)+` .net-media input`)),
			chromedp.Click(chromedp.CSS(section(id)+` .net-media input`)),
		)
	}
	tb.choose(section(x)+` select[data-opt=reply_settings]`, "following")

	// The live check: TikTok is refused beside its section, the others are ready.
	tb.checked()
	tb.do(chromedp.WaitVisible(chromedp.CSS(section(tiktok) + `[data-valid=false] .net-errors`)))
	errs := get(tb, chromedp.Text(chromedp.CSS(section(tiktok)+` .net-errors`)))
	require.Contains(t, errs, "Who can watch")
	require.Contains(t, errs, "required")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(section(tiktok)+` .opt[data-field=privacy_level] .opt-error`))), "required")
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(section(x)), "data-valid")).Value)
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(section(bsky)), "data-valid")).Value)
	require.Equal(t, xText, get(tb, chromedp.Text(chromedp.CSS(section(x)+` .preview-text`))), "the preview is X's own text")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(section(x)+` .preview-length`))), "/ 280")
	blocked := get(tb, chromedp.Text(chromedp.CSS(`#blockers`)))
	require.Contains(t, blocked, "Publishing is blocked")
	require.Contains(t, blocked, "TikTok")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#check-summary`))), "1 of 3 networks need attention")
	tb.shoot(dir, "01-tiktok-refused")

	// Fixed: a privacy level chosen, and the AI label.
	level := tb.choose(section(tiktok)+` select[data-opt=privacy_level]`, "")
	tb.do(chromedp.Click(chromedp.CSS(section(tiktok) + ` input[data-opt=is_ai_generated]`)))
	tb.checked()
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(`#compose`), "data-valid")).Value)
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(section(tiktok)), "data-valid")).Value)
	require.Equal(t, "Ready.", get(tb, chromedp.Text(chromedp.CSS(`#blockers`))))
	tb.shoot(dir, "02-ready")

	tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#progress[data-done] #progress-links a`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#progress-summary`))), "Done: 3 published, 0 failed, of 3.")
	tb.shoot(dir, "03-published")
	// Accepted, the form is cleared: TikTok's privacy is asked again.
	require.Empty(t, eval[string](tb, `document.getElementById('content').value`))
	require.Empty(t, eval[string](tb, `document.querySelector('`+section(tiktok)+` select[data-opt=privacy_level]').value`))
	require.False(t, eval[bool](tb, `document.querySelector('`+section(x)+` .net-customise').checked`))

	postPath := get(tb, chromedp.AttributeValue(chromedp.CSS(`#progress-links a`), "href")).Value
	status, post := getJSON(t, h, "/v1"+postPath)
	require.Equal(t, 200, status)
	require.Equal(t, "published", post["status"], "%v", post)
	byAccount := map[string]map[string]any{}
	for _, p := range post["platforms"].([]any) {
		pl := p.(map[string]any)
		byAccount[pl["connected_account_id"].(string)] = pl
	}
	require.Len(t, byAccount, 3)
	require.Equal(t, xText, byAccount[x]["content"])
	require.Equal(t, map[string]any{"reply_settings": "following"}, byAccount[x]["options"])
	require.Empty(t, byAccount[x]["media"])
	require.Equal(t, "The same words for everyone", byAccount[bsky]["content"])
	require.Empty(t, byAccount[bsky]["media"])
	require.Equal(t, map[string]any{}, byAccount[bsky]["options"])
	require.Equal(t, "The same words for everyone", byAccount[tiktok]["content"])
	require.Len(t, byAccount[tiktok]["media"], 1)
	require.Equal(t, map[string]any{"privacy_level": level, "is_ai_generated": true}, byAccount[tiktok]["options"])
	tb.noErrors()
}

// A publish the server refuses (X's own text over 280) is shown beside X, with the message, and
// the form keeps everything written; a draft is saved with options still incomplete (TikTok
// without a privacy level).
func TestBrowserComposeRefusalKeepsForm(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	x, bsky, tiktok := accountOf(t, h, platforms.X), accountOf(t, h, platforms.Bluesky), accountOf(t, h, platforms.TikTok)
	noDefaults(t, h, tiktok)
	long := strings.Repeat("too long for X ", 20)

	tb.signIn(h.url, h.user.Email, h.password, "/compose")
	tb.do(
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SendKeys(chromedp.CSS(`#content`), "Short and shared"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+x+`"]`)),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+bsky+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(section(x)+`[data-ready] select[data-opt=reply_settings]`)),
		chromedp.Click(chromedp.CSS(section(x)+` .net-customise`)),
	)
	tb.setText(section(x)+` .net-content`, long)
	tb.choose(section(x)+` select[data-opt=reply_settings]`, "mentioned_users")
	// Published at once, before the live check: the server's refusal is shown the same way.
	tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#compose[data-refused]`)))
	tb.do(chromedp.WaitVisible(chromedp.CSS(`#flash`)), chromedp.WaitVisible(chromedp.CSS(section(x)+` .net-errors`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#flash`))), "280")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(section(x)+` .net-errors`))), "X allows 280 characters; this text has 300 (20 too many).")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#check-summary`))), "Not published")
	require.Equal(t, "false", get(tb, chromedp.AttributeValue(chromedp.CSS(section(x)), "data-valid")).Value)
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#blockers`))), "X:")
	tb.shoot(dir, "01-refused")
	// What a user wrote is shown as text in the preview, never parsed.
	evil := `<img src=x onerror="window.pwned=1"><b>bold</b>`
	tb.do(chromedp.Click(chromedp.CSS(section(bsky) + ` .net-customise`)))
	tb.setText(section(bsky)+` .net-content`, evil)
	tb.checked()
	tb.do(chromedp.WaitVisible(chromedp.CSS(section(bsky) + ` .preview-text`)))
	require.Equal(t, evil, get(tb, chromedp.Text(chromedp.CSS(section(bsky)+` .preview-text`))))
	require.Zero(t, eval[int](tb, `document.querySelectorAll('.net-section img, .net-section b').length`))
	require.False(t, eval[bool](tb, `window.pwned === 1`))
	// Bluesky's form is drawn from its schema alone: its self-labels, an enumeration's list.
	require.Equal(t, 4, eval[int](tb, `document.querySelectorAll('`+section(bsky)+` input[data-opt=labels]').length`))
	require.Equal(t, "Short and shared", eval[string](tb, `document.getElementById('content').value`))
	require.Equal(t, long, eval[string](tb, `document.querySelector('`+section(x)+` .net-content').value`))
	require.Equal(t, "mentioned_users", eval[string](tb, `document.querySelector('`+section(x)+` select[data-opt=reply_settings]').value`))
	require.True(t, eval[bool](tb, `document.querySelector('#progress').hidden`), "nothing was published")
	require.False(t, eval[bool](tb, `document.getElementById('submit-post').disabled`))
	tb.noErrorsBut("status of 400 (Bad Request)")

	// What was written is kept in the browser: Compose opened again restores it.
	tb.do(
		chromedp.Navigate(h.url+"/compose"),
		chromedp.WaitVisible(chromedp.CSS(`#compose[data-restored]`)),
	)
	require.Equal(t, "Short and shared", eval[string](tb, `document.getElementById('content').value`))
	require.True(t, eval[bool](tb, `document.querySelector('input[name=platforms][value="`+x+`"]').checked`))

	// A draft with TikTok's options incomplete and its own text, in a form started afresh.
	tb.do(
		chromedp.Evaluate[chromedp.Void](`localStorage.clear()`),
		chromedp.Navigate(h.url+"/compose"),
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SendKeys(chromedp.CSS(`#content`), "A draft for later"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+tiktok+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(section(tiktok)+`[data-ready] select[data-opt=privacy_level]`)),
		chromedp.Click(chromedp.CSS(section(tiktok)+` .net-customise`)),
		chromedp.SendKeys(chromedp.CSS(section(tiktok)+` .net-content`), " #tiktok"),
		chromedp.Click(chromedp.CSS(section(tiktok)+` input[data-opt=allow_comment]:not([disabled]), `+section(tiktok)+` input[data-opt=is_ai_generated]`)),
		chromedp.Click(chromedp.CSS(`#save-draft`)),
		chromedp.WaitVisible(chromedp.CSS(`#post-content`)),
	)
	postPath := strings.TrimPrefix(get(tb, chromedp.Location()), h.url)
	status, post := getJSON(t, h, "/v1"+postPath)
	require.Equal(t, 200, status)
	require.Equal(t, "draft", post["status"])
	pl := post["platforms"].([]any)[0].(map[string]any)
	require.Equal(t, "A draft for later #tiktok", pl["content"])
	require.NotContains(t, pl["options"], "privacy_level")
	require.Len(t, pl["options"], 1, "%v", pl["options"])
	tb.noErrorsBut("status of 400 (Bad Request)")

	// Every network gets its form: the known options by name, from the live choices or else the
	// schema; TikTok's paid partnership cannot be private.
	tb.do(chromedp.Navigate(h.url+"/compose"), chromedp.WaitVisible(chromedp.CSS(`#content`)))
	tb.do(chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('input[name=platforms]:not([disabled])').forEach(b => b.click())`))
	for _, p := range platforms.All {
		tb.do(chromedp.WaitVisible(chromedp.CSS(section(accountOf(t, h, p)) + `[data-ready] .net-options .opt`)))
	}
	for sel, tag := range map[string]string{
		section(accountOf(t, h, platforms.YouTube)) + ` [data-opt=privacy_status]`:  "SELECT",
		section(accountOf(t, h, platforms.YouTube)) + ` [data-opt=title]`:           "INPUT",
		section(accountOf(t, h, platforms.YouTube)) + ` [data-opt=made_for_kids]`:   "INPUT",
		section(accountOf(t, h, platforms.Instagram)) + ` [data-opt=type]`:          "SELECT",
		section(accountOf(t, h, platforms.Instagram)) + ` [data-opt=collaborators]`: "INPUT",
		section(accountOf(t, h, platforms.LinkedIn)) + ` [data-opt=visibility]`:     "SELECT",
		section(accountOf(t, h, platforms.Threads)) + ` [data-opt=reply_control]`:   "SELECT",
		section(accountOf(t, h, platforms.Facebook)) + ` [data-opt=type]`:           "SELECT",
		section(accountOf(t, h, platforms.Pinterest)) + ` [data-opt=link]`:          "INPUT",
	} {
		require.Equal(t, tag, eval[string](tb, `document.querySelector(`+jsString(sel)+`).tagName`), sel)
	}
	board := section(accountOf(t, h, platforms.Pinterest)) + ` [data-opt=board_id]`
	require.Contains(t, []string{"SELECT", "INPUT"}, eval[string](tb, `document.querySelector(`+jsString(board)+`).tagName`))
	tt := section(tiktok)
	tb.choose(tt+` select[data-opt=privacy_level]`, "SELF_ONLY")
	require.True(t, eval[bool](tb, `document.querySelector('`+tt+` input[data-opt=branded_content]').disabled`))
	tb.choose(tt+` select[data-opt=privacy_level]`, "PUBLIC_TO_EVERYONE")
	tb.do(chromedp.Click(chromedp.CSS(tt + ` input[data-opt=branded_content]`)))
	require.True(t, eval[bool](tb, `document.querySelector('`+tt+` option[value=SELF_ONLY]').disabled`))
	tb.shoot(dir, "02-every-network")
	tb.noErrorsBut("status of 400 (Bad Request)")
}

// noDefaults clears an account's default options (the demo TikTok account posts privately by
// default), so that the form is the only place a choice is made.
func noDefaults(t *testing.T, h *herald, account string) {
	t.Helper()
	resp := apiCall(t, "PATCH", h.url+"/v1/accounts/"+account, h.key, strings.NewReader(`{"default_options":null}`))
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

// A thread and first comments written in the compose page: X gets the post, its two parts as a
// chain of replies and its first comment; LinkedIn the post and its comment. The post's page lists
// the parts and the comments' outcomes.
func TestBrowserComposeThreadAndFirstComment(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	tb := newTab(t)
	dir := screenshots(t)
	x, li := accountOf(t, h, platforms.X), accountOf(t, h, platforms.LinkedIn)
	tb.signIn(h.url, h.user.Email, h.password, "/compose")
	tb.do(
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SendKeys(chromedp.CSS(`#content`), "A thread begins"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+x+`"]`)),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+li+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(section(x)+` .net-thread`)),
	)
	require.False(t, eval[bool](tb, `!!document.querySelector('`+section(li)+` .net-thread')`), "LinkedIn has no threads")
	tb.do(
		chromedp.SendKeys(chromedp.CSS(section(x)+` .net-thread`), "It goes on\n---\nAnd ends"),
		chromedp.SendKeys(chromedp.CSS(section(x)+` .net-comment`), "A comment on X"),
		chromedp.SendKeys(chromedp.CSS(section(li)+` .net-comment`), "A comment on LinkedIn"),
	)
	tb.checked()
	require.Equal(t, "true", get(tb, chromedp.AttributeValue(chromedp.CSS(`#compose`), "data-valid")).Value)
	tb.shoot(dir, "thread-01-written")
	tb.do(chromedp.Click(chromedp.CSS(`#submit-post`)), chromedp.WaitVisible(chromedp.CSS(`#progress[data-done] #progress-links a`)))
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#progress-summary`))), "Done: 2 published, 0 failed, of 2.")
	require.Empty(t, eval[string](tb, `document.querySelector('`+section(x)+` .net-thread').value`), "the form is cleared")

	recs := h.app.Sim.Publications(platforms.X)
	require.Len(t, recs, 4)
	require.Equal(t, []string{"A thread begins", "It goes on", "And ends", "A comment on X"}, []string{recs[0].Text, recs[1].Text, recs[2].Text, recs[3].Text})
	require.Equal(t, []string{"", recs[0].ID, recs[1].ID, recs[0].ID}, []string{recs[0].ReplyTo, recs[1].ReplyTo, recs[2].ReplyTo, recs[3].ReplyTo})
	lrecs := h.app.Sim.Publications(platforms.LinkedIn)
	require.Len(t, lrecs, 2)
	require.Equal(t, lrecs[0].ID, lrecs[1].CommentOn)

	postPath := get(tb, chromedp.AttributeValue(chromedp.CSS(`#progress-links a`), "href")).Value
	tb.do(chromedp.Navigate(h.url+postPath), chromedp.WaitVisible(chromedp.CSS(`#targets`)))
	row := get(tb, chromedp.Text(chromedp.CSS(`#targets tr[data-platform=twitter_x]`)))
	require.Contains(t, row, "It goes on")
	require.Contains(t, row, "And ends")
	require.Contains(t, row, "First comment: published")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`#targets tr[data-platform=linkedin]`))), "First comment: published")
	tb.shoot(dir, "thread-02-post")
}

// The compose page's live check shows the link card a Bluesky post would carry, read by the server
// from the page the text links to.
func TestBrowserComposeShowsTheLinkCard(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<html><head><meta property="og:title" content="Spring menu &amp; more">` +
			`<meta property="og:description" content="Twelve new dishes"></head><body></body></html>`))
	}))
	t.Cleanup(page.Close)
	a := apptest.Start(t, apptest.Options{Demo: true, Config: func(c *app.Config) { c.WebhookAllowPrivate = true }})
	h := &herald{app: a.App, url: a.URL, key: a.Key, password: a.Password, user: a.User}
	tb := newTab(t)
	dir := screenshots(t)
	bsky := accountOf(t, h, platforms.Bluesky)
	tb.signIn(h.url, h.user.Email, h.password, "/compose")
	tb.do(
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SendKeys(chromedp.CSS(`#content`), "Our new menu: "+page.URL+"/menu"),
		chromedp.Click(chromedp.CSS(`input[name=platforms][value="`+bsky+`"]`)),
	)
	tb.checked()
	tb.do(chromedp.WaitVisible(chromedp.CSS(section(bsky) + ` .preview-card`)))
	require.Equal(t, "Spring menu & more", get(tb, chromedp.Text(chromedp.CSS(section(bsky)+` .preview-card-title`))))
	require.Equal(t, "Twelve new dishes", get(tb, chromedp.Text(chromedp.CSS(section(bsky)+` .preview-card-text`))))
	tb.shoot(dir, "link-card")
}
