package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/blob"
)

func localKey(ext string) string { return blob.Key(uuid.NewString(), uuid.NewString()+ext) }

// leftovers lists every file under dir (uploads and temporary files alike).
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out = append(out, p)
		}
		return err
	}))
	return out
}

func TestLocalWriteStoresExactlyTheDeclaredBytes(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16+5) // crosses buffer boundaries
	key := localKey(".mp4")
	n, err := l.Write(ctx, key, bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), n)
	info, err := l.Stat(ctx, key)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), info.Size)
	require.Equal(t, data, readAll(t, l, key))
	require.Len(t, leftovers(t, l.Dir()), 1, "only the file itself, no temporary file")

	require.NoError(t, l.Delete(ctx, key))
	_, err = l.Stat(ctx, key)
	require.ErrorIs(t, err, blob.ErrNotFound)
	require.NoError(t, l.Delete(ctx, key), "deleting a missing file is not an error")
	require.Empty(t, leftovers(t, l.Dir()))
}

// countingReader counts what was read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestLocalWriteRefusals(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	ctx := context.Background()

	// More bytes than declared: refused, nothing kept, and reading stops soon after the limit
	// (within one buffer), however long the body is.
	key := localKey(".mp4")
	huge := &countingReader{r: io.LimitReader(zeroReader{}, 1<<30)}
	_, err := l.Write(ctx, key, huge, 10)
	require.ErrorIs(t, err, blob.ErrTooLarge)
	require.LessOrEqual(t, huge.n, int64(2<<20))
	require.Empty(t, leftovers(t, l.Dir()))

	_, err = l.Write(ctx, key, bytes.NewReader(make([]byte, 11)), 10)
	require.ErrorIs(t, err, blob.ErrTooLarge, "one byte over is over")
	_, err = l.Write(ctx, key, bytes.NewReader(make([]byte, 9)), 10)
	require.ErrorIs(t, err, blob.ErrShort)
	_, err = l.Write(ctx, key, iotestErr{}, 10)
	require.ErrorIs(t, err, blob.ErrInterrupted)
	require.Empty(t, leftovers(t, l.Dir()))

	// Once written, a key is never written again.
	_, err = l.Write(ctx, key, bytes.NewReader(make([]byte, 10)), 10)
	require.NoError(t, err)
	_, err = l.Write(ctx, key, bytes.NewReader(bytes.Repeat([]byte{1}, 10)), 10)
	require.ErrorIs(t, err, blob.ErrExists)
	require.Equal(t, make([]byte, 10), readAll(t, l, key))

	for _, bad := range []string{"../../etc/passwd", "uploads/x/y.jpg", "uploads/" + uuid.NewString() + "/../" + uuid.NewString() + ".jpg"} {
		_, err = l.Write(ctx, bad, bytes.NewReader(nil), 0)
		require.ErrorIs(t, err, blob.ErrBadKey)
		_, err = l.Stat(ctx, bad)
		require.ErrorIs(t, err, blob.ErrBadKey)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// Of concurrent uploads to one key, exactly one is stored, whole.
func TestLocalConcurrentWritesOneWins(t *testing.T) {
	t.Parallel()
	l := newLocal(t)
	key := localKey(".png")
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Write(context.Background(), key, bytes.NewReader(bytes.Repeat([]byte{byte(i)}, 1<<20+7)), 1<<20+7)
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, won, "two writers won")
			won = i
		} else {
			require.ErrorIs(t, err, blob.ErrExists)
		}
	}
	require.NotEqual(t, -1, won)
	require.Equal(t, bytes.Repeat([]byte{byte(won)}, 1<<20+7), readAll(t, l, key))
	require.Len(t, leftovers(t, l.Dir()), 1)
}

// A crash mid-upload leaves a temporary file, removed at the next start.
func TestLocalStartRemovesPartialUploads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := blob.NewLocal(dir, signer(), func() string { return base })
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tmp", "upload-123"), []byte("partial"), 0o600))
	_, err = blob.NewLocal(dir, signer(), func() string { return base })
	require.NoError(t, err)
	require.Empty(t, leftovers(t, dir))
}
