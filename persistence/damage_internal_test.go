package persistence

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// seedStore writes a store in dir with a user, an API key, and posts (some published, so that
// publications has entries), enough for the posts bucket to have branch and leaf pages.
func seedStore(t testing.TB, dir string, posts int) {
	t.Helper()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	user := uuid.NewString()
	content := strings.Repeat("Our autumn collection is out today. ", 8)
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.CreateUser(&User{ID: user, Email: "ops@example.com", Plan: "pro", Timezone: "UTC", CreatedAt: time.Now()}); err != nil {
			return err
		}
		hash := sha256.Sum256([]byte("sk_live_seed"))
		if err := tx.PutAPIKey(&APIKey{ID: uuid.NewString(), UserID: user, Name: "ci", Hash: hash[:], CreatedAt: time.Now()}, nil); err != nil {
			return err
		}
		for i := 0; i < posts; i++ {
			p := &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: content, Status: PostDraft, CreatedAt: time.Now().UTC()}
			p.Targets = []Target{{AccountID: uuid.NewString(), Platform: "bluesky", Status: TargetPending}}
			if i%3 == 0 {
				p.Status, p.Targets[0].Status, p.Targets[0].PublicationID = PostPublished, TargetPublished, fmt.Sprintf("at://post/%d", i)
			}
			if err := tx.PutPost(p, nil); err != nil {
				return err
			}
		}
		return nil
	}))
}

// pageOf finds a page of the file: the root page of bucket, or (leaf) a leaf page of bucket's
// tree other than its root.
func pageOf(t *testing.T, path, bucket string, leaf bool) (id, pageSize uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	require.NoError(t, err)
	var root uint64
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket([]byte(bucket)).RootPage())
		return nil
	}))
	require.NoError(t, db.Close())
	require.NotZero(t, root, "bucket %s is inline", bucket)
	if !leaf {
		return root, uint64(os.Getpagesize())
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	in := &inspector{r: f, full: true, owner: map[uint64]string{}}
	lay, problems, _ := inspect(f, st.Size(), true)
	require.Empty(t, problems)
	in.lay = *lay
	in.owner[0], in.owner[1] = "meta", "meta"
	in.walk(root, bucket, true, 0)
	hdr := make([]byte, pageHeaderSize)
	for pg, owner := range in.owner {
		if owner != bucketLabel(bucket) || pg == root {
			continue
		}
		_, err := f.ReadAt(hdr, int64(pg*lay.pageSize))
		require.NoError(t, err)
		if ne.Uint64(hdr) == pg && ne.Uint16(hdr[8:]) == flagLeaf {
			return pg, lay.pageSize
		}
	}
	t.Fatalf("no leaf below the root of %s", bucket)
	return 0, 0
}

// usedBytes is the part of the file its pages use: the high-water mark.
func usedBytes(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := parseMeta(b, 0)
	require.Empty(t, m.invalid)
	if m1 := parseMeta(b[m.pageSize:], 1); m1.txid > m.txid {
		m = m1
	}
	return int(m.pgid * m.pageSize)
}

// bbolt grows the file ahead of the pages it uses: a file cut short in that unused tail has lost
// nothing, and opens.
func TestFileCutInItsUnusedTailOpens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedStore(t, dir, 100)
	path := filepath.Join(dir, FileName)
	require.NoError(t, os.Truncate(path, int64(usedBytes(t, path))))
	r, err := CheckFile(path, time.Second)
	require.NoError(t, err)
	require.True(t, r.Sound(), "%v", r.Problems)
	s, err := Open(dir, Options{Check: true})
	require.NoError(t, err)
	require.NoError(t, s.View(func(tx *Tx) error {
		require.Equal(t, 100, tx.kv.(*boltTx).tx.Bucket(bPosts).Stats().KeyN)
		return nil
	}))
	require.NoError(t, s.Close())
}

