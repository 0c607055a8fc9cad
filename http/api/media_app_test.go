package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/sim"
	"github.com/heraldhq/herald/platforms/youtube"
)

// mediaClock is a settable clock for the media flow.
type mediaClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *mediaClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *mediaClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

var elfFile = apptest.TestFile("\x7fELF\x02\x01\x01\x00", 64<<10)

func newMediaClock() *mediaClock { return &mediaClock{now: time.Now().UTC()} }

// The three steps with plain HTTP, the media read back and served by its signed URL, and the
// media attached to a post.
func testMediaFlow(t *testing.T, h *apptest.Herald, backend string) {
	p := h.Presign(h.Key, "holiday photo.jpg", "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, "uploads/"+h.User.ID+"/"+p.StorageFilename, p.Key)
	require.True(t, strings.HasSuffix(p.StorageFilename, ".jpg"))
	if backend == "local" {
		require.True(t, strings.HasPrefix(p.UploadURL, h.URL+"/v1/media/"+p.Key+"?"), p.UploadURL)
	} else {
		require.Contains(t, p.UploadURL, "X-Amz-Signature=")
	}

	// curl -T: no Authorization header, Expect: 100-continue as curl sends for large files.
	r := h.RawPut(p.UploadURL, "image/jpeg", apptest.JPEGFile, int64(len(apptest.JPEGFile)), http.Header{"Expect": {"100-continue"}})
	require.Equal(t, 200, r.Status, string(r.Body))

	r = h.Confirm(h.Key, p, "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 201, r.Status, string(r.Body))
	created := r.JSON(t)
	id := created["id"].(string)
	require.Equal(t, blob.MediaIDOf(p.StorageFilename), id)

	r = h.Confirm(h.Key, p, "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 201, r.Status, "confirming again answers the same media")
	require.Equal(t, id, r.JSON(t)["id"])

	r = h.Do("GET", "/v1/media/"+id, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	m := r.JSON(t)
	require.Equal(t, id, m["id"])
	require.Equal(t, "image/jpeg", m["content_type"])
	require.Equal(t, float64(len(apptest.JPEGFile)), m["size_bytes"])
	require.Equal(t, "my "+p.StorageFilename, m["original_filename"])
	require.NotEmpty(t, m["created_at"])

	// The media URL is Herald's, signed, and serves the bytes (and ranges) without a key.
	fileURL := m["url"].(string)
	require.True(t, strings.HasPrefix(fileURL, h.URL+"/v1/media/files/"+p.StorageFilename+"?"), fileURL)
	r = h.RawGet(fileURL, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "image/jpeg", r.Header.Get("Content-Type"))
	require.Equal(t, apptest.SHA256(apptest.JPEGFile), apptest.SHA256(r.Body))
	r = h.RawGet(fileURL, http.Header{"Range": {"bytes=0-9"}})
	require.Equal(t, 206, r.Status)
	require.Equal(t, apptest.JPEGFile[:10], r.Body)
	r = h.RawGet(created["url"].(string), nil)
	require.Equal(t, 200, r.Status, "the url confirm answered works too")
	u, _ := url.Parse(fileURL)
	q := u.Query()
	q.Set("expires", strconv.FormatInt(time.Now().Add(1000*time.Hour).Unix(), 10))
	u.RawQuery = q.Encode()
	r = h.RawGet(u.String(), nil)
	require.Equal(t, 403, r.Status, "a later expiry breaks the signature")
	require.Equal(t, "forbidden", r.ErrorCode(t))

	// The media goes into a post, on create and on update.
	r = h.Do("POST", "/v1/posts", map[string]any{"content": "", "platforms": []string{h.Accounts[0].ID}, "media": []string{id}})
	require.Equal(t, 201, r.Status, string(r.Body))
	post := r.JSON(t)["id"].(string)
	r = h.Do("GET", "/v1/posts/"+post, nil)
	require.Equal(t, []any{id}, r.JSON(t)["media_ids"])
	r = h.Do("PATCH", "/v1/posts/"+post, map[string]any{"media": []string{}})
	require.Equal(t, 400, r.Status, "a post without text keeps its media: %s", r.Body)
	require.Contains(t, r.ErrorMessage(t), "content: must not be empty when the post has no media")
	r = h.Do("PATCH", "/v1/posts/"+post, map[string]any{"content": "caption", "media": []string{}})
	require.Equal(t, 200, r.Status, string(r.Body))
	r = h.Do("PATCH", "/v1/posts/"+post, map[string]any{"media": []string{id}})
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, []any{id}, r.JSON(t)["media_ids"])
}

func TestMediaFlowLocal(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	testMediaFlow(t, h, "local")
	// The file lives under DIR/media.
	entries, err := filepath.Glob(filepath.Join(h.App.Cfg.DataDir, "media", "uploads", h.User.ID, "*.jpg"))
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

func TestMediaFlowS3(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Media: apptest.S3Media(t)})
	testMediaFlow(t, h, "s3")
	_, err := os.Stat(filepath.Join(h.App.Cfg.DataDir, "media"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is stored locally")
	r := h.RawPut(h.URL+"/v1/media/uploads/"+h.User.ID+"/"+uuid.NewString()+".jpg?expires=1&signature=x", "image/jpeg", apptest.JPEGFile, -1, nil)
	require.Equal(t, 404, r.Status, "Herald's upload route is not used with S3")
}

// The media of an upload reach the networks whole: an image published to Instagram (which
// fetches it from Herald's signed URL) and a video to YouTube (uploaded in chunks from storage),
// and the simulator records the same SHA-256.
func TestMediaReachesTheNetworks(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var o apptest.Options
			if backend == "s3" {
				o.Media = apptest.S3Media(t)
			}
			h := apptest.Start(t, o)
			image := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
			video := h.UploadMedia("clip.mp4", "video/mp4", apptest.MP4File)

			s, err := sim.Start("127.0.0.1:0", sim.Options{ProcessingDelay: time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			media, err := h.App.Media.Resolve(ctx, h.User.ID, []string{image})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(media[0].URL, h.URL+"/v1/media/files/"), media[0].URL)
			ig := instagram.New(s.AdapterConfig(platforms.Instagram))
			creds, err := s.NewAccount(platforms.Instagram, "acme")
			require.NoError(t, err)
			_, err = ig.Publish(ctx, creds, platforms.Post{Text: "from Herald", Media: media})
			require.NoError(t, err)
			pubs := s.Publications(platforms.Instagram)
			require.Len(t, pubs, 1)
			require.Equal(t, []string{apptest.SHA256(apptest.JPEGFile)}, pubs[0].MediaSHA256)

			media, err = h.App.Media.Resolve(ctx, h.User.ID, []string{video})
			require.NoError(t, err)
			require.Equal(t, int64(len(apptest.MP4File)), media[0].Size)
			yt := youtube.New(s.AdapterConfig(platforms.YouTube))
			creds, err = s.NewAccount(platforms.YouTube, "acme")
			require.NoError(t, err)
			_, err = yt.Publish(ctx, creds, platforms.Post{Text: "A clip\nuploaded through Herald", Media: media})
			require.NoError(t, err)
			pubs = s.Publications(platforms.YouTube)
			require.Len(t, pubs, 1)
			require.Equal(t, []string{apptest.SHA256(apptest.MP4File)}, pubs[0].MediaSHA256)

			// Media that are not the user's confirmed media do not resolve.
			other, _ := h.NewUser("other@example.com", "pro")
			_, err = h.App.Media.Resolve(ctx, other.ID, []string{image})
			var ue *blob.UnusableError
			require.ErrorAs(t, err, &ue)
		})
	}
}

func TestMediaPresignBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
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
		r := h.Do("POST", "/v1/media/presign", c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), c.name)
		require.Contains(t, r.ErrorMessage(t), c.want, c.name)
	}
	r := h.Do("POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 50<<20 + 1})
	require.Equal(t, float64(50<<20), r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)["limit_bytes"])
	r = h.DoKey("", "POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 10}, nil)
	require.Equal(t, 401, r.Status)

	var pending []*persistence.Media
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		var err error
		pending, err = tx.PendingMediaBefore(time.Now().Add(time.Hour), 10)
		return err
	}))
	require.Empty(t, pending, "refused presigns record nothing")

	// The limits are the operator's.
	small := apptest.Start(t, apptest.Options{Media: app.MediaConfig{MaxImageBytes: 1000}})
	r = small.Do("POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 1001})
	require.Equal(t, 400, r.Status)
	r = small.Do("POST", "/v1/media/presign", map[string]any{"filename": "a.png", "content_type": "image/png", "size_bytes": 1000})
	require.Equal(t, 200, r.Status)
}

