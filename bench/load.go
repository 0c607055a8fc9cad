package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
)

// latencies collects per-request durations.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

func (l *latencies) pct(p float64) float64 {
	if len(l.d) == 0 {
		return 0
	}
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	i := int(float64(len(l.d)-1) * p)
	return float64(l.d[i]) / float64(time.Millisecond)
}

// progress draws a progress bar on the log while a phase runs.
func progress(w io.Writer, name string, d time.Duration, done <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			fmt.Fprintf(w, "\r%-24s [%s] done%20s\n", name, bar(1), "")
			return
		case <-t.C:
			f := float64(time.Since(start)) / float64(d)
			if f > 1 {
				f = 1
			}
			fmt.Fprintf(w, "\r%-24s [%s] %3.0f%%", name, bar(f), f*100)
		}
	}
}

func bar(f float64) string {
	const width = 30
	n := int(f * width)
	return string(bytes.Repeat([]byte("#"), n)) + string(bytes.Repeat([]byte("."), width-n))
}

// keepFirstError is a scenario's notes with drive's own (its first error, if any), which the
// scenario's notes replace, so that a run that counted errors says what the first one was.
func keepFirstError(notes, driven string) string {
	if driven != "" {
		return notes + "; " + driven
	}
	return notes
}

// errStop ends a worker of drive without counting an operation or an error.
var errStop = errors.New("stop")

// drive runs fn from conns workers for d (or until fn returns errStop) and measures it.
func drive(log io.Writer, name string, conns int, d time.Duration, fn func(worker, i int) error) (Result, error) {
	var lat latencies
	var ops, errs atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(d)
	done := make(chan struct{})
	go progress(log, name, d, done)
	prof := beginProfile(log, name, d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conns; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				err := fn(w, i)
				if err == errStop {
					break
				}
				local = append(local, time.Since(t0))
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ops.Add(1)
			}
			lat.add(local)
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	close(done)
	prof.end()
	r := Result{Ops: int(ops.Load()), Seconds: elapsed, Throughput: float64(ops.Load()) / elapsed, Errors: int(errs.Load()),
		P50ms: lat.pct(0.5), P99ms: lat.pct(0.99), P999ms: lat.pct(0.999)}
	if e, ok := firstErr.Load().(error); ok {
		r.Notes = "first error: " + e.Error()
	}
	return r, nil
}

// draftBody is the create request the scenario sends (three targets, a realistic text).
func (e *Env) draftBody(i int) []byte {
	targets := e.Accounts
	if len(targets) > 3 {
		targets = targets[:3]
	}
	ids := ""
	for j, t := range targets {
		if j > 0 {
			ids += ","
		}
		ids += `"` + t + `"`
	}
	return []byte(fmt.Sprintf(`{"content":"Bench draft %d: our autumn collection is out today, with free shipping on every order this week. #launch","platforms":[%s]}`, i, ids))
}

