package bench

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// targetsScenario: the cost of per-network posts. Create and publish with targets (each of three
// networks its own text and options) against the same requests without, and against requests
// without targets whose text is as many bytes longer as the targets add to the stored post (the
// store's commits are bound by the bytes they write), on one server in the same run, in
// alternating phases so that a drift of the machine falls on all alike; and POST /v1/posts/validate's latency for a post to six networks (TikTok,
// Pinterest and YouTube among them) once their accounts' choices are cached.
//
// The figure is publishes with targets per second; the limit, the same publishes without targets
// in the same run (the ratio is the cost of the targets).
func targetsScenario(base *Env) (Result, error) {
	e, sim, ids, err := base.spawnOnOwnSim([]string{"twitter_x", "bluesky", "linkedin", "tiktok", "pinterest", "youtube"},
		[]string{"--limit-scale", "100000"}, unlimited[2:]...)
	if err != nil {
		return Result{}, err
	}
	defer sim.Close()
	defer e.Close()
	x, bsky, li := ids[0], ids[1], ids[2]
	three := quoteAll(ids[:3])
	plain := func(w, i int) []byte {
		return fmt.Appendf(nil, `{"content":"Bench %d-%d: the autumn collection is out today. #launch","platforms":[%s]}`, w, i, three)
	}
	// padded is plain with as many more bytes of text as the targets add to the stored post
	// (about 170), so that a post with targets is also compared with one of the same size.
	pad := strings.Repeat(" and more", 19)
	padded := func(w, i int) []byte {
		return fmt.Appendf(nil, `{"content":"Bench %d-%d: the autumn collection is out today. #launch%s","platforms":[%s]}`, w, i, pad, three)
	}
	with := func(w, i int) []byte {
		return fmt.Appendf(nil, `{"content":"Bench %d-%d: the autumn collection is out today. #launch","platforms":[%s],"targets":[`+
			`{"account_id":%q,"content":"Bench %d-%d on X: out today. #launch","options":{"reply_settings":"following"}},`+
			`{"account_id":%q,"options":{"langs":["en"],"labels":[]}},`+
			`{"account_id":%q,"content":"Bench %d-%d on LinkedIn: our autumn collection is out today.","options":{"visibility":"PUBLIC"}}]}`,
			w, i, three, x, w, i, bsky, li, w, i)
	}
	ws, err := e.wires(e.Connections)
	if err != nil {
		return Result{}, err
	}
	defer closeWires(ws)
	phase := e.Duration / 2
	run := func(name, path string, want int, body func(w, i int) []byte) (float64, error) {
		r, err := drive(e.log, name, e.Connections, phase, func(w, i int) error {
			st, b, err := ws[w].do(http.MethodPost, path, body(w, i))
			if err != nil {
				return err
			}
			if st != want {
				return fmt.Errorf("%s: %d %s", path, st, b)
			}
			return nil
		})
		return r.Throughput, err
	}
	var rates [2][3]float64 // [create, publish][without, with, without but as large]
	for round := 0; round < 2; round++ {
		for k, op := range []struct {
			path string
			want int
		}{{"/v1/posts", http.StatusCreated}, {"/v1/posts/publish", http.StatusAccepted}} {
			for j, body := range []func(w, i int) []byte{plain, with, padded} {
				t, err := run(fmt.Sprintf("targets %s %d/%d", op.path, j, round), op.path, op.want, body)
				if err != nil {
					return Result{}, err
				}
				rates[k][j] += t / 2
			}
		}
	}
	// validate: one request at a time, the choices cached by the first.
	six := quoteAll(ids)
	body := fmt.Appendf(nil, `{"content":"Validate me","platforms":[%s],"targets":[{"account_id":%q,"options":{"privacy_level":"SELF_ONLY","allow_comment":true}}]}`, six, ids[3])
	if st, b, err := ws[0].do(http.MethodPost, "/v1/posts/validate", body); err != nil || st != http.StatusOK {
		return Result{}, fmt.Errorf("validate: %d %s %v", st, b, err)
	}
	n := 2000
	if e.Quick {
		n = 300
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		st, b, err := ws[0].do(http.MethodPost, "/v1/posts/validate", body)
		if err != nil || st != http.StatusOK {
			return Result{}, fmt.Errorf("validate: %d %s %v", st, b, err)
		}
		lat = append(lat, time.Since(start))
	}
	r := Result{Ops: n, Throughput: rates[1][1], LimitName: "publish without targets (same run)", Limit: rates[1][0],
		P50ms: durationsPct(lat, 0.5), P99ms: durationsPct(lat, 0.99)}
	r.Notes = fmt.Sprintf("publish %.0f/s with targets against %.0f/s without (ratio %.2f; %.0f/s without targets but with as many more bytes of text, ratio %.2f); "+
		"create %.0f/s with against %.0f/s without (ratio %.2f; as large without targets %.0f/s, ratio %.2f); "+
		"validate of a post to six networks (choices cached), one request at a time: p50 %.2f ms p99 %.2f ms over %d requests; %s",
		rates[1][1], rates[1][0], rates[1][1]/rates[1][0], rates[1][2], rates[1][1]/rates[1][2],
		rates[0][1], rates[0][0], rates[0][1]/rates[0][0], rates[0][2], rates[0][1]/rates[0][2],
		r.P50ms, r.P99ms, n, e.memoryNote())
	return r, nil
}
