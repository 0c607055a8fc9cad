package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// unlimited are serve flags that lift every network budget and simulated limit, and the publish
// backlog, for scenarios that measure Herald itself: they measure what it does with a load
// beyond what it completes (the backlog the publish scenario leaves, for one), and the overload
// scenario what it refuses of it.
var unlimited = []string{"--sim-limit-scale", "100000", "--budget-scale", "100000", "--max-job-backlog", "-1"}

func (e *Env) post(path, body string, hdr map[string]string) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.Key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// acceptedAfterRetries posts body to path until it is accepted (202). A 503 means the server's
// publish backlog is full and nothing was created: as a client should, it waits for the answer's
// Retry-After (1 s) and sends the same request again, counting the refusal in refused. Any other
// answer is an error.
func (e *Env) acceptedAfterRetries(path, body string, refused *atomic.Int64) error {
	for {
		st, b, err := e.post(path, body, nil)
		if err != nil {
			return err
		}
		if st == http.StatusServiceUnavailable {
			refused.Add(1)
			time.Sleep(time.Second)
			continue
		}
		if st != http.StatusAccepted {
			return fmt.Errorf("%s: %d %.300s", path, st, b)
		}
		return nil
	}
}

// spawnWithAccounts spawns a server with extra serve flags and returns it with the ids of its
// sandbox accounts on the given platforms.
func (e *Env) spawnWithAccounts(platforms []string, extra ...string) (*Env, []string, error) {
	n, err := e.Spawn(extra...)
	if err != nil {
		return nil, nil, err
	}
	ids, err := n.accountIDs(platforms...)
	if err != nil {
		n.Close()
		return nil, nil, err
	}
	return n, ids, nil
}

// spawnOnOwnSim spawns a server with extra serve flags whose sandbox publishes to `herald sim` in
// a process of its own, started with simArgs, and returns it with the ids of its sandbox accounts
// on the given platforms. The scenarios that report the server's memory run so: the simulator
// keeps every publication (for the duplicate checks) and a log of its requests, memory that is
// not Herald's. Close the simulator after the server.
func (e *Env) spawnOnOwnSim(platforms, simArgs []string, extra ...string) (*Env, *simProcess, []string, error) {
	sim, err := startSim(simArgs...)
	if err != nil {
		return nil, nil, nil, err
	}
	n, ids, err := e.spawnWithAccounts(platforms, append([]string{"--sim-url", sim.URL}, extra...)...)
	if err != nil {
		sim.Close()
		return nil, nil, nil, err
	}
	return n, sim, ids, nil
}

// accountIDs returns the sandbox account ids of the given platforms.
func (e *Env) accountIDs(platforms ...string) ([]string, error) {
	var accounts struct {
		Data []struct{ ID, Platform string } `json:"data"`
	}
	if err := e.getJSON("/v1/accounts", &accounts); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range platforms {
		for _, a := range accounts.Data {
			if a.Platform == p {
				out = append(out, a.ID)
			}
		}
	}
	if len(out) != len(platforms) {
		return nil, fmt.Errorf("sandbox accounts missing: want %v", platforms)
	}
	return out, nil
}

func quoteAll(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = `"` + id + `"`
	}
	return strings.Join(q, ",")
}

// metric reads the sum of a metric family's samples (optionally only those containing match).
func (e *Env) metric(name, match string) (float64, error) {
	resp, err := e.Client.Get(e.MetricsURL + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, name) || (match != "" && !strings.Contains(l, match)) {
			continue
		}
		rest := strings.TrimPrefix(l, name)
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, sc.Err()
}

func durationsPct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(float64(len(d)-1)*p)]) / float64(time.Millisecond)
}

