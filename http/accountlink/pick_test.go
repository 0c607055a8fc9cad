package accountlink_test

import (
	"encoding/base64"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// picker is a picker page as the browser got it.
type picker struct {
	page        string
	csrf, state string
	choices     []string
}

var (
	hiddenInput = regexp.MustCompile(`<input type="hidden" name="(csrf_token|state)" value="([^"]*)">`)
	choiceInput = regexp.MustCompile(`<input type="checkbox" name="choice" value="([^"]*)">`)
)

// openPicker connects platform p as the simulated member and returns the picker it ends on.
func openPicker(h *apptest.Herald, p platforms.Platform, member string) picker {
	h.T.Helper()
	h.App.Sim.SetMember(p, member)
	r, _ := h.Browse(h.ConnectURL(string(p)))
	apptest.RequirePage(h.T, r, 200, `action="`+accountlink.PickPath+`"`)
	pk := picker{page: string(r.Body)}
	for _, m := range hiddenInput.FindAllStringSubmatch(pk.page, -1) {
		if m[1] == "csrf_token" {
			pk.csrf = html.UnescapeString(m[2])
		} else {
			pk.state = html.UnescapeString(m[2])
		}
	}
	for _, m := range choiceInput.FindAllStringSubmatch(pk.page, -1) {
		pk.choices = append(pk.choices, html.UnescapeString(m[1]))
	}
	require.NotEmpty(h.T, pk.csrf)
	require.NotEmpty(h.T, pk.state)
	return pk
}

// submit posts the picker's form with these choices, from the signed-in browser (validated
// against the OpenAPI document).
func (pk picker) submit(h *apptest.Herald, csrf string, choices ...string) *apptest.Response {
	h.T.Helper()
	form := url.Values{"state": {pk.state}, "choice": choices}
	if csrf != "" {
		form.Set("csrf_token", csrf)
	}
	r := h.SignedIn().Send("POST", accountlink.PickPath, form, nil)
	req, err := http.NewRequest("POST", h.URL+accountlink.PickPath, strings.NewReader(form.Encode()))
	require.NoError(h.T, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h.Validate(req, r)
	return r
}

// stored reads the connect state a state token names (its first 16 bytes are the state's id).
func stored(h *apptest.Herald, token string) *persistence.ConnectState {
	h.T.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(token)
	require.NoError(h.T, err)
	id, err := uuid.FromBytes(raw[:16])
	require.NoError(h.T, err)
	var st *persistence.ConnectState
	require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) (err error) {
		st, err = tx.ConnectState(id.String())
		return err
	}))
	return st
}

// byNetworkUser indexes the platform's listed accounts by their stored network user id.
func byNetworkUser(h *apptest.Herald, platform string) map[string]map[string]any {
	h.T.Helper()
	out := map[string]map[string]any{}
	for _, a := range listed(h, platform) {
		var acc *persistence.Account
		require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) (err error) {
			acc, err = tx.Account(a["id"].(string))
			return err
		}))
		out[acc.NetworkUserID] = a
	}
	return out
}

// A LinkedIn member who administers two organisations gets a picker of the three accounts, with
// names escaped and no token in the page; nothing is connected until the pick, and the grants
// are kept sealed in the connect state.
func TestPickerListsWhatTheConsentGranted(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	before := accountCount(h)
	pk := openPicker(h, platforms.LinkedIn, sim.MemberOrgAdmin)
	require.Len(t, pk.choices, 3)
	require.Equal(t, []string{sim.OrgAcme.ID, sim.OrgGlobex.ID}, pk.choices[1:])
	require.Contains(t, pk.page, "Acme &lt;Widgets&gt; &amp; Co")
	require.NotContains(t, pk.page, "<Widgets>")
	require.Contains(t, pk.page, "(organisation)")
	require.Contains(t, pk.page, "(your profile)")
	require.NotContains(t, pk.page, "sim_at_", "no token in the page")
	require.Equal(t, before, accountCount(h), "nothing connected before the pick")
	st := stored(h, pk.state)
	require.NotEmpty(t, st.Choices, "the grants wait in the connect state")
	require.NotContains(t, string(st.Choices), "sim_at_", "sealed")
	require.NotContains(t, string(st.Choices), sim.OrgGlobex.Name, "sealed")
	require.Nil(t, st.ChosenAt)
}

