package persistence

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkCheckFile measures a full check (CheckFile: every page read, bbolt's consistency
// check, Herald's cross-checks), Open with it (--check-on-start), the page-by-page structure
// walk alone, and the quick inspection Open makes by default, on a store of
// HERALD_CHECK_BENCH_MB megabytes of posts (default 64; docs/operations.md quotes a 1 GB run:
// HERALD_CHECK_BENCH_MB=1024 go test -run '^$' -bench CheckFile -benchtime 3x ./persistence/).
func BenchmarkCheckFile(b *testing.B) {
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("HERALD_CHECK_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	dir := b.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	content := strings.Repeat("Our autumn collection is out today, with free shipping. ", 16)
	users := make([]string, 50)
	for i := range users {
		users[i] = uuid.NewString()
	}
	path := filepath.Join(dir, FileName)
	for n := 0; ; n++ {
		if st, _ := os.Stat(path); st != nil && st.Size() >= int64(mb)<<20 {
			break
		}
		if err := s.Update(context.Background(), func(tx *Tx) error {
			for i := 0; i < 5000; i++ {
				p := &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: users[i%len(users)], Content: content, Status: PostDraft, CreatedAt: time.Now().UTC()}
				p.Targets = []Target{{AccountID: users[0], Platform: "bluesky", Status: TargetPending}, {AccountID: users[1], Platform: "linkedin", Status: TargetPending}}
				if err := tx.PutPost(p, nil); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.Logf("store of %.2f GB", float64(st.Size())/(1<<30))
	b.Run("full", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := CheckFile(path, time.Second)
			if err != nil || !r.Sound() {
				b.Fatal(err, r.Problems)
			}
		}
	})
	b.Run("open-check", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s, err := Open(dir, Options{Check: true})
			if err != nil {
				b.Fatal(err)
			}
			_ = s.Close()
		}
	})
	b.Run("structure", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := preflight(path, true, false, time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("quick", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := preflight(path, false, false, time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
}
