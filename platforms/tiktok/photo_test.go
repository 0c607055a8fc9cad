package tiktok

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// photos serves n distinct JPEGs (and one PNG at /png) for the simulator to fetch, and returns
// them as media with their hashes, in order.
func photos(t *testing.T, n int) ([]platforms.Media, []string) {
	t.Helper()
	files := map[string][]byte{}
	var media []platforms.Media
	var shas []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	for i := range n {
		data := append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, randomBytes(t, 2000)...)
		path := fmt.Sprintf("/p%d.jpg", i)
		files[path] = data
		media = append(media, platforms.Media{ID: path, ContentType: "image/jpeg", Size: int64(len(data)), Filename: path[1:], URL: srv.URL + path})
		shas = append(shas, sha(data))
	}
	files["/png"] = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR not a jpeg")
	return media, shas
}

func TestPublishPhotoPost(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	media, shas := photos(t, 5)
	text := "Five frames from the shoot\nthe long description follows"
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text, Media: media,
		Options: &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", PhotoCoverIndex: 3, AllowComment: true}})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.TikTok)
	require.Len(t, recs, 1)
	require.Equal(t, recs[0].ID, res.Publication.ID)
	require.Equal(t, "https://www.tiktok.com/@alice/photo/"+res.Publication.ID, res.Publication.URL)
	require.Equal(t, shas, recs[0].MediaSHA256, "the photos in the order given")
	require.Equal(t, []string{"image/jpeg", "image/jpeg", "image/jpeg", "image/jpeg", "image/jpeg"}, recs[0].MediaTypes)
	require.Equal(t, "PHOTO", recs[0].Options["media_type"])
	require.EqualValues(t, 3, recs[0].Options["photo_cover_index"])
	require.Equal(t, "Five frames from the shoot", recs[0].Options["title"])
	require.Equal(t, text, recs[0].Options["description"])
	require.Equal(t, false, recs[0].Options["disable_comment"])
	require.Empty(t, uploads(t, b.srv), "TikTok pulls photos: nothing is PUT")
}

func TestPhotoPostCoverDefaultsToTheFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	media, _ := photos(t, 2)
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "two", Media: media, Options: selfOnly})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.TikTok)
	require.Len(t, recs, 1)
	require.EqualValues(t, 0, recs[0].Options["photo_cover_index"])
}

func TestPhotoPostRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	media, _ := photos(t, 2)

	// A photo TikTok cannot take (a PNG behind a .jpg name) is refused by TikTok; nothing is posted.
	bad := media[1]
	bad.URL = media[0].URL[:len(media[0].URL)-len("/p0.jpg")] + "/png"
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "x", Media: []platforms.Media{media[0], bad}, Options: selfOnly})
	require.Error(t, err)
	require.Equal(t, platforms.Permanent, kindOf(t, err))

	// A photo without a public URL never reaches TikTok.
	noURL := media[1]
	noURL.URL = ""
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "x", Media: []platforms.Media{media[0], noURL}, Options: selfOnly})
	require.ErrorContains(t, err, "no public URL")
	require.Empty(t, b.srv.Publications(platforms.TikTok))
}

// A photo post has no duets or stitches: a creator who turned them off may still post photos
// with options that allow them (they are not sent).
func TestPhotoPostIgnoresDuetAndStitch(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.srv.TikTokInteractions(false, true, true)
	media, _ := photos(t, 2)
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "two", Media: media,
		Options: &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", AllowDuet: true, AllowStitch: true}})
	require.NoError(t, err)
	require.Len(t, b.srv.Publications(platforms.TikTok), 1)
}

// content/init creates a photo post: a failure after TikTok took it is an unknown outcome, which
// Lookup resolves once the post is listed.
func TestPhotoPostThenErrorIsUnknownAndFound(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	since := time.Now()
	media, _ := photos(t, 2)
	post := platforms.Post{Text: "Two photos, maybe posted", Media: media, Options: selfOnly}
	require.NoError(t, b.srv.InjectFault(platforms.TikTok, sim.FaultPostThenError, 1))
	_, err := b.a.Publish(context.Background(), b.creds, post)
	require.Error(t, err)
	require.Equal(t, platforms.Unknown, kindOf(t, err))
	recs := b.srv.Publications(platforms.TikTok)
	require.Len(t, recs, 1, "TikTok took the post")
	require.Eventually(t, func() bool {
		pub, found, err := b.a.Lookup(context.Background(), b.creds, post, since)
		require.NoError(t, err)
		return found && pub.ID == recs[0].ID
	}, 5*time.Second, 5*time.Millisecond)
}