// Reloading the picker's page (the callback, whose state is used) shows the picker again while
// the choice is open, and says the link was used once it is made.
func TestPickerReload(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	h.App.Sim.SetMember(platforms.LinkedIn, sim.MemberOrgAdmin)
	r, chain := h.Browse(h.ConnectURL("linkedin"))
	apptest.RequirePage(t, r, 200, `action="`+accountlink.PickPath+`"`)
	callback := chain[len(chain)-1].String()
	r, _ = h.Browse(callback)
	apptest.RequirePage(t, r, 200, `action="`+accountlink.PickPath+`"`)
	pk := picker{state: chain[len(chain)-1].Query().Get("state"), csrf: h.SignedIn().CSRF}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(r.Body), -1) {
		if m[1] == "csrf_token" {
			pk.csrf = html.UnescapeString(m[2])
		}
	}
	apptest.RequirePage(t, pk.submit(h, pk.csrf, sim.OrgAcme.ID), 200, "is now connected")
	r, _ = h.Browse(callback)
	apptest.RequirePage(t, r, 410, "already used")
}

// Ticking one organisation connects it alone, as an organisation account named after it; its
// network user is the organisation.
func TestPickOne(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	pk := openPicker(h, platforms.LinkedIn, sim.MemberOrgAdmin)
	r := pk.submit(h, pk.csrf, sim.OrgGlobex.ID)
	apptest.RequirePage(t, r, 200, "Your LinkedIn account Globex Corporation is now connected to Herald.")
	got := byNetworkUser(h, "linkedin")
	require.Len(t, got, 1)
	org := got[sim.OrgGlobex.ID]
	require.NotNil(t, org)
	require.Equal(t, "organization", org["kind"])
	require.Equal(t, sim.OrgGlobex.Name, org["display_name"])
	st := stored(h, pk.state)
	require.Empty(t, st.Choices, "the sealed tokens are dropped once picked")
	require.NotNil(t, st.ChosenAt)
}

// Ticking several connects each as its own account; a second pick with the same state is refused
// and connects nothing more; connecting again renews the accounts, never duplicates them.
func TestPickSeveralOnceAndReconnect(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	pk := openPicker(h, platforms.LinkedIn, sim.MemberOrgAdmin)
	r := pk.submit(h, pk.csrf, pk.choices[0], sim.OrgAcme.ID)
	apptest.RequirePage(t, r, 200, "is now connected")
	got := byNetworkUser(h, "linkedin")
	require.Len(t, got, 2)
	require.Equal(t, "profile", got[pk.choices[0]]["kind"])
	require.Equal(t, "organization", got[sim.OrgAcme.ID]["kind"])
	require.Equal(t, sim.OrgAcme.Name, got[sim.OrgAcme.ID]["display_name"])
	count := accountCount(h)

	r = pk.submit(h, pk.csrf, sim.OrgGlobex.ID)
	apptest.RequirePage(t, r, 410, "already used")
	require.Equal(t, count, accountCount(h))

	again := openPicker(h, platforms.LinkedIn, sim.MemberOrgAdmin)
	r = again.submit(h, again.csrf, again.choices...)
	apptest.RequirePage(t, r, 200, "was already connected; its access was renewed")
	apptest.RequirePage(t, r, 200, "Globex Corporation is now connected")
	after := byNetworkUser(h, "linkedin")
	require.Len(t, after, 3, "the member and Acme renewed, Globex added")
	require.Equal(t, got[sim.OrgAcme.ID]["id"], after[sim.OrgAcme.ID]["id"])
	require.Equal(t, got[pk.choices[0]]["id"], after[pk.choices[0]]["id"])
}