// publishScenario: durable publish requests accepted per second at e.Connections, each to X,
// Bluesky and LinkedIn on the simulator at zero latency (`herald sim` in its own process, so that
// the server's peak RSS is Herald's); jobs completed per second; the backlog when the load
// stops; end-to-end latency from request to done on a sample of jobs; the peak RSS against its
// target.
func publishScenario(base *Env) (Result, error) {
	e, sim, ids, err := base.spawnOnOwnSim([]string{"twitter_x", "bluesky", "linkedin"}, []string{"--limit-scale", "100000"}, unlimited[2:]...)
	if err != nil {
		return Result{}, err
	}
	defer sim.Close()
	defer e.Close()
	targets := quoteAll(ids)
	var e2e []time.Duration
	var e2eMu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	var sampleWG sync.WaitGroup
	sampleWG.Add(1)
	go func() { // end-to-end sampler: one job at a time, request to done
		defer sampleWG.Done()
		for i := 0; ctx.Err() == nil; i++ {
			start := time.Now()
			st, b, err := e.post("/v1/posts/publish", fmt.Sprintf(`{"content":"e2e sample %d","platforms":[%s]}`, i, targets), nil)
			if err != nil || st != 202 {
				continue
			}
			var acc struct {
				TrackingID string `json:"tracking_id"`
			}
			_ = json.Unmarshal(b, &acc)
			if _, at, _, err := e.streamDone(acc.TrackingID, nil); err == nil {
				e2eMu.Lock()
				e2e = append(e2e, at.Sub(start))
				e2eMu.Unlock()
			}
		}
	}()
	ws, err := e.wires(e.Connections)
	if err != nil {
		cancel()
		return Result{}, err
	}
	defer closeWires(ws)
	start := time.Now()
	// On PostgreSQL running on this machine, the database server's CPU is reported too: it shares
	// the cores with Herald, and per job it has used as much as Herald itself.
	pm := postmaster(storeBase)
	cpu0, simCPU0, pgCPU0 := processCPU(e.cmd.Process.Pid), processCPU(sim.cmd.Process.Pid), serverTreeCPU(pm)
	sysmon0 := sysmonCPU(e.cmd.Process.Pid)
	r, err := drive(e.log, "publish", e.Connections, e.Duration, func(w, i int) error {
		st, b, err := ws[w].do(http.MethodPost, "/v1/posts/publish", fmt.Appendf(nil, `{"content":"Bench publish %d-%d: the autumn collection is out today. #launch","platforms":[%s]}`, w, i, targets))
		if err != nil {
			return err
		}
		if st != 202 {
			return fmt.Errorf("publish: %d %s", st, b)
		}
		return nil
	})
	// The backlog is read when the load stops, before waiting for the sampler's last job.
	loadEnd := time.Now()
	finishedAtEnd, _ := e.metric("herald_jobs_finished_total", "")
	// With --profile, the drain (jobs completing after the load stopped, nothing accepted
	// meanwhile but the sampler's last job) is profiled as a phase of its own: most of a job's
	// CPU is spent completing it, and the load phase's profile mixes that with the accept path.
	var drainProf *profiling
	if err == nil && finishedAtEnd < float64(r.Ops) {
		drainProf = beginProfile(e.log, "publish-drain", e.Duration)
	}
	cancel()
	sampleWG.Wait()
	if err != nil {
		return r, err
	}
	acceptedTotal := float64(r.Ops) + float64(len(e2e))
	var drained time.Time
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		f, err := e.metric("herald_jobs_finished_total", "")
		if err == nil && f >= acceptedTotal {
			drained = time.Now()
			break
		}
	}
	drainProf.end()
	completedRate := 0.0
	if !drained.IsZero() {
		completedRate = acceptedTotal / drained.Sub(start).Seconds()
	}
	// The server's CPU per job, accepting and completing it, bounds the jobs per second its cores
	// can finish end to end, whatever the order of the work. The simulator runs in a process of
	// its own: its CPU (the networks' side of the calls) is reported beside the server's, not in
	// it, so the figure is Herald's alone (runs before 2026-11-27 summed the two).
	cpu := processCPU(e.cmd.Process.Pid) - cpu0
	simCPU := processCPU(sim.cmd.Process.Pid) - simCPU0
	sysmon := sysmonCPU(e.cmd.Process.Pid) - sysmon0
	pgCPU := serverTreeCPU(pm) - pgCPU0
	cpuNote := ""
	if cpu > 0 && acceptedTotal > 0 {
		perJob := cpu.Seconds() / acceptedTotal
		pgNote := ""
		if pm != 0 {
			pgNote = fmt.Sprintf("; PostgreSQL's processes %.0f µs more", pgCPU.Seconds()*1e6/acceptedTotal)
		}
		cpuNote = fmt.Sprintf("; server CPU %.0f µs per job accepted and completed (Go's sysmon thread %.0f µs of it; the simulator's process %.0f µs more%s), so %d cores finish at most %.0f jobs/s; keeping pace with 5000 accepted/s needs at most %.0f µs",
			perJob*1e6, sysmon.Seconds()*1e6/acceptedTotal, simCPU.Seconds()*1e6/acceptedTotal, pgNote, runtime.NumCPU(), float64(runtime.NumCPU())/perJob, float64(runtime.NumCPU())*1e6/5000)
		var commits commitStats
		commits.writes, _ = e.metric("herald_bbolt_commit_batch_size_sum", "")
		commits.commits, _ = e.metric("herald_bbolt_commit_batch_size_count", "")
		commits.seconds, _ = e.metric("herald_bbolt_commit_duration_seconds_sum", "")
		if commits.commits > 0 {
			cpuNote += fmt.Sprintf("; server commits (the whole run): %s, %.2f commits per job", commits, commits.commits/acceptedTotal)
		}
	}
	limit, _, err := boltCeiling(e, e.Connections, e.Duration)
	if err != nil {
		return r, err
	}
	r.LimitName, r.Limit = ceilingName(), limit
	r.Notes = keepFirstError(fmt.Sprintf("accepted %.0f/s; jobs completed %.0f/s overall (start to last done); backlog when the load stopped %.0f jobs, drained %.1fs later; end-to-end request→done p50 %.1f ms p99 %.1f ms over %d sampled jobs%s; %s",
		r.Throughput, completedRate, acceptedTotal-finishedAtEnd, drained.Sub(loadEnd).Seconds(), durationsPct(e2e, 0.5), durationsPct(e2e, 0.99), len(e2e), cpuNote, e.memoryNote()), r.Notes)
	return r, nil
}