func TestMediaUploadBadInput(t *testing.T) {
	t.Parallel()
	clock := newMediaClock()
	h := apptest.Start(t, apptest.Options{Media: app.MediaConfig{Now: clock.Now, JanitorInterval: -1}})
	p := h.Presign(h.Key, "a.png", "image/png", len(apptest.PNGFile))
	n := int64(len(apptest.PNGFile))
	stored := func() bool {
		_, err := h.App.Media.Blob().Stat(context.Background(), p.Key)
		return err == nil
	}
	expect := func(name string, r *apptest.Response, status int, code, msg string) {
		t.Helper()
		require.Equal(t, status, r.Status, "%s: %s", name, r.Body)
		require.Equal(t, code, r.ErrorCode(t), name)
		require.Contains(t, r.ErrorMessage(t), msg, name)
		require.False(t, stored(), "%s stored nothing", name)
	}

	expect("wrong Content-Type", h.RawPut(p.UploadURL, "image/jpeg", apptest.PNGFile, n, nil), 400, "validation_error", "Content-Type: must be image/png")
	expect("no Content-Type", h.RawPut(p.UploadURL, "", apptest.PNGFile, n, nil), 400, "validation_error", "Content-Type: must be image/png")
	expect("more bytes declared", h.RawPut(p.UploadURL, "image/png", append(append([]byte{}, apptest.PNGFile...), 1, 2, 3), n+3, nil), 413, "validation_error", "presigned for")
	expect("more bytes chunked", h.RawPut(p.UploadURL, "image/png", append(append([]byte{}, apptest.PNGFile...), 1, 2, 3), -1, nil), 413, "validation_error", "larger than the presigned")
	expect("fewer bytes", h.RawPut(p.UploadURL, "image/png", apptest.PNGFile[:1000], -1, nil), 400, "validation_error", "the body ended after 1000 bytes")

	u, _ := url.Parse(p.UploadURL)
	q := u.Query()
	sig := []byte(q.Get("signature"))
	sig[5] ^= 0x01
	q.Set("signature", string(sig))
	u.RawQuery = q.Encode()
	expect("tampered signature", h.RawPut(u.String(), "image/png", apptest.PNGFile, n, nil), 403, "forbidden", "signature does not match")
	u, _ = url.Parse(p.UploadURL)
	q = u.Query()
	q.Set("expires", strconv.FormatInt(clock.Now().Add(time.Hour).Unix(), 10))
	u.RawQuery = q.Encode()
	expect("extended expiry", h.RawPut(u.String(), "image/png", apptest.PNGFile, n, nil), 403, "forbidden", "signature does not match")
	expect("another key", h.RawPut(strings.Replace(p.UploadURL, p.StorageFilename, uuid.NewString()+".png", 1), "image/png", apptest.PNGFile, n, nil), 404, "not_found", "no upload was presigned")
	expect("authorization header is not what authorises", h.RawPut(strings.Split(p.UploadURL, "?")[0], "image/png", apptest.PNGFile, n, http.Header{"Authorization": {"Bearer " + h.Key}}), 403, "forbidden", "signature")

	// After 15 minutes, the URL is dead.
	late := h.Presign(h.Key, "b.png", "image/png", len(apptest.PNGFile))
	clock.Advance(15*time.Minute + time.Second)
	r := h.RawPut(late.UploadURL, "image/png", apptest.PNGFile, n, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "expired")

	// Within its lifetime it takes one PUT, of exactly the bytes, once.
	p = h.Presign(h.Key, "c.png", "image/png", len(apptest.PNGFile))
	r = h.RawPut(p.UploadURL, "image/png", apptest.PNGFile, -1, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	r = h.RawPut(p.UploadURL, "image/png", apptest.PNGFile, n, nil)
	require.Equal(t, 409, r.Status, "twice")
	require.Equal(t, "validation_error", r.ErrorCode(t))
	o, _, err := h.App.Media.Blob().Open(context.Background(), p.Key)
	require.NoError(t, err)
	got, _ := io.ReadAll(o)
	_ = o.Close()
	require.Equal(t, apptest.SHA256(apptest.PNGFile), apptest.SHA256(got))
	require.Equal(t, 201, h.Confirm(h.Key, p, "image/png", len(apptest.PNGFile)).Status)
	r = h.RawPut(p.UploadURL, "image/png", apptest.PNGFile, n, nil)
	require.Equal(t, 409, r.Status, "after confirm")
}

func TestMediaConfirmBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	_, otherKey := h.NewUser("other@example.com", "pro")

	p := h.Presign(h.Key, "a.jpg", "image/jpeg", len(apptest.JPEGFile))
	r := h.Confirm(h.Key, p, "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 400, r.Status, "nothing uploaded yet")
	require.Contains(t, r.ErrorMessage(t), "nothing was uploaded")
	require.Equal(t, 200, h.RawPut(p.UploadURL, "image/jpeg", apptest.JPEGFile, -1, nil).Status)

	body := func(mut func(map[string]any)) map[string]any {
		m := map[string]any{"key": p.Key, "storage_filename": p.StorageFilename, "original_filename": "a.jpg", "content_type": "image/jpeg", "size_bytes": len(apptest.JPEGFile)}
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
		{"a key never presigned", h.Key, body(func(m map[string]any) { m["key"] = "uploads/" + h.User.ID + "/" + uuid.NewString() + ".jpg" }), 400, "validation_error", "no upload was presigned with this key"},
		{"a made-up key", h.Key, body(func(m map[string]any) { m["key"] = "../../herald.db" }), 400, "validation_error", "no upload was presigned"},
		{"a size that does not match", h.Key, body(func(m map[string]any) { m["size_bytes"] = len(apptest.JPEGFile) - 1 }), 400, "validation_error", "size_bytes: the upload was presigned for"},
		{"another type", h.Key, body(func(m map[string]any) { m["content_type"] = "image/png" }), 400, "validation_error", "content_type: the upload was presigned as image/jpeg"},
		{"another storage filename", h.Key, body(func(m map[string]any) { m["storage_filename"] = uuid.NewString() + ".jpg" }), 400, "validation_error", "storage_filename: does not match"},
		{"original filename with a path", h.Key, body(func(m map[string]any) { m["original_filename"] = "/etc/passwd" }), 400, "validation_error", "original_filename: must be a file name"},
		{"missing field", h.Key, body(func(m map[string]any) { delete(m, "storage_filename") }), 400, "validation_error", "storage_filename: Required"},
		{"size as a string", h.Key, body(func(m map[string]any) { m["size_bytes"] = "1" }), 400, "validation_error", "size_bytes: Expected number, received string"},
	}
	for _, c := range cases {
		r := h.DoKey(c.key, "POST", "/v1/media/confirm", c.body, nil)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, c.code, r.ErrorCode(t), c.name)
		require.Contains(t, r.ErrorMessage(t), c.want, c.name)
	}
	require.False(t, h.MediaRecord(p.Key).Confirmed(), "refused confirms change nothing")

	// Bytes that are not what the type says: a PNG declared as JPEG, an executable as MP4.
	for _, c := range []struct {
		ctype string
		data  []byte
		want  string
	}{{"image/jpeg", apptest.PNGFile, "the file's bytes are image/png, not image/jpeg"}, {"video/mp4", elfFile, "the file's bytes are an ELF executable, not video/mp4"}} {
		p := h.Presign(h.Key, "x", c.ctype, len(c.data))
		require.Equal(t, 200, h.RawPut(p.UploadURL, c.ctype, c.data, int64(len(c.data)), nil).Status)
		r := h.Confirm(h.Key, p, c.ctype, len(c.data))
		require.Equal(t, 400, r.Status, string(r.Body))
		require.Contains(t, r.ErrorMessage(t), c.want)
		require.False(t, h.MediaRecord(p.Key).Confirmed())
	}
}

