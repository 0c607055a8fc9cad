package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heraldExit runs the binary to its end and returns its output (stdout and stderr) and exit
// status; a command still running after a minute is killed and fails the test.
func heraldExit(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "herald %s did not end: %s", strings.Join(args, " "), out.String())
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), 0
}

// stop ends a server with SIGTERM and waits for its exit.
func (p *proc) stop() {
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatal("no exit after SIGTERM")
	}
	require.Equal(p.t, 0, p.cmd.ProcessState.ExitCode(), p.logText())
}

// usedBytes is the part of a bbolt file its pages use (the rest is room bbolt grew it by), from
// the newer of its meta pages: page size at byte 24, high-water mark at 56, transaction at 64.
func usedBytes(t *testing.T, b []byte) (used, pageSize int) {
	t.Helper()
	ne := binary.NativeEndian
	ps := int(ne.Uint32(b[24:]))
	pgid, txid := ne.Uint64(b[56:]), ne.Uint64(b[64:])
	if ne.Uint64(b[ps+64:]) > txid {
		pgid = ne.Uint64(b[ps+56:])
	}
	return int(pgid) * ps, ps
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// Start-up on a damaged database file fails at once with a message that names the file and the
// way out, exits 1, leaves the file as it was, and never panics; herald check lists the damage.
func TestServeRefusesDamagedData(t *testing.T) { //nolint:tparallel // each case damages and starts one data directory, in turn
	t.Parallel()
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	key := sandboxKey(t, dir)
	status, body := p.request(key, "GET", "/v1/accounts", "")
	require.Equal(t, 200, status)
	var accts struct {
		Data []struct{ ID, Platform string }
	}
	require.NoError(t, json.Unmarshal(body, &accts))
	var linkedin string
	for _, a := range accts.Data {
		if a.Platform == "linkedin" {
			linkedin = a.ID
		}
	}
	filler := strings.Repeat("Our autumn collection is out today, with free shipping. ", 15)
	for i := 0; i < 300; i++ {
		status, body := p.request(key, "POST", "/v1/posts", fmt.Sprintf(`{"content":"dmg-marker %03d %s","platforms":["%s"]}`, i, filler, linkedin))
		require.Equal(t, 201, status, string(body))
	}
	p.stop()
	out, code := heraldExit(t, "check", "--data", dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "result         sound: no problems found")
	original, err := os.ReadFile(filepath.Join(dir, "herald.db"))
	require.NoError(t, err)
	used, pageSize := usedBytes(t, original)

	damaged := func(t *testing.T, damage func(b []byte) []byte) string {
		d := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d, "herald.db"), damage(bytes.Clone(original)), 0o600))
		return d
	}
	// A page in the middle that holds posts, found by damaging the pages that carry a post's
	// text (freed copies of a page carry it too) until herald check finds the damage.
	middlePage := func(t *testing.T) string {
		var candidates []int
		for pg := 2; pg < used/pageSize; pg++ {
			if bytes.Contains(original[pg*pageSize:(pg+1)*pageSize], []byte("dmg-marker")) {
				candidates = append(candidates, pg)
			}
		}
		mid := len(candidates) / 2
		for i := range candidates {
			pg := candidates[(mid+i)%len(candidates)]
			d := damaged(t, func(b []byte) []byte { copy(b[pg*pageSize:], randomBytes(pageSize)); return b })
			if _, code := heraldExit(t, "check", "--data", d); code == 1 {
				t.Logf("page %d of %d", pg, used/pageSize)
				return d
			}
		}
		t.Fatal("no page of posts found")
		return ""
	}

	cases := []struct {
		name    string
		dir     func(t *testing.T) string
		flags   []string
		problem string
	}{
		{"empty", func(t *testing.T) string { return damaged(t, func([]byte) []byte { return nil }) }, nil,
			"it is empty (0 bytes), but a database file Herald has written holds at least 4 pages; if Herald never started on this directory, delete the file"},
		{"truncated to a few bytes", func(t *testing.T) string { return damaged(t, func(b []byte) []byte { return b[:10] }) }, nil,
			"it is 10 bytes long, too short to be a bbolt database"},
		{"truncated to half its pages", func(t *testing.T) string { return damaged(t, func(b []byte) []byte { return b[:used/2] }) }, nil,
			fmt.Sprintf("it is truncated to %d bytes, but its pages reach byte %d", used/2, used)},
		{"meta page overwritten", func(t *testing.T) string {
			return damaged(t, func(b []byte) []byte { copy(b, randomBytes(pageSize)); return b })
		}, nil, "meta page 0 is not valid (no bbolt magic number)"},
		{"another format", func(t *testing.T) string {
			return damaged(t, func([]byte) []byte { return append([]byte("SQLite format 3\x00"), randomBytes(64<<10)...) })
		}, nil, "it is not a bbolt database: neither meta page carries bbolt's magic number (it is an SQLite database)"},
		{"a page of posts overwritten, with --check-on-start", middlePage, []string{"--check-on-start"}, "bucket posts: page "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.dir(t)
			path := filepath.Join(d, "herald.db")
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			out, code := heraldExit(t, append([]string{"serve", "--data", d, "--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--sandbox"}, tc.flags...)...)
			require.Equal(t, 1, code, out)
			require.Contains(t, out, "herald serve: the database file "+path+" is damaged: "+tc.problem)
			require.Contains(t, out, "Herald will not start on it. Restore the latest backup (`herald backup` writes one; "+
				"see docs/operations.md, \"Restoring a backup\"), or run `herald check --data "+d+"` for the details")
			for _, crash := range []string{"panic", "goroutine ", "fatal error", "SIGBUS", "SIGSEGV"} {
				require.NotContains(t, out, crash)
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(before, after), "start-up changed the damaged file")
			_, err = os.Stat(filepath.Join(d, "sandbox-api-key"))
			require.True(t, os.IsNotExist(err), "nothing ran on the damaged file")

			out, code = heraldExit(t, "check", "--data", d)
			require.Equal(t, 1, code, out)
			require.Contains(t, out, "result         damaged: ")
			require.Contains(t, out, "  - "+tc.problem)
			require.Contains(t, out, "herald check: the database file "+path+" is damaged: ")
		})
	}
}

