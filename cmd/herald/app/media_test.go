package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/persistence/blob/blobtest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/sim"
	"github.com/heraldhq/herald/platforms/youtube"
)

// The media file route answers the media's own type; the validator reads such bodies as files.
func init() {
	for _, ct := range blob.ContentTypes {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
}

var (
	jpegFile = apptest.JPEGFile
	pngFile  = apptest.PNGFile
	mp4File  = apptest.MP4File
	elfFile  = apptest.TestFile("\x7fELF\x02\x01\x01\x00", 64<<10)
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// mediaClock is a settable clock for the media flow.
type mediaClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *mediaClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *mediaClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newMediaClock() *mediaClock { return &mediaClock{now: time.Now().UTC()} }

// s3Media starts versitygw with a bucket and returns the media configuration that uses it.
func s3Media(t *testing.T) app.MediaConfig {
	t.Helper()
	srv := blobtest.Start(t)
	cfg := srv.Bucket(t, "herald-media")
	return app.MediaConfig{S3: &cfg}
}

type presigned struct {
	UploadURL, Key, StorageFilename string
}

func (b *testBundle) presign(key, filename, ctype string, size int) presigned {
	b.t.Helper()
	r := b.doKey(key, "POST", "/v1/media/presign", map[string]any{"filename": filename, "content_type": ctype, "size_bytes": size}, nil)
	require.Equal(b.t, 200, r.status, string(r.body))
	m := r.json(b.t)
	return presigned{UploadURL: m["upload_url"].(string), Key: m["key"].(string), StorageFilename: m["storage_filename"].(string)}
}

// rawPut PUTs bytes to an upload URL the way curl -T does: no Authorization, the given
// Content-Type, a Content-Length unless length < 0 (then chunked). Responses of Herald's own
// route are validated against the document.
func (b *testBundle) rawPut(u, ctype string, body []byte, length int64, hdr http.Header) *response {
	b.t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if length < 0 {
		rd = io.MultiReader(rd) // hides the length: chunked
	}
	req, err := http.NewRequest(http.MethodPut, u, rd)
	require.NoError(b.t, err)
	if length >= 0 {
		req.ContentLength = length
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	r := &response{status: resp.StatusCode, header: resp.Header, body: out}
	if strings.HasPrefix(u, b.url) {
		require.NotEmpty(b.t, resp.Header.Get("X-Request-Id"))
		b.validate(req, r)
	}
	return r
}

// rawGet fetches a URL without Authorization, validating Herald's answers.
func (b *testBundle) rawGet(u string, hdr http.Header) *response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(b.t, err)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	r := &response{status: resp.StatusCode, header: resp.Header, body: out}
	b.validate(req, r)
	return r
}

func (b *testBundle) confirm(key string, p presigned, ctype string, size int) *response {
	b.t.Helper()
	return b.doKey(key, "POST", "/v1/media/confirm", map[string]any{
		"key": p.Key, "storage_filename": p.StorageFilename, "original_filename": "my " + p.StorageFilename, "content_type": ctype, "size_bytes": size,
	}, nil)
}

// uploadMedia runs the whole flow for the bundle's user and returns the media id.
func (b *testBundle) uploadMedia(filename, ctype string, data []byte) string {
	b.t.Helper()
	h := *b.h
	h.T, h.Client = b.t, b.client
	return h.UploadMedia(filename, ctype, data)
}

func (b *testBundle) mediaRecord(key string) *persistence.Media {
	b.t.Helper()
	var m *persistence.Media
	require.NoError(b.t, b.app.Store.View(func(tx *persistence.Tx) error {
		var err error
		if m, err = tx.MediaByKey(key); err == persistence.ErrNotFound {
			m, err = nil, nil
		}
		return err
	}))
	return m
}

// The three steps with plain HTTP, the media read back and served by its signed URL, and the
// media attached to a post.
func testMediaFlow(t *testing.T, b *testBundle, backend string) {
	p := b.presign(b.key, "holiday photo.jpg", "image/jpeg", len(jpegFile))
	require.Equal(t, "uploads/"+b.user.ID+"/"+p.StorageFilename, p.Key)
	require.True(t, strings.HasSuffix(p.StorageFilename, ".jpg"))
	if backend == "local" {
		require.True(t, strings.HasPrefix(p.UploadURL, b.url+"/v1/media/"+p.Key+"?"), p.UploadURL)
	} else {
		require.Contains(t, p.UploadURL, "X-Amz-Signature=")
	}

	// curl -T: no Authorization header, Expect: 100-continue as curl sends for large files.
	r := b.rawPut(p.UploadURL, "image/jpeg", jpegFile, int64(len(jpegFile)), http.Header{"Expect": {"100-continue"}})
	require.Equal(t, 200, r.status, string(r.body))

	r = b.confirm(b.key, p, "image/jpeg", len(jpegFile))
	require.Equal(t, 201, r.status, string(r.body))
	created := r.json(t)
	id := created["id"].(string)
	require.Equal(t, blob.MediaIDOf(p.StorageFilename), id)

	r = b.confirm(b.key, p, "image/jpeg", len(jpegFile))
	require.Equal(t, 201, r.status, "confirming again answers the same media")
	require.Equal(t, id, r.json(t)["id"])

	r = b.do("GET", "/v1/media/"+id, nil)
	require.Equal(t, 200, r.status, string(r.body))
	m := r.json(t)
	require.Equal(t, id, m["id"])
	require.Equal(t, "image/jpeg", m["content_type"])
	require.Equal(t, float64(len(jpegFile)), m["size_bytes"])
	require.Equal(t, "my "+p.StorageFilename, m["original_filename"])
	require.NotEmpty(t, m["created_at"])

	// The media URL is Herald's, signed, and serves the bytes (and ranges) without a key.
	fileURL := m["url"].(string)
	require.True(t, strings.HasPrefix(fileURL, b.url+"/v1/media/files/"+p.StorageFilename+"?"), fileURL)
	r = b.rawGet(fileURL, nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, "image/jpeg", r.header.Get("Content-Type"))
	require.Equal(t, sha(jpegFile), sha(r.body))
	r = b.rawGet(fileURL, http.Header{"Range": {"bytes=0-9"}})
	require.Equal(t, 206, r.status)
	require.Equal(t, jpegFile[:10], r.body)
	r = b.rawGet(created["url"].(string), nil)
	require.Equal(t, 200, r.status, "the url confirm answered works too")
	u, _ := url.Parse(fileURL)
	q := u.Query()
	q.Set("expires", itoa(time.Now().Add(1000*time.Hour).Unix()))
	u.RawQuery = q.Encode()
	r = b.rawGet(u.String(), nil)
	require.Equal(t, 403, r.status, "a later expiry breaks the signature")
	require.Equal(t, "forbidden", r.errorCode(t))

	// The media goes into a post, on create and on update.
	r = b.do("POST", "/v1/posts", map[string]any{"content": "", "platforms": []string{b.accounts[0].ID}, "media": []string{id}})
	require.Equal(t, 201, r.status, string(r.body))
	post := r.json(t)["id"].(string)
	r = b.do("GET", "/v1/posts/"+post, nil)
	require.Equal(t, []any{id}, r.json(t)["media_ids"])
	r = b.do("PATCH", "/v1/posts/"+post, map[string]any{"media": []string{}})
	require.Equal(t, 400, r.status, "a post without text keeps its media: %s", r.body)
	require.Contains(t, r.errorMessage(t), "content: must not be empty when the post has no media")
	r = b.do("PATCH", "/v1/posts/"+post, map[string]any{"content": "caption", "media": []string{}})
	require.Equal(t, 200, r.status, string(r.body))
	r = b.do("PATCH", "/v1/posts/"+post, map[string]any{"media": []string{id}})
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, []any{id}, r.json(t)["media_ids"])
}

func TestMediaFlowLocal(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	testMediaFlow(t, b, "local")
	// The file lives under DIR/media.
	entries, err := filepath.Glob(filepath.Join(b.app.Cfg.DataDir, "media", "uploads", b.user.ID, "*.jpg"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

func TestMediaFlowS3(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{media: s3Media(t)})
	testMediaFlow(t, b, "s3")
	_, err := os.Stat(filepath.Join(b.app.Cfg.DataDir, "media"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is stored locally")
	r := b.rawPut(b.url+"/v1/media/uploads/"+b.user.ID+"/"+uuid.NewString()+".jpg?expires=1&signature=x", "image/jpeg", jpegFile, -1, nil)
	require.Equal(t, 404, r.status, "Herald's upload route is not used with S3")
}

// The media of an upload reach the networks whole: an image published to Instagram (which
// fetches it from Herald's signed URL) and a video to YouTube (uploaded in chunks from storage),
// and the simulator records the same SHA-256.
func TestMediaReachesTheNetworks(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var o bundleOpts
			if backend == "s3" {
				o.media = s3Media(t)
			}
			b := setup(t, o)
			image := b.uploadMedia("photo.jpg", "image/jpeg", jpegFile)
			video := b.uploadMedia("clip.mp4", "video/mp4", mp4File)

			s, err := sim.Start("127.0.0.1:0", sim.Options{ProcessingDelay: time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			media, err := b.app.Media.Resolve(ctx, b.user.ID, []string{image})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(media[0].URL, b.url+"/v1/media/files/"), media[0].URL)
			ig := instagram.New(s.AdapterConfig(platforms.Instagram))
			creds, err := s.NewAccount(platforms.Instagram, "acme")
			require.NoError(t, err)
			_, err = ig.Publish(ctx, creds, platforms.Post{Text: "from Herald", Media: media})
			require.NoError(t, err)
			pubs := s.Publications(platforms.Instagram)
			require.Len(t, pubs, 1)
			require.Equal(t, []string{sha(jpegFile)}, pubs[0].MediaSHA256)

			media, err = b.app.Media.Resolve(ctx, b.user.ID, []string{video})
			require.NoError(t, err)
			require.Equal(t, int64(len(mp4File)), media[0].Size)
			yt := youtube.New(s.AdapterConfig(platforms.YouTube))
			creds, err = s.NewAccount(platforms.YouTube, "acme")
			require.NoError(t, err)
			_, err = yt.Publish(ctx, creds, platforms.Post{Text: "A clip\nuploaded through Herald", Media: media})
			require.NoError(t, err)
			pubs = s.Publications(platforms.YouTube)
			require.Len(t, pubs, 1)
			require.Equal(t, []string{sha(mp4File)}, pubs[0].MediaSHA256)

			// Media that are not the user's confirmed media do not resolve.
			other, _ := b.newUser("other@example.com", "pro")
			_, err = b.app.Media.Resolve(ctx, other.ID, []string{image})
			var ue *blob.UnusableError
			require.ErrorAs(t, err, &ue)
		})
	}
}

func TestMediaPresignBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	cases := []struct {
		name string
		body any
		want string
	}{
		{"type not allowed", map[string]any{"filename": "a.gif", "content_type": "image/gif", "size_bytes": 10}, "content_type: \"image/gif\" is not accepted"},
		{"type of another case", map[string]any{"filename": "a.jpg", "content_type": "IMAGE/JPEG", "size_bytes": 10}, "content_type:"},
		{"size zero", map[string]any{"filename": "a.jpg", "content_type": "image/jpeg", "size_bytes": 0}, "size_bytes: must be a positive"},
		{"size negative", map[string]any{"filename": "a.jpg", "content_type": "image/jpeg", "size_bytes": -1}, "size_bytes: must be a positive"},
		{"image over the limit", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 50<<20 + 1}, "over the limit for images (52428800 bytes)"},
		{"video over the limit", map[string]any{"filename": "a.mov", "content_type": "video/quicktime", "size_bytes": 500<<20 + 1}, "over the limit for videos (524288000 bytes)"},
		{"size not an integer", map[string]any{"filename": "a.jpg", "content_type": "image/jpeg", "size_bytes": 1.5}, "size_bytes: Expected integer, received float"},
		{"size a string", map[string]any{"filename": "a.jpg", "content_type": "image/jpeg", "size_bytes": "10"}, "size_bytes: Expected number, received string"},
		{"filename with a slash", map[string]any{"filename": "../../etc/passwd", "content_type": "image/jpeg", "size_bytes": 10}, "filename: must be a file name without path separators"},
		{"filename with a backslash", map[string]any{"filename": `C:\photos\a.jpg`, "content_type": "image/jpeg", "size_bytes": 10}, "filename: must be a file name without path separators"},
		{"filename with a control character", map[string]any{"filename": "a\x00.jpg", "content_type": "image/jpeg", "size_bytes": 10}, "filename: must not contain control characters"},
		{"filename with a newline", map[string]any{"filename": "a\r\nb.jpg", "content_type": "image/jpeg", "size_bytes": 10}, "filename: must not contain control characters"},
		{"filename empty", map[string]any{"filename": "", "content_type": "image/jpeg", "size_bytes": 10}, "filename: must not be empty"},
		{"filename missing", map[string]any{"content_type": "image/jpeg", "size_bytes": 10}, "filename: Required"},
		{"plain text body", "filename=a.jpg", "Expected object, received string"},
	}
	for _, c := range cases {
		r := b.do("POST", "/v1/media/presign", c.body)
		require.Equal(t, 400, r.status, "%s: %s", c.name, r.body)
		require.Equal(t, "validation_error", r.errorCode(t), c.name)
		require.Contains(t, r.errorMessage(t), c.want, c.name)
	}
	r := b.do("POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 50<<20 + 1})
	require.Equal(t, float64(50<<20), r.json(t)["error"].(map[string]any)["details"].(map[string]any)["limit_bytes"])
	r = b.doKey("", "POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 10}, nil)
	require.Equal(t, 401, r.status)

	var pending []*persistence.Media
	require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
		var err error
		pending, err = tx.PendingMediaBefore(time.Now().Add(time.Hour), 10)
		return err
	}))
	require.Empty(t, pending, "refused presigns record nothing")

	// The limits are the operator's.
	small := setup(t, bundleOpts{media: app.MediaConfig{MaxImageBytes: 1000}})
	r = small.do("POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 1001})
	require.Equal(t, 400, r.status)
	r = small.do("POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 1000})
	require.Equal(t, 200, r.status)
}

func TestMediaUploadBadInput(t *testing.T) {
	t.Parallel()
	clock := newMediaClock()
	b := setup(t, bundleOpts{media: app.MediaConfig{Now: clock.Now, JanitorInterval: -1}})
	p := b.presign(b.key, "a.png", "image/png", len(pngFile))
	n := int64(len(pngFile))
	stored := func() bool {
		_, err := b.app.Media.Blob().Stat(context.Background(), p.Key)
		return err == nil
	}
	expect := func(name string, r *response, status int, code, msg string) {
		t.Helper()
		require.Equal(t, status, r.status, "%s: %s", name, r.body)
		require.Equal(t, code, r.errorCode(t), name)
		require.Contains(t, r.errorMessage(t), msg, name)
		require.False(t, stored(), "%s stored nothing", name)
	}

	expect("wrong Content-Type", b.rawPut(p.UploadURL, "image/jpeg", pngFile, n, nil), 400, "validation_error", "Content-Type: must be image/png")
	expect("no Content-Type", b.rawPut(p.UploadURL, "", pngFile, n, nil), 400, "validation_error", "Content-Type: must be image/png")
	expect("more bytes declared", b.rawPut(p.UploadURL, "image/png", append(append([]byte{}, pngFile...), 1, 2, 3), n+3, nil), 413, "validation_error", "presigned for")
	expect("more bytes chunked", b.rawPut(p.UploadURL, "image/png", append(append([]byte{}, pngFile...), 1, 2, 3), -1, nil), 413, "validation_error", "larger than the presigned")
	expect("fewer bytes", b.rawPut(p.UploadURL, "image/png", pngFile[:1000], -1, nil), 400, "validation_error", "the body ended after 1000 bytes")

	u, _ := url.Parse(p.UploadURL)
	q := u.Query()
	sig := []byte(q.Get("signature"))
	sig[5] ^= 0x01
	q.Set("signature", string(sig))
	u.RawQuery = q.Encode()
	expect("tampered signature", b.rawPut(u.String(), "image/png", pngFile, n, nil), 403, "forbidden", "signature does not match")
	u, _ = url.Parse(p.UploadURL)
	q = u.Query()
	q.Set("expires", itoa(clock.Now().Add(time.Hour).Unix()))
	u.RawQuery = q.Encode()
	expect("extended expiry", b.rawPut(u.String(), "image/png", pngFile, n, nil), 403, "forbidden", "signature does not match")
	expect("another key", b.rawPut(strings.Replace(p.UploadURL, p.StorageFilename, uuid.NewString()+".png", 1), "image/png", pngFile, n, nil), 404, "not_found", "no upload was presigned")
	expect("authorization header is not what authorises", b.rawPut(strings.Split(p.UploadURL, "?")[0], "image/png", pngFile, n, http.Header{"Authorization": {"Bearer " + b.key}}), 403, "forbidden", "signature")

	// After 15 minutes, the URL is dead.
	late := b.presign(b.key, "b.png", "image/png", len(pngFile))
	clock.Advance(15*time.Minute + time.Second)
	r := b.rawPut(late.UploadURL, "image/png", pngFile, n, nil)
	require.Equal(t, 403, r.status, string(r.body))
	require.Contains(t, r.errorMessage(t), "expired")

	// Within its lifetime it takes one PUT, of exactly the bytes, once.
	p = b.presign(b.key, "c.png", "image/png", len(pngFile))
	r = b.rawPut(p.UploadURL, "image/png", pngFile, -1, nil)
	require.Equal(t, 200, r.status, string(r.body))
	r = b.rawPut(p.UploadURL, "image/png", pngFile, n, nil)
	require.Equal(t, 409, r.status, "twice")
	require.Equal(t, "validation_error", r.errorCode(t))
	o, _, err := b.app.Media.Blob().Open(context.Background(), p.Key)
	require.NoError(t, err)
	got, _ := io.ReadAll(o)
	_ = o.Close()
	require.Equal(t, sha(pngFile), sha(got))
	require.Equal(t, 201, b.confirm(b.key, p, "image/png", len(pngFile)).status)
	r = b.rawPut(p.UploadURL, "image/png", pngFile, n, nil)
	require.Equal(t, 409, r.status, "after confirm")
}

func TestMediaConfirmBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	_, otherKey := b.newUser("other@example.com", "pro")

	p := b.presign(b.key, "a.jpg", "image/jpeg", len(jpegFile))
	r := b.confirm(b.key, p, "image/jpeg", len(jpegFile))
	require.Equal(t, 400, r.status, "nothing uploaded yet")
	require.Contains(t, r.errorMessage(t), "nothing was uploaded")
	require.Equal(t, 200, b.rawPut(p.UploadURL, "image/jpeg", jpegFile, -1, nil).status)

	body := func(mut func(map[string]any)) map[string]any {
		m := map[string]any{"key": p.Key, "storage_filename": p.StorageFilename, "original_filename": "a.jpg", "content_type": "image/jpeg", "size_bytes": len(jpegFile)}
		mut(m)
		return m
	}
	cases := []struct {
		name   string
		key    string
		body   any
		status int
		code   string
		want   string
	}{
		{"another user's key", otherKey, body(func(map[string]any) {}), 403, "forbidden", "belongs to another user"},
		{"a key never presigned", b.key, body(func(m map[string]any) { m["key"] = "uploads/" + b.user.ID + "/" + uuid.NewString() + ".jpg" }), 400, "validation_error", "no upload was presigned with this key"},
		{"a made-up key", b.key, body(func(m map[string]any) { m["key"] = "../../herald.db" }), 400, "validation_error", "no upload was presigned"},
		{"a size that does not match", b.key, body(func(m map[string]any) { m["size_bytes"] = len(jpegFile) - 1 }), 400, "validation_error", "size_bytes: the upload was presigned for"},
		{"another type", b.key, body(func(m map[string]any) { m["content_type"] = "image/png" }), 400, "validation_error", "content_type: the upload was presigned as image/jpeg"},
		{"another storage filename", b.key, body(func(m map[string]any) { m["storage_filename"] = uuid.NewString() + ".jpg" }), 400, "validation_error", "storage_filename: does not match"},
		{"original filename with a path", b.key, body(func(m map[string]any) { m["original_filename"] = "/etc/passwd" }), 400, "validation_error", "original_filename: must be a file name"},
		{"missing field", b.key, body(func(m map[string]any) { delete(m, "storage_filename") }), 400, "validation_error", "storage_filename: Required"},
		{"size as a string", b.key, body(func(m map[string]any) { m["size_bytes"] = "1" }), 400, "validation_error", "size_bytes: Expected number, received string"},
	}
	for _, c := range cases {
		r := b.doKey(c.key, "POST", "/v1/media/confirm", c.body, nil)
		require.Equal(t, c.status, r.status, "%s: %s", c.name, r.body)
		require.Equal(t, c.code, r.errorCode(t), c.name)
		require.Contains(t, r.errorMessage(t), c.want, c.name)
	}
	require.False(t, b.mediaRecord(p.Key).Confirmed(), "refused confirms change nothing")

	// Bytes that are not what the type says: a PNG declared as JPEG, an executable as MP4.
	for _, c := range []struct {
		ctype string
		data  []byte
		want  string
	}{{"image/jpeg", pngFile, "the file's bytes are image/png, not image/jpeg"}, {"video/mp4", elfFile, "the file's bytes are an ELF executable, not video/mp4"}} {
		p := b.presign(b.key, "x", c.ctype, len(c.data))
		require.Equal(t, 200, b.rawPut(p.UploadURL, c.ctype, c.data, int64(len(c.data)), nil).status)
		r := b.confirm(b.key, p, c.ctype, len(c.data))
		require.Equal(t, 400, r.status, string(r.body))
		require.Contains(t, r.errorMessage(t), c.want)
		require.False(t, b.mediaRecord(p.Key).Confirmed())
	}
}

func TestMediaReadAndOwnership(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	_, otherKey := b.newUser("other@example.com", "pro")
	id := b.uploadMedia("a.png", "image/png", pngFile)
	pending := b.presign(b.key, "b.png", "image/png", len(pngFile))

	for _, c := range []struct {
		name, key, id string
		status        int
	}{
		{"another user's media", otherKey, id, 404},
		{"an unconfirmed upload", b.key, blob.MediaIDOf(pending.StorageFilename), 404},
		{"an unknown id", b.key, uuid.NewString(), 404},
		{"not a uuid", b.key, "photo.png", 400},
	} {
		r := b.doKey(c.key, "GET", "/v1/media/"+c.id, nil, nil)
		require.Equal(t, c.status, r.status, c.name)
	}
	require.Equal(t, 200, b.do("GET", "/v1/media/"+id, nil).status)

	// The file route serves confirmed media with a valid signature only.
	r := b.rawGet(b.url+"/v1/media/files/"+pending.StorageFilename+"?expires=9999999999&signature=AAAA", nil)
	require.Equal(t, 404, r.status)
	r = b.rawGet(b.url+"/v1/media/files/"+id+".png", nil)
	require.Equal(t, 403, r.status)
}

// Posts take only the caller's confirmed media: unknown, unconfirmed and other users' ids are
// refused on create, update, publish and schedule, and change nothing.
func TestPostsTakeOnlyTheCallersConfirmedMedia(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	_, otherKey := b.newUser("other@example.com", "pro")
	mine := b.uploadMedia("a.jpg", "image/jpeg", jpegFile)
	unconfirmed := b.presign(b.key, "b.jpg", "image/jpeg", len(jpegFile))
	require.Equal(t, 200, b.rawPut(unconfirmed.UploadURL, "image/jpeg", jpegFile, -1, nil).status)
	op := b.presign(otherKey, "c.jpg", "image/jpeg", len(jpegFile))
	require.Equal(t, 200, b.rawPut(op.UploadURL, "image/jpeg", jpegFile, -1, nil).status)
	r := b.confirm(otherKey, op, "image/jpeg", len(jpegFile))
	require.Equal(t, 201, r.status)
	theirs := r.json(t)["id"].(string)

	post := b.createPost("text", b.accounts[0])
	for name, id := range map[string]string{"unknown": uuid.NewString(), "unconfirmed": blob.MediaIDOf(unconfirmed.StorageFilename), "another user's": theirs} {
		r := b.do("POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{b.accounts[0].ID}, "media": []string{mine, id}})
		require.Equal(t, 400, r.status, name)
		require.Equal(t, "validation_error", r.errorCode(t), name)
		require.Contains(t, r.errorMessage(t), "media: "+id, name)
		r = b.do("PATCH", "/v1/posts/"+post, map[string]any{"media": []string{id}})
		require.Equal(t, 400, r.status, name)
		require.Contains(t, r.errorMessage(t), "media: "+id, name)
		r = b.do("POST", "/v1/posts/publish", map[string]any{"content": "x", "platforms": []string{b.accounts[0].ID}, "media": []string{id}})
		require.Equal(t, 400, r.status, "%s: %s", name, r.body)
		require.Contains(t, r.errorMessage(t), "media: "+id, name)
		r = b.do("POST", "/v1/posts/schedule", map[string]any{"content": "x", "platforms": []string{b.accounts[0].ID}, "media": []string{id},
			"scheduledAt": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)})
		require.Equal(t, 400, r.status, "%s: %s", name, r.body)
		require.Contains(t, r.errorMessage(t), "media: "+id, name)
	}
	require.Equal(t, 1, b.countPosts())
	require.Equal(t, []any{}, b.do("GET", "/v1/posts/"+post, nil).json(t)["media_ids"])
	r = b.do("POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{b.accounts[0].ID}, "media": []string{mine}})
	require.Equal(t, 201, r.status, string(r.body))
	r = b.do("POST", "/v1/posts/schedule", map[string]any{"content": "x", "platforms": []string{b.accounts[0].ID}, "media": []string{mine},
		"scheduledAt": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 201, r.status, string(r.body))
	require.Equal(t, []any{mine}, r.json(t)["media_ids"])
}

// Uploads never confirmed are deleted after 24 hours (record and file); confirmed media and the
// media of a draft stay. The janitor runs on the media clock, so nothing sleeps.
func TestMediaJanitor(t *testing.T) {
	t.Parallel()
	clock := newMediaClock()
	b := setup(t, bundleOpts{media: app.MediaConfig{Now: clock.Now, JanitorInterval: -1}})
	kept := b.uploadMedia("a.jpg", "image/jpeg", jpegFile)
	r := b.do("POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{b.accounts[0].ID}, "media": []string{kept}})
	require.Equal(t, 201, r.status)
	abandoned := b.presign(b.key, "b.jpg", "image/jpeg", len(jpegFile))
	require.Equal(t, 200, b.rawPut(abandoned.UploadURL, "image/jpeg", jpegFile, -1, nil).status)
	path := filepath.Join(b.app.Cfg.DataDir, "media", filepath.FromSlash(abandoned.Key))
	_, err := os.Stat(path)
	require.NoError(t, err)

	clock.Advance(24*time.Hour - time.Minute)
	n, err := b.app.Media.Sweep(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	clock.Advance(time.Minute)
	n, err = b.app.Media.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Nil(t, b.mediaRecord(abandoned.Key))
	r = b.confirm(b.key, abandoned, "image/jpeg", len(jpegFile))
	require.Equal(t, 400, r.status)
	r = b.do("GET", "/v1/media/"+kept, nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, 200, b.rawGet(r.json(t)["url"].(string), nil).status)
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
