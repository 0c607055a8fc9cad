package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Targets for a server driven at twice its sustainable rate.
const (
	overloadGoodputTarget = 0.9 // goodput over the sustainable rate, at least
	overloadP99Target     = 100 // ms, p99 of the accepted requests, below
	overloadRSSTarget     = 512 // MB, peak RSS, below
)

// overloadScenario: a server pushed to twice what it can do, with its default limits. It
// publishes to `herald sim` in its own process (zero latency, limits lifted, as in publish: the
// server's CPU is the bound), so that the server's RSS is Herald's and not the simulator's growing
// record of every publication. The sandbox user's plan quota is lifted (Env's --plan-limits), so
// that no 429 refuses anything: every refusal is the server's overload control.
//
// First the sustainable rate, in the same run on the same server: 64 clients (--connections)
// publish in a closed loop for twice the suite's duration (20 s; --quick: 3 s), each waiting for
// its answer and, after a 503, for its Retry-After, as a client should; the rate is the jobs
// completed per second over the loop's second half, once the pipeline is full. It is measured
// again once the load is over, and the limit is the mean of both: the machine's speed moves from
// one minute to the next, and the store grows through the run. Once every accepted job is
// final, the load: twice that rate, open loop (request i is sent at start +
// i/rate whatever the earlier answers; 256 connections take the schedule's requests in turn,
// and a request's latency runs from its scheduled time, so that a slow server is not hidden by a
// client that waited), for 60 s (--quick: 4 s). Reported: goodput, the jobs completed per second
// during the load, every one of them accepted during it (the ratio is goodput over the
// sustainable rate); the latency of the accepted requests; the share refused with 503, by
// reason, and whether each had a Retry-After; the server's peak RSS, and during the load its
// anonymous and file-backed parts; the server's own view (the route's latency, the commits).
// Then, once every job is final: every accepted post exists and is published (nothing accepted
// then lost), and the user has exactly the accepted posts (no refused request left one behind).
func overloadScenario(base *Env) (Result, error) {
	closedFor, openFor := 2*base.Duration, 60*time.Second
	if base.Quick {
		closedFor, openFor = 3*time.Second, 4*time.Second
	}
	sim, err := startSim("--limit-scale", "100000")
	if err != nil {
		return Result{}, err
	}
	defer sim.Close()
	e, err := base.Spawn("--sim-url", sim.URL, "--budget-scale", "100000")
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	ids, err := e.accountIDs("twitter_x", "bluesky", "linkedin")
	if err != nil {
		return Result{}, err
	}
	targets := quoteAll(ids)
	body := func(phase string, w, i int) []byte {
		return fmt.Appendf(nil, `{"content":"Overload %s %d-%d: the autumn collection is out today. #launch","platforms":[%s]}`, phase, w, i, targets)
	}
	var posts acceptedPosts

	// The sustainable rate: a closed loop from an empty backlog.
	before, err := e.closedLoop("overload (sustainable)", closedFor, body, &posts)
	if err != nil {
		return Result{}, err
	}
	if _, err := e.drained(posts.len(), 5*time.Minute); err != nil {
		return Result{}, err
	}
	sustainable := before.completed

	// Twice the sustainable rate, open loop.
	rate := 2 * sustainable
	n := int(rate * openFor.Seconds())
	schedule := make(chan time.Time, n)
	ows, err := e.wires(4 * e.Connections)
	if err != nil {
		return Result{}, err
	}
	defer closeWires(ows)
	var lat latencies
	var refusedLat, exchangeLat latencies
	var accepted, refused, noRetryAfter, errs atomic.Int64
	var firstErr firstError
	done := make(chan struct{})
	go progress(e.log, "overload (2× open loop)", openFor, done)
	g0, err := e.metric("herald_jobs_finished_total", "")
	if err != nil {
		return Result{}, err
	}
	server0, err := e.serverSide()
	if err != nil {
		return Result{}, err
	}
	reasons0 := map[string]float64{}
	for _, reason := range overloadReasons {
		reasons0[reason], _ = e.metric("herald_http_overload_refused_total", `reason="`+reason+`"`)
	}
	start := time.Now()
	var peakMem memKB   // the largest anonymous and file-backed resident memory seen during the load
	var slices []string // jobs completed per second in each tenth of the load
	memDone, memStopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(memStopped)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		last, lastAt := g0, start
		for {
			select {
			case <-memDone:
				return
			case <-t.C:
			}
			m := readMemKB(e.cmd.Process.Pid)
			peakMem.rss, peakMem.anon, peakMem.file = max(peakMem.rss, m.rss), max(peakMem.anon, m.anon), max(peakMem.file, m.file)
			if time.Since(lastAt) >= openFor/10 && len(slices) < 10 {
				if f, err := e.metric("herald_jobs_finished_total", ""); err == nil {
					slices = append(slices, fmt.Sprintf("%.0f", (f-last)/time.Since(lastAt).Seconds()))
					last, lastAt = f, time.Now()
				}
			}
		}
	}()
	go func() {
		for i := 0; i < n; i++ {
			at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			if d := time.Until(at); d > 0 {
				time.Sleep(d)
			}
			schedule <- at
		}
		close(schedule)
	}()
	var wg sync.WaitGroup
	for w := range ows {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ok := make([]time.Duration, 0, 1024)
			exchange := make([]time.Duration, 0, 1024) // of the accepted, from the request's write
			no := make([]time.Duration, 0, 1024)
			for i := 0; ; i++ {
				at, more := <-schedule
				if !more {
					break
				}
				sentAt := time.Now()
				st, b, err := ows[w].do(http.MethodPost, "/v1/posts/publish", body("open", w, i))
				took := time.Since(at)
				switch {
				case err == nil && st == http.StatusAccepted:
					posts.add(b)
					accepted.Add(1)
					ok = append(ok, took)
					exchange = append(exchange, time.Since(sentAt))
				case err == nil && st == http.StatusServiceUnavailable:
					refused.Add(1)
					no = append(no, took)
					if ows[w].retryAfter == "" {
						noRetryAfter.Add(1)
					}
				default:
					errs.Add(1)
					firstErr.set(fmt.Sprintf("%d %s %v", st, b, err))
				}
			}
			lat.add(ok)
			refusedLat.add(no)
			exchangeLat.add(exchange)
		}(w)
	}
	// Goodput counts the jobs completed while the schedule runs: every one of them was accepted
	// during it, since the load started from an empty backlog.
	time.Sleep(time.Until(start.Add(openFor)))
	g1, err := e.metric("herald_jobs_finished_total", "")
	if err != nil {
		return Result{}, err
	}
	openSecs := time.Since(start).Seconds()
	wg.Wait()
	close(done)
	close(memDone)
	<-memStopped
	server1, err := e.serverSide()
	if err != nil {
		return Result{}, err
	}
	goodput := (g1 - g0) / openSecs
	var byReason []string
	for _, reason := range overloadReasons {
		v, _ := e.metric("herald_http_overload_refused_total", `reason="`+reason+`"`)
		if v -= reasons0[reason]; v > 0 {
			byReason = append(byReason, fmt.Sprintf("%s %.0f", reason, v))
		}
	}
	peak := e.PeakRSSMB()
	loadEnd := time.Now()
	drainedAt, err := e.drained(posts.len(), 5*time.Minute)
	if err != nil {
		return Result{}, err
	}
	// The machine's speed moves from minute to minute and the store grows through the run, so the
	// sustainable rate is measured again after the load, and the limit is the mean of both.
	after, err := e.closedLoop("overload (sustainable, again)", closedFor, body, &posts)
	if err != nil {
		return Result{}, err
	}
	if _, err := e.drained(posts.len(), 5*time.Minute); err != nil {
		return Result{}, err
	}
	sustainable = (before.completed + after.completed) / 2

	// Nothing accepted then lost, nothing refused then written.
	lost, notFinal, err := e.checkPosts(posts.all(), e.Connections)
	if err != nil {
		return Result{}, err
	}
	stored, err := e.postTotal()
	if err != nil {
		return Result{}, err
	}
	var dbMB float64
	if fi, err := os.Stat(filepath.Join(e.Dir, "data", persistence.FileName)); err == nil {
		dbMB = float64(fi.Size()) / (1 << 20)
	}

	sent := accepted.Load() + refused.Load() + errs.Load()
	r := Result{Ops: int(accepted.Load()), Seconds: openSecs, Throughput: goodput, Errors: int(errs.Load() + noRetryAfter.Load() + int64(lost+notFinal)),
		P50ms: lat.pct(0.5), P99ms: lat.pct(0.99), P999ms: lat.pct(0.999), PeakRSSMB: peak,
		LimitName: "sustainable publish rate (same run)", Limit: sustainable, Ratio: goodput / sustainable}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	r.Notes = fmt.Sprintf("sustainable: %.0f jobs completed/s, the mean of %s before the load and %s after it (jobs completed per second over the second half of %.0fs of 64 closed-loop clients, each waiting Retry-After after a 503); "+
		"load: %.0f requests/s offered open loop for %.0fs (%d sent from %d connections): accepted %.0f/s, goodput (accepted and completed during the load) %.0f/s = %.2f of sustainable (target ≥ %.2f: %s; completed per second in each tenth of the load: %s); "+
		"refused with 503 %.1f%% (%d, %d without Retry-After; by reason: %s; p50 %.2f ms, p99 %.2f ms); accepted p99 %.2f ms (target < %d ms: %s; from the request's write rather than its scheduled time p50 %.2f ms, p99 %.2f ms); peak RSS %.0f MB (target < %d MB: %s; during the load at most %.0f MB, of it anonymous at most %.0f MB and file-backed at most %.0f MB: bbolt's mapped pages of a file of %.0f MB at the end); "+
		"in the server during the load: %s; "+
		"every job final %.1fs after the load; accepted posts %d (every phase), lost %d, not published %d, posts stored %d (a refused request leaves none: %s); errors %d",
		sustainable, before, after, closedFor.Seconds(),
		rate, openFor.Seconds(), sent, len(ows), float64(accepted.Load())/openSecs, goodput, goodput/sustainable, overloadGoodputTarget, met(goodput/sustainable >= overloadGoodputTarget), strings.Join(slices, ", "),
		100*float64(refused.Load())/float64(max(sent, 1)), refused.Load(), noRetryAfter.Load(), strings.Join(byReason, ", "), refusedLat.pct(0.5), refusedLat.pct(0.99),
		r.P99ms, overloadP99Target, met(r.P99ms < overloadP99Target), exchangeLat.pct(0.5), exchangeLat.pct(0.99), peak, overloadRSSTarget, met(peak < overloadRSSTarget),
		float64(peakMem.rss)/1024, float64(peakMem.anon)/1024, float64(peakMem.file)/1024, dbMB,
		server1.since(server0), drainedAt.Sub(loadEnd).Seconds(), posts.len(), lost, notFinal, stored, met(stored == posts.len()), errs.Load()+before.errs+after.errs)
	for _, v := range []string{firstErr.String(), before.firstErr, after.firstErr} {
		if v != "" {
			r.Notes += "; first error: " + v
			break
		}
	}
	return r, nil
}