// accountThroughput: publishes per second through one account (X) with zero simulator latency and
// an unlimited budget: the account actor's own overhead, one call at a time.
func accountThroughput(base *Env) (Result, error) {
	e, ids, err := base.spawnWithAccounts([]string{"twitter_x"}, unlimited...)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	n := 5000
	if e.Quick {
		n = 1000
	}
	start := time.Now()
	var sent atomic.Int64
	r, err := drive(e.log, "account-throughput", 32, 24*time.Hour, func(w, i int) error {
		k := sent.Add(1)
		if k > int64(n) {
			return errStop
		}
		st, b, err := e.post("/v1/posts/publish", fmt.Sprintf(`{"content":"one account %d","platforms":[%s]}`, k, quoteAll(ids)), nil)
		if err != nil || st != 202 {
			return fmt.Errorf("publish: %d %s %v", st, b, err)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if f, err := e.metric("herald_jobs_finished_total", ""); err == nil && f >= float64(n) {
			break
		}
	}
	elapsed := time.Since(start).Seconds()
	return Result{Ops: n, Seconds: elapsed, Throughput: float64(n) / elapsed, P50ms: r.P50ms, P99ms: r.P99ms, P999ms: r.P999ms, Errors: r.Errors,
		Notes: "publishes per second through one account (calls in order, one at a time), simulator at zero latency, budget unlimited; latencies are of the publish requests"}, nil
}

// budgetEfficiency: one account whose budget (50 posts per 5 s, on Herald and on the simulated
// network alike) is far below the load: the achieved publish rate divided by the allowed one, and
// the network's 429s (must be zero).
func budgetEfficiency(base *Env) (Result, error) {
	const limit, window = 50, 5 * time.Second
	e, err := base.Spawn("--budget-rules", fmt.Sprintf("twitter_x:tweets=%d/%s", limit, window))
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	simURL, err := e.simURL()
	if err != nil {
		return Result{}, err
	}
	body, _ := json.Marshal(map[string]any{"platform": "twitter_x", "bucket": "tweets", "limit": limit, "window": window.String()})
	resp, err := http.Post(simURL+"/_sim/limits", "application/json", bytes.NewReader(body))
	if err != nil {
		return Result{}, err
	}
	resp.Body.Close()
	ids, err := e.accountIDs("twitter_x")
	if err != nil {
		return Result{}, err
	}
	windows := 5
	if e.Quick {
		windows = 3
	}
	n := limit * windows
	for i := 0; i < n; i++ {
		if st, b, err := e.post("/v1/posts/publish", fmt.Sprintf(`{"content":"budgeted %d","platforms":[%s]}`, i, quoteAll(ids)), nil); err != nil || st != 202 {
			return Result{}, fmt.Errorf("publish: %d %s %v", st, b, err)
		}
	}
	done := make(chan struct{})
	go progress(e.log, "budget-efficiency", time.Duration(windows)*window, done)
	for deadline := time.Now().Add(time.Duration(windows+3) * window * 2); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if f, err := e.metric("herald_jobs_finished_total", ""); err == nil && f >= float64(n) {
			break
		}
	}
	close(done)
	var pubs struct {
		Data []struct {
			CreatedAt time.Time `json:"created_at"`
		} `json:"data"`
	}
	resp, err = http.Get(simURL + "/_sim/publications?platform=twitter_x")
	if err != nil {
		return Result{}, err
	}
	err = json.NewDecoder(resp.Body).Decode(&pubs)
	resp.Body.Close()
	if err != nil {
		return Result{}, err
	}
	if len(pubs.Data) < n {
		return Result{}, fmt.Errorf("only %d of %d posts published", len(pubs.Data), n)
	}
	first, last := pubs.Data[0].CreatedAt, pubs.Data[len(pubs.Data)-1].CreatedAt
	allowed := float64(limit) / window.Seconds()
	// The first window's posts go at once; the rest follow window by window. Efficiency is the
	// rate achieved after the first window over the allowed rate.
	achieved := float64(n-limit) / last.Sub(first).Seconds()
	rejected, _ := e.metric("herald_network_rate_limited_total", "")
	return Result{Ops: n, Seconds: last.Sub(first).Seconds(), Throughput: achieved, LimitName: fmt.Sprintf("allowed %d per %s", limit, window), Limit: allowed,
		Notes: fmt.Sprintf("budget efficiency %.3f (achieved / allowed); network 429s seen: %.0f", achieved/allowed, rejected)}, nil
}

// sseFanout: many clients stream one running job; the server's memory per subscriber and the
// delay from the job's end to each client's done event.
func sseFanout(base *Env) (Result, error) {
	streams := 10000
	latency := "20s"
	if base.Quick {
		streams, latency = 2000, "4s"
	}
	e, ids, err := base.spawnWithAccounts([]string{"twitter_x"}, append([]string{"--sim-latency", latency}, unlimited...)...)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	st, b, err := e.post("/v1/posts/publish", fmt.Sprintf(`{"content":"fan-out","platforms":[%s]}`, quoteAll(ids)), nil)
	if err != nil || st != 202 {
		return Result{}, fmt.Errorf("publish: %d %s %v", st, b, err)
	}
	var acc struct {
		TrackingID string `json:"tracking_id"`
	}
	_ = json.Unmarshal(b, &acc)
	time.Sleep(300 * time.Millisecond)
	before := float64(readVmRSS(e.cmd.Process.Pid))
	var opened sync.WaitGroup
	opened.Add(streams)
	var wg sync.WaitGroup
	var lat []time.Duration
	var mu sync.Mutex
	var failures atomic.Int64
	sem := make(chan struct{}, 256)
	openStart := time.Now()
	for i := 0; i < streams; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			once := sync.Once{}
			markOpen := func() { once.Do(func() { <-sem; opened.Done() }) }
			done, at, _, err := e.streamDone(acc.TrackingID, markOpen)
			markOpen()
			if err != nil {
				failures.Add(1)
				return
			}
			mu.Lock()
			lat = append(lat, at.Sub(done))
			mu.Unlock()
		}()
	}
	opened.Wait()
	openTime := time.Since(openStart)
	after := float64(readVmRSS(e.cmd.Process.Pid))
	wg.Wait()
	perSub := (after - before) * 1024 / float64(streams)
	return Result{Ops: streams, Seconds: openTime.Seconds(), Throughput: float64(streams) / openTime.Seconds(), Errors: int(failures.Load()),
		P50ms: durationsPct(lat, 0.5), P99ms: durationsPct(lat, 0.99), P999ms: durationsPct(lat, 0.999),
		LimitName: "memory per subscriber target (bytes)", Limit: 16384, Ratio: perSub / 16384,
		Notes: fmt.Sprintf("%d concurrent streams of one job: %.0f bytes of server RSS per subscriber (target at most 16384); latencies are from the job's completion to each client's done event", streams, perSub)}, nil
}

