package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// profileDir is --profile: where the profiles of each measured phase go ("" for none).
var profileDir string

// current is the scenario server a measured phase drives (the last one started and not yet
// closed); profiles are taken of it.
var (
	currentMu sync.Mutex
	current   *Env
)

func setCurrent(e *Env) {
	currentMu.Lock()
	current = e
	currentMu.Unlock()
}

// closeCurrent hands "current" back to the server that spawned e once e is closed.
func closeCurrent(e *Env) {
	currentMu.Lock()
	if current == e {
		current = e.parent
	}
	currentMu.Unlock()
}

// freeAddr returns a loopback address nothing listens on (for a server's --debug-addr).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// debugAddrOf returns the --debug-addr among a server's flags.
func debugAddrOf(args []string) string {
	for i, a := range args {
		if a == "--debug-addr" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--debug-addr="); ok {
			return v
		}
	}
	return ""
}

// profiling is the profile of one measured phase, taken in the background while it runs.
type profiling struct {
	dir  string
	done chan struct{}
	err  error
	log  io.Writer
}

// beginProfile starts profiling the current server for the measured phase of drive name (at
// most d, and at most the run's duration for phases that stop on a count), when --profile is
// set: the CPU profile over the phase, the allocations made during it (two snapshots of
// /debug/pprof/allocs, the first the base of the second) and each thread's CPU from /proc. A
// scenario's second phase of the same name gets a folder of its own (name-2, …).
func beginProfile(log io.Writer, name string, d time.Duration) *profiling {
	currentMu.Lock()
	e := current
	currentMu.Unlock()
	if profileDir == "" || e == nil || e.debug == "" || e.cmd == nil || e.cmd.Process == nil {
		return nil
	}
	if e.Duration > 0 && d > e.Duration {
		d = e.Duration
	}
	secs := max(1, int(d.Round(time.Second)/time.Second))
	dir := filepath.Join(profileDir, name)
	for i := 2; ; i++ {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		dir = filepath.Join(profileDir, fmt.Sprintf("%s-%d", name, i))
	}
	p := &profiling{dir: dir, done: make(chan struct{}), log: log}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.err = err
		close(p.done)
		return p
	}
	base, pid := "http://"+e.debug+"/debug/pprof/", e.cmd.Process.Pid
	threads0 := readThreads(pid)
	allocs0 := filepath.Join(dir, "allocs-start.pb.gz")
	p.err = fetchTo(base+"allocs", allocs0, 30*time.Second)
	go func() {
		defer close(p.done)
		start := time.Now()
		err := fetchTo(fmt.Sprintf("%sprofile?seconds=%d", base, secs), filepath.Join(dir, "cpu.pb.gz"), time.Duration(secs)*time.Second+time.Minute)
		elapsed := time.Since(start)
		threads1 := readThreads(pid)
		if err == nil {
			err = fetchTo(base+"allocs", filepath.Join(dir, "allocs.pb.gz"), 30*time.Second)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "threads.txt"), []byte(threadReport(pid, threads0, threads1, elapsed)), 0o644)
		}
		if p.err == nil {
			p.err = err
		}
	}()
	return p
}

// end waits for the profile and prints its top buckets (through `go tool pprof` when the go
// command is on PATH) and the threads' CPU.
func (p *profiling) end() {
	if p == nil {
		return
	}
	<-p.done
	if p.err != nil {
		fmt.Fprintf(p.log, "\nprofile %s: %v\n", p.dir, p.err)
		return
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "\n== profile of the measured phase in %s\n", p.dir)
	if t, err := os.ReadFile(filepath.Join(p.dir, "threads.txt")); err == nil {
		out.Write(t)
	}
	if goBin, err := exec.LookPath("go"); err == nil {
		top := func(title, file string, args ...string) {
			cmd := exec.Command(goBin, append(append([]string{"tool", "pprof", "-top", "-nodecount=25"}, args...), file)...)
			b, err := cmd.Output()
			if err != nil {
				fmt.Fprintf(&out, "\n%s: go tool pprof: %v\n", title, err)
				return
			}
			_ = os.WriteFile(filepath.Join(p.dir, strings.ReplaceAll(title, " ", "-")+".txt"), b, 0o644)
			fmt.Fprintf(&out, "\n%s (go tool pprof %s):\n%s", title, strings.Join(append(args, file), " "), b)
		}
		top("cpu top", filepath.Join(p.dir, "cpu.pb.gz"))
		top("cpu top cumulative", filepath.Join(p.dir, "cpu.pb.gz"), "-cum")
		allocArgs := []string{"-base", filepath.Join(p.dir, "allocs-start.pb.gz")}
		top("alloc space top", filepath.Join(p.dir, "allocs.pb.gz"), append([]string{"-sample_index=alloc_space"}, allocArgs...)...)
		top("alloc objects top", filepath.Join(p.dir, "allocs.pb.gz"), append([]string{"-sample_index=alloc_objects"}, allocArgs...)...)
	} else {
		fmt.Fprintf(&out, "(no go command on PATH: read the profiles with `go tool pprof -top %s`)\n", filepath.Join(p.dir, "cpu.pb.gz"))
	}
	_, _ = p.log.Write(out.Bytes())
}

