package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
)

// atRestSettle is how long a server is left alone after start-up before its memory is read.
const atRestSettle = 3 * time.Second

// memoryAtRest: a server over a large store. A sandbox server starts on a fresh data directory
// (creating the demo user and its accounts) and is measured idle: that is the limit, an idle
// server with an empty store started the same way in the same run. It stops; 1,000,000 drafts
// (--quick: 100,000) of the demo user, shaped as the API writes them, go straight into its bbolt
// file through the persistence package in large batches; it starts again on that file. Reported:
// the start-up time (process start to "listening on" and to the first 200 from /readyz), the
// resident memory at rest after start-up, and the latency of GET /v1/posts?limit=20 on that data
// from one client.
func memoryAtRest(base *Env) (Result, error) {
	n := 1_000_000
	if base.Quick {
		n = 100_000
	}
	empty, err := base.Spawn()
	if err != nil {
		return Result{}, err
	}
	emptyStartup := empty.ListeningAt.Sub(empty.StartedAt)
	time.Sleep(atRestSettle)
	emptyRSS := readMemKB(empty.cmd.Process.Pid)
	empty.Stop()

	e, written, fileSize, err := seedOffline(empty, func(dataDir string) error { return writeDrafts(empty.log, dataDir, n) })
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	listening, ready := e.ListeningAt.Sub(e.StartedAt), e.ReadyAt.Sub(e.StartedAt)
	time.Sleep(atRestSettle)
	rss := readMemKB(e.cmd.Process.Pid)

	// The first page, newest first, from one client (latency, not throughput).
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	var total int
	first := time.Now()
	if err := listPage(client, e, &total); err != nil {
		return Result{}, err
	}
	firstMs := float64(time.Since(first)) / float64(time.Millisecond)
	if total != n {
		return Result{}, fmt.Errorf("the list says %d posts, %d were written", total, n)
	}
	r, err := drive(e.log, "memory-at-rest (list)", 1, e.Duration, func(w, i int) error {
		var t int
		return listPage(client, e, &t)
	})
	if err != nil {
		return r, err
	}
	r.PeakRSSMB = e.PeakRSSMB()
	r.LimitName = "RSS of an idle server, empty store (MB)"
	r.Limit = float64(emptyRSS.rss) / 1024
	r.Ratio = float64(rss.rss) / float64(emptyRSS.rss)
	r.Notes = fmt.Sprintf("%d drafts at rest (bbolt file %.0f MB, written offline in batches of %d in %.1fs): start-up %.0f ms to \"listening on\", %.0f ms to /readyz 200 (empty store: %.0f ms); RSS at rest %.3g s after start-up %.1f MB (anon %.1f MB, file %.1f MB) against %.1f MB (anon %.1f, file %.1f) for the same server with an empty store — the limit column, the ratio RSS/limit; ops and latencies are GET /v1/posts?limit=20 from one client (first request %.1f ms)",
		n, float64(fileSize)/1e6, draftBatch, written.Seconds(), ms(listening), ms(ready), ms(emptyStartup), atRestSettle.Seconds(),
		float64(rss.rss)/1024, float64(rss.anon)/1024, float64(rss.file)/1024,
		float64(emptyRSS.rss)/1024, float64(emptyRSS.anon)/1024, float64(emptyRSS.file)/1024, firstMs)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// listPage asks for the newest 20 posts and returns the total the list reports.
func listPage(client *http.Client, e *Env, total *int) error {
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/v1/posts?limit=20", nil)
	req.Header.Set("Authorization", "Bearer "+e.Key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /v1/posts: %s %.200s", resp.Status, b)
	}
	if i := strings.Index(string(b), `"total":`); i >= 0 {
		rest := string(b[i+len(`"total":`):])
		end := strings.IndexAny(rest, ",}")
		*total, _ = strconv.Atoi(strings.TrimSpace(rest[:end]))
	}
	return nil
}

// draftBatch is the number of drafts per write transaction.
const draftBatch = 20_000

// sandboxUser reads the sandbox user and its connected accounts from a store no server holds.
func sandboxUser(s *persistence.Store) (*persistence.User, []*persistence.Account, error) {
	var user *persistence.User
	var accounts []*persistence.Account
	if err := s.View(func(tx *persistence.Tx) error {
		var err error
		if user, err = tx.SandboxUser(); err != nil {
			return err
		}
		accounts, err = tx.AccountsIn(user.ID)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("the sandbox user: %w", err)
	}
	return user, accounts, nil
}

// writeDrafts writes n drafts of the sandbox user into the store in dir (no server may hold it),
// each to three of the user's accounts, as POST /v1/posts stores them.
func writeDrafts(log io.Writer, dir string, n int) error {
	s, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	user, accounts, err := sandboxUser(s)
	if err != nil {
		return err
	}
	if len(accounts) < 3 {
		return fmt.Errorf("the sandbox user has %d accounts, want 3", len(accounts))
	}
	done := make(chan struct{})
	defer close(done)
	go progress(log, "memory-at-rest (write)", time.Duration(n/40)*time.Millisecond, done)
	return writePostsOffline(s, n, func(i int) *persistence.Post {
		now := time.Now().UTC()
		p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user.ID, Status: persistence.PostDraft,
			Content:   fmt.Sprintf("Draft %d: our autumn collection is out today, with free shipping on every order this week. #launch", i),
			CreatedAt: now, UpdatedAt: now, MediaIDs: []string{}, Version: 1}
		for j := 0; j < 3; j++ {
			a := accounts[(i+j)%len(accounts)]
			p.Targets = append(p.Targets, persistence.Target{AccountID: a.ID, Platform: a.Platform, Status: persistence.TargetPending})
		}
		return p
	})
}

// writePostsOffline writes the n posts post(0) … post(n-1) into a store no server holds,
// draftBatch to a transaction, as the API stores them (a scheduled post with its schedule entry).
func writePostsOffline(s *persistence.Store, n int, post func(i int) *persistence.Post) error {
	for written := 0; written < n; {
		k := min(draftBatch, n-written)
		posts := make([]*persistence.Post, k)
		raws := make([][]byte, k)
		for i := range posts {
			p := post(written + i)
			raw, err := persistence.Encode(p)
			if err != nil {
				return err
			}
			posts[i], raws[i] = p, raw
		}
		if err := s.Update(context.Background(), func(tx *persistence.Tx) error {
			for i, p := range posts {
				if err := tx.PutPost(p, raws[i]); err != nil {
					return err
				}
				if p.Status == persistence.PostScheduled && p.ScheduledAt != nil {
					if err := tx.Schedule(p.ID, *p.ScheduledAt); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return err
		}
		written += k
	}
	return nil
}

// memKB is a process's resident memory in KiB: in all, anonymous, and file-backed (bbolt's mmap).
type memKB struct{ rss, anon, file int }

func readMemKB(pid int) memKB {
	var m memKB
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			m.rss = v
		case "RssAnon:":
			m.anon = v
		case "RssFile:":
			m.file = v
		}
	}
	return m
}

// seedOffline writes a stopped server's store with seed (given its data directory), then starts
// the server again on it: the restarted env, how long seeding took and the bbolt file's size. On
// an error the env's directory is removed.
func seedOffline(stopped *Env, seed func(dataDir string) error) (*Env, time.Duration, int64, error) {
	dataDir := filepath.Join(stopped.Dir, "data")
	start := time.Now()
	if err := seed(dataDir); err != nil {
		_ = os.RemoveAll(stopped.Dir)
		return nil, 0, 0, err
	}
	took := time.Since(start)
	var fileSize int64
	if fi, err := os.Stat(filepath.Join(dataDir, persistence.FileName)); err == nil {
		fileSize = fi.Size()
	}
	e, err := stopped.Restart()
	if err != nil {
		_ = os.RemoveAll(stopped.Dir)
		return nil, 0, 0, err
	}
	return e, took, fileSize, nil
}
