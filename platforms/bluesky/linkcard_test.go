package bluesky

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/linkcard"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

// cardSite is a loopback page with og tags and its image; hits counts its requests.
func cardSite(t *testing.T, img []byte) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/article":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<head><meta property="og:title" content="An article"><meta property="og:description" content="About things."><meta property="og:image" content="/a.png"></head>`))
		case "/a.png":
			_, _ = w.Write(img)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s, &hits
}

func setupCards(t *testing.T) *testBundle {
	t.Helper()
	srv, cfg := platformstest.Start(t, platforms.Bluesky, sim.Options{})
	cfg.Cards = linkcard.New(linkcard.Options{Egress: webhook.NewGuard(webhook.EgressOptions{AllowPrivate: true}), Timeout: 2 * time.Second})
	a := New(cfg)
	return &testBundle{sim: srv, a: a, creds: alice(t, srv, a)}
}

// A post whose text links a page carries the page's card as an external embed, its image
// uploaded as a blob; the simulator records the embed as Bluesky receives it.
func TestPublishLinkCard(t *testing.T) {
	t.Parallel()
	b := setupCards(t)
	img := pngBytes(t, 3, 2)
	site, _ := cardSite(t, img)
	link := site.URL + "/article"
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Read this: " + link + " now"})
	require.NoError(t, err)
	rec := published(t, b.sim, res.Publication.ID)
	embed, _ := rec.Options["embed"].(map[string]any)
	require.NotNil(t, embed, "%+v", rec.Options)
	assert.Equal(t, "app.bsky.embed.external", embed["$type"])
	ext := embed["external"].(map[string]any)
	assert.Equal(t, link, ext["uri"])
	assert.Equal(t, "An article", ext["title"])
	assert.Equal(t, "About things.", ext["description"])
	thumb := ext["thumb"].(map[string]any)
	assert.Equal(t, "blob", thumb["$type"])
	assert.Equal(t, "image/png", thumb["mimeType"])
	assert.EqualValues(t, len(img), thumb["size"])
	assert.NotEmpty(t, thumb["ref"].(map[string]any)["$link"])

	// options.link names another page than the text's; link_card false attaches none.
	res, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "no link in this text", Options: &platforms.BlueskyOptions{Link: link}})
	require.NoError(t, err)
	rec = published(t, b.sim, res.Publication.ID)
	assert.Equal(t, link, rec.Options["embed"].(map[string]any)["external"].(map[string]any)["uri"])
	off := false
	res, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "off: " + link, Options: &platforms.BlueskyOptions{LinkCard: &off}})
	require.NoError(t, err)
	rec = published(t, b.sim, res.Publication.ID)
	assert.Nil(t, rec.Options["embed"])
}

// A post with media carries its media, not a card (one embed a post); the page is not read.
func TestPublishLinkCardSkippedWithMedia(t *testing.T) {
	t.Parallel()
	b := setupCards(t)
	site, hits := cardSite(t, pngBytes(t, 1, 1))
	img := pngBytes(t, 2, 2)
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "photo and " + site.URL + "/article", Media: []platforms.Media{fileMedia("image/png", img)}})
	require.NoError(t, err)
	rec := published(t, b.sim, res.Publication.ID)
	assert.Nil(t, rec.Options["embed"])
	assert.Equal(t, []string{sha(img)}, rec.MediaSHA256)
	assert.Zero(t, hits.Load())
}

// A page that cannot be read is a post without a card, never a failure.
func TestPublishLinkCardUnreadable(t *testing.T) {
	t.Parallel()
	b := setupCards(t)
	site, _ := cardSite(t, nil)
	for _, link := range []string{site.URL + "/missing", "http://127.0.0.1:1/closed"} {
		res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "see " + link})
		require.NoError(t, err, link)
		rec := published(t, b.sim, res.Publication.ID)
		assert.Nil(t, rec.Options["embed"], link)
		assert.Equal(t, "see "+link, rec.Text)
	}
	// Without a reader (a test, or a server that reads no pages) nothing is attached either.
	plain := setup(t, sim.Options{})
	res, err := plain.a.Publish(context.Background(), plain.creds, platforms.Post{Text: "see " + site.URL + "/article"})
	require.NoError(t, err)
	rec := published(t, plain.sim, res.Publication.ID)
	assert.Nil(t, rec.Options["embed"])
}

// The simulator refuses a card whose thumb blob was never uploaded, as Bluesky does.
func TestSimRefusesUnknownThumb(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	in := createRecordInput{Repo: b.creds.UserID, Collection: postNSID, Record: postRecord{Type: postNSID, Text: "x", CreatedAt: time.Now().UTC().Format(time.RFC3339),
		Embed: map[string]any{"$type": "app.bsky.embed.external", "external": map[string]any{"uri": "https://example.com/", "title": "t", "description": "d",
			"thumb": map[string]any{"$type": "blob", "ref": map[string]string{"$link": "bafkreinothere"}, "mimeType": "image/png", "size": 10}}}}}
	err := b.a.call(context.Background(), platforms.Call{Method: http.MethodPost, URL: b.a.xrpc(b.creds, "com.atproto.repo.createRecord"), Body: mustJSON(t, in), ContentType: "application/json", Bearer: b.creds.AccessToken}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Could not find blob: bafkreinothere")
}

// published is the simulator's record of a publication.
func published(t *testing.T, s *sim.Server, id string) sim.Record {
	t.Helper()
	for _, r := range s.Publications(platforms.Bluesky) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no record of %s", id)
	return sim.Record{}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