func TestMediaReadAndOwnership(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	_, otherKey := h.NewUser("other@example.com", "pro")
	id := h.UploadMedia("a.png", "image/png", apptest.PNGFile)
	pending := h.Presign(h.Key, "b.png", "image/png", len(apptest.PNGFile))

	for _, c := range []struct {
		name, key, id string
		status        int
	}{
		{"another user's media", otherKey, id, 404},
		{"an unconfirmed upload", h.Key, blob.MediaIDOf(pending.StorageFilename), 404},
		{"an unknown id", h.Key, uuid.NewString(), 404},
		{"not a uuid", h.Key, "photo.png", 400},
	} {
		r := h.DoKey(c.key, "GET", "/v1/media/"+c.id, nil, nil)
		require.Equal(t, c.status, r.Status, c.name)
	}
	require.Equal(t, 200, h.Do("GET", "/v1/media/"+id, nil).Status)

	// The file route serves confirmed media with a valid signature only.
	r := h.RawGet(h.URL+"/v1/media/files/"+pending.StorageFilename+"?expires=9999999999&signature=AAAA", nil)
	require.Equal(t, 404, r.Status)
	r = h.RawGet(h.URL+"/v1/media/files/"+id+".png", nil)
	require.Equal(t, 403, r.Status)
}

