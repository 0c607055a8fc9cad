package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"time"
)

// analyticsScenario: the analytics overview over 200 publications (100 posts, each to X and
// Bluesky), with the simulator adding 100 ms to every network call. Reported: the latency of
// cached answers under load (target p99 under 2 ms), and the cold fan-out — a cache miss that
// reads all 200 publications from the networks — measured on distinct custom windows (target
// under 1 s), with every network budget respected (no 429 from the simulated networks, no
// partial answer).
func analyticsScenario(base *Env) (Result, error) {
	e, err := base.Spawn("--sim-latency", "100ms")
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	ids, err := e.accountIDs("twitter_x", "bluesky")
	if err != nil {
		return Result{}, err
	}
	const posts = 100 // X's publish budget: 100 per 15 minutes
	if err := parallel(16, posts, func(i int) error {
		st, b, err := e.post("/v1/posts/publish", fmt.Sprintf(`{"content":"Analytics bench post %d: autumn collection, free shipping this week.","platforms":[%s]}`, i, quoteAll(ids)), nil)
		if err != nil || st != 202 {
			return fmt.Errorf("publish: %d %s %v", st, b, err)
		}
		return nil
	}); err != nil {
		return Result{}, err
	}
	done := make(chan struct{})
	go progress(e.log, "analytics: publishing", 20*time.Second, done)
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if f, err := e.metric("herald_jobs_finished_total", ""); err == nil && f >= posts {
			break
		}
		if time.Now().After(deadline) {
			close(done)
			return Result{}, fmt.Errorf("the %d publishes did not finish within 5 minutes", posts)
		}
	}
	close(done)

	// Cold: each custom window is a distinct query, so each request is a cache miss that reads
	// every publication.
	cold := 20
	if e.Quick {
		cold = 5
	}
	now := time.Now().UTC()
	var coldMs []float64
	for i := range cold {
		q := url.Values{"range": {"custom"}, "since": {now.Add(-30*24*time.Hour + time.Duration(i)*time.Second).Format(time.RFC3339)},
			"until": {now.Add(time.Hour).Format(time.RFC3339)}}
		t0 := time.Now()
		ov, err := e.overview("/v1/analytics/overview?" + q.Encode())
		if err != nil {
			return Result{}, err
		}
		coldMs = append(coldMs, float64(time.Since(t0))/float64(time.Millisecond))
		if ov.Partial || ov.Sampled || ov.Read != 2*posts {
			return Result{}, fmt.Errorf("cold overview read %d of %d publications (partial=%v sampled=%v)", ov.Read, 2*posts, ov.Partial, ov.Sampled)
		}
	}
	sort.Float64s(coldMs)

	// Cached: one query, warmed once, then read under load.
	const cached = "/v1/analytics/overview?range=28d"
	if _, err := e.overview(cached); err != nil {
		return Result{}, err
	}
	client := e.Client
	get := func(w, i int) error {
		req, _ := http.NewRequest(http.MethodGet, e.URL+cached, nil)
		req.Header.Set("Authorization", "Bearer "+e.Key)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("overview: %s", resp.Status)
		}
		return nil
	}
	// Latency with a few clients, then throughput with every connection (where the figures are
	// queueing on this machine's cores, shared with this load generator).
	r, err := drive(e.log, "analytics: cached (4)", 4, e.Duration, get)
	if err != nil {
		return r, err
	}
	full, err := drive(e.log, "analytics: cached (all)", e.Connections, e.Duration, get)
	if err != nil {
		return r, err
	}
	r.Errors += full.Errors
	rejected, _ := e.metric("herald_network_rate_limited_total", "")
	calls, _ := e.metric("herald_network_calls_total", `endpoint="metrics"`)
	r.Notes = fmt.Sprintf("cached overview with 4 clients (p99 target < 2 ms); with %d clients: %.0f/s, p50 %.2f ms, p99 %.2f ms. Cold fan-out over %d publications at 100 ms per network call (target < 1 s): p50 %.0f ms, max %.0f ms over %d misses (%.0f metrics calls in all); network 429s: %.0f",
		e.Connections, full.Throughput, full.P50ms, full.P99ms, 2*posts, coldMs[len(coldMs)/2], coldMs[len(coldMs)-1], cold, calls, rejected)
	return r, nil
}

type overviewFigures struct {
	Partial bool `json:"partial"`
	Sampled bool `json:"sampled"`
	Read    int  `json:"publications_read"`
}

func (e *Env) overview(path string) (overviewFigures, error) {
	var ov overviewFigures
	req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.Key)
	resp, err := e.Client.Do(req)
	if err != nil {
		return ov, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return ov, fmt.Errorf("GET %s: %s %s", path, resp.Status, b)
	}
	return ov, json.NewDecoder(resp.Body).Decode(&ov)
}
