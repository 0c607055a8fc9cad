//go:build linux

package persistence

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// mappedKB is the resident memory of the process's mappings of path (/proc/self/smaps), in KiB.
func mappedKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	kb, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 6 && strings.Contains(fields[0], "-"):
			in = fields[len(fields)-1] == path
		case in && len(fields) >= 2 && fields[0] == "Rss:":
			n, _ := strconv.Atoi(fields[1])
			kb += n
		}
	}
	require.NoError(t, sc.Err())
	return kb
}

// The pages of the file that reads mapped are given back to the kernel once the file-backed
// resident memory passes the limit, and reads find the same data afterwards.
func TestMappedPagesAreGivenBack(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	var ids []string
	for batch := 0; batch < 8; batch++ {
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
			for i := 0; i < 2000; i++ {
				p := &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.NewString(), Status: PostDraft, Content: strings.Repeat(fmt.Sprintf("post %d ", i), 100), CreatedAt: time.Now().UTC()}
				ids = append(ids, p.ID)
				if err := tx.PutPost(p, nil); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	readAll := func() {
		require.NoError(t, s.View(func(tx *Tx) error {
			for i, id := range ids {
				p, err := tx.Post(id)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(p.Content, "post "), "post %d", i)
			}
			return nil
		}))
	}
	path := s.Path()
	readAll()
	mapped := mappedKB(t, path)
	require.Greater(t, mapped, 32<<10, "the reads mapped the file's pages")
	require.NoError(t, s.releaseMapped())
	require.Less(t, mappedKB(t, path), mapped/4, "given back")
	readAll()
	require.Greater(t, mappedKB(t, path), 32<<10)
	// The watcher gives them back once the file-backed resident memory passes its limit (here,
	// any page at all), and stops with the store.
	go s.watchMapped(1, 10*time.Millisecond)
	require.Eventually(t, func() bool { return mappedKB(t, path) < mapped/4 }, 10*time.Second, 10*time.Millisecond)
}
