package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// TikTok's photo posts: the photos are fetched in order and recorded so; every rule of
// content/init is enforced before anything is posted.
func TestTikTokPhotoPosts(t *testing.T) {
	t.Parallel()
	srv, c := ttStart(t, Options{})
	srv.SetLimit(platforms.TikTok, "video_init", Limit{Count: 100, Window: time.Minute})
	jpegs := map[string][]byte{}
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/p.png" {
			_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"))
			return
		}
		data, ok := jpegs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(files.Close)
	var urls, shas []string
	for i := range 3 {
		data := fmt.Appendf([]byte{0xFF, 0xD8, 0xFF, 0xE0}, "photo %d", i)
		jpegs[fmt.Sprintf("/%d.jpg", i)] = data
		urls = append(urls, fmt.Sprintf("%s/%d.jpg", files.URL, i))
		shas = append(shas, sha256hex(data))
	}
	photo := func(images []string, cover any, privacy string) map[string]any {
		si := map[string]any{"source": "PULL_FROM_URL", "photo_images": images}
		if cover != nil {
			si["photo_cover_index"] = cover
		}
		return map[string]any{"media_type": "PHOTO", "post_mode": "DIRECT_POST", "source_info": si,
			"post_info": map[string]any{"title": "Three", "description": "Three photos", "privacy_level": privacy}}
	}
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"no cover index", photo(urls, nil, "SELF_ONLY")},
		{"a cover past the photos", photo(urls, 3, "SELF_ONLY")},
		{"36 photos", photo(slices.Repeat(urls[:1], 36), 0, "SELF_ONLY")},
		{"no photos", photo(nil, 0, "SELF_ONLY")},
		{"a PNG", photo([]string{urls[0], files.URL + "/p.png"}, 0, "SELF_ONLY")},
		{"an unreachable photo", photo([]string{urls[0], files.URL + "/gone.jpg"}, 0, "SELF_ONLY")},
		{"no privacy level", photo(urls, 0, "")},
	} {
		status, _, code := ttCall(t, srv, "/v2/post/publish/content/init/", c.AccessToken, tc.body)
		require.Equal(t, http.StatusBadRequest, status, tc.name)
		require.Equal(t, "invalid_params", code, tc.name)
	}
	require.Empty(t, srv.Publications(platforms.TikTok), "nothing was posted")

	status, data, code := ttCall(t, srv, "/v2/post/publish/content/init/", c.AccessToken, photo([]string{urls[2], urls[0], urls[1]}, 1, "SELF_ONLY"))
	require.Equal(t, http.StatusOK, status, code)
	require.NotEmpty(t, data["publish_id"])
	pubs := srv.Publications(platforms.TikTok)
	require.Len(t, pubs, 1)
	require.Equal(t, []string{shas[2], shas[0], shas[1]}, pubs[0].MediaSHA256)
	require.Equal(t, "PHOTO", pubs[0].Options["media_type"])
	require.EqualValues(t, 1, pubs[0].Options["photo_cover_index"])
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
