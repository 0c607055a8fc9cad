package linkedin

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
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

// A post without media shares its link as an article: the page's title and description, and its
// image uploaded as the thumbnail; the simulator records the article as LinkedIn receives it.
func TestPublishArticle(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))))
	thumb := b.Bytes()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/report":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<head><meta property="og:title" content="The report"><meta property="og:description" content="Findings."><meta property="og:image" content="/t.png"></head>`))
		case "/untitled":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<head><meta name="description" content="No title here."></head>`))
		case "/t.png":
			_, _ = w.Write(thumb)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	srv, cfg := platformstest.Start(t, platforms.LinkedIn, sim.Options{})
	cfg.Cards = linkcard.New(linkcard.Options{Egress: webhook.NewGuard(webhook.EgressOptions{AllowPrivate: true}), Timeout: 2 * time.Second})
	a := New(cfg)
	creds := alice(t, srv, nil)
	ctx := context.Background()

	off := false
	for _, tc := range []struct {
		name string
		post platforms.Post
		want map[string]any
	}{
		{"the text's link", platforms.Post{Text: "Out now: " + site.URL + "/report (read it)"},
			map[string]any{"source": site.URL + "/report", "title": "The report", "description": "Findings.", "thumbnail_sha256": sha(thumb)}},
		{"options.link, a page without title", platforms.Post{Text: "no link", Options: &platforms.LinkedInOptions{Link: site.URL + "/untitled"}},
			map[string]any{"source": site.URL + "/untitled", "title": site.URL + "/untitled", "description": "No title here."}},
		{"turned off", platforms.Post{Text: site.URL + "/report", Options: &platforms.LinkedInOptions{LinkCard: &off}}, nil},
		{"unreadable", platforms.Post{Text: site.URL + "/missing"}, nil},
		{"with media", platforms.Post{Text: site.URL + "/report", Media: []platforms.Media{fileMedia("image/png", thumb, true)}}, nil},
	} {
		res, err := a.Publish(ctx, creds, tc.post)
		require.NoError(t, err, tc.name)
		var rec sim.Record
		for _, r := range srv.Publications(platforms.LinkedIn) {
			if r.ID == res.Publication.ID {
				rec = r
			}
		}
		require.Equal(t, res.Publication.ID, rec.ID, tc.name)
		got, _ := rec.Options["article"].(map[string]any)
		if tc.want == nil {
			assert.Nil(t, got, tc.name)
			continue
		}
		require.NotNil(t, got, tc.name)
		if _, ok := tc.want["thumbnail_sha256"]; ok {
			assert.Regexp(t, `^urn:li:image:`, got["thumbnail"], tc.name)
			delete(got, "thumbnail")
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
}