// herald check works on a stopped server's data directory and on a file, says so when a server
// holds the file, and tells a missing file from a damaged one by its exit status.
func TestCheckCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	out, code := heraldExit(t, "check", "--data", dir)
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "a herald server is running on "+dir+" and holds its database file")
	require.Contains(t, out, "herald backup --data "+dir+" --out FILE, then herald check --file FILE")

	backup := filepath.Join(t.TempDir(), "now.db")
	out, err := herald(t, "backup", "--data", dir, "--out", backup)
	require.NoError(t, err, out)
	out, code = heraldExit(t, "check", "--file", backup)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "database file  "+backup)
	require.Contains(t, out, "  users                             1\n")
	require.Contains(t, out, "  accounts                          9\n")
	require.Contains(t, out, "bbolt's consistency check")
	require.Contains(t, out, "result         sound: no problems found")

	// Without its admin socket, the server is still found by its lock on the file.
	require.NoError(t, os.Remove(filepath.Join(dir, "admin.sock")))
	out, code = heraldExit(t, "check", "--data", dir)
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "herald.db is locked by another process")
	p.stop()

	out, code = heraldExit(t, "check", "--data", dir)
	require.Equal(t, 0, code, out)
	out, code = heraldExit(t, "check", "--data", t.TempDir())
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "there is no database file at ")
	out, code = heraldExit(t, "check")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "--data DIR or --file FILE is required")
}

