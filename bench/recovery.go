package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// simProcess is `herald sim` running as its own process, so that its record of what was
// published outlives the crashes of the server that publishes to it.
type simProcess struct {
	URL string
	cmd *exec.Cmd
}

// startSim starts `herald sim` from this very binary on a loopback port.
func startSim(extra ...string) (*simProcess, error) {
	exe, err := self()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, append([]string{"sim", "--addr", "127.0.0.1:0"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &simProcess{cmd: cmd}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "simulator listening on "); ok {
				found <- u
			}
		}
	}()
	select {
	case s.URL = <-found:
		return s, nil
	case <-time.After(30 * time.Second):
		s.Close()
		return nil, fmt.Errorf("herald sim did not start within 30s")
	}
}

// Close stops the simulator (SIGTERM, then SIGKILL).
func (s *simProcess) Close() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// recoveryScenario: SIGKILL under load, then restart. The server publishes to `herald sim` in its
// own process (2 ms per network call, limits lifted); clients publish posts to X, Bluesky and
// LinkedIn until 5,000 (--quick: 1,000) are acknowledged with 202, and the server is killed with
// publishes in flight. It restarts on the same data directory and address. Reported: the time
// from the restart until /readyz answers 200, and until every acknowledged post is final; that
// nothing is lost (every acknowledged post exists and is final) and nothing is duplicated (the
// simulator's record holds each post's text at most once per network).
func recoveryScenario(base *Env) (Result, error) {
	killAt := 5000
	if base.Quick {
		killAt = 1000
	}
	sim, err := startSim("--limit-scale", "100000", "--latency", "2ms")
	if err != nil {
		return Result{}, err
	}
	defer sim.Close()
	// The publish backlog is lifted: the crash is to find thousands of posts publishing.
	e, err := base.Spawn("--sim-url", sim.URL, "--budget-scale", "100000", "--max-job-backlog", "-1")
	if err != nil {
		return Result{}, err
	}
	cleanStart := e.ListeningAt.Sub(e.StartedAt)
	ids, err := e.accountIDs("twitter_x", "bluesky", "linkedin")
	if err != nil {
		e.Close()
		return Result{}, err
	}
	targets := quoteAll(ids)

	var mu sync.Mutex
	acked := map[string]string{} // post id → text
	var n atomic.Int64
	kill := make(chan struct{})
	var killOnce sync.Once
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	r, err := drive(e.log, "recovery (load)", e.Connections, time.Minute, func(w, i int) error {
		select {
		case <-kill:
			return errStop
		default:
		}
		text := fmt.Sprintf("recovery %d-%d: the autumn collection is out today. #launch", w, i)
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/posts/publish", strings.NewReader(`{"content":"`+text+`","platforms":[`+targets+`]}`))
		req.Header.Set("Authorization", "Bearer "+e.Key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			select {
			case <-kill:
				return errStop // the server is gone
			default:
				return err
			}
		}
		var acc struct {
			PostID string `json:"post_id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&acc)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || err != nil {
			return fmt.Errorf("publish: %s", resp.Status)
		}
		mu.Lock()
		acked[acc.PostID] = text
		mu.Unlock()
		if n.Add(1) == int64(killAt) {
			killOnce.Do(func() {
				close(kill)
				e.Kill()
			})
		}
		return nil
	})
	killOnce.Do(func() { close(kill); e.Kill() })
	peak := e.PeakRSSMB()
	if err != nil {
		_ = os.RemoveAll(e.Dir)
		return r, err
	}
	if len(acked) < killAt {
		_ = os.RemoveAll(e.Dir)
		return Result{}, fmt.Errorf("only %d posts were acknowledged in a minute (want %d before the SIGKILL; %s)", len(acked), killAt, r.Notes)
	}

	e2, err := e.Restart()
	if err != nil {
		_ = os.RemoveAll(e.Dir)
		return Result{}, err
	}
	defer e2.Close()
	ready := e2.ReadyAt.Sub(e2.StartedAt)
	var pending struct {
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
	}
	if err := e2.getJSON("/v1/posts?status=publishing&limit=1", &pending); err != nil {
		return Result{}, err
	}
	atRestart := pending.Pagination.Total

	// Until every acknowledged post is final: none left publishing, then each one checked.
	done := make(chan struct{})
	go progress(e2.log, "recovery (resume)", time.Duration(atRestart)*time.Millisecond+time.Second, done)
	var final time.Duration
	var statuses map[string]int
	lost, notFinal := 0, 0
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(done)
			return Result{}, fmt.Errorf("acknowledged posts not final 5 minutes after the restart: %d lost, %d not final", lost, notFinal)
		}
		if err := e2.getJSON("/v1/posts?status=publishing&limit=1", &pending); err != nil || pending.Pagination.Total > 0 {
			continue
		}
		final = time.Since(e2.StartedAt)
		statuses, lost, notFinal, err = checkFinal(e2, acked)
		if err != nil {
			close(done)
			return Result{}, err
		}
		if notFinal == 0 {
			break
		}
	}
	close(done)

	pubs, err := simPublications(sim.URL, "")
	if err != nil {
		return Result{}, err
	}
	perText := map[string]int{}
	for _, p := range pubs {
		perText[p.Platform+"\x00"+p.Text]++
	}
	dups := 0
	for _, c := range perText {
		dups += c - 1
	}
	published := 0
	for _, text := range acked {
		for _, p := range []string{"twitter_x", "bluesky", "linkedin"} {
			if perText[p+"\x00"+text] > 0 {
				published++
			}
		}
	}
	unknown, _ := e2.metric("herald_network_unknown_outcomes_total", "")
	peak = max(peak, e2.PeakRSSMB())
	return Result{Ops: len(acked), Seconds: r.Seconds, Throughput: float64(len(acked)) / r.Seconds,
		P50ms: r.P50ms, P99ms: r.P99ms, P999ms: r.P999ms, Errors: lost + notFinal + dups, PeakRSSMB: peak,
		LimitName: "clean start-up, empty store (ms)", Limit: ms(cleanStart), Ratio: ms(ready) / ms(cleanStart),
		Notes: fmt.Sprintf("SIGKILL after %d posts were acknowledged (202) under load from %d clients to X, Bluesky and LinkedIn on `herald sim` in its own process (2 ms per call): %d posts still publishing at the restart; ready %.0f ms after the restart (the limit column: a clean start on an empty store, %.0f ms; the ratio is ready-after-crash / clean start); every acknowledged post final %.2fs after the restart (%s; each account publishes one call at a time, so at 2 ms per call that backlog needs at least %.1fs); lost %d, not final %d, duplicated publications %d (of %d on the simulator; %d of the %d acknowledged targets published); unknown outcomes resolved after the restart %.0f; ops, ops/s and latencies are the publish requests before the SIGKILL",
			len(acked), e.Connections, atRestart, ms(ready), ms(cleanStart), final.Seconds(), countList(statuses), (time.Duration(atRestart) * 2 * time.Millisecond).Seconds(), lost, notFinal, dups, len(pubs), published, 3*len(acked), unknown)}, nil
}

// countList prints counts as "a 3, b 1", in key order.
func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// checkFinal reads every acknowledged post: how many have each status, how many are missing
// (lost) and how many are not final yet.
func checkFinal(e *Env, acked map[string]string) (map[string]int, int, int, error) {
	ids := make([]string, 0, len(acked))
	for id := range acked {
		ids = append(ids, id)
	}
	var mu sync.Mutex
	statuses := map[string]int{}
	lost, notFinal := 0, 0
	err := parallel(16, len(ids), func(i int) error {
		req, _ := http.NewRequest(http.MethodGet, e.URL+"/v1/posts/"+ids[i], nil)
		req.Header.Set("Authorization", "Bearer "+e.Key)
		resp, err := e.Client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var p struct {
			Status string `json:"status"`
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case resp.StatusCode == http.StatusNotFound:
			lost++
		case resp.StatusCode != http.StatusOK:
			return fmt.Errorf("GET /v1/posts/%s: %s", ids[i], resp.Status)
		case json.NewDecoder(resp.Body).Decode(&p) != nil:
			return fmt.Errorf("GET /v1/posts/%s: undecodable", ids[i])
		default:
			statuses[p.Status]++
			if p.Status != "published" && p.Status != "partial" && p.Status != "failed" {
				notFinal++
			}
		}
		return nil
	})
	return statuses, lost, notFinal, err
}