// A submission naming an account the consent did not grant, naming nothing, or without the
// session's CSRF token is refused and writes nothing: the choice stays open and a good
// submission still connects.
func TestPickRefusals(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	before := accountCount(h)
	pk := openPicker(h, platforms.LinkedIn, sim.MemberOrgAdmin)
	stateBefore := stored(h, pk.state)

	r := pk.submit(h, pk.csrf, sim.OrgAcme.ID, "99999999")
	apptest.RequirePage(t, r, 400, "The form named an account this authorization did not grant, so nothing was connected.")
	require.Contains(t, string(r.Body), `action="`+accountlink.PickPath+`"`, "the picker is shown again")
	r = pk.submit(h, pk.csrf, sim.PageCafe.ID)
	apptest.RequirePage(t, r, 400, "did not grant")
	r = pk.submit(h, pk.csrf)
	apptest.RequirePage(t, r, 400, "Tick at least one account.")
	r = pk.submit(h, "", sim.OrgAcme.ID)
	apptest.RequirePage(t, r, 403, "did not come from Herald")
	r = pk.submit(h, "wrong-token", sim.OrgAcme.ID)
	apptest.RequirePage(t, r, 403, "did not come from Herald")
	forged := pk
	forged.state = pk.state[:len(pk.state)-2] + "AA"
	r = forged.submit(h, pk.csrf, sim.OrgAcme.ID)
	apptest.RequirePage(t, r, 400, "not valid")

	// Another Herald user's browser, with its own session and CSRF token.
	_, _ = h.NewUser("mallory@example.com", "pro")
	other := h.NewBrowser()
	require.Equal(t, 200, other.SignIn("mallory@example.com", apptest.PasswordOf("mallory@example.com")).Status)
	r = other.Send("POST", accountlink.PickPath, url.Values{"state": {pk.state}, "csrf_token": {other.CSRF}, "choice": {sim.OrgAcme.ID}}, nil)
	apptest.RequirePage(t, r, 403, "belongs to another Herald user")

	// A state whose consent was not completed has nothing to choose from.
	fresh := h.ConnectURL("linkedin")
	u, err := url.Parse(fresh)
	require.NoError(t, err)
	unfinished := picker{state: u.Query().Get("state")}
	apptest.RequirePage(t, unfinished.submit(h, pk.csrf, sim.OrgAcme.ID), 400, "nothing to choose from")

	require.Equal(t, before, accountCount(h), "nothing written")
	require.Equal(t, stateBefore, stored(h, pk.state), "the state is as it was")

	r = pk.submit(h, pk.csrf, sim.OrgAcme.ID)
	apptest.RequirePage(t, r, 200, "is now connected")
	require.Equal(t, before+1, accountCount(h))
}

// A consent that grants one account connects it at once, with no picker (a member with no
// organisation; a Facebook user with one Page); a Facebook user with two Pages picks, and each
// Page connects with its own token.
func TestSingleGrantSkipsThePickerAndPagesArePicked(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	r, _ := h.Browse(h.ConnectURL("linkedin"))
	apptest.RequirePage(t, r, 200, "is now connected to Herald")
	require.NotContains(t, string(r.Body), accountlink.PickPath)
	li := listed(h, "linkedin")
	require.Len(t, li, 1)
	require.Equal(t, "profile", li[0]["kind"])

	pk := openPicker(h, platforms.Facebook, sim.MemberPages)
	require.Equal(t, []string{sim.PageCafe.ID, igChoice(sim.PageCafe), sim.PageBakery.ID, igChoice(sim.PageBakery)}, pk.choices)
	require.Contains(t, pk.page, "Corner Café")
	r = pk.submit(h, pk.csrf, sim.PageCafe.ID, sim.PageBakery.ID)
	apptest.RequirePage(t, r, 200, "Hill Street Bakery is now connected")
	apptest.RequirePage(t, r, 200, "<h1>Facebook is connected</h1>")
	require.Empty(t, listed(h, "instagram"), "the Instagram accounts were not ticked")
	pages := byNetworkUser(h, "facebook")
	require.Len(t, pages, 2)
	secrets := map[string]bool{}
	for id, a := range pages {
		require.Equal(t, "page", a["kind"], id)
		var acc *persistence.Account
		require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) (err error) {
			acc, err = tx.Account(a["id"].(string))
			return err
		}))
		secrets[string(acc.Secret)] = true
	}
	require.Len(t, secrets, 2)
}

// igChoice is how the picker names the Instagram account linked to a Page.
func igChoice(pg sim.Managed) string { return "instagram:" + pg.Instagram.ID }

