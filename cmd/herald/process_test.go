package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

var heraldBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-bin-")
	if err != nil {
		panic(err)
	}
	heraldBin = filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", heraldBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build herald:", err)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a `herald serve` process.
type proc struct {
	t   *testing.T
	cmd *exec.Cmd
	url string
	// metricsURL is the base URL of its metrics listener (on a free loopback port).
	metricsURL string
	logs       *bytes.Buffer
	mu         sync.Mutex // guards logs
	done       chan struct{}
}

func (p *proc) appendLog(line string) {
	p.mu.Lock()
	p.logs.WriteString(line + "\n")
	p.mu.Unlock()
}

// logText is what the server logged so far.
func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func startServer(t *testing.T, dir string, extra ...string) *proc {
	t.Helper()
	return startCommand(t, exec.Command(heraldBin, serveArgs(dir, extra...)...))
}

// serveArgs are the arguments of `herald serve` on dir with every listener on a free loopback
// port, and extra.
func serveArgs(dir string, extra ...string) []string {
	return append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-format", "json",
		// Tests upload kilobytes; the deployment's 1 GiB floor would refuse them on a nearly full disk.
		"--media-min-free-bytes", "16777216"}, extra...)
}

// startCommand starts cmd, a `herald serve` (possibly wrapped), and waits until it listens.
func startCommand(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &proc{t: t, cmd: cmd, logs: &bytes.Buffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.appendLog(line)
			var l struct{ Msg string }
			if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "metrics on http://") {
				p.metricsURL = strings.TrimPrefix(l.Msg, "metrics on ") // logged before "listening on"
			}
			if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "listening on http://") {
				addr <- strings.TrimPrefix(l.Msg, "listening on ")
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	select {
	case p.url = <-addr:
	case <-p.done:
		t.Fatalf("herald serve exited: %s", p.logText())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("herald serve did not start: %s", p.logText())
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) kill9() {
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
}

func (p *proc) request(key, method, path, body string) (int, []byte) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	require.NoError(p.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func herald(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(heraldBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func sandboxKey(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "sandbox-api-key"))
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, "sandbox-api-key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	return strings.TrimSpace(string(b))
}

func firstAccount(t *testing.T, p *proc, key string) string {
	status, body := p.request(key, "GET", "/v1/accounts", "")
	require.Equal(t, 200, status)
	var accts struct {
		Data []struct{ ID, Platform string }
	}
	require.NoError(t, json.Unmarshal(body, &accts))
	require.Len(t, accts.Data, 9, "one sandbox account on each network")
	return accts.Data[0].ID
}

// accountsByPlatform lists the sandbox user's accounts: platform → account id.
func accountsByPlatform(t *testing.T, p *proc, key string) map[string]string {
	t.Helper()
	status, body := p.request(key, "GET", "/v1/accounts", "")
	require.Equal(t, 200, status)
	var accts struct {
		Data []struct{ ID, Platform string }
	}
	require.NoError(t, json.Unmarshal(body, &accts))
	ids := map[string]string{}
	for _, a := range accts.Data {
		ids[a.Platform] = a.ID
	}
	return ids
}

// quotedIDs are the accounts of these platforms, each quoted for a JSON array.
func quotedIDs(ids map[string]string, platforms ...string) []string {
	out := make([]string, 0, len(platforms))
	for _, pl := range platforms {
		if id, ok := ids[pl]; ok {
			out = append(out, `"`+id+`"`)
		}
	}
	return out
}

// eachBackend runs test on a server storing in bbolt, then on one storing in PostgreSQL: store is
// the --store flag to start it with (none for bbolt).
func eachBackend(t *testing.T, test func(t *testing.T, store []string)) {
	t.Run("bbolt", func(t *testing.T) { test(t, nil) })
	t.Run("postgres", func(t *testing.T) { test(t, []string{"--store", pgtest.URL(t)}) })
}

// A post acknowledged with 201 survives a SIGKILL of the server right after the response.
func TestAcknowledgedPostSurvivesSIGKILL(t *testing.T) {
	eachBackend(t, acknowledgedPostSurvivesSIGKILL)
}

func acknowledgedPostSurvivesSIGKILL(t *testing.T, store []string) {
	dir := t.TempDir()
	p := startServer(t, dir, append(store, "--sandbox")...)
	key := sandboxKey(t, dir)
	acct := firstAccount(t, p, key)
	var ids []string
	for i := 0; i < 20; i++ {
		status, body := p.request(key, "POST", "/v1/posts", fmt.Sprintf(`{"content":"durable %d","platforms":["%s"]}`, i, acct))
		require.Equal(t, 201, status, string(body))
		var r struct{ ID string }
		require.NoError(t, json.Unmarshal(body, &r))
		ids = append(ids, r.ID)
	}
	p.kill9()

	p2 := startServer(t, dir, append(store, "--sandbox")...)
	require.Equal(t, key, sandboxKey(t, dir), "the sandbox is created once")
	for i, id := range ids {
		status, body := p2.request(key, "GET", "/v1/posts/"+id, "")
		require.Equal(t, 200, status, string(body))
		require.Contains(t, string(body), fmt.Sprintf("durable %d", i))
	}
}

// The key commands work offline, go through the admin socket while a server runs (so that a
// revocation is refused on the very next request), and never hang on the lock.
func TestKeyCommandsOnlineAndOffline(t *testing.T) {
	dir := t.TempDir()
	out, err := herald(t, "users", "create", "--data", dir, "--email", "ops@example.com", "--name", "Ops", "--plan", "growth", "--timezone", "Europe/Paris")
	require.NoError(t, err, out)
	var u struct{ ID, Email, Plan, Timezone string }
	require.NoError(t, json.Unmarshal([]byte(out), &u))
	require.Equal(t, "growth", u.Plan)
	require.Equal(t, "Europe/Paris", u.Timezone)

	out, err = herald(t, "users", "create", "--data", dir, "--email", "bad", "--plan", "growth")
	require.Error(t, err)
	require.Contains(t, out, "not an e-mail address")
	out, err = herald(t, "users", "create", "--data", dir, "--email", "x@example.com", "--timezone", "Mars/Olympus")
	require.Error(t, err)
	require.Contains(t, out, "IANA")

	out, err = herald(t, "keys", "create", "--data", dir, "--email", "ops@example.com", "--name", "ci", "--expires-in", "720h")
	require.NoError(t, err, out)
	var k struct{ ID, Name, Prefix, Key string }
	require.NoError(t, json.Unmarshal([]byte(out), &k))
	require.True(t, strings.HasPrefix(k.Key, "sk_live_"))
	require.GreaterOrEqual(t, len(k.Key)-len("sk_live_"), 32)
	require.True(t, strings.HasPrefix(k.Key, k.Prefix))

	p := startServer(t, dir)
	status, _ := p.request(k.Key, "GET", "/v1/me", "")
	require.Equal(t, 200, status)

	// Online: through the admin socket.
	info, err := os.Stat(filepath.Join(dir, "admin.sock"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	out, err = herald(t, "keys", "list", "--data", dir, "--email", "ops@example.com")
	require.NoError(t, err, out)
	require.Contains(t, out, k.ID)
	require.NotContains(t, out, k.Key, "a listing never shows the secret")

	out, err = herald(t, "keys", "regenerate", "--data", dir, k.ID)
	require.NoError(t, err, out)
	var k2 struct{ ID, Key string }
	require.NoError(t, json.Unmarshal([]byte(out), &k2))
	require.Equal(t, k.ID, k2.ID)
	status, _ = p.request(k.Key, "GET", "/v1/me", "")
	require.Equal(t, 401, status, "the old secret is refused at once")
	status, _ = p.request(k2.Key, "GET", "/v1/me", "")
	require.Equal(t, 200, status)

	out, err = herald(t, "keys", "revoke", "--data", dir, k.ID)
	require.NoError(t, err, out)
	status, _ = p.request(k2.Key, "GET", "/v1/me", "")
	require.Equal(t, 401, status, "refused on the very next request")

	out, err = herald(t, "keys", "revoke", "--data", dir, "not-an-id")
	require.Error(t, err)
	require.Contains(t, out, "not a key id")

	// Backup through the socket while the server runs.
	backup := filepath.Join(t.TempDir(), "backup.db")
	out, err = herald(t, "backup", "--data", dir, "--out", backup)
	require.NoError(t, err, out)
	st, err := os.Stat(backup)
	require.NoError(t, err)
	require.Positive(t, st.Size())
}

// With the database held by a process that has no admin socket, a command fails within about 2 s
// with a message saying what to do.
func TestCommandsDoNotHangOnTheLock(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir)
	_ = p
	require.NoError(t, os.Remove(filepath.Join(dir, "admin.sock")))
	start := time.Now()
	out, err := herald(t, "keys", "list", "--data", dir, "--email", "x@example.com")
	require.Error(t, err)
	require.Less(t, time.Since(start), 4*time.Second)
	require.Contains(t, out, "locked by another process")
}

func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), p.logText())
	_, err := os.Stat(filepath.Join(dir, "admin.sock"))
	require.True(t, os.IsNotExist(err), "the admin socket is removed")
}
