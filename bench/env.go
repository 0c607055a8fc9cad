package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Env is a running `herald serve` process in sandbox mode and a client for it.
type Env struct {
	Dir string
	URL string
	// MetricsURL is the base URL of the server's metrics listener (/metrics is not on URL).
	MetricsURL string
	Key        string
	// jar holds the demo user's dashboard session once Session signed in (sync.Once: the
	// scenarios that open connect links or pages sign in; the others leave the server without a
	// password hash in its memory, so that memory-at-rest measures Herald at rest).
	jar         http.CookieJar
	jarErr      error
	jarOnce     sync.Once
	Accounts    []string // account ids of the sandbox user
	Quick       bool
	Duration    time.Duration
	Connections int
	Client      *http.Client

	cmd    *exec.Cmd
	log    io.Writer
	peakKB int
	// peak is the most anonymous and file-backed memory seen by watchRSS's samples (every 0.5 s):
	// the split of the peak that VmHWM records whole.
	peakMu sync.Mutex
	peak   memKB
	sim    string // the sandbox simulator's URL
	// parent is the env that spawned this one; childPeakMB is the peak RSS of the last child
	// closed, reported for the scenario that spawned it.
	parent      *Env
	childPeakMB float64

	// StartedAt is when the process was started; ListeningAt when it logged "listening on";
	// ReadyAt when /readyz first answered 200 (only after Restart, whose address is known before
	// the process starts, so that readiness is polled from the start).
	StartedAt, ListeningAt, ReadyAt time.Time

	extra    []string // the extra serve flags, for Restart
	environ  []string // the variables added to its environment, for Restart
	debug    string   // the server's --debug-addr (pprof), if any
	waitOnce sync.Once
	exited   chan struct{}
}

// StartEnv starts the server process from this very binary, with extra serve flags, on a fresh
// data directory.
func StartEnv(log io.Writer, extra ...string) (*Env, error) {
	store, err := freshStore()
	if err != nil {
		return nil, err
	}
	if store != "" {
		extra = append([]string{"--store", store}, extra...)
	}
	dir, err := os.MkdirTemp("", "herald-bench-")
	if err != nil {
		return nil, err
	}
	e, err := startIn(dir, log, "", extra, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return e, nil
}

// startIn starts the server on the data directory under dir (fresh or not). A non-empty addr
// (host:port) is where it must listen; readiness is then polled from the process's start.
// environ are variables added to the process's environment (NAME=value).
func startIn(dir string, log io.Writer, addr string, extra, environ []string) (*Env, error) {
	exe, err := self()
	if err != nil {
		return nil, err
	}
	if serverBin != "" {
		exe = serverBin
	}
	e := &Env{Dir: dir, log: log, extra: extra, environ: environ, debug: debugAddrOf(extra)}
	e.cmd = exec.Command(exe, "serve", "--sandbox", "--data", filepath.Join(dir, "data"),
		"--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-format", "json",
		"--plan-limits", "pro=2000000000",
		// The scenarios' one demo user stands for many clients: neither its hourly quota nor its
		// open streams are capped.
		"--max-streams-per-user", "-1")
	e.cmd.Args = append(e.cmd.Args, extra...)
	if addr != "" {
		e.cmd.Args = append(e.cmd.Args, "--addr", addr)
	}
	if len(environ) > 0 {
		e.cmd.Env = append(os.Environ(), environ...)
	}
	stderr, err := e.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	logTo := io.Discard
	if d := os.Getenv("HERALD_BENCH_LOGS"); d != "" {
		// Each server's log, kept for reading after a run (a file per server, named after its
		// directory).
		f, err := os.Create(filepath.Join(d, filepath.Base(dir)+".log"))
		if err != nil {
			return nil, err
		}
		logTo = f
	}
	e.StartedAt = time.Now()
	if err := e.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan time.Time, 1)
	if addr != "" {
		go pollReady("http://"+addr, ready)
	}
	listening := make(chan string, 1)
	// ended is closed when the process closes its stderr (it exited) before it listened; last is
	// then its last line, which says why.
	ended := make(chan struct{})
	var last string
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		listened := false
		defer func() {
			if !listened {
				close(ended)
			}
		}()
		if f, ok := logTo.(*os.File); ok {
			defer f.Close()
		}
		for sc.Scan() {
			_, _ = fmt.Fprintf(logTo, "%s\n", sc.Bytes())
			var line struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				if !listened {
					last = sc.Text()
				}
				continue
			}
			if u, ok := strings.CutPrefix(line.Msg, "sandbox network simulator listening on "); ok {
				e.sim = u
			}
			if u, ok := strings.CutPrefix(line.Msg, "metrics on "); ok { // logged before "listening on"
				e.MetricsURL = u
			}
			if strings.HasPrefix(line.Msg, "listening on ") {
				e.ListeningAt = time.Now()
				listened = true
				listening <- strings.TrimPrefix(line.Msg, "listening on ")
			}
		}
	}()
	select {
	case e.URL = <-listening:
	case <-ended:
		e.Kill()
		return nil, fmt.Errorf("herald serve exited before it listened: %s", last)
	case <-time.After(3 * time.Minute):
		e.Kill()
		return nil, fmt.Errorf("herald serve did not start within 3 minutes")
	}
	if addr != "" {
		select {
		case e.ReadyAt = <-ready:
		case <-time.After(time.Minute):
			e.Kill()
			return nil, fmt.Errorf("herald serve logged that it listens but /readyz never answered 200")
		}
	}
	key, err := os.ReadFile(filepath.Join(dir, "data", "sandbox-api-key"))
	if err != nil {
		e.Kill()
		return nil, err
	}
	e.Key = strings.TrimSpace(string(key))
	e.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 0}}
	var accounts struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := e.getJSON("/v1/accounts", &accounts); err != nil {
		e.Kill()
		return nil, err
	}
	for _, a := range accounts.Data {
		e.Accounts = append(e.Accounts, a.ID)
	}
	go e.watchRSS()
	setCurrent(e)
	return e, nil
}

