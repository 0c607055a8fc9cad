package facebook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/sim"
)

// A user who manages two Pages is offered both, each with its own Page token that publishes to
// that Page only, and each followed by the Instagram professional account linked to it: an
// Instagram grant holding that Page's token. Exchange keeps connecting the first Page.
func TestPageGrants(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	redirect := "https://herald.example/callback"
	loc := authorize(t, e, sim.MemberPages, redirect)
	require.Contains(t, e.a.AuthorizeURL("s", redirect, ""), "instagram_content_publish")
	all, err := e.a.ExchangeGrants(ctx, loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	require.Len(t, all, 4)
	var g []platforms.Grant
	for i, pg := range []sim.Managed{sim.PageCafe, sim.PageBakery} {
		page, ig := all[2*i], all[2*i+1]
		require.Empty(t, page.Platform, "a Page is the consent's own network")
		require.Equal(t, platforms.KindPage, page.Kind)
		require.Equal(t, pg.Name, page.Name)
		require.Equal(t, pg.ID, page.Creds.UserID)

		require.Equal(t, platforms.Instagram, ig.Platform)
		require.Equal(t, platforms.KindProfile, ig.Kind)
		require.Equal(t, "@"+pg.Instagram.Name, ig.Name)
		require.Equal(t, pg.Instagram.ID, ig.Creds.UserID)
		require.Equal(t, pg.Instagram.Name, ig.Creds.Handle)
		require.Equal(t, page.Creds.AccessToken, ig.Creds.AccessToken, "the Instagram account publishes with its Page's token")
		require.Equal(t, instagram.LoginFacebook, ig.Creds.Extra[instagram.Login])
		require.Equal(t, "true", ig.Creds.Extra[platforms.SharedToken])
		require.Empty(t, ig.Creds.Extra["user_token"], "the user token stays with the Pages")
		require.True(t, ig.Creds.ExpiresAt.IsZero())
		g = append(g, page)
	}
	require.NotEqual(t, g[0].Creds.AccessToken, g[1].Creds.AccessToken)
	_, err = e.a.Publish(ctx, g[1].Creds, platforms.Post{Text: "fresh bread"})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Facebook)
	require.Len(t, pubs, 1)
	require.Equal(t, sim.PageBakery.ID, pubs[0].Account)

	// Disconnecting one Page leaves the other's token working: the user's authorisation behind
	// both is not withdrawn.
	require.Equal(t, "true", g[0].Creds.Extra[platforms.SharedToken])
	require.NoError(t, e.a.Revoke(ctx, g[0].Creds))
	_, err = e.a.Publish(ctx, g[1].Creds, platforms.Post{Text: "still baking"})
	require.NoError(t, err)

	one := connect(t, e, "bistro")
	require.Equal(t, "bistro", one.Handle)
	require.Empty(t, one.Extra[platforms.SharedToken], "a single Page's token is its own")

	// Exchange connects the first Page alone, never its Instagram account.
	loc = authorize(t, e, sim.MemberPages, redirect)
	first, err := e.a.Exchange(ctx, loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	require.Equal(t, sim.PageCafe.ID, first.UserID)
	require.Empty(t, first.Extra[platforms.SharedToken])
}

// A Page without a linked Instagram account offers nothing on Instagram: the user who manages one
// Page gets that Page alone.
func TestPageWithoutInstagram(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	redirect := "https://herald.example/callback"
	loc := authorize(t, e, "bistro", redirect)
	g, err := e.a.ExchangeGrants(context.Background(), loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	require.Len(t, g, 1)
	require.Equal(t, platforms.KindPage, g[0].Kind)
}
