package blob_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/persistence/blob/blobtest"
)

func newS3(t *testing.T) (*blob.S3, *blobtest.Server) {
	t.Helper()
	srv := blobtest.Start(t)
	s3, err := blob.NewS3(srv.Bucket(t, "herald-media"))
	require.NoError(t, err)
	require.NoError(t, s3.Check(context.Background()))
	return s3, srv
}

func TestS3Config(t *testing.T) {
	t.Parallel()
	ok := blob.S3Config{Endpoint: "http://127.0.0.1:9000", Bucket: "b", Region: "r", AccessKey: "a", SecretKey: "s"}
	_, err := blob.NewS3(ok)
	require.NoError(t, err)
	for _, mut := range []func(*blob.S3Config){
		func(c *blob.S3Config) { c.Endpoint = "" },
		func(c *blob.S3Config) { c.Bucket = "" },
		func(c *blob.S3Config) { c.Region = "" },
		func(c *blob.S3Config) { c.SecretKey = "" },
		func(c *blob.S3Config) { c.Endpoint = "ftp://x" },
		func(c *blob.S3Config) { c.Endpoint = "http://x/path" },
		func(c *blob.S3Config) { c.PublicEndpoint = "ftp://x" },
	} {
		c := ok
		mut(&c)
		_, err := blob.NewS3(c)
		require.Error(t, err)
	}
}

// The presigned PUT is plain HTTP without Authorization; the service itself refuses another
// Content-Type or another size, because both are signed.
func TestS3PresignedPut(t *testing.T) {
	t.Parallel()
	s3, _ := newS3(t)
	e := newEnv(t, s3)
	ctx := context.Background()
	p, err := e.svc.Presign(ctx, e.user, "", "a.png", "image/png", int64(len(pngBytes)))
	require.NoError(t, err)
	u, err := url.Parse(p.UploadURL)
	require.NoError(t, err)
	require.Equal(t, "/herald-media/"+p.Key, u.Path)
	require.Contains(t, u.Query().Get("X-Amz-SignedHeaders"), "content-type")
	require.Contains(t, u.Query().Get("X-Amz-SignedHeaders"), "content-length")

	st, body := put(t, p.UploadURL, "image/jpeg", pngBytes, -1)
	require.Equal(t, 403, st, body)
	st, body = put(t, p.UploadURL, "image/png", append(pngBytes, 'x'), -1)
	require.Equal(t, 403, st, body)
	require.False(t, e.stored(t, p.Key))

	st, body = put(t, p.UploadURL, "image/png", pngBytes, -1)
	require.Equal(t, 200, st, body)
	info, err := s3.Stat(ctx, p.Key)
	require.NoError(t, err)
	require.Equal(t, int64(len(pngBytes)), info.Size)
	require.Equal(t, "image/png", info.ContentType)
	require.Equal(t, pngBytes, readAll(t, s3, p.Key))

	// Herald's own upload route does not serve an S3-backed Herald.
	_, err = e.svc.Receive(ctx, p.Key, u.Query(), "image/png", int64(len(pngBytes)), readerOf(pngBytes))
	require.Equal(t, blob.NotFound, kindOf(t, err))

	m, err := e.confirm(t, e.user, p, "image/png", len(pngBytes))
	require.NoError(t, err)
	require.True(t, m.Confirmed())

	require.NoError(t, s3.Delete(ctx, p.Key))
	require.False(t, e.stored(t, p.Key))
	require.NoError(t, s3.Delete(ctx, p.Key), "deleting a missing object is not an error")
	_, _, err = s3.Open(ctx, p.Key)
	require.ErrorIs(t, err, blob.ErrNotFound)
}

// Confirm over S3 checks the object with StatObject and sniffs its first bytes; the janitor
// deletes objects never confirmed.
func TestS3ConfirmAndJanitor(t *testing.T) {
	t.Parallel()
	s3, _ := newS3(t)
	e := newEnv(t, s3)
	ctx := context.Background()

	p, err := e.svc.Presign(ctx, e.user, "", "a.jpg", "image/jpeg", int64(len(jpegBytes)))
	require.NoError(t, err)
	_, err = e.confirm(t, e.user, p, "image/jpeg", len(jpegBytes))
	require.Equal(t, blob.Invalid, kindOf(t, err), "nothing uploaded")

	bad := e.upload(t, e.user, "image/jpeg", pngBytes)
	_, err = e.confirm(t, e.user, bad, "image/jpeg", len(pngBytes))
	require.Equal(t, blob.Invalid, kindOf(t, err))
	require.Contains(t, err.Error(), "image/png, not image/jpeg")

	good := e.upload(t, e.user, "video/mp4", mp4Bytes)
	m, err := e.confirm(t, e.user, good, "video/mp4", len(mp4Bytes))
	require.NoError(t, err)
	ms, err := e.svc.Resolve(ctx, e.user, []string{m.ID})
	require.NoError(t, err)
	rc, err := ms[0].Open(ctx)
	require.NoError(t, err)
	got := make([]byte, len(mp4Bytes)+10)
	n, _ := readFull(rc, got)
	_ = rc.Close()
	require.Equal(t, mp4Bytes, got[:n])

	e.clock.Advance(25 * time.Hour)
	deleted, err := e.svc.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, deleted)
	require.False(t, e.stored(t, bad.Key))
	require.True(t, e.stored(t, good.Key))
}

// Upload URLs are signed for the public endpoint (the host clients reach), while Herald talks to
// the internal one.
func TestS3PublicEndpoint(t *testing.T) {
	t.Parallel()
	srv := blobtest.Start(t)
	cfg := srv.Bucket(t, "herald-media")
	cfg.PublicEndpoint = strings.Replace(srv.Endpoint, "127.0.0.1", "localhost", 1)
	s3, err := blob.NewS3(cfg)
	require.NoError(t, err)
	e := newEnv(t, s3)
	p, err := e.svc.Presign(context.Background(), e.user, "", "a.jpg", "image/jpeg", int64(len(jpegBytes)))
	require.NoError(t, err)
	u, err := url.Parse(p.UploadURL)
	require.NoError(t, err)
	require.Equal(t, "localhost", u.Hostname())
	st, body := put(t, p.UploadURL, "image/jpeg", jpegBytes, -1)
	require.Equal(t, 200, st, body)
	_, err = e.confirm(t, e.user, p, "image/jpeg", len(jpegBytes))
	require.NoError(t, err)
}