// sseDelivery: ten thousand streams open at once over a thousand jobs, ten clients following
// each (the publishing client, dashboards, a webhook relay), while the jobs finish one after
// another over several seconds: the delay from each job's completion to each client's done
// event. sseFanout measures the other extreme, every client on one job.
func sseDelivery(base *Env) (Result, error) {
	jobs, per, spread, latency := 1000, 10, 10*time.Second, 15*time.Second
	if base.Quick {
		jobs, spread, latency = 200, 3*time.Second, 5*time.Second
	}
	streams := jobs * per
	// Every job's one call is in flight at once, each taking the simulator's latency, so that the
	// jobs finish in the order and at the pace they were published.
	e, ids, err := base.spawnWithAccounts([]string{"twitter_x"}, append([]string{"--sim-latency", latency.String(), "--account-concurrency", strconv.Itoa(jobs)}, unlimited...)...)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	publisher, err := e.newWire()
	if err != nil {
		return Result{}, err
	}
	defer publisher.close()
	before := float64(readVmRSS(e.cmd.Process.Pid))
	var opened, wg sync.WaitGroup
	opened.Add(streams)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, streams)
	var failures, late atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	for j := 0; j < jobs; j++ {
		time.Sleep(time.Until(start.Add(spread * time.Duration(j) / time.Duration(jobs))))
		st, b, err := publisher.do(http.MethodPost, "/v1/posts/publish", fmt.Appendf(nil, `{"content":"delivery %d","platforms":[%s]}`, j, quoteAll(ids)))
		if err != nil || st != http.StatusAccepted {
			return Result{}, fmt.Errorf("publish: %d %s %v", st, b, err)
		}
		var acc struct {
			TrackingID string `json:"tracking_id"`
		}
		if err := json.Unmarshal(b, &acc); err != nil {
			return Result{}, err
		}
		for k := 0; k < per; k++ {
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				once := sync.Once{}
				markOpen := func() { once.Do(opened.Done) }
				done, at, joinedLate, err := e.streamDone(id, markOpen)
				markOpen()
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if joinedLate {
					late.Add(1)
					return
				}
				mu.Lock()
				lat = append(lat, at.Sub(done))
				mu.Unlock()
			}(acc.TrackingID)
		}
	}
	opened.Wait()
	allOpen := time.Since(start)
	after := float64(readVmRSS(e.cmd.Process.Pid))
	wg.Wait()
	// A client whose stream opened after its job had finished measures its own connecting, not
	// the delivery: it is left out, and counted. When more than a tenth of them were so late the
	// machine could not open the streams in time and the run measures too little to report.
	if n := late.Load(); n*10 > int64(streams) {
		return Result{}, fmt.Errorf("%d of the %d streams opened after their job had finished (all open %s after the first publish; each job takes %s): too few were waiting to measure delivery", n, streams, allOpen.Round(time.Millisecond), latency)
	}
	r := Result{Ops: len(lat), Seconds: time.Since(start).Seconds(), Throughput: float64(len(lat)) / spread.Seconds(), Errors: int(failures.Load()),
		P50ms: durationsPct(lat, 0.5), P99ms: durationsPct(lat, 0.99), P999ms: durationsPct(lat, 0.999),
		LimitName: "delivery p99 target (ms)", Limit: 50}
	r.Ratio = r.P99ms / r.Limit
	r.Notes = fmt.Sprintf("%d streams open at once over %d jobs (%d clients each), all open %.1fs after the first publish; the jobs finish one after another over %s (one call each, simulator latency %s); latencies from each job's completed_at to each client's done event, %d streams that opened after their job had finished left out; server RSS grew %.0f MB while the streams opened, with the %d network calls in flight (sse-fanout measures the memory of a stream alone)",
		streams, jobs, per, allOpen.Seconds(), spread, latency, late.Load(), (after-before)/1024, jobs)
	if e, ok := firstErr.Load().(error); ok {
		r.Notes += "; first error: " + e.Error()
	}
	return r, nil
}

