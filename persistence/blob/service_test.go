package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
)

func (e *env) record(t *testing.T, key string) *persistence.Media {
	t.Helper()
	var m *persistence.Media
	require.NoError(t, e.store.View(func(tx *persistence.Tx) error {
		var err error
		m, err = tx.MediaByKey(key)
		if err == persistence.ErrNotFound {
			m, err = nil, nil
		}
		return err
	}))
	return m
}

func TestPresignValidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()
	cases := []struct {
		name, filename, ctype string
		size                  int64
		want                  string
	}{
		{"type not allowed", "a.gif", "image/gif", 10, "content_type"},
		{"type spelled differently", "a.jpg", "image/jpg", 10, "content_type"},
		{"size zero", "a.jpg", "image/jpeg", 0, "size_bytes: must be a positive"},
		{"size negative", "a.jpg", "image/jpeg", -5, "size_bytes: must be a positive"},
		{"image over the limit", "a.jpg", "image/jpeg", blob.DefaultMaxImageBytes + 1, "over the limit for images"},
		{"video over the limit", "a.mp4", "video/mp4", blob.DefaultMaxVideoBytes + 1, "over the limit for videos"},
		{"slash", "../etc/passwd", "image/png", 10, "path separators"},
		{"backslash", `..\win.png`, "image/png", 10, "path separators"},
		{"control character", "a\nb.png", "image/png", 10, "control characters"},
	}
	for _, c := range cases {
		_, err := e.svc.Presign(ctx, e.user, "", c.filename, c.ctype, c.size)
		require.Error(t, err, c.name)
		require.Equal(t, blob.Invalid, kindOf(t, err), c.name)
		require.Contains(t, err.Error(), c.want, c.name)
	}
	var n int
	require.NoError(t, e.store.View(func(tx *persistence.Tx) error {
		ms, err := tx.PendingMediaBefore(time.Now().Add(time.Hour), 100)
		n = len(ms)
		return err
	}))
	require.Zero(t, n, "refused presigns record nothing")

	// The largest allowed sizes pass.
	p, err := e.svc.Presign(ctx, e.user, "", "big.mp4", "video/mp4", blob.DefaultMaxVideoBytes)
	require.NoError(t, err)
	require.Equal(t, blob.Key(e.user, p.StorageFilename), p.Key)
	require.True(t, strings.HasSuffix(p.StorageFilename, ".mp4"))
	require.Equal(t, e.clock.Now().Add(15*time.Minute), p.ExpiresAt)
	m := e.record(t, p.Key)
	require.NotNil(t, m)
	require.False(t, m.Confirmed())
	require.Equal(t, "big.mp4", m.OriginalFilename)
}

func TestReceiveRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()
	p, err := e.svc.Presign(ctx, e.user, "", "a.png", "image/png", int64(len(pngBytes)))
	require.NoError(t, err)
	q := query(t, p.UploadURL)
	recv := func(q url.Values, key, ctype string, length int64, body []byte) error {
		_, err := e.svc.Receive(ctx, key, q, ctype, length, bytes.NewReader(body))
		return err
	}
	n := int64(len(pngBytes))

	tampered := url.Values{"expires": q["expires"], "signature": {strings.Repeat("A", 43)}}
	require.Equal(t, blob.Forbidden, kindOf(t, recv(tampered, p.Key, "image/png", n, pngBytes)))
	require.Equal(t, blob.Invalid, kindOf(t, recv(q, p.Key, "image/jpeg", n, pngBytes)), "wrong Content-Type")
	require.Equal(t, blob.Invalid, kindOf(t, recv(q, p.Key, "", n, pngBytes)), "no Content-Type")
	require.Equal(t, blob.TooLarge, kindOf(t, recv(q, p.Key, "image/png", n+1, append(pngBytes, 0))), "declared longer")
	require.Equal(t, blob.TooLarge, kindOf(t, recv(q, p.Key, "image/png", -1, append(pngBytes, 0))), "chunked, longer")
	require.Equal(t, blob.Invalid, kindOf(t, recv(q, p.Key, "image/png", -1, pngBytes[:10])), "shorter")
	require.Equal(t, blob.NotFound, kindOf(t, recv(q, blob.Key(e.user, uuid.NewString()+".png"), "image/png", n, pngBytes)), "never presigned")
	_, err = e.blob.Stat(ctx, p.Key)
	require.ErrorIs(t, err, blob.ErrNotFound, "no refusal stored anything")

	require.NoError(t, recv(q, p.Key, "image/png; charset=binary", n, pngBytes), "parameters of the type are ignored")
	require.Equal(t, blob.Conflict, kindOf(t, recv(q, p.Key, "image/png", n, pngBytes)), "twice")

	// After 15 minutes the URL is dead.
	p2, err := e.svc.Presign(ctx, e.user, "", "b.png", "image/png", n)
	require.NoError(t, err)
	e.clock.Advance(15 * time.Minute)
	require.Equal(t, blob.Forbidden, kindOf(t, recv(query(t, p2.UploadURL), p2.Key, "image/png", n, pngBytes)))
	_, err = e.blob.Stat(ctx, p2.Key)
	require.ErrorIs(t, err, blob.ErrNotFound)
}