// Posts take only the caller's confirmed media: unknown, unconfirmed and other users' ids are
// refused on create, update, publish and schedule, and change nothing.
func TestPostsTakeOnlyTheCallersConfirmedMedia(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	_, otherKey := h.NewUser("other@example.com", "pro")
	mine := h.UploadMedia("a.jpg", "image/jpeg", apptest.JPEGFile)
	unconfirmed := h.Presign(h.Key, "b.jpg", "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 200, h.RawPut(unconfirmed.UploadURL, "image/jpeg", apptest.JPEGFile, -1, nil).Status)
	op := h.Presign(otherKey, "c.jpg", "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 200, h.RawPut(op.UploadURL, "image/jpeg", apptest.JPEGFile, -1, nil).Status)
	r := h.Confirm(otherKey, op, "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 201, r.Status)
	theirs := r.JSON(t)["id"].(string)

	post := h.CreatePost("text", h.Accounts[0])
	for name, id := range map[string]string{"unknown": uuid.NewString(), "unconfirmed": blob.MediaIDOf(unconfirmed.StorageFilename), "another user's": theirs} {
		r := h.Do("POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}, "media": []string{mine, id}})
		require.Equal(t, 400, r.Status, name)
		require.Equal(t, "validation_error", r.ErrorCode(t), name)
		require.Contains(t, r.ErrorMessage(t), "media: "+id, name)
		r = h.Do("PATCH", "/v1/posts/"+post, map[string]any{"media": []string{id}})
		require.Equal(t, 400, r.Status, name)
		require.Contains(t, r.ErrorMessage(t), "media: "+id, name)
		r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}, "media": []string{id}})
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
		require.Contains(t, r.ErrorMessage(t), "media: "+id, name)
		r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}, "media": []string{id},
			"scheduledAt": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)})
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Body)
		require.Contains(t, r.ErrorMessage(t), "media: "+id, name)
	}
	require.Equal(t, 1, h.CountPosts())
	require.Equal(t, []any{}, h.Do("GET", "/v1/posts/"+post, nil).JSON(t)["media_ids"])
	r = h.Do("POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}, "media": []string{mine}})
	require.Equal(t, 201, r.Status, string(r.Body))
	r = h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}, "media": []string{mine},
		"scheduledAt": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 201, r.Status, string(r.Body))
	require.Equal(t, []any{mine}, r.JSON(t)["media_ids"])
}

