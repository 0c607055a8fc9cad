package app_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// The whole way through: a post linking a page is validated (each target's preview shows the
// card read from the page) and published to Bluesky, LinkedIn, Threads and Facebook; the
// simulator holds each card as the network's API received it: Bluesky's external embed with its
// thumb blob, LinkedIn's article with its thumbnail image, Threads' link_attachment and the
// Facebook post's link. The egress allows loopback, as in sandbox mode, for the test's page.
func TestLinkCardsReachTheSimulator(t *testing.T) {
	t.Parallel()
	thumb := apptest.PNGFile
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/launch":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(`<!doctype html><html><head><title>fallback</title>
				<meta property="og:title" content="We launched">
				<meta property="og:description" content="Everything about the launch.">
				<meta property="og:image" content="/img/launch.png"></head><body></body></html>`))
		case "/img/launch.png":
			_, _ = w.Write(thumb)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	b := setup(t, bundleOpts{demo: true, config: func(c *app.Config) { c.WebhookAllowPrivate = true }})
	link := site.URL + "/launch"
	targets := ids(b.account(platforms.Bluesky).ID, b.account(platforms.LinkedIn).ID, b.account(platforms.Threads).ID, b.account(platforms.Facebook).ID)
	body := map[string]any{"content": "It is out: " + link, "platforms": targets}

	r := b.do("POST", "/v1/posts/validate", body)
	require.Equal(t, 200, r.status, string(r.body))
	v := r.json(t)
	require.Equal(t, true, v["valid"], string(r.body))
	for _, tc := range v["targets"].([]any) {
		tc := tc.(map[string]any)
		assert.Empty(t, tc["warnings"], tc["platform"])
		card, _ := tc["preview"].(map[string]any)["link_card"].(map[string]any)
		require.NotNil(t, card, "%s: %s", tc["platform"], r.body)
		assert.Equal(t, map[string]any{"url": link, "title": "We launched", "description": "Everything about the launch.", "image_url": site.URL + "/img/launch.png"}, card)
	}

	r = b.publishNew(body, nil)
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(r.json(t)["tracking_id"].(string))
	require.Equal(t, "completed", j["status"], "%v", j)

	one := func(p platforms.Platform) map[string]any {
		pubs := b.app.Sim.Publications(p)
		require.Len(t, pubs, 1, p)
		assert.Equal(t, "It is out: "+link, pubs[0].Text, p)
		return pubs[0].Options
	}
	embed := one(platforms.Bluesky)["embed"].(map[string]any)
	assert.Equal(t, "app.bsky.embed.external", embed["$type"])
	ext := embed["external"].(map[string]any)
	assert.Equal(t, link, ext["uri"])
	assert.Equal(t, "We launched", ext["title"])
	assert.Equal(t, "Everything about the launch.", ext["description"])
	th := ext["thumb"].(map[string]any)
	assert.Equal(t, "image/png", th["mimeType"])
	assert.EqualValues(t, len(thumb), th["size"])
	assert.NotEmpty(t, th["ref"].(map[string]any)["$link"])

	article := one(platforms.LinkedIn)["article"].(map[string]any)
	assert.Equal(t, link, article["source"])
	assert.Equal(t, "We launched", article["title"])
	assert.Equal(t, "Everything about the launch.", article["description"])
	assert.Equal(t, sha(thumb), article["thumbnail_sha256"])
	assert.Regexp(t, `^urn:li:image:`, article["thumbnail"])

	assert.Equal(t, link, one(platforms.Threads)["link_attachment"])
	assert.Equal(t, link, one(platforms.Facebook)["link"])
}

// With the production egress, a link card to a private address is a warning naming the target's
// field, read from nowhere; the post stays valid and its other targets are unaffected.
func TestValidateWarnsOfPrivateLinkCard(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	bsky, x := b.account(platforms.Bluesky).ID, b.account(platforms.X).ID
	r := b.do("POST", "/v1/posts/validate", map[string]any{"content": "internal notes", "platforms": ids(bsky, x),
		"targets": []map[string]any{{"account_id": bsky, "options": map[string]any{"link": "https://10.1.2.3/admin"}}}})
	require.Equal(t, 200, r.status, string(r.body))
	v := r.json(t)
	require.Equal(t, true, v["valid"], string(r.body))
	byPlatform := map[string]map[string]any{}
	for _, tc := range v["targets"].([]any) {
		byPlatform[tc.(map[string]any)["platform"].(string)] = tc.(map[string]any)
	}
	assert.Equal(t, []any{map[string]any{"field": "options.link",
		"message": "no link card: must be a public address: 10.1.2.3 is loopback, private, link-local, shared (CGNAT), multicast or reserved; nothing was fetched; the post goes out without a card"}},
		byPlatform["bluesky"]["warnings"])
	assert.Nil(t, byPlatform["bluesky"]["preview"].(map[string]any)["link_card"])
	assert.Empty(t, byPlatform["twitter_x"]["warnings"])
}
