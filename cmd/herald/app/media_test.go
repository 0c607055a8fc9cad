package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// The media files and flow are apptest's; the media API's own tests are in http/api.
var (
	jpegFile = apptest.JPEGFile
	mp4File  = apptest.MP4File
)

func sha(b []byte) string { return apptest.SHA256(b) }

func s3Media(t *testing.T) app.MediaConfig { t.Helper(); return apptest.S3Media(t) }

func (b *testBundle) presign(key, filename, ctype string, size int) apptest.Presigned {
	b.t.Helper()
	return b.h.Presign(key, filename, ctype, size)
}

func (b *testBundle) rawPut(u, ctype string, body []byte, length int64, hdr http.Header) *response {
	b.t.Helper()
	return fromAPI(b.h.RawPut(u, ctype, body, length, hdr))
}

func (b *testBundle) confirm(key string, p apptest.Presigned, ctype string, size int) *response {
	b.t.Helper()
	return fromAPI(b.h.Confirm(key, p, ctype, size))
}

func (b *testBundle) uploadMedia(filename, ctype string, data []byte) string {
	b.t.Helper()
	return b.herald().UploadMedia(filename, ctype, data)
}

func (b *testBundle) mediaRecord(key string) *persistence.Media {
	b.t.Helper()
	return b.h.MediaRecord(key)
}

func fromAPI(r *apptest.Response) *response {
	return &response{status: r.Status, header: r.Header, body: r.Body}
}

// With media on S3 the browser PUTs uploads to the S3 endpoint, another origin: the dashboard's
// policy names it in connect-src (the pages', /api's, the sign-in page's), and it is the origin
// of the upload URLs handed out. With local storage the policy stays the strict constant.
func TestDashboardPolicyAllowsS3Uploads(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{media: s3Media(t)})
	br := b.signedIn()
	r := br.send("POST", "/api/media/presign", map[string]any{"filename": "a.jpg", "content_type": "image/jpeg", "size_bytes": len(jpegFile)}, br.csrfHeader())
	require.Equal(t, 200, r.status, string(r.body))
	u, err := url.Parse(r.json(t)["upload_url"].(string))
	require.NoError(t, err)
	origin := u.Scheme + "://" + u.Host
	require.NotEqual(t, b.url, origin)
	want := strings.Replace(server.ContentSecurityPolicy, "img-src 'self' data:; ", "img-src 'self' data:; connect-src 'self' "+origin+"; ", 1)
	for _, p := range []string{"/api/me", "/compose", "/signin"} {
		r := br.send("GET", p, nil, nil)
		require.Equal(t, 200, r.status, p)
		require.Equal(t, want, r.header.Get("Content-Security-Policy"), p)
	}
	require.Equal(t, want, b.app.Server.ContentSecurityPolicy())

	local := setup(t, bundleOpts{})
	r = local.signedIn().send("GET", "/compose", nil, nil)
	require.Equal(t, server.ContentSecurityPolicy, r.header.Get("Content-Security-Policy"))
}