// Uploads never confirmed are deleted after 24 hours (record and file); confirmed media and the
// media of a draft stay. The janitor runs on the media clock, so nothing sleeps.
func TestMediaJanitor(t *testing.T) {
	t.Parallel()
	clock := newMediaClock()
	h := apptest.Start(t, apptest.Options{Media: app.MediaConfig{Now: clock.Now, JanitorInterval: -1}})
	kept := h.UploadMedia("a.jpg", "image/jpeg", apptest.JPEGFile)
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}, "media": []string{kept}})
	require.Equal(t, 201, r.Status)
	abandoned := h.Presign(h.Key, "b.jpg", "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 200, h.RawPut(abandoned.UploadURL, "image/jpeg", apptest.JPEGFile, -1, nil).Status)
	path := filepath.Join(h.App.Cfg.DataDir, "media", filepath.FromSlash(abandoned.Key))
	_, err := os.Stat(path)
	require.NoError(t, err)

	clock.Advance(24*time.Hour - time.Minute)
	n, err := h.App.Media.Sweep(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	clock.Advance(time.Minute)
	n, err = h.App.Media.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Nil(t, h.MediaRecord(abandoned.Key))
	r = h.Confirm(h.Key, abandoned, "image/jpeg", len(apptest.JPEGFile))
	require.Equal(t, 400, r.Status)
	r = h.Do("GET", "/v1/media/"+kept, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, 200, h.RawGet(r.JSON(t)["url"].(string), nil).Status)
}
