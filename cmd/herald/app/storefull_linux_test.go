package app_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// fullDiskSize is the size of the file system the full-disk test fills.
const fullDiskSize = "8m"

// smallFileSystem mounts a tmpfs of fullDiskSize on a temporary directory and unmounts it when the
// test ends. It needs root; without it, or when the mount fails, the test is skipped with the
// reason, except under CI=true as root, where a mount that fails fails the test.
func smallFileSystem(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("a full file system needs a tmpfs mount, which needs root (euid %d)", os.Geteuid())
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+fullDiskSize+",mode=0700"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a %s tmpfs on %s: %v (CI runs as root and must be able to)", fullDiskSize, dir, err)
		}
		t.Skipf("mount a %s tmpfs on %s: %v", fullDiskSize, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Logf("unmount %s: %v; detaching it", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fill writes a file into dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	return path
}

// Herald on a file system that fills up: the writes that cannot be stored are refused with 503
// and nothing acknowledged is lost, reads are served, /readyz is not ready; once space is freed,
// writes succeed again without a restart.
//
// bbolt writes its pages with pwrite and grows its file with ftruncate, which on tmpfs (as on
// most file systems) only sets the size: blocks are taken when pages are first written, so a full
// disk fails a commit's pwrite with ENOSPC (and the commit rolls back). Pages freed by earlier
// commits were written before, so small writes may still fit while new data does not.
func TestFullDiskRefusesWritesAndRecovers(t *testing.T) {
	t.Parallel()
	dir := smallFileSystem(t)
	b := setup(t, bundleOpts{demo: true, config: func(c *app.Config) { c.DataDir = dir }})
	bsky := b.account(platforms.Bluesky)
	content := strings.Repeat("Nothing acknowledged is lost when the disk fills up. ", 40)
	create := func(i int) *response {
		return b.do("POST", "/v1/posts", map[string]any{"content": fmt.Sprintf("%d %s", i, content), "platforms": []string{bsky.ID}})
	}
	var acked []string
	for i := range 3 {
		r := create(i)
		require.Equal(t, 201, r.status, string(r.body))
		acked = append(acked, r.json(t)["id"].(string))
	}

	filler := fill(t, dir)
	var refused *response
	for i := 3; i < 5000 && refused == nil; i++ {
		switch r := create(i); r.status {
		case 201:
			acked = append(acked, r.json(t)["id"].(string))
		case 503:
			refused = r
		default:
			t.Fatalf("create %d on a full disk: %d %s", i, r.status, r.body)
		}
	}
	require.NotNil(t, refused, "a full disk refuses new posts")
	requireStoreFailure(t, "create on a full disk", refused)
	t.Logf("%d posts acknowledged before the disk was full", len(acked))

	// What was acknowledged is there and served; readiness says the store cannot write.
	requireStoreFailure(t, "create on a full disk, again", create(-1))
	require.Equal(t, 503, b.do("GET", "/readyz", nil).status)
	require.Equal(t, 0.0, b.metricValue("herald_store_writable"))
	for _, id := range acked {
		require.Equal(t, 200, b.do("GET", "/v1/posts/"+id, nil).status)
	}
	require.Equal(t, len(acked), b.countPosts())
	require.Equal(t, 200, b.do("GET", "/v1/posts?limit=100", nil).status)

	// Space is freed: writes succeed again, readiness comes back, no restart.
	require.NoError(t, os.Remove(filler))
	r := create(-2)
	require.Equal(t, 201, r.status, string(r.body))
	acked = append(acked, r.json(t)["id"].(string))
	waitUntil(t, "/readyz to be ready", func() bool { return b.do("GET", "/readyz", nil).status == 200 })

	// The file is whole and holds every acknowledged post (a backup copy, read on its own).
	backup := t.TempDir()
	require.NoError(t, b.app.Store.Backup(filepath.Join(backup, persistence.FileName)))
	s, err := persistence.Open(backup, persistence.Options{ReadOnly: true})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		for _, id := range acked {
			if !tx.HasPost(id) {
				return errors.New("acknowledged post " + id + " is missing")
			}
		}
		return nil
	}))
}