// overloadReasons are the reason label's values of herald_http_overload_refused_total.
var overloadReasons = []string{"admission", "actor", "commit_queue", "job_backlog"}

// acceptedPosts collects the ids of accepted publishes.
type acceptedPosts struct {
	mu  sync.Mutex
	ids []string
}

// add takes the post id from a 202 body.
func (a *acceptedPosts) add(body []byte) {
	const key = `"post_id":"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return
	}
	rest := body[i+len(key):]
	id := string(rest[:bytes.IndexByte(rest, '"')])
	a.mu.Lock()
	a.ids = append(a.ids, id)
	a.mu.Unlock()
}

func (a *acceptedPosts) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ids)
}

func (a *acceptedPosts) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

// drained waits until n jobs have finished in all and returns when.
func (e *Env) drained(n int, within time.Duration) (time.Time, error) {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if f, err := e.metric("herald_jobs_finished_total", ""); err == nil && f >= float64(n) {
			return time.Now(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%d accepted jobs were not all final within %s", n, within)
}

// checkPosts reads every post from conns connections: lost are those not found, notFinal those
// not published.
func (e *Env) checkPosts(ids []string, conns int) (lost, notFinal int, err error) {
	ws, err := e.wires(conns)
	if err != nil {
		return 0, 0, err
	}
	defer closeWires(ws)
	var next, nLost, nNotFinal atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range ws {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(ids) {
					return
				}
				st, b, err := ws[w].do(http.MethodGet, "/v1/posts/"+ids[k], nil)
				switch {
				case err != nil:
					firstErr.CompareAndSwap(nil, err)
					return
				case st == http.StatusNotFound:
					nLost.Add(1)
				case st != http.StatusOK:
					firstErr.CompareAndSwap(nil, fmt.Errorf("GET /v1/posts/%s: %d %s", ids[k], st, b))
					return
				default:
					var p struct {
						Status string `json:"status"`
					}
					if err := json.Unmarshal(b, &p); err != nil || p.Status != "published" {
						nNotFinal.Add(1)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	if v, ok := firstErr.Load().(error); ok {
		return 0, 0, v
	}
	return int(nLost.Load()), int(nNotFinal.Load()), nil
}

// postTotal is the number of posts of the sandbox user.
func (e *Env) postTotal() (int, error) {
	var page struct {
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
	}
	if err := e.getJSON("/v1/posts?limit=1", &page); err != nil {
		return 0, err
	}
	return page.Pagination.Total, nil
}

// serverSide is what the server's metrics say of the publish route and the group commits.
type serverSide struct {
	route                     [2]float64 // herald_http_request_duration_seconds of POST /v1/posts/publish: sum, count
	commits, writes, commitS  float64
	routeBuckets, commitBucks map[float64]float64 // cumulative counts by upper bound
}

func (e *Env) serverSide() (serverSide, error) {
	var s serverSide
	var err error
	const route = `route="/v1/posts/publish"`
	if s.route[0], err = e.metric("herald_http_request_duration_seconds_sum", route); err != nil {
		return s, err
	}
	s.route[1], _ = e.metric("herald_http_request_duration_seconds_count", route)
	s.commits, _ = e.metric("herald_bbolt_commit_duration_seconds_count", "")
	s.commitS, _ = e.metric("herald_bbolt_commit_duration_seconds_sum", "")
	s.writes, _ = e.metric("herald_bbolt_commit_batch_size_sum", "")
	s.routeBuckets = map[float64]float64{}
	s.commitBucks = map[float64]float64{}
	for _, le := range []string{"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "10"} {
		v, _ := e.metric("herald_http_request_duration_seconds_bucket", route+`,le="`+le+`"`)
		f, _ := strconv.ParseFloat(le, 64)
		s.routeBuckets[f] = v
	}
	for _, le := range []string{"0.0005", "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256", "1"} {
		v, _ := e.metric("herald_bbolt_commit_duration_seconds_bucket", `le="`+le+`"`)
		f, _ := strconv.ParseFloat(le, 64)
		s.commitBucks[f] = v
	}
	return s, nil
}

// since describes the interval from a to s.
func (s serverSide) since(a serverSide) string {
	q := quantile
	n := s.route[1] - a.route[1]
	return fmt.Sprintf("POST /v1/posts/publish (accepted and refused) %.2f ms on average, p99 %s; %s",
		(s.route[0]-a.route[0])*1000/max(n, 1), q(s.routeBuckets, a.routeBuckets, n, 0.99), s.commitsSince(a))
}

// commitsSince describes the group commits from a to s.
func (s serverSide) commitsSince(a serverSide) string {
	commits := s.commits - a.commits
	return fmt.Sprintf("%.0f commits, %.1f writes and %.2f ms each on average, p99 %s",
		commits, (s.writes-a.writes)/max(commits, 1), (s.commitS-a.commitS)*1000/max(commits, 1), quantile(s.commitBucks, a.commitBucks, commits, 0.99))
}

// quantile is the upper bound of the histogram bucket where the p-quantile of the samples
// between two cumulative snapshots falls.
func quantile(now, before map[float64]float64, total, p float64) string {
	bounds := make([]float64, 0, len(now))
	for b := range now {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		if now[b]-before[b] >= p*total {
			return fmt.Sprintf("≤ %g ms", b*1000)
		}
	}
	return "more"
}

// closedRun is one closed loop's figures: jobs completed and requests accepted per second over
// its second half, refusals and errors in all.
type closedRun struct {
	completed, accepted float64
	refused, errs       int64
	firstErr            string
	commits             string // the group commits of the second half
}

func (c closedRun) String() string {
	return fmt.Sprintf("%.0f/s (accepted %.0f/s meanwhile, %d refused with 503; %s)", c.completed, c.accepted, c.refused, c.commits)
}

// closedLoop publishes from e.Connections clients for d, each waiting for its answer and, after
// a 503, for its Retry-After, as a client should; the rate is read over the loop's second half,
// once the pipeline is full.
func (e *Env) closedLoop(name string, d time.Duration, body func(phase string, w, i int) []byte, posts *acceptedPosts) (closedRun, error) {
	var run closedRun
	ws, err := e.wires(e.Connections)
	if err != nil {
		return run, err
	}
	defer closeWires(ws)
	var accepted, refused, errs atomic.Int64
	var firstErr firstError
	done := make(chan struct{})
	go progress(e.log, name, d, done)
	defer close(done)
	start := time.Now()
	deadline := start.Add(d)
	var f0, a0 float64
	var s0 serverSide
	half := time.AfterFunc(d/2, func() {
		f0, _ = e.metric("herald_jobs_finished_total", "")
		a0 = float64(accepted.Load())
		s0, _ = e.serverSide()
	})
	defer half.Stop()
	phase := strings.ReplaceAll(name, " ", "-")
	var wg sync.WaitGroup
	for w := range ws {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				st, b, err := ws[w].do(http.MethodPost, "/v1/posts/publish", body(phase, w, i))
				switch {
				case err == nil && st == http.StatusAccepted:
					posts.add(b)
					accepted.Add(1)
				case err == nil && st == http.StatusServiceUnavailable:
					refused.Add(1)
					wait, _ := strconv.Atoi(ws[w].retryAfter)
					time.Sleep(time.Duration(max(wait, 1)) * time.Second)
				default:
					errs.Add(1)
					firstErr.set(fmt.Sprintf("%d %s %v", st, b, err))
				}
			}
		}(w)
	}
	wg.Wait()
	f1, err := e.metric("herald_jobs_finished_total", "")
	if err != nil {
		return run, err
	}
	s1, err := e.serverSide()
	if err != nil {
		return run, err
	}
	secs := time.Since(start).Seconds() - d.Seconds()/2
	run = closedRun{completed: (f1 - f0) / secs, accepted: (float64(accepted.Load()) - a0) / secs,
		refused: refused.Load(), errs: errs.Load(), firstErr: firstErr.String(), commits: s1.commitsSince(s0)}
	if run.completed <= 0 {
		return run, fmt.Errorf("no job completed in the closed loop")
	}
	return run, nil
}

// firstError keeps the first of concurrent errors.
type firstError struct{ v atomic.Value }

func (f *firstError) set(s string) { f.v.CompareAndSwap(nil, s) }

func (f *firstError) String() string {
	s, _ := f.v.Load().(string)
	return s
}
