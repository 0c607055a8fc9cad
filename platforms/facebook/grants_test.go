package facebook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// A user who manages two Pages is offered both, each with its own Page token that publishes to
// that Page only; Exchange keeps connecting the first.
func TestPageGrants(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	redirect := "https://herald.example/callback"
	loc := authorize(t, e, sim.MemberPages, redirect)
	g, err := e.a.ExchangeGrants(ctx, loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	require.Len(t, g, 2)
	for i, pg := range []sim.Managed{sim.PageCafe, sim.PageBakery} {
		require.Equal(t, platforms.KindPage, g[i].Kind)
		require.Equal(t, pg.Name, g[i].Name)
		require.Equal(t, pg.ID, g[i].Creds.UserID)
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
}