// createDrafts: durable POST /v1/posts at e.Connections, beside the raw bbolt group-commit
// ceiling. It runs on a server of its own, so that the posts it leaves (and their actors, until
// they passivate) weigh on no later scenario.
func createDrafts(base *Env) (Result, error) {
	e, err := base.Spawn()
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	ws, err := e.wires(e.Connections)
	if err != nil {
		return Result{}, err
	}
	defer closeWires(ws)
	// The ceiling is disk-bound and moves by ±10% from one measurement to the next on a shared
	// machine: it is measured before and after the server's run, and the limit is the mean.
	before, ceiling1, err := boltCeiling(e, e.Connections, e.Duration)
	if err != nil {
		return Result{}, err
	}
	cpu0 := processCPU(e.cmd.Process.Pid)
	r, err := drive(e.log, "create-drafts", e.Connections, e.Duration, func(w, i int) error {
		st, b, err := ws[w].do(http.MethodPost, "/v1/posts", e.draftBody(w*1_000_000+i))
		if err != nil {
			return err
		}
		if st != http.StatusCreated {
			return fmt.Errorf("POST /v1/posts: %d %s", st, b)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	cpu := processCPU(e.cmd.Process.Pid) - cpu0
	var server commitStats
	server.writes, _ = e.metric("herald_bbolt_commit_batch_size_sum", "")
	server.commits, _ = e.metric("herald_bbolt_commit_batch_size_count", "")
	server.seconds, _ = e.metric("herald_bbolt_commit_duration_seconds_sum", "")
	after, ceiling2, err := boltCeiling(e, e.Connections, e.Duration)
	if err != nil {
		return r, err
	}
	r.LimitName = ceilingName()
	r.Limit = (before + after) / 2
	r.Notes = keepFirstError(fmt.Sprintf("server CPU %.0f µs per create; server commits: %s; ceiling (the mean of %.0f/s before the server's run and %.0f/s after it) commits: %s and %s (the ceiling's writers wait only for the disk, the server's requests also for HTTP, the actors and the CPU that all of it shares with the load generator)",
		cpu.Seconds()*1e6/float64(max(r.Ops, 1)), server, before, after, ceiling1, ceiling2), r.Notes)
	if storeBase != "" {
		// On PostgreSQL, bbolt's ceiling on this machine in the same run, for the comparison.
		bolt, _, err := ceiling(e, "", e.Connections, e.Duration)
		if err != nil {
			return r, err
		}
		r.Notes += fmt.Sprintf("; raw bbolt group commit in the same run: %.0f/s (this store's ceiling is %.2f of it)", bolt, r.Limit/bolt)
	}
	return r, nil
}

// commitStats sums group commits: writes, commits and the time they took.
type commitStats struct{ writes, commits, seconds float64 }

func (c commitStats) String() string {
	if c.commits == 0 {
		return "none"
	}
	return fmt.Sprintf("%.1f writes per commit, %.2f ms per commit", c.writes/c.commits, c.seconds*1000/c.commits)
}

// processCPU returns the user and system CPU time a process has used (Linux; 0 elsewhere).
func processCPU(pid int) time.Duration {
	st, _ := readProcStat(pid)
	return st.own
}

// procStat is what /proc/<pid>/stat says of a process's CPU: its own user and system time, that
// of its children it has waited for, and its parent.
type procStat struct {
	ppid        int
	own, reaped time.Duration
}

// readProcStat reads a process's procStat (Linux; false elsewhere or when it has ended).
func readProcStat(pid int) (procStat, bool) {
	_, f, ok := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if !ok || len(f) < 15 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, own: clockTicks(f[11], f[12]), reaped: clockTicks(f[13], f[14])}, true
}

// statFields reads a /proc stat file (a process's or a thread's): the command name, and the
// fields after it, which start after the name's last ')' (the name may hold spaces and
// parentheses); f[0] is the state, field 3 of proc(5).
func statFields(path string) (name string, f []string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, false
	}
	open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return "", nil, false
	}
	return string(b[open+1 : closing]), strings.Fields(string(b[closing+1:])), true
}

// clockTicks is the time of the given /proc counters summed, in clock ticks (USER_HZ, 100 on
// Linux).
func clockTicks(fields ...string) time.Duration {
	var n int64
	for _, s := range fields {
		v, _ := strconv.ParseInt(s, 10, 64)
		n += v
	}
	return time.Duration(n) * time.Second / 100
}

// boltCeiling measures the raw group-commit rate of the store the bench runs on (bbolt, or
// PostgreSQL with --store) in this process: conns writers putting post records of the same size
// as the scenario's through the same group committer, with no HTTP and no actors. It is the
// throughput ceiling of durable creates on this machine.
func boltCeiling(e *Env, conns int, d time.Duration) (float64, commitStats, error) {
	store, err := freshStore()
	if err != nil {
		return 0, commitStats{}, err
	}
	return ceiling(e, store, conns, d)
}

// ceilingName names the limit boltCeiling measures.
func ceilingName() string {
	if storeBase != "" {
		return "raw PostgreSQL group commit"
	}
	return "raw bbolt group commit"
}

// ceiling measures the raw group-commit rate on store ("" bbolt, or a PostgreSQL URL).
func ceiling(e *Env, store string, conns int, d time.Duration) (float64, commitStats, error) {
	var stats commitStats
	dir, err := os.MkdirTemp(e.Dir, "ceiling-")
	if err != nil {
		return 0, stats, err
	}
	var mu sync.Mutex
	name := "bbolt ceiling"
	if store != "" {
		name = "PostgreSQL ceiling"
	}
	s, err := persistence.OpenStore(store, dir, persistence.Options{OnCommit: func(n int, d time.Duration, _ error) {
		mu.Lock()
		stats.writes, stats.commits, stats.seconds = stats.writes+float64(n), stats.commits+1, stats.seconds+d.Seconds()
		mu.Unlock()
	}})
	if err != nil {
		return 0, stats, err
	}
	defer s.Close()
	user := uuid.Must(uuid.NewV7()).String()
	r, err := drive(e.log, name, conns, d, func(w, i int) error {
		now := time.Now().UTC()
		p := &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: string(e.draftBody(i)),
			Status: persistence.PostDraft, CreatedAt: now, UpdatedAt: now, MediaIDs: []string{}}
		for _, a := range e.Accounts[:min(3, len(e.Accounts))] {
			p.Targets = append(p.Targets, persistence.Target{AccountID: a, Platform: "linkedin", Status: persistence.TargetPending})
		}
		raw, err := persistence.Encode(p)
		if err != nil {
			return err
		}
		// Read ahead on PostgreSQL, as the server's own creates (persistence.Store.UpdateAhead).
		return s.UpdateAhead(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, raw) })
	})
	if err != nil {
		return 0, stats, err
	}
	mu.Lock()
	defer mu.Unlock()
	return r.Throughput, stats, nil
}