// Session returns a cookie jar holding the demo user's dashboard session, signing in on the first
// call.
func (e *Env) Session() (http.CookieJar, error) {
	e.jarOnce.Do(func() { e.jar, e.jarErr = e.signIn(filepath.Join(e.Dir, "data", "sandbox-password")) })
	return e.jar, e.jarErr
}

// signIn signs the demo user in to the dashboard with the sandbox's password and returns the
// cookie jar holding the session: connect links open only in a browser signed in as the user who
// asked for them.
func (e *Env) signIn(passwordFile string) (http.CookieJar, error) {
	pw, err := os.ReadFile(passwordFile)
	if err != nil {
		return nil, err
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Jar: jar, Transport: e.Client.Transport, Timeout: 30 * time.Second}
	body, _ := json.Marshal(map[string]string{"email": "demo@herald.local", "password": strings.TrimSpace(string(pw))})
	resp, err := c.Post(e.URL+"/api/session", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sign in as the sandbox user: %s", resp.Status)
	}
	return jar, nil
}

func (e *Env) getJSON(path string, v any) error {
	req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.Key)
	resp, err := e.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (e *Env) watchRSS() {
	for e.cmd.ProcessState == nil {
		if kb := readVmHWM(e.cmd.Process.Pid); kb > e.peakKB {
			e.peakKB = kb
		}
		m := readMemKB(e.cmd.Process.Pid)
		e.peakMu.Lock()
		e.peak.anon, e.peak.file = max(e.peak.anon, m.anon), max(e.peak.file, m.file)
		e.peakMu.Unlock()
		time.Sleep(500 * time.Millisecond)
	}
}

// PeakSplitMB is the most anonymous memory (Herald's heap, stacks and runtime) and the most
// file-backed memory (pages of the bbolt file mapped by its reads: the kernel's page cache,
// reclaimable) seen so far, sampled every 0.5 s.
func (e *Env) PeakSplitMB() (anon, file float64) {
	m := readMemKB(e.cmd.Process.Pid)
	e.peakMu.Lock()
	defer e.peakMu.Unlock()
	e.peak.anon, e.peak.file = max(e.peak.anon, m.anon), max(e.peak.file, m.file)
	return float64(e.peak.anon) / 1024, float64(e.peak.file) / 1024
}

// MemoryTarget is the peak RSS the publishing scenarios are held to.
const MemoryTarget = 512

// memoryNote says the server's peak RSS against MemoryTarget, with its split.
func (e *Env) memoryNote() string {
	anon, file := e.PeakSplitMB()
	return fmt.Sprintf("peak RSS %.0f MB (target %d MB; sampled split: anon at most %.0f MB, file-backed at most %.0f MB — pages of the bbolt file mapped by its reads, the kernel's reclaimable page cache)",
		e.PeakRSSMB(), MemoryTarget, anon, file)
}

