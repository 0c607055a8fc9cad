package linkedin

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pdf/pdftest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

// grants runs the consent for a simulated member and trades its code for what it granted.
func grants(t *testing.T, b *testBundle, member string) []platforms.Grant {
	t.Helper()
	redirect := "https://herald.example/callback"
	loc := platformstest.Consent(t, b.a.AuthorizeURL("st", redirect, "")+"&sim_member="+url.QueryEscape(member), redirect)
	g, err := b.a.ExchangeGrants(context.Background(), loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	return g
}

// A member who administers organisations is offered each of them after their own profile; an
// organisation account posts, uploads and looks up as urn:li:organization:{id} with the member's
// token, and the simulator records the post as the organisation's.
func TestOrganizationGrants(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.Contains(t, b.a.AuthorizeURL("s", "https://h.example/cb", ""), "w_organization_social")

	alone := grants(t, b, sim.DefaultMember)
	require.Len(t, alone, 1)
	require.Equal(t, platforms.KindProfile, alone[0].Kind)

	g := grants(t, b, sim.MemberOrgAdmin)
	require.Len(t, g, 3)
	member := g[0]
	require.Equal(t, platforms.KindProfile, member.Kind)
	require.Equal(t, sim.MemberOrgAdmin, member.Name)
	for i, org := range []sim.Managed{sim.OrgAcme, sim.OrgGlobex} {
		got := g[i+1]
		require.Equal(t, platforms.KindOrganization, got.Kind)
		require.Equal(t, org.Name, got.Name)
		require.Equal(t, org.ID, got.Creds.UserID)
		require.Equal(t, member.Creds.AccessToken, got.Creds.AccessToken, "an organisation posts with the member's token")
		require.Equal(t, member.Creds.UserID, got.Creds.Extra["member_id"])
	}
	acme := g[1].Creds

	img := fileMedia("image/png", randomBytes(t, 500), true)
	res, err := b.a.Publish(ctx, acme, platforms.Post{Text: "from the company", Media: []platforms.Media{img}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 1)
	require.Equal(t, sim.OrgAcme.ID, pubs[0].Account)
	require.Equal(t, "urn:li:organization:"+sim.OrgAcme.ID, pubs[0].Options["author"])
	pub, found, err := b.a.Lookup(ctx, acme, platforms.Post{Text: "from the company"}, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, res.Publication.ID, pub.ID)
	// Its first comment is the organisation's too, and found again as its own.
	com, err := b.a.PublishComment(ctx, acme, res.Publication, "the company comments")
	require.NoError(t, err)
	pubs = b.sim.Publications(platforms.LinkedIn)
	require.Equal(t, res.Publication.ID, pubs[1].CommentOn)
	require.Equal(t, sim.OrgAcme.ID, pubs[1].Account)
	found2, ok, err := b.a.LookupComment(ctx, acme, res.Publication, "the company comments", time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, com.Publication.ID, found2.ID)

	// A document and an article share are uploaded and posted as the organisation too.
	doc := fileMedia("application/pdf", pdftest.Build(3, false), true)
	_, err = b.a.Publish(ctx, acme, platforms.Post{Text: "the company's deck", Media: []platforms.Media{doc}})
	require.NoError(t, err)
	pubs = b.sim.Publications(platforms.LinkedIn)
	require.Equal(t, sim.OrgAcme.ID, pubs[2].Account)
	require.Equal(t, "urn:li:organization:"+sim.OrgAcme.ID, pubs[2].Options["author"])

	// The member's own profile still posts as the member.
	_, err = b.a.Publish(ctx, member.Creds, platforms.Post{Text: "from me"})
	require.NoError(t, err)
	pubs = b.sim.Publications(platforms.LinkedIn)
	require.Equal(t, member.Creds.UserID, pubs[3].Account)
	require.NotContains(t, pubs[1].Options, "author")

	// Disconnecting the organisation leaves the member's token, which it shares, working.
	require.Equal(t, "true", acme.Extra[platforms.SharedToken])
	require.NoError(t, b.a.Revoke(ctx, acme))
	_, err = b.a.Publish(ctx, member.Creds, platforms.Post{Text: "still me"})
	require.NoError(t, err)
	require.NoError(t, b.a.Revoke(ctx, alone[0].Creds))
	_, err = b.a.Publish(ctx, alone[0].Creds, platforms.Post{Text: "revoked"})
	require.Equal(t, platforms.AuthExpired, kindOf(t, err), "a token of its own is revoked")

	// An organisation the member does not administer is refused by LinkedIn.
	forged := acme
	forged.UserID = "1"
	_, err = b.a.Publish(ctx, forged, platforms.Post{Text: "not mine"})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Len(t, b.sim.Publications(platforms.LinkedIn), 5)
}
