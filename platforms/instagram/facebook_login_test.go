package instagram_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/facebook"
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

// viaFacebook connects the simulated member who manages two Pages through the Facebook adapter
// and returns the Instagram grants of its consent, in the Pages' order.
func viaFacebook(t *testing.T, e *env) []platforms.Grant {
	t.Helper()
	fcfg := e.srv.AdapterConfig(platforms.Facebook)
	fcfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	fb := facebook.New(fcfg)
	redirect := "https://herald.example/callback"
	loc := platformstest.Consent(t, fb.AuthorizeURL("st4te", redirect, "")+"&login_hint="+url.QueryEscape(sim.MemberPages), redirect)
	grants, err := fb.ExchangeGrants(context.Background(), loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	var out []platforms.Grant
	for _, g := range grants {
		if g.Platform == platforms.Instagram {
			out = append(out, g)
		}
	}
	require.Len(t, out, 2)
	return out
}

// An Instagram account connected through a Facebook consent publishes with its Page's token on
// the Facebook Graph host: a photo, a carousel in order, a first comment, and the look-ups of
// both; the simulator records them on Instagram under the Instagram user id, and Instagram's own
// host is never called.
func TestFacebookLoginPublishes(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	g := viaFacebook(t, e)
	cafe := g[0].Creds
	require.Equal(t, sim.PageCafe.Instagram.ID, cafe.UserID)
	require.True(t, instagram.ViaFacebook(cafe))
	igCalls := len(platformstest.Requests(t, e.srv, platforms.Instagram))
	fbCalls := len(platformstest.Requests(t, e.srv, platforms.Facebook))

	res, err := e.a.Publish(ctx, cafe, platforms.Post{Text: "morning buns", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Publication.URL, "https://www.instagram.com/p/"), "publication = %+v", res.Publication)
	require.True(t, res.Rate.Known)
	require.Equal(t, 99, res.Rate.Remaining)
	carousel, err := e.a.Publish(ctx, cafe, platforms.Post{Text: "the counter", Media: []platforms.Media{e.media("image/jpeg", "b.jpg"), e.media("video/mp4", "v.mp4"), e.media("image/jpeg", "a.jpg")}})
	require.NoError(t, err)

	pubs := e.srv.Publications(platforms.Instagram)
	require.Len(t, pubs, 2)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, sim.PageCafe.Instagram.ID, pubs[0].Account)
	require.Equal(t, "morning buns", pubs[0].Text)
	require.Equal(t, []string{sum(jpeg)}, pubs[0].MediaSHA256)
	require.Equal(t, carousel.Publication.ID, pubs[1].ID)
	require.Equal(t, sim.PageCafe.Instagram.ID, pubs[1].Account)
	require.Equal(t, []string{sum(jpeg2), sum(mp4), sum(jpeg)}, pubs[1].MediaSHA256)
	require.Empty(t, e.srv.Publications(platforms.Facebook), "nothing is posted on the Page")

	found, ok, err := e.a.Lookup(ctx, cafe, platforms.Post{Text: "the counter"}, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, carousel.Publication.ID, found.ID)

	c, err := e.a.PublishComment(ctx, cafe, res.Publication, "open from 7")
	require.NoError(t, err)
	comments := e.srv.Publications(platforms.Instagram)
	require.Len(t, comments, 3)
	require.Equal(t, c.Publication.ID, comments[2].ID)
	require.Equal(t, res.Publication.ID, comments[2].CommentOn)
	require.Equal(t, sim.PageCafe.Instagram.ID, comments[2].Account)
	got, ok, err := e.a.LookupComment(ctx, cafe, res.Publication, "open from 7", time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, c.Publication.ID, got.ID)

	require.Len(t, platformstest.Requests(t, e.srv, platforms.Instagram), igCalls, "Instagram's host is not called")
	require.Greater(t, len(platformstest.Requests(t, e.srv, platforms.Facebook)), fbCalls)
}

// The Page token of one Page does not publish to the Instagram account of another, and an
// Instagram Login account's token does not work on the Facebook host.
func TestFacebookLoginIsThePagesOwn(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	g := viaFacebook(t, e)
	crossed := g[1].Creds
	crossed.UserID = g[0].Creds.UserID
	_, err := e.a.Publish(ctx, crossed, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	require.Error(t, err)
	notFacebook := e.creds
	notFacebook.Extra = map[string]string{instagram.Login: instagram.LoginFacebook}
	_, err = e.a.Publish(ctx, notFacebook, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	require.Error(t, err)
	require.Empty(t, e.srv.Publications(platforms.Instagram))
}

// Instagram Login and a Facebook consent name the same Instagram account by the same id, so that
// Herald holds one account for it whichever way it is connected.
func TestFacebookLoginSameAccountID(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	own, err := e.srv.NewAccount(platforms.Instagram, sim.PageBakery.Instagram.Name)
	require.NoError(t, err)
	require.Equal(t, sim.PageBakery.Instagram.ID, own.UserID)
	require.Equal(t, own.UserID, viaFacebook(t, e)[1].Creds.UserID)
}

// A Page token cannot be refreshed: Refresh asks to reconnect without calling anything, and
// Revoke leaves the token (the Page's too) alone.
func TestFacebookLoginRefreshRevoke(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	cafe := viaFacebook(t, e)[0].Creds
	before := len(platformstest.Requests(t, e.srv, platforms.Instagram)) + len(platformstest.Requests(t, e.srv, platforms.Facebook))
	next, err := e.a.Refresh(ctx, cafe)
	require.Equal(t, cafe, next)
	require.Contains(t, kind(t, err, platforms.Permanent).Message, "reconnect")
	require.NoError(t, e.a.Revoke(ctx, cafe))
	require.Equal(t, before, len(platformstest.Requests(t, e.srv, platforms.Instagram))+len(platformstest.Requests(t, e.srv, platforms.Facebook)))
	_, err = e.a.Publish(ctx, cafe, platforms.Post{Text: "still here", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	require.NoError(t, err)
}
