package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A LinkedIn member who administers two organisations connects from the Accounts page: the
// simulator's consent page lets them sign in as that member, Herald's picker lists the member and
// both organisations, and the one organisation ticked becomes its own account, listed with its
// kind and name, that then publishes as urn:li:organization:{id}.
func TestBrowserConnectAndPublishAsOrganization(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	h.app.Sim.SetAskMember(true)
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/accounts")

	tb.do(
		chromedp.Click(chromedp.CSS(`button.connect-linkedin`)),
		chromedp.WaitVisible(chromedp.CSS(`#sim_member`)),
		chromedp.SetValue(chromedp.CSS(`#sim_member`), sim.MemberOrgAdmin),
		chromedp.Click(chromedp.CSS(`#allow`)),
		chromedp.WaitVisible(chromedp.CSS(`#pick`)),
	)
	tb.shoot(dir, "picker")
	labels := eval[[]string](tb, `Array.from(document.querySelectorAll('#pick label')).map(l => l.textContent.trim())`)
	require.Equal(t, []string{
		sim.MemberOrgAdmin + " (your profile)",
		sim.OrgAcme.Name + " (organisation)",
		sim.OrgGlobex.Name + " (organisation)",
	}, labels, "each choice with its name, as text, and its kind")
	require.Zero(t, eval[int](tb, `document.querySelectorAll('#pick label script, #pick label widgets').length`))

	tb.do(
		chromedp.Click(chromedp.CSS(`#pick input[value="`+sim.OrgAcme.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`#pick button[type=submit]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#pick`)),
		chromedp.WaitVisible(chromedp.CSS(`#back-to-accounts`)),
	)
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`h1`))), "LinkedIn is connected")
	require.Contains(t, get(tb, chromedp.Text(chromedp.CSS(`main .card p`))), sim.OrgAcme.Name+" is now connected")

	// The organisation is its own account; the member was not ticked, so is not connected.
	_, out := getJSON(t, h, "/v1/accounts")
	var org map[string]any
	for _, a := range out["data"].([]any) {
		acc := a.(map[string]any)
		if acc["platform"] == "linkedin" && acc["kind"] == "organization" {
			require.Nil(t, org, "one organisation connected")
			org = acc
		}
		require.NotEqual(t, sim.MemberOrgAdmin, acc["display_name"], "the member was not ticked")
	}
	require.NotNil(t, org)
	require.Equal(t, sim.OrgAcme.Name, org["display_name"])

	tb.do(chromedp.Click(chromedp.CSS(`#back-to-accounts`)), chromedp.WaitVisible(chromedp.CSS(`#accounts`)))
	cell := eval[string](tb, `Array.from(document.querySelectorAll('#accounts tr[data-platform=linkedin] td.username')).map(td => td.textContent).find(t => t.includes('Acme')) || ''`)
	require.Equal(t, sim.OrgAcme.Name+" Organisation", cell)
	tb.shoot(dir, "accounts")
	tb.noErrors()

	// Publishing to it posts as the organisation.
	res := postJSON(t, h, "/v1/posts/publish", map[string]any{"content": "News from Acme", "platforms": []string{org["id"].(string)}}, 202)
	job := waitJob(t, h, res["tracking_id"].(string))
	require.Equal(t, "completed", job["status"], "%v", job)
	var rec *sim.Record
	for _, p := range h.app.Sim.Publications(platforms.LinkedIn) {
		if p.Text == "News from Acme" {
			rec = &p
		}
	}
	require.NotNil(t, rec)
	require.Equal(t, "urn:li:organization:"+sim.OrgAcme.ID, rec.Options["author"])
	require.Equal(t, sim.OrgAcme.ID, rec.Account)
}