// A backup taken while 16 clients create and publish holds every write acknowledged before the
// backup began. Restored as the documented procedure says (the backup copied into an empty data
// directory as herald.db, with secret.key), it checks sound and a new server serves every one of
// those writes; writes sent after the backup ended are not in it.
func TestBackupUnderLoadRestores(t *testing.T) {
	t.Parallel()
	simURL := startSim(t, "--limit-scale", "100")
	dir := t.TempDir()
	flags := []string{"--sandbox", "--sim-url", simURL, "--budget-scale", "100", "--plan-limits", "pro=1000000"}
	p := startServer(t, dir, flags...)
	key := sandboxKey(t, dir)
	targets := quotedIDs(accountsByPlatform(t, p, key), "bluesky", "linkedin")
	require.Len(t, targets, 2)

	type write struct {
		post, job, content string
		sent               time.Time
	}
	var (
		mu      sync.Mutex
		acked   []write
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		ackedCh = make(chan struct{}, 1<<16)
	)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				content := fmt.Sprintf("client %d write %d", w, i)
				path, want := "/v1/posts", 201
				if i%2 == 1 {
					path, want = "/v1/posts/publish", 202
				}
				sent := time.Now()
				status, body := p.request(key, "POST", path, `{"content":"`+content+`","platforms":[`+strings.Join(targets, ",")+`]}`)
				if status != want {
					t.Errorf("%s: %d %s", path, status, body)
					return
				}
				var r struct {
					ID         string `json:"id"`
					PostID     string `json:"post_id"`
					TrackingID string `json:"tracking_id"`
				}
				if err := json.Unmarshal(body, &r); err != nil {
					t.Error(err)
					return
				}
				wr := write{post: r.ID, content: content, sent: sent}
				if want == 202 {
					wr.post, wr.job = r.PostID, r.TrackingID
				}
				mu.Lock()
				acked = append(acked, wr)
				mu.Unlock()
				ackedCh <- struct{}{}
			}
		}(w)
	}
	waitAcks := func(n int) {
		for i := 0; i < n; i++ {
			select {
			case <-ackedCh:
			case <-time.After(30 * time.Second):
				t.Fatalf("the clients stopped after %d acknowledged writes", i)
			}
		}
	}
	waitAcks(300)

	mu.Lock()
	before := append([]write(nil), acked...)
	mu.Unlock()
	backup := filepath.Join(t.TempDir(), "herald-backup.db")
	out, err := herald(t, "backup", "--data", dir, "--out", backup)
	require.NoError(t, err, out)
	backupEnded := time.Now()
	// Writes sent once the backup had ended, which it cannot hold. They are counted by when they
	// were sent: acknowledgements still in the channel may be of writes made during the backup.
	sentAfter := func() (after []write) {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range acked {
			if w.sent.After(backupEnded) {
				after = append(after, w)
			}
		}
		return after
	}
	for len(sentAfter()) < 200 {
		select {
		case <-ackedCh:
		case <-time.After(30 * time.Second):
			t.Fatalf("the clients stopped after %d writes sent once the backup had ended", len(sentAfter()))
		}
	}
	close(stop)
	wg.Wait()
	p.stop()
	after := sentAfter()
	require.NotEmpty(t, after)

	out, code := heraldExit(t, "check", "--file", backup)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "result         sound: no problems found")

	// The restore procedure of docs/operations.md.
	restored := t.TempDir()
	b, err := os.ReadFile(backup)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(restored, "herald.db"), b, 0o600))
	secret, err := os.ReadFile(filepath.Join(dir, "secret.key"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(restored, "secret.key"), secret, 0o600))
	out, code = heraldExit(t, "check", "--data", restored)
	require.Equal(t, 0, code, out)

	p2 := startServer(t, restored, flags...)
	for _, w := range before {
		status, body := p2.request(key, "GET", "/v1/posts/"+w.post, "")
		require.Equal(t, 200, status, "post %s (%q), acknowledged before the backup began, is not in it: %s", w.post, w.content, body)
		require.Contains(t, string(body), w.content)
		if w.job != "" {
			status, body := p2.request(key, "GET", "/v1/jobs/"+w.job, "")
			require.Equal(t, 200, status, "job %s, acknowledged before the backup began, is not in it: %s", w.job, body)
		}
	}
	for _, w := range after {
		status, _ := p2.request(key, "GET", "/v1/posts/"+w.post, "")
		require.Equal(t, 404, status, "post %s was sent after the backup ended", w.post)
	}
	t.Logf("%d writes acknowledged before the backup began, all restored; %d sent after it ended, none in it; %d in all", len(before), len(after), len(acked))
}