// fetchTo saves the body of a GET to file.
func fetchTo(url, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s %s", url, resp.Status, bytes.TrimSpace(b))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// threadCPU is one thread's user and system CPU (clock ticks) from /proc/PID/task/TID/stat.
type threadCPU struct {
	tid        int
	name       string
	user, syst int64
	runs       int64 // times the thread was put on a CPU (/proc/…/schedstat): its wake-ups
}

// readThreads reads the CPU of each thread of a process (Linux; nil elsewhere).
func readThreads(pid int) map[int]threadCPU {
	dirs, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	out := make(map[int]threadCPU, len(dirs))
	for _, d := range dirs {
		tid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		name, f, ok := statFields(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
		if !ok || len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		t := threadCPU{tid: tid, name: name, user: u, syst: s}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid)); err == nil {
			if f := strings.Fields(string(st)); len(f) == 3 {
				t.runs, _ = strconv.ParseInt(f[2], 10, 64)
			}
		}
		out[tid] = t
	}
	return out
}

// sysmonCPU is the CPU used so far by a Go process's sysmon thread: the first thread the
// runtime starts after the main one (Linux; 0 elsewhere).
func sysmonCPU(pid int) time.Duration {
	tid := 0
	threads := readThreads(pid)
	for t := range threads {
		if t != pid && (tid == 0 || t < tid) {
			tid = t
		}
	}
	if tid == 0 {
		return 0
	}
	return time.Duration(threads[tid].user+threads[tid].syst) * 10 * time.Millisecond
}

// threadReport lists each thread's CPU during the phase, most first, and how often it was
// woken (put on a CPU) per second. Go names no thread: the
// main thread's id is the process's, and the first thread the runtime starts after it (the
// lowest other id) is sysmon, its monitor, which runs without a P and so never shows in a CPU
// profile.
func threadReport(pid int, before, after map[int]threadCPU, elapsed time.Duration) string {
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	type row struct {
		threadCPU
		total time.Duration
	}
	var rows []row
	var sum time.Duration
	sysmon := 0
	for tid := range after {
		if tid != pid && (sysmon == 0 || tid < sysmon) {
			sysmon = tid
		}
	}
	for tid, a := range after {
		b := before[tid] // zero for a thread started during the phase
		r := row{threadCPU: threadCPU{tid: tid, name: a.name, user: a.user - b.user, syst: a.syst - b.syst, runs: a.runs - b.runs}}
		r.total = time.Duration(r.user+r.syst) * tick
		sum += r.total
		if r.total > 0 || tid == sysmon {
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].total != rows[j].total {
			return rows[i].total > rows[j].total
		}
		return rows[i].tid < rows[j].tid
	})
	var w strings.Builder
	fmt.Fprintf(&w, "threads' CPU over %.1fs: %.2fs in all (%.0f%% of one core), %d threads of %d with CPU\n",
		elapsed.Seconds(), sum.Seconds(), 100*sum.Seconds()/elapsed.Seconds(), len(rows), len(after))
	fmt.Fprintf(&w, "%8s  %8s  %8s  %8s  %6s  %9s  %s\n", "tid", "user s", "sys s", "total s", "share", "wakeups/s", "thread")
	for _, r := range rows {
		what := r.name
		switch r.tid {
		case pid:
			what += " (main thread)"
		case sysmon:
			what += " (sysmon: Go's monitor thread, not in the CPU profile)"
		}
		share := 0.0
		if sum > 0 {
			share = 100 * r.total.Seconds() / sum.Seconds()
		}
		fmt.Fprintf(&w, "%8d  %8.2f  %8.2f  %8.2f  %5.1f%%  %9.0f  %s\n", r.tid, (time.Duration(r.user) * tick).Seconds(), (time.Duration(r.syst) * tick).Seconds(), r.total.Seconds(), share, float64(r.runs)/elapsed.Seconds(), what)
	}
	return w.String()
}