// schedulerBurst: many posts due within one minute, not held back by budgets; the scheduler's
// lateness (fire time minus due time) from its histogram; the peak RSS against its target (the
// simulator runs in its own process).
func schedulerBurst(base *Env) (Result, error) {
	posts, spread := 100000, time.Minute
	if base.Quick {
		posts, spread = 5000, 10*time.Second
	}
	e, sim, ids, err := base.spawnOnOwnSim([]string{"twitter_x"}, []string{"--limit-scale", "100000"}, unlimited[2:]...)
	if err != nil {
		return Result{}, err
	}
	defer sim.Close()
	defer e.Close()
	// Creation takes a while; the burst starts once every post is scheduled.
	lead := time.Duration(float64(posts)/2000*float64(time.Second)) + 5*time.Second
	t0 := time.Now().Add(lead)
	var next atomic.Int64
	r, err := drive(e.log, "scheduler-burst (create)", e.Connections, 24*time.Hour, func(w, i int) error {
		k := next.Add(1) - 1
		if k >= int64(posts) {
			return errStop
		}
		at := t0.Add(time.Duration(float64(spread) * float64(k) / float64(posts))).UTC().Format(time.RFC3339Nano)
		st, b, err := e.post("/v1/posts/schedule", fmt.Sprintf(`{"content":"burst %d","platforms":[%s],"scheduledAt":"%s"}`, k, quoteAll(ids), at), nil)
		if err != nil || st != 201 {
			return fmt.Errorf("schedule: %d %s %v", st, b, err)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	if time.Now().After(t0) {
		return Result{}, fmt.Errorf("creating %d scheduled posts took longer than the lead time %s", posts, lead)
	}
	done := make(chan struct{})
	go progress(e.log, "scheduler-burst (fire)", time.Until(t0.Add(spread)), done)
	for deadline := t0.Add(spread + 5*time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if f, err := e.metric("herald_scheduler_fired_total", ""); err == nil && f >= float64(posts) {
			break
		}
	}
	close(done)
	p50, p99, p999, err := e.histogramQuantiles("herald_scheduler_lateness_seconds", 0.5, 0.99, 0.999)
	if err != nil {
		return Result{}, err
	}
	fired, _ := e.metric("herald_scheduler_fired_total", "")
	return Result{Ops: int(fired), Seconds: spread.Seconds(), Throughput: fired / spread.Seconds(), P50ms: p50 * 1000, P99ms: p99 * 1000, P999ms: p999 * 1000,
		LimitName: "lateness p99 target (ms)", Limit: 1000, Ratio: p99 * 1000 / 1000,
		Notes: fmt.Sprintf("%d posts due within %s; latencies are scheduler lateness (bucket upper bounds); created at %.0f/s; %s", posts, spread, r.Throughput, e.memoryNote())}, nil
}

// histogramQuantiles estimates quantiles of a Prometheus histogram by its bucket upper bounds.
func (e *Env) histogramQuantiles(name string, qs ...float64) (float64, float64, float64, error) {
	resp, err := e.Client.Get(e.MetricsURL + "/metrics")
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	type bucket struct{ le, count float64 }
	var buckets []bucket
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, name+"_bucket{") {
			continue
		}
		i := strings.Index(l, `le="`)
		j := strings.Index(l[i+4:], `"`)
		le, _ := strconv.ParseFloat(l[i+4:i+4+j], 64)
		if l[i+4:i+4+j] == "+Inf" {
			le = math.Inf(1)
		}
		f := strings.Fields(l)
		c, _ := strconv.ParseFloat(f[len(f)-1], 64)
		buckets = append(buckets, bucket{le, c})
	}
	if len(buckets) == 0 || buckets[len(buckets)-1].count == 0 {
		return 0, 0, 0, fmt.Errorf("%s has no samples", name)
	}
	total := buckets[len(buckets)-1].count
	out := make([]float64, 3)
	for k, q := range qs {
		for _, b := range buckets {
			if b.count >= q*total {
				out[k] = b.le
				break
			}
		}
	}
	return out[0], out[1], out[2], nil
}

// simURL reads the sandbox simulator's address from the server's log.
func (e *Env) simURL() (string, error) {
	if e.sim == "" {
		return "", fmt.Errorf("the server did not say where its simulator listens")
	}
	return e.sim, nil
}
