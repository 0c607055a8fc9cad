package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Local stores media as files under a directory (DIR/media): uploads/{user}/{media}.{ext}, written
// through tmp/ and linked into place only once complete and synced, so that a file under uploads/
// is always whole. Its upload URL is a Herald URL signed by Signer; Herald's upload route calls
// Write.
type Local struct {
	dir     string
	signer  *Signer
	baseURL func() string
}

var _ Store = (*Local)(nil)

// copyBuffers are the upload buffers: an upload holds one buffer, never the file.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// NewLocal opens (creating) the directory. baseURL returns Herald's public base URL, for upload
// URLs. Partial uploads left in tmp/ by a crash are removed.
func NewLocal(dir string, signer *Signer, baseURL func() string) (*Local, error) {
	for _, d := range []string{dir, filepath.Join(dir, "uploads"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("blob: create %s: %w", d, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		return nil, fmt.Errorf("blob: read tmp: %w", err)
	}
	for _, e := range entries {
		_ = os.Remove(filepath.Join(dir, "tmp", e.Name()))
	}
	return &Local{dir: dir, signer: signer, baseURL: baseURL}, nil
}

// Name is "local".
func (l *Local) Name() string { return "local" }

// Dir is the directory the files live in.
func (l *Local) Dir() string { return l.dir }

func (l *Local) path(key string) (string, error) {
	if !storable(key) {
		return "", ErrBadKey
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

// PresignPut returns Herald's signed upload URL for the key.
func (l *Local) PresignPut(_ context.Context, key, contentType string, size int64, expires time.Time) (string, error) {
	if !ValidKey(key) {
		return "", ErrBadKey
	}
	return l.signer.UploadURL(l.baseURL(), key, contentType, size, expires), nil
}

// Write stores exactly size bytes read from r under key. It streams through one 1 MiB buffer,
// never writes past size (ErrTooLarge as soon as r holds more), refuses a body that ends early
// (ErrShort) and a key already written (ErrExists); in every failure nothing is left behind.
func (l *Local) Write(ctx context.Context, key string, r io.Reader, size int64) (int64, error) {
	final, err := l.path(key)
	if err != nil {
		return 0, err
	}
	if _, err := os.Lstat(final); err == nil {
		return 0, ErrExists
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o700); err != nil {
		return 0, fmt.Errorf("blob: create directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Join(l.dir, "tmp"), "upload-*")
	if err != nil {
		return 0, fmt.Errorf("blob: create temporary file: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("%w: %v", ErrInterrupted, err)
		}
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if total+int64(n) > size {
				return total, ErrTooLarge
			}
			if _, err := tmp.Write(buf[:n]); err != nil {
				return total, fmt.Errorf("blob: write: %w", err)
			}
			total += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return total, fmt.Errorf("%w: %w", ErrInterrupted, rerr)
		}
	}
	if total < size {
		return total, ErrShort
	}
	if err := tmp.Sync(); err != nil {
		return total, fmt.Errorf("blob: sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return total, fmt.Errorf("blob: close: %w", err)
	}
	// A link refuses an existing name: of two concurrent uploads to one key, one wins.
	if err := os.Link(tmp.Name(), final); err != nil {
		_ = os.Remove(tmp.Name())
		done = true
		if errors.Is(err, os.ErrExist) {
			return total, ErrExists
		}
		return total, fmt.Errorf("blob: link into place: %w", err)
	}
	done = true
	_ = os.Remove(tmp.Name())
	syncDir(filepath.Dir(final))
	return total, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// Stat describes the file under key. Local records no content type: Write is reached only
// through an upload URL that enforced it.
func (l *Local) Stat(_ context.Context, key string) (Info, error) {
	p, err := l.path(key)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("blob: stat: %w", err)
	}
	return Info{Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Open opens the file under key.
func (l *Local) Open(_ context.Context, key string) (Object, Info, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, Info{}, ErrNotFound
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("blob: open: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, Info{}, fmt.Errorf("blob: stat: %w", err)
	}
	return f, Info{Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Delete removes the file under key.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob: delete: %w", err)
	}
	return nil
}

// Put stores a derived file through Write; a key already written keeps its bytes.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64, _ string) error {
	if _, err := l.Write(ctx, key, r, size); err != nil && !errors.Is(err, ErrExists) {
		return err
	}
	return nil
}