func garbage(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// Every kind of damage stops Open with a DamagedError that names the file, never a panic or a
// store that runs on; CheckFile lists it. A data page deep in a bucket is found by the full
// check (Options.Check, CheckFile) only.
func TestDamagedFilesAreRefused(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	seedStore(t, base, 3000)
	sound := filepath.Join(base, FileName)
	original, err := os.ReadFile(sound)
	require.NoError(t, err)
	leaf, pageSize := pageOf(t, sound, "posts", true)
	root, _ := pageOf(t, sound, "posts", false)
	used := usedBytes(t, sound)
	require.Less(t, used, len(original), "bbolt grows the file ahead of its pages")

	cases := []struct {
		name    string
		damage  func(t *testing.T, path string)
		quick   bool   // found without the full check
		problem string // in the first problem
	}{
		{"empty", func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, 0)) }, true, "it is empty (0 bytes)"},
		{"truncated to 10 bytes", func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, 10)) }, true, "10 bytes long, too short"},
		{"truncated to 100 bytes", func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, 100)) }, true, "it is truncated to 100 bytes"},
		{"truncated to half its pages", func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, int64(used/2))) }, true, "it is truncated to "},
		{"meta page 0 overwritten", func(t *testing.T, p string) { overwrite(t, p, 0, garbage(int(pageSize))) }, true, "meta page 0 is not valid (no bbolt magic number)"},
		{"meta page 1 overwritten", func(t *testing.T, p string) { overwrite(t, p, int64(pageSize), garbage(int(pageSize))) }, true, "meta page 1 is not valid"},
		{"both meta pages overwritten", func(t *testing.T, p string) { overwrite(t, p, 0, garbage(2*int(pageSize))) }, true, "it is not a bbolt database"},
		{"a bucket's root page overwritten", func(t *testing.T, p string) { overwrite(t, p, int64(root*pageSize), garbage(int(pageSize))) }, true, fmt.Sprintf("bucket posts: page %d has been overwritten", root)},
		{"a leaf page in the middle overwritten", func(t *testing.T, p string) { overwrite(t, p, int64(leaf*pageSize), garbage(int(pageSize))) }, false, fmt.Sprintf("bucket posts: page %d has been overwritten", leaf)},
		{"a leaf page in the middle zeroed", func(t *testing.T, p string) { overwrite(t, p, int64(leaf*pageSize), make([]byte, pageSize)) }, false, fmt.Sprintf("page %d has been overwritten (its header names page 0)", leaf)},
		{"an SQLite file", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, append([]byte("SQLite format 3\x00"), garbage(8192)...), 0o600))
		}, true, "it is not a bbolt database: neither meta page carries bbolt's magic number (it is an SQLite database)"},
		{"a text file", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte(strings.Repeat("not a database\n", 1000)), 0o600))
		}, true, "it is not a bbolt database"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			require.NoError(t, os.WriteFile(path, original, 0o600))
			tc.damage(t, path)

			var de *DamagedError
			s, err := Open(dir, Options{})
			if tc.quick {
				require.ErrorAs(t, err, &de)
				require.Nil(t, s)
				require.Equal(t, path, de.Path)
				require.Contains(t, de.Problems[0], tc.problem)
				require.ErrorIs(t, err, ErrDamaged)
				require.Contains(t, err.Error(), "the database file "+path+" is damaged: ")
			} else {
				require.NoError(t, err, "only the full check reads every page")
				require.NoError(t, s.Close())
			}

			_, err = Open(dir, Options{Check: true})
			require.ErrorAs(t, err, &de)
			require.Contains(t, de.Problems[0], tc.problem)

			r, err := CheckFile(path, time.Second)
			require.NoError(t, err)
			require.False(t, r.Sound())
			require.Contains(t, r.Problems[0], tc.problem)
			t.Logf("%s", strings.Join(r.Problems, "\n"))

			// Damage is reported, never repaired by opening: the file is as it was.
			again, err := CheckFile(path, time.Second)
			require.NoError(t, err)
			require.Equal(t, r.Problems, again.Problems)
		})
	}
}

// A sound store checks sound, with its buckets and their keys counted.
func TestCheckFileOfASoundStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedStore(t, dir, 3000)
	s, err := Open(dir, Options{Check: true})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	r, err := CheckFile(filepath.Join(dir, FileName), time.Second)
	require.NoError(t, err)
	require.True(t, r.Sound(), "%v", r.Problems)
	require.Equal(t, uint64(schemaVersion), r.Schema)
	keys := map[string]int{}
	for _, b := range r.Buckets {
		keys[b.Name] = b.Keys
	}
	require.Len(t, keys, len(bucketNames))
	require.Equal(t, 3000, keys["posts"])
	require.Equal(t, 3000, keys["posts_user"])
	require.Equal(t, 1000, keys["publications"])
	require.Equal(t, 1, keys["apikeys"])
	require.Greater(t, r.Pages, uint64(100))
	require.Len(t, r.Checks, 6)
}

// An index entry whose record is gone, a post missing from its index and counts that disagree
// are found by Herald's cross-checks: by CheckFile and the full check at open, not by the quick
// one (the file itself is sound).
func TestCrossChecksFindBrokenIndexes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedStore(t, dir, 50)
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	var lostPost, unindexed, keyID []byte
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bPosts).Cursor().First()
		lostPost = append([]byte(nil), k...)
		require.NoError(t, tx.Bucket(bPosts).Delete(lostPost))
		uk, _ := tx.Bucket(bPostsUser).Cursor().Last()
		unindexed = append([]byte(nil), uk[16:]...)
		require.NoError(t, tx.Bucket(bPostsUser).Delete(uk))
		_, id := tx.Bucket(bAPIKeysHash).Cursor().First()
		keyID = append([]byte(nil), id...)
		require.NoError(t, tx.Bucket(bMeta).Put(activeJobsKey, u64(7)))
		return tx.Bucket(bAPIKeys).Delete(keyID)
	}))
	require.NoError(t, db.Close())

	s, err := Open(dir, Options{})
	require.NoError(t, err, "the file's structure is sound")
	require.NoError(t, s.Close())

	r, err := CheckFile(path, time.Second)
	require.NoError(t, err)
	text := strings.Join(r.Problems, "\n")
	require.Contains(t, text, "names post "+idString(lostPost)+", which is not in posts")
	require.Contains(t, text, "publications: entry") // the lost post was published (post 0)
	require.Contains(t, text, "post "+idString(unindexed)+" has no posts_user entry")
	require.Contains(t, text, "apikeys_hash: entry")
	require.Contains(t, text, "names API key "+idString(keyID))
	require.Contains(t, text, "apikeys_user: entry")
	require.Contains(t, text, "posts_count: user")
	require.Contains(t, text, "(50 posts counted, posts_user has 49)")
	require.Contains(t, text, "meta: 7 active jobs counted, jobs_active has 0")

	_, err = Open(dir, Options{Check: true})
	var de *DamagedError
	require.ErrorAs(t, err, &de)
	require.Equal(t, r.Problems, de.Problems)
}

// A file another process holds for writing is not checked: CheckFile says it is locked.
func TestCheckFileOfALockedStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	_, err = CheckFile(filepath.Join(dir, FileName), 100*time.Millisecond)
	require.ErrorIs(t, err, ErrLocked)
}
