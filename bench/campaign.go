package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync/atomic"
	"time"
)

// campaignScenario: an agency's launch as campaigns. 100 clients (--quick: 10), each with the
// accounts of agencyMix (two LinkedIn members and a Pinterest account: 300 accounts), each send
// one campaign of 1,000 posts (--quick: 100), one request each, published at once; every post
// goes to one of its client's accounts in turn (Pins with an image). The networks' budgets are
// their published ones with the windows shrunk so that the run takes minutes: LinkedIn's 150
// posts a day per member become 150 a minute, Pinterest keeps its 100 writes a minute (--quick:
// 15 and 10 per 10 seconds), on Herald (--budget-rules) and on the simulator alike, so that
// every account needs three or four windows. Reported: the submission time (first request to
// the last 202), the time until every post is final (the ops/s are posts per second over it),
// the budget efficiency (for every account, the time its budget forces, one window per extra
// batch, over the time taken from its first publication to its last: the ratio, target at least
// 0.95), the network's 429s and the duplicates (the errors, with the failed posts: all must be
// zero). The simulator runs in its own process.
func campaignScenario(base *Env) (Result, error) {
	clients, perCampaign, window := 100, 1000, time.Minute
	liLimit, pinLimit := 150, 100
	if base.Quick {
		clients, perCampaign, window = 10, 100, 10*time.Second
		liLimit, pinLimit = 15, 10
	}
	rules := fmt.Sprintf("linkedin:posts=%d/%s,pinterest:org_write=%d/%s", liLimit, window, pinLimit, window)
	sim, err := startSim()
	if err != nil {
		return Result{}, err
	}
	defer sim.Close()
	for _, l := range []struct {
		platform, bucket string
		limit            int
	}{{"linkedin", "posts", liLimit}, {"pinterest", "org_write", pinLimit}} {
		body, _ := json.Marshal(map[string]any{"platform": l.platform, "bucket": l.bucket, "limit": l.limit, "window": window.String()})
		resp, err := http.Post(sim.URL+"/_sim/limits", "application/json", bytes.NewReader(body))
		if err != nil {
			return Result{}, err
		}
		resp.Body.Close()
	}
	e, err := base.Spawn("--sim-url", sim.URL, "--budget-rules", rules)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()

	// Setup: one image (a Pin needs one), then every client's accounts.
	setupStart := time.Now()
	mediaID, err := e.uploadImage()
	if err != nil {
		return Result{}, fmt.Errorf("upload the image: %w", err)
	}
	wanted, byHandle, err := e.connectAgency(clients, "launch")
	if err != nil {
		return Result{}, err
	}
	bodies := make([][]byte, clients)
	for c := range bodies {
		posts := make([]map[string]any, perCampaign)
		for i := range posts {
			a := wanted[c*len(agencyMix)+i%len(agencyMix)]
			id, ok := byHandle[a.platform+"/"+a.handle]
			if !ok {
				return Result{}, fmt.Errorf("connected %s account %s is not listed", a.platform, a.handle)
			}
			p := map[string]any{"content": fmt.Sprintf("Client %03d, launch post %04d: the spring collection is live, see the lookbook. #spring", c, i), "platforms": []string{id}}
			if a.platform == "pinterest" {
				p["media"] = []string{mediaID}
			}
			posts[i] = p
		}
		bodies[c], _ = json.Marshal(map[string]any{"name": fmt.Sprintf("Client %03d spring launch", c), "publish": "now", "posts": posts})
	}
	setup := time.Since(setupStart)
	// As in bulk-agency: the connect flow's own calls count against the networks' per-second
	// limits, which Herald's publish budgets do not model.
	time.Sleep(1100 * time.Millisecond)

	// Every campaign at once, one request each, from up to 16 clients. A campaign published at
	// once is refused whole (503, nothing created) while its posts do not fit beside the
	// publishes in hand (--max-job-backlog): as a client should, wait for its Retry-After (1 s)
	// and send it again. The accounts take what their budgets hold back out of the count, so
	// every campaign is accepted as the first ones' accounts reach their budgets.
	var next, refused atomic.Int64
	start := time.Now()
	r, err := drive(e.log, "campaign (submit)", min(16, clients), 24*time.Hour, func(w, i int) error {
		k := next.Add(1) - 1
		if k >= int64(clients) {
			return errStop
		}
		return e.acceptedAfterRetries("/v1/campaigns", string(bodies[k]), &refused)
	})
	if err != nil {
		return r, err
	}
	submitted := time.Since(start)
	if r.Errors > 0 {
		return Result{}, fmt.Errorf("%d campaign requests failed (%s)", r.Errors, r.Notes)
	}

	// Until every post is final.
	posts := clients * perCampaign
	perAccount := perCampaign / len(agencyMix)
	windows := (perAccount + min(liLimit, pinLimit) - 1) / min(liLimit, pinLimit)
	expected := time.Duration(windows-1)*window + submitted + 10*time.Second
	done := make(chan struct{})
	go progress(e.log, "campaign (final)", expected, done)
	var final time.Duration
	for deadline := time.Now().Add(expected + 5*time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if f, err := e.metric("herald_jobs_finished_total", ""); err == nil && f >= float64(posts) {
			final = time.Since(start)
			break
		}
	}
	close(done)
	finished, _ := e.metric("herald_jobs_finished_total", "")
	if final == 0 {
		return Result{}, fmt.Errorf("only %.0f of %d posts were final %s after the first campaign", finished, posts, time.Since(start).Round(time.Second))
	}
	failed, _ := e.metric("herald_jobs_finished_total", `status="failed"`)
	rejected, _ := e.metric("herald_network_rate_limited_total", "")
	waits, _ := e.metric("herald_rate_budget_waits_total", "")

	// Budget efficiency from the network's own record, on every account whose posts needed more
	// than one window: the time the budget forces over the time taken, first to last.
	var forced, taken time.Duration
	worst, bound, published, dups := 1.0, 0, 0, 0
	for _, pl := range []struct {
		platform string
		limit    int
	}{{"linkedin", liLimit}, {"pinterest", pinLimit}} {
		pubs, err := simPublications(sim.URL, pl.platform)
		if err != nil {
			return Result{}, err
		}
		published += len(pubs)
		dups += duplicates(pubs)
		times := map[string][]time.Time{}
		for _, p := range pubs {
			times[p.Account] = append(times[p.Account], p.CreatedAt)
		}
		for _, ts := range times {
			sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
			w := (len(ts) + pl.limit - 1) / pl.limit
			if w < 2 {
				continue
			}
			bound++
			f, t := time.Duration(w-1)*window, ts[len(ts)-1].Sub(ts[0])
			forced += f
			taken += t
			worst = math.Min(worst, f.Seconds()/t.Seconds())
		}
	}
	missing := max(0, posts-(published-dups))
	eff := 0.0
	if taken > 0 {
		eff = forced.Seconds() / taken.Seconds()
	}
	res := Result{Ops: posts, Seconds: final.Seconds(), Throughput: float64(posts) / final.Seconds(),
		P50ms: r.P50ms, P99ms: r.P99ms, P999ms: r.P999ms, Errors: int(failed) + missing + dups + int(rejected),
		LimitName: "budget: achieved / allowed (≥ 0.95)", Limit: 1, Ratio: eff}
	res.Notes = fmt.Sprintf("%d campaigns of %d posts (one request each, published at once) over %d accounts (%d clients × LinkedIn, LinkedIn, Pinterest; each post to one of its client's accounts in turn, Pins with one image), budgets %s on Herald and the simulator: submitted in %.1fs (after %d refusals of a full publish backlog, each retried after its Retry-After; latencies are of the campaign requests, retries included), every post final %.1fs after the first request; jobs failed %.0f, publications missing %d, duplicated %d; network 429s seen: %.0f; budget waits %.0f; budget efficiency %s over the %d accounts whose budget bound (time the budget forces / time taken, first to last publication; worst account %.3f) — the ratio, target at least 0.95; setup (image, %d accounts through the browser connect flow) %.1fs; %s",
		clients, perCampaign, len(wanted), clients, rules, submitted.Seconds(), refused.Load(), final.Seconds(), failed, missing, dups, rejected, waits,
		strconv.FormatFloat(eff, 'f', 3, 64), bound, worst, len(wanted), setup.Seconds(), e.memoryNote())
	return res, nil
}
