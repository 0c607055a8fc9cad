package sim_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A consent page signs in the default member at once; asked to, it shows a select of the
// network's members that submits back to itself; a member set for the next consent, or named by
// sim_member, is signed in at once.
func TestConsentMembers(t *testing.T) {
	t.Parallel()
	for _, p := range []platforms.Platform{platforms.LinkedIn, platforms.Facebook} {
		e := newXTestEnv(t, p)
		path := "/oauth/v2/authorization?response_type=code&scope=openid&client_id=" + sim.ClientID
		if p == platforms.Facebook {
			path = "/dialog/oauth?response_type=code&client_id=" + sim.ClientID
		}
		path += "&state=s1&redirect_uri=" + url.QueryEscape("https://herald.example/cb")
		r := e.do(t, "GET", path, "", "", nil)
		require.Equal(t, 302, r.status, string(r.body))
		require.Contains(t, r.header.Get("Location"), "code=")

		e.sim.SetAskMember(true)
		r = e.do(t, "GET", path, "", "", nil)
		require.Equal(t, 302, r.status, "a program that does not ask for HTML is signed in at once")
		r = e.do(t, "GET", path, "", "", nil, "Accept", "text/html,application/xhtml+xml")
		require.Equal(t, 200, r.status)
		page := string(r.body)
		require.Contains(t, page, `<select id="sim_member" name="sim_member">`)
		for _, m := range sim.Members(p) {
			require.Contains(t, page, `<option value="`+m.Handle+`">`)
		}
		require.Contains(t, page, `name="state" value="s1"`)
		require.Less(t, strings.Index(page, sim.DefaultMember), strings.Index(page, sim.Members(p)[1].Handle), "the default comes first")

		r = e.do(t, "GET", path+"&sim_member="+sim.Members(p)[1].Handle, "", "", nil)
		require.Equal(t, 302, r.status)
		e.sim.SetMember(p, sim.Members(p)[1].Handle)
		r = e.do(t, "GET", path, "", "", nil, "Accept", "text/html")
		require.Equal(t, 302, r.status, "a member set for the next consent is signed in at once")
		r = e.do(t, "GET", path, "", "", nil, "Accept", "text/html")
		require.Equal(t, 200, r.status, "only for the next one")
	}
}

// The organisation finder lists only the organisations the member administers, and a post's
// author must be the member or one of them.
func TestLinkedInOrganizations(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.LinkedIn)
	admin, err := e.sim.NewAccount(platforms.LinkedIn, sim.MemberOrgAdmin)
	require.NoError(t, err)
	other, err := e.sim.NewAccount(platforms.LinkedIn, sim.DefaultMember)
	require.NoError(t, err)
	acls := "/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED"
	r := liREST(t, e, "GET", acls, admin.AccessToken, nil)
	require.Equal(t, 200, r.status, string(r.body))
	require.Len(t, r.json(t)["elements"], 2)
	r = liREST(t, e, "GET", acls, other.AccessToken, nil)
	require.Empty(t, r.json(t)["elements"])
	r = liREST(t, e, "GET", "/rest/organizations/"+sim.OrgAcme.ID, admin.AccessToken, nil)
	require.Equal(t, sim.OrgAcme.Name, r.json(t)["localizedName"])

	org := "urn:li:organization:" + sim.OrgGlobex.ID
	r = liREST(t, e, "POST", "/rest/posts", other.AccessToken, liPostBody(org, "not theirs", nil))
	require.Equal(t, 403, r.status)
	r = liREST(t, e, "POST", "/rest/posts", admin.AccessToken, liPostBody(org, "as Globex", nil))
	require.Equal(t, 201, r.status, string(r.body))
	pubs := e.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 1)
	require.Equal(t, sim.OrgGlobex.ID, pubs[0].Account)
	require.Equal(t, org, pubs[0].Options["author"])
}