// A Facebook user whose two Pages each have a linked Instagram professional account is offered
// the two Pages and the two Instagram accounts, each labelled with its network; ticking one
// Instagram account connects it alone, as an Instagram account (kind profile, named after its
// username) holding its Page's token, and a post published to it through the API lands on the
// simulator's Instagram record under the Instagram user id, with its first comment.
func TestPickInstagramThroughFacebook(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	before := accountCount(h)
	pk := openPicker(h, platforms.Facebook, sim.MemberPages)
	require.Len(t, pk.choices, 4)
	require.Contains(t, pk.page, "@hillstreetbakery <span class=\"muted\">(Instagram professional account)</span>")
	require.Contains(t, pk.page, "Hill Street Bakery <span class=\"muted\">(Facebook Page)</span>")
	require.NotContains(t, pk.page, "sim_at_", "no token in the page")
	require.Equal(t, before, accountCount(h), "nothing connected before the pick")

	r := pk.submit(h, pk.csrf, igChoice(sim.PageBakery))
	apptest.RequirePage(t, r, 200, "Your Instagram account @hillstreetbakery is now connected to Herald.")
	apptest.RequirePage(t, r, 200, "<h1>Instagram is connected</h1>")
	require.Equal(t, before+1, accountCount(h), "one account, and nothing else")
	require.Empty(t, listed(h, "facebook"))
	igs := byNetworkUser(h, "instagram")
	require.Len(t, igs, 1)
	acc := igs[sim.PageBakery.Instagram.ID]
	require.NotNil(t, acc)
	require.Equal(t, "profile", acc["kind"])
	require.Equal(t, "@hillstreetbakery", acc["display_name"])
	require.Equal(t, "hillstreetbakery", acc["username"])

	var stored *persistence.Account
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) (err error) {
		stored, err = tx.Account(acc["id"].(string))
		return err
	}))
	photo := h.UploadMedia("bread.jpg", "image/jpeg", apptest.JPEGFile)
	post := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "fresh loaves", "media": []string{photo}, "platforms": []string{stored.ID},
		"targets": []map[string]any{{"account_id": stored.ID, "first_comment": map[string]any{"content": "open from 7"}}}})
	require.Equal(t, 202, post.Status, string(post.Body))
	j := h.WaitJob(post.JSON(t)["tracking_id"].(string))
	require.Equal(t, "completed", j["status"], "%v", j)
	var pubs []sim.Record
	require.Eventually(t, func() bool {
		pubs = h.App.Sim.Publications(platforms.Instagram)
		return len(pubs) == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, sim.PageBakery.Instagram.ID, pubs[0].Account)
	require.Equal(t, "fresh loaves", pubs[0].Text)
	require.Len(t, pubs[0].MediaSHA256, 1)
	require.Equal(t, pubs[0].ID, pubs[1].CommentOn)
	require.Equal(t, "open from 7", pubs[1].Text)
	require.Empty(t, h.App.Sim.Publications(platforms.Facebook), "nothing went to the Page")
}

// The Instagram account is one account whichever way it is connected: connected through
// Instagram Login first, picking it through a Facebook consent renews that account (its tokens
// now its Page's) instead of adding another.
func TestPickInstagramRenewsInstagramLogin(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	h.App.Sim.SetMember(platforms.Instagram, sim.PageCafe.Instagram.Name)
	r, _ := h.Browse(h.ConnectURL("instagram"))
	apptest.RequirePage(t, r, 200, "is now connected to Herald")
	first := byNetworkUser(h, "instagram")
	require.Len(t, first, 1)
	require.NotNil(t, first[sim.PageCafe.Instagram.ID])
	count := accountCount(h)

	pk := openPicker(h, platforms.Facebook, sim.MemberPages)
	r = pk.submit(h, pk.csrf, igChoice(sim.PageCafe))
	apptest.RequirePage(t, r, 200, "Your Instagram account @cornercafe was already connected; its access was renewed.")
	require.Equal(t, count, accountCount(h))
	after := byNetworkUser(h, "instagram")
	require.Len(t, after, 1)
	require.Equal(t, first[sim.PageCafe.Instagram.ID]["id"], after[sim.PageCafe.Instagram.ID]["id"])
	require.Equal(t, "@cornercafe", after[sim.PageCafe.Instagram.ID]["display_name"])
}

// A picker submission naming an Instagram account the consent did not grant (another id, or a
// granted Instagram id under another network's name) is refused and writes nothing.
func TestPickInstagramForged(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	before := accountCount(h)
	pk := openPicker(h, platforms.Facebook, sim.MemberPages)
	stateBefore := stored(h, pk.state)
	for _, forged := range [][]string{
		{"instagram:17841499999999999"},
		{igChoice(sim.PageCafe), "instagram:17841499999999999"},
		{sim.PageCafe.Instagram.ID},
		{"threads:" + sim.PageCafe.Instagram.ID},
		{"instagram:" + sim.PageCafe.ID},
	} {
		r := pk.submit(h, pk.csrf, forged...)
		apptest.RequirePage(t, r, 400, "did not grant")
	}
	require.Equal(t, before, accountCount(h), "nothing written")
	require.Equal(t, stateBefore, stored(h, pk.state), "the state is as it was")
	apptest.RequirePage(t, pk.submit(h, pk.csrf, igChoice(sim.PageCafe)), 200, "is now connected")
	require.Equal(t, before+1, accountCount(h))
}
