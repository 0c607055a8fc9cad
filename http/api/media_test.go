package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
)

// uploadBundle is Herald's upload route on a real listener over a real store and local media
// directory, with the media service's options as the test sets them.
type uploadBundle struct {
	svc   *blob.Service
	local *blob.Local
	url   string
	user  string
}

func setupUploads(t *testing.T, o blob.Options) *uploadBundle {
	t.Helper()
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	var base string
	signer := blob.NewSigner(bytes.Repeat([]byte{9}, 32))
	local, err := blob.NewLocal(t.TempDir(), signer, func() string { return base })
	require.NoError(t, err)
	o.Store, o.Blob, o.Signer, o.BaseURL = store, local, signer, func() string { return base }
	svc, err := blob.NewService(o)
	require.NoError(t, err)
	srv := server.New(server.Config{LongRunning: map[string]bool{MediaUploadRoute: true}})
	h := &handlers{Deps: Deps{Server: srv, Media: svc, Log: slog.New(slog.DiscardHandler)}}
	h.registerMedia(srv.Echo)
	ts := httptest.NewServer(srv.Echo)
	t.Cleanup(ts.Close)
	base = ts.URL
	return &uploadBundle{svc: svc, local: local, url: ts.URL, user: uuid.NewString()}
}

// pngOf is a PNG of n bytes: its signature, then filler.
func pngOf(n int) []byte {
	b := bytes.Repeat([]byte{'p'}, n)
	copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	return b
}

func (b *uploadBundle) presign(t *testing.T, size int) *blob.Presigned {
	t.Helper()
	p, err := b.svc.Presign(context.Background(), b.user, "", "a.png", "image/png", int64(size))
	require.NoError(t, err)
	return p
}

// startPut opens a connection and sends a PUT's head and the first bytes of its body; the
// caller sends the rest on the connection.
func (b *uploadBundle) startPut(t *testing.T, p *blob.Presigned, length int, first []byte) net.Conn {
	t.Helper()
	u, err := url.Parse(p.UploadURL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, length)
	require.NoError(t, err)
	_, err = conn.Write(first)
	require.NoError(t, err)
	return conn
}

// answer reads the response on conn: its status and error code ("" for none).
func answer(t *testing.T, conn net.Conn) (int, string) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "an answer before the safety deadline")
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode, errorCode(t, resp.Body)
}

func errorCode(t *testing.T, r io.Reader) string {
	t.Helper()
	raw, _ := io.ReadAll(r)
	if len(raw) == 0 {
		return ""
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &body), string(raw))
	return body.Error.Code
}

func put(t *testing.T, p *blob.Presigned, data []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, p.UploadURL, bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "image/png")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode, errorCode(t, resp.Body)
}

// tmpFiles lists the media directory's temporary files.
func (b *uploadBundle) tmpFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(b.local.Dir(), "tmp"))
	require.NoError(t, err)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func (b *uploadBundle) stored(t *testing.T, key string) bool {
	t.Helper()
	_, err := b.local.Stat(context.Background(), key)
	if err == nil {
		return true
	}
	require.ErrorIs(t, err, blob.ErrNotFound)
	return false
}

// A second PUT to an upload URL while the first is still sending is refused (409) and writes
// nothing; the first then completes.
func TestUploadOnePutAtATime(t *testing.T) {
	t.Parallel()
	b := setupUploads(t, blob.Options{})
	data := pngOf(64 << 10)
	p := b.presign(t, len(data))
	first := b.startPut(t, p, len(data), data[:1000])
	require.Eventually(t, func() bool { return len(b.tmpFiles(t)) == 1 }, 5*time.Second, 5*time.Millisecond,
		"the first PUT is being written")

	for range 3 {
		status, code := put(t, p, data)
		require.Equal(t, http.StatusConflict, status)
		require.Equal(t, "validation_error", code)
	}
	require.Len(t, b.tmpFiles(t), 1, "the refused PUTs wrote nothing")

	_, err := first.Write(data[1000:])
	require.NoError(t, err)
	status, code := answer(t, first)
	require.Equal(t, http.StatusOK, status, code)
	require.True(t, b.stored(t, p.Key))
	require.Empty(t, b.tmpFiles(t))

	status, _ = put(t, p, data)
	require.Equal(t, http.StatusConflict, status, "and once uploaded, the URL is used")
}

// A PUT that trickles its body is cut off when its deadline (the grace plus its size at the
// minimum rate) passes, however regularly bytes arrive; nothing of it is kept.
func TestUploadTrickleCutOff(t *testing.T) {
	t.Parallel()
	// 4,000 bytes at 1 MB/s and a grace of 300 ms: the upload has about 304 ms.
	b := setupUploads(t, blob.Options{UploadGrace: 300 * time.Millisecond, UploadMinRate: 1 << 20})
	data := pngOf(4000)
	p := b.presign(t, len(data))
	conn := b.startPut(t, p, len(data), data[:100])
	stop := make(chan struct{})
	sent := make(chan int, 1)
	go func() {
		n := 100
		defer func() { sent <- n }()
		tick := time.NewTicker(10 * time.Millisecond) // 100 bytes a second, every 10 ms
		defer tick.Stop()
		for n < len(data)-1 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write(data[n : n+1]); err != nil {
				return
			}
			n++
		}
	}()
	start := time.Now()
	status, code := answer(t, conn)
	elapsed := time.Since(start)
	close(stop)
	require.Equal(t, http.StatusRequestTimeout, status)
	require.Equal(t, "validation_error", code)
	require.Less(t, elapsed, 5*time.Second, "cut off at its deadline, not when the client stops")
	require.Less(t, <-sent, len(data)-1, "the client was still sending when it was cut off")
	require.False(t, b.stored(t, p.Key))
	require.Empty(t, b.tmpFiles(t), "the partial upload's temporary file is removed")
}

// An upload that would leave less than the floor free on the media directory's file system is
// refused with 503 before anything is written.
func TestUploadRefusedNearlyFull(t *testing.T) {
	t.Parallel()
	b := setupUploads(t, blob.Options{MinFreeBytes: 1 << 20, FreeSpace: func(string) (uint64, error) { return 1<<20 + 50_000, nil }})
	big := pngOf(60_000)
	p := b.presign(t, len(big))
	req, err := http.NewRequest(http.MethodPut, p.UploadURL, bytes.NewReader(big))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "image/png")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "internal_error", errorCode(t, resp.Body))
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.False(t, b.stored(t, p.Key))
	require.Empty(t, b.tmpFiles(t))

	small := pngOf(40_000)
	status, code := put(t, b.presign(t, len(small)), small)
	require.Equal(t, http.StatusOK, status, code, "an upload that leaves the floor free is taken")
}
