package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Env is a running `herald serve` process in sandbox mode and a client for it.
type Env struct {
	Dir         string
	URL         string
	Key         string
	Accounts    []string // account ids of the sandbox user
	Quick       bool
	Duration    time.Duration
	Connections int
	Client      *http.Client

	cmd    *exec.Cmd
	log    io.Writer
	peakKB int
	sim    string // the sandbox simulator's URL
	// parent is the env that spawned this one; childPeakMB is the peak RSS of the last child
	// closed, reported for the scenario that spawned it.
	parent      *Env
	childPeakMB float64
}

// StartEnv starts the server process from this very binary, with extra serve flags.
func StartEnv(log io.Writer, extra ...string) (*Env, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herald-bench-")
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: dir, log: log}
	e.cmd = exec.Command(exe, "serve", "--sandbox", "--data", filepath.Join(dir, "data"),
		"--addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0", "--log-format", "json",
		"--plan-limits", "pro=2000000000")
	e.cmd.Args = append(e.cmd.Args, extra...)
	stderr, err := e.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := e.cmd.Start(); err != nil {
		return nil, err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if u, ok := strings.CutPrefix(line.Msg, "sandbox network simulator listening on "); ok {
				e.sim = u
			}
			if strings.HasPrefix(line.Msg, "listening on ") {
				addr <- strings.TrimPrefix(line.Msg, "listening on ")
			}
		}
	}()
	select {
	case e.URL = <-addr:
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("herald serve did not start within 30s")
	}
	key, err := os.ReadFile(filepath.Join(dir, "data", "sandbox-api-key"))
	if err != nil {
		e.Close()
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
		e.Close()
		return nil, err
	}
	for _, a := range accounts.Data {
		e.Accounts = append(e.Accounts, a.ID)
	}
	go e.watchRSS()
	return e, nil
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
		time.Sleep(500 * time.Millisecond)
	}
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
	if e.cmd != nil && e.cmd.Process != nil {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = e.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = e.cmd.Process.Kill()
			<-done
		}
	}
	_ = os.RemoveAll(e.Dir)
}