func readVmHWM(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
	}
	return 0
}

// PeakRSSMB is the server's peak resident memory so far.
func (e *Env) PeakRSSMB() float64 {
	if kb := readVmHWM(e.cmd.Process.Pid); kb > e.peakKB {
		e.peakKB = kb
	}
	return float64(e.peakKB) / 1024
}

// Spawn starts another server for one scenario, with its own flags and data directory.
func (e *Env) Spawn(extra ...string) (*Env, error) {
	if debugAddr != "" {
		// The base server runs without it, so that the scenario's own server can bind it.
		extra = append([]string{"--debug-addr", debugAddr}, extra...)
	}
	n, err := StartEnv(e.log, extra...)
	if err != nil {
		return nil, err
	}
	n.Quick, n.Duration, n.Connections = e.Quick, e.Duration, e.Connections
	n.parent = e
	return n, nil
}

// Close stops the server (SIGTERM, then SIGKILL) and removes the data directory.
func (e *Env) Close() {
	if e.parent != nil && e.cmd != nil && e.cmd.Process != nil {
		e.parent.childPeakMB = e.PeakRSSMB()
	}
	e.Stop()
	closeCurrent(e)
	_ = os.RemoveAll(e.Dir)
}

// exit returns a channel closed once the process has exited (Wait is called once).
func (e *Env) exit() <-chan struct{} {
	e.waitOnce.Do(func() {
		e.exited = make(chan struct{})
		go func() { _ = e.cmd.Wait(); close(e.exited) }()
	})
	return e.exited
}

// Stop stops the server gracefully (SIGTERM, then SIGKILL after 15 s) and keeps its data
// directory.
func (e *Env) Stop() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exit():
	case <-time.After(15 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.exit()
	}
}

// Kill ends the server with SIGKILL, the way a crash does, and keeps its data directory.
func (e *Env) Kill() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	_ = e.cmd.Process.Kill()
	<-e.exit()
}

// Restart starts a new server process on this one's data directory and address, with the same
// flags plus extra, once this one has stopped (Stop or Kill first). The new Env owns the data
// directory: close it, not this one.
func (e *Env) Restart(extra ...string) (*Env, error) {
	n, err := startIn(e.Dir, e.log, strings.TrimPrefix(e.URL, "http://"), append(append([]string(nil), e.extra...), extra...), e.environ)
	if err != nil {
		return nil, err
	}
	n.Quick, n.Duration, n.Connections = e.Quick, e.Duration, e.Connections
	n.parent = e.parent
	return n, nil
}

// pollReady sends the time /readyz first answers 200.
func pollReady(base string, ready chan<- time.Time) {
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ready <- time.Now()
			return
		}
	}
}

// selfBin is the herald binary the bench runs as ("" for this process's own executable): a test
// of the bench sets it, since its own executable is the test binary.
var selfBin string

func self() (string, error) {
	if selfBin != "" {
		return selfBin, nil
	}
	return os.Executable()
}

// serverBin is --server-bin: another build's herald to run the scenarios' servers (an A/B
// comparison of two builds under the same scenarios and load generator).
var serverBin string

// debugAddr is --debug-addr: the pprof address given to each scenario's own server.
var debugAddr string

// storeBase is the PostgreSQL database of --store ("" for bbolt); freshStore returns a new, empty
// schema of it for each server and ceiling, and dropStores drops them once the run is over, so
// that runs one after another on one database do not each start beside the tables of all those
// before (a database grown to gigabytes makes its disk, not the server, the figure).
var storeBase string

var freshSchemas struct {
	sync.Mutex
	names []string
}

func freshStore() (string, error) {
	if storeBase == "" {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := fmt.Sprintf("herald_bench_%d", time.Now().UnixNano())
	url, err := persistence.CreatePostgresSchema(ctx, storeBase, name)
	if err == nil {
		freshSchemas.Lock()
		freshSchemas.names = append(freshSchemas.names, name)
		freshSchemas.Unlock()
	}
	return url, err
}

// dropStores drops the schemas freshStore made, the servers that used them stopped.
func dropStores(log io.Writer) {
	freshSchemas.Lock()
	names := freshSchemas.names
	freshSchemas.names = nil
	freshSchemas.Unlock()
	for _, name := range names {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := persistence.DropPostgresSchema(ctx, storeBase, name); err != nil {
			fmt.Fprintf(log, "bench: the schema %s stays: %v\n", name, err)
		}
		cancel()
	}
}