func TestConfirm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()
	p := e.upload(t, e.user, "image/jpeg", jpegBytes)

	other := uuid.NewString()
	_, err := e.confirm(t, other, p, "image/jpeg", len(jpegBytes))
	require.Equal(t, blob.Forbidden, kindOf(t, err), "another user's key")
	_, err = e.svc.Confirm(ctx, e.user, blob.ConfirmInput{Key: blob.Key(e.user, uuid.NewString()+".jpg"), StorageFilename: "x.jpg", OriginalFilename: "a.jpg", ContentType: "image/jpeg", Size: 10})
	require.Equal(t, blob.Invalid, kindOf(t, err), "a key never presigned")
	_, err = e.confirm(t, e.user, p, "image/jpeg", len(jpegBytes)+1)
	require.Equal(t, blob.Invalid, kindOf(t, err), "another size")
	_, err = e.confirm(t, e.user, p, "image/png", len(jpegBytes))
	require.Equal(t, blob.Invalid, kindOf(t, err), "another type")
	_, err = e.svc.Confirm(ctx, e.user, blob.ConfirmInput{Key: p.Key, StorageFilename: uuid.NewString() + ".jpg", OriginalFilename: "a.jpg", ContentType: "image/jpeg", Size: int64(len(jpegBytes))})
	require.Equal(t, blob.Invalid, kindOf(t, err), "another storage filename")
	_, err = e.svc.Confirm(ctx, e.user, blob.ConfirmInput{Key: p.Key, StorageFilename: p.StorageFilename, OriginalFilename: "a/b.jpg", ContentType: "image/jpeg", Size: int64(len(jpegBytes))})
	require.Equal(t, blob.Invalid, kindOf(t, err), "a path as original filename")
	require.False(t, e.record(t, p.Key).Confirmed(), "refusals change nothing")

	m, err := e.confirm(t, e.user, p, "image/jpeg", len(jpegBytes))
	require.NoError(t, err)
	require.True(t, m.Confirmed())
	require.Equal(t, "orig.bin", m.OriginalFilename)
	again, err := e.confirm(t, e.user, p, "image/jpeg", len(jpegBytes))
	require.NoError(t, err)
	require.Equal(t, m.ID, again.ID, "confirming twice returns the same media")
	require.Equal(t, m.ConfirmedAt, again.ConfirmedAt)

	got, err := e.svc.Get(e.user, m.ID)
	require.NoError(t, err)
	require.Equal(t, m.ID, got.ID)
	_, err = e.svc.Get(other, m.ID)
	require.Equal(t, blob.NotFound, kindOf(t, err))

	// The signed file URL opens the file; a tampered or expired one does not.
	u, err := url.Parse(e.svc.URL(m))
	require.NoError(t, err)
	require.Equal(t, blob.FilePathPrefix+p.StorageFilename, u.Path)
	o, _, fm, err := e.svc.OpenFile(ctx, p.StorageFilename, u.Query())
	require.NoError(t, err)
	b, _ := io.ReadAll(o)
	_ = o.Close()
	require.Equal(t, jpegBytes, b)
	require.Equal(t, "image/jpeg", fm.ContentType)
	_, _, _, err = e.svc.OpenFile(ctx, uuid.NewString()+".jpg", u.Query())
	require.Equal(t, blob.NotFound, kindOf(t, err))
	e.clock.Advance(24 * time.Hour)
	_, _, _, err = e.svc.OpenFile(ctx, p.StorageFilename, u.Query())
	require.Equal(t, blob.Forbidden, kindOf(t, err))
}

func TestConfirmChecksWhatWasStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()

	// Nothing uploaded yet.
	p, err := e.svc.Presign(ctx, e.user, "", "a.jpg", "image/jpeg", int64(len(jpegBytes)))
	require.NoError(t, err)
	_, err = e.confirm(t, e.user, p, "image/jpeg", len(jpegBytes))
	require.Equal(t, blob.Invalid, kindOf(t, err))
	require.Contains(t, err.Error(), "nothing was uploaded")

	// PNG bytes declared as JPEG, and an executable declared as MP4.
	for _, c := range []struct {
		ctype string
		data  []byte
		want  string
	}{{"image/jpeg", pngBytes, "image/png, not image/jpeg"}, {"video/mp4", elfBytes, "an ELF executable, not video/mp4"}} {
		p := e.upload(t, e.user, c.ctype, c.data)
		_, err := e.confirm(t, e.user, p, c.ctype, len(c.data))
		require.Equal(t, blob.Invalid, kindOf(t, err))
		require.Contains(t, err.Error(), c.want)
		require.False(t, e.record(t, p.Key).Confirmed())
	}

	// A limit lowered since the presign applies at confirm.
	p = e.upload(t, e.user, "video/mp4", mp4Bytes)
	strict, err := blob.NewService(blob.Options{Store: e.store, Blob: e.blob, Signer: signer(), BaseURL: func() string { return base },
		Limits: blob.Limits{MaxVideoBytes: 100}})
	require.NoError(t, err)
	_, err = strict.Confirm(ctx, e.user, blob.ConfirmInput{Key: p.Key, StorageFilename: p.StorageFilename, OriginalFilename: "v.mp4", ContentType: "video/mp4", Size: int64(len(mp4Bytes))})
	require.Equal(t, blob.Invalid, kindOf(t, err))
	require.Contains(t, err.Error(), "over the limit for videos")
}

func TestResolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()
	img, err := e.confirm(t, e.user, e.upload(t, e.user, "image/png", pngBytes), "image/png", len(pngBytes))
	require.NoError(t, err)
	vid, err := e.confirm(t, e.user, e.upload(t, e.user, "video/quicktime", movBytes), "video/quicktime", len(movBytes))
	require.NoError(t, err)
	pending := e.upload(t, e.user, "image/png", pngBytes)
	other := uuid.NewString()
	theirs, err := e.confirm(t, other, e.upload(t, other, "image/jpeg", jpegBytes), "image/jpeg", len(jpegBytes))
	require.NoError(t, err)

	ms, err := e.svc.Resolve(ctx, e.user, []string{vid.ID, img.ID})
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, vid.ID, ms[0].ID)
	require.True(t, ms[0].IsVideo())
	require.Equal(t, int64(len(movBytes)), ms[0].Size)
	require.Equal(t, "orig.bin", ms[0].Filename)
	for i, want := range [][]byte{movBytes, pngBytes} {
		for range 2 { // Open works once per upload attempt
			rc, err := ms[i].Open(ctx)
			require.NoError(t, err)
			b, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			require.Equal(t, want, b)
		}
	}
	u, err := url.Parse(ms[1].URL)
	require.NoError(t, err)
	o, _, _, err := e.svc.OpenFile(ctx, img.StorageFilename, u.Query())
	require.NoError(t, err)
	_ = o.Close()

	pendingID := blob.MediaIDOf(pending.StorageFilename)
	for _, id := range []string{uuid.NewString(), pendingID, theirs.ID} {
		_, err := e.svc.Resolve(ctx, e.user, []string{img.ID, id})
		var ue *blob.UnusableError
		require.ErrorAs(t, err, &ue)
		require.Equal(t, id, ue.ID)
	}
}

// The free-space floor counts the uploads in progress at their presigned size: with 10 MiB free
// and a floor of 8 MiB, an upload of 1.5 MiB is taken, a second of 1 MiB refused while the first
// is still being written (10 - 1.5 - 1 < 8) and taken once it is done (the injected free space
// does not shrink); a second PUT to the first URL meanwhile is a conflict. Refusals leave nothing.
func TestReceiveFloorCountsUploadsInProgress(t *testing.T) {
	t.Parallel()
	local := newLocal(t)
	store := openStore(t)
	svc, err := blob.NewService(blob.Options{Store: store, Blob: local, Signer: signer(), BaseURL: func() string { return base },
		MinFreeBytes: 8 << 20, FreeSpace: func(dir string) (uint64, error) {
			if dir != local.Dir() {
				return 0, errors.New("not the media directory")
			}
			return 10 << 20, nil
		}})
	require.NoError(t, err)
	ctx := context.Background()
	user := uuid.NewString()
	presign := func(size int) (*blob.Presigned, []byte) {
		data := append(append([]byte(nil), pngBytes[:16]...), bytes.Repeat([]byte{1}, size-16)...)
		p, err := svc.Presign(ctx, user, "", "a.png", "image/png", int64(size))
		require.NoError(t, err)
		return p, data
	}
	first, firstData := presign(3 << 19)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	firstQuery := query(t, first.UploadURL)
	go func() {
		_, err := svc.Receive(ctx, first.Key, firstQuery, "image/png", int64(len(firstData)), pr)
		done <- err
	}()
	_, err = pw.Write(firstData[:1000]) // returns once Receive is reading: the upload is in progress
	require.NoError(t, err)

	second, secondData := presign(1 << 20)
	_, err = svc.Receive(ctx, second.Key, query(t, second.UploadURL), "image/png", int64(len(secondData)), bytes.NewReader(secondData))
	require.Equal(t, blob.Full, kindOf(t, err))
	_, err = svc.Receive(ctx, first.Key, query(t, first.UploadURL), "image/png", int64(len(firstData)), bytes.NewReader(firstData))
	require.Equal(t, blob.Conflict, kindOf(t, err), "one PUT at a time")

	_, err = pw.Write(firstData[1000:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	require.NoError(t, <-done)
	_, err = svc.Receive(ctx, second.Key, query(t, second.UploadURL), "image/png", int64(len(secondData)), bytes.NewReader(secondData))
	require.NoError(t, err, "room again once the first is written")
	files := leftovers(t, local.Dir())
	require.Len(t, files, 2, "the two uploads, no temporary file: %v", files)
}
