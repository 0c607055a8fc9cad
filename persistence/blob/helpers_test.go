package blob_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
)

// Test files: real magic bytes followed by filler.
var (
	jpegBytes = append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, bytes.Repeat([]byte("jpeg"), 300)...)
	pngBytes  = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), bytes.Repeat([]byte("png!"), 300)...)
	mp4Bytes  = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte("video"), 600)...)
	movBytes  = append([]byte("\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  "), bytes.Repeat([]byte("movie"), 600)...)
	elfBytes  = append([]byte("\x7fELF\x02\x01\x01\x00"), bytes.Repeat([]byte{0}, 600)...)
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now().UTC().Truncate(time.Second)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

type env struct {
	store *persistence.Store
	blob  blob.Store
	svc   *blob.Service
	clock *clock
	user  string
}

const base = "http://herald.test"

func openStore(t *testing.T) *persistence.Store {
	t.Helper()
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func signer() *blob.Signer { return blob.NewSigner(bytes.Repeat([]byte{7}, 32)) }

func newLocal(t *testing.T) *blob.Local {
	t.Helper()
	l, err := blob.NewLocal(t.TempDir(), signer(), func() string { return base })
	require.NoError(t, err)
	return l
}

func newEnv(t *testing.T, store blob.Store) *env {
	t.Helper()
	e := &env{store: openStore(t), blob: store, clock: newClock(), user: uuid.NewString()}
	svc, err := blob.NewService(blob.Options{Store: e.store, Blob: store, Signer: signer(), BaseURL: func() string { return base }, Now: e.clock.Now})
	require.NoError(t, err)
	e.svc = svc
	return e
}

// upload presigns and uploads data as the env's user: through Receive for Local, through the
// presigned URL for S3.
func (e *env) upload(t *testing.T, user, ctype string, data []byte) *blob.Presigned {
	t.Helper()
	p, err := e.svc.Presign(context.Background(), user, "", "file", ctype, int64(len(data)))
	require.NoError(t, err)
	if _, ok := e.blob.(*blob.Local); ok {
		u, err := url.Parse(p.UploadURL)
		require.NoError(t, err)
		_, err = e.svc.Receive(context.Background(), p.Key, u.Query(), ctype, int64(len(data)), bytes.NewReader(data))
		require.NoError(t, err)
		return p
	}
	st, body := put(t, p.UploadURL, ctype, data, -1)
	require.Equal(t, 200, st, body)
	return p
}

func (e *env) confirm(t *testing.T, user string, p *blob.Presigned, ctype string, size int) (*persistence.Media, error) {
	t.Helper()
	return e.svc.Confirm(context.Background(), user, blob.ConfirmInput{Key: p.Key, StorageFilename: p.StorageFilename, OriginalFilename: "orig.bin", ContentType: ctype, Size: int64(size)})
}

func put(t *testing.T, u, ctype string, body []byte, length int64) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	require.NoError(t, err)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if length >= 0 {
		req.ContentLength = length
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func kindOf(t *testing.T, err error) blob.Kind {
	t.Helper()
	var be *blob.Error
	require.ErrorAs(t, err, &be)
	return be.Kind
}

func readAll(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	o, _, err := s.Open(context.Background(), key)
	require.NoError(t, err)
	defer o.Close()
	b, err := io.ReadAll(o)
	require.NoError(t, err)
	return b
}

func readerOf(b []byte) io.Reader { return bytes.NewReader(b) }

func readFull(r io.Reader, b []byte) (int, error) { return io.ReadFull(r, b) }
