package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
)

// The chaos test (make chaos; HERALD_CHAOS=1): Herald is killed with SIGKILL at a random moment
// of each of chaosRounds rounds of mixed load, and restarted on the same data directory. The load:
// drafts, publishes to all nine networks (text, photo and video posts), posts scheduled to fall
// due during the run (or while Herald is down), deletions, media uploads and job streams, with a
// webhook subscription delivering to a real receiver that stays up across the rounds, and a
// simulator (its own process, so that its record outlives the kills) failing about one network
// call in twenty at random: 5xx, timeouts, 429s and posts created before an error (an unknown
// outcome).
//
// After each restart: every acknowledged write is there (and every acknowledged deletion gone),
// no network received a post twice, every job is there and, if not final, was resumed, and every
// webhook event that arrived came with one delivery id on all its attempts and a valid signature.
// At the end, with the faults turned off and after everything settled: every job is final, every scheduled post fired exactly
// once, every target Herald reports published is on its network exactly once, and every webhook
// event was delivered (a 2xx from the receiver) at least once.
//
// The seed is printed; HERALD_CHAOS_SEED=N replays a run (as far as the timing of concurrent
// calls allows).
const chaosRounds = 10

// chaosRec is one write of the chaos load.
type chaosRec struct {
	kind    string // create, publish, schedule, delete, media
	content string
	key     string // Idempotency-Key of a publish
	body    string
	round   int
	res     loadResult
	postID  string
	jobID   string
	mediaID string
}

type chaosRun struct {
	t     *testing.T
	seed  uint64
	accts map[string]string

	mu     sync.Mutex
	recs   []*chaosRec
	photos []string // acknowledged media ids
	videos []string
	drafts []string // acknowledged drafts not yet deleted
	jobs   []string // acknowledged jobs, for streams
	final  map[string]bool
	// streams counts how the job streams ended: done, farewell (retry:), or cut by the kill.
	streams map[string]int
}

var chaosPNG, chaosMP4 []byte

func TestChaos(t *testing.T) {
	if os.Getenv("HERALD_CHAOS") != "1" {
		t.Skip("the chaos test runs with HERALD_CHAOS=1 (make chaos)")
	}
	seed := rand.Uint64() % 1_000_000_000
	if s := os.Getenv("HERALD_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "HERALD_CHAOS_SEED")
		seed = n
	}
	t.Logf("chaos seed %d (replay: HERALD_CHAOS_SEED=%d make chaos)", seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos seed %d failed (replay: HERALD_CHAOS_SEED=%d make chaos)", seed, seed)
		}
	})
	started := time.Now()
	rnd := rand.New(rand.NewPCG(seed, 1))
	chaosPNG = walkPNG(t)
	chaosMP4 = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), make([]byte, 4096)...)

	simURL := startSim(t, "--limit-scale", "100", "--latency", "5ms", "--fault-rate", "0.05", "--fault-seed", strconv.FormatUint(seed, 10),
		"--fault-spare", "youtube:rate_limit", "--timeout-hold", "1s", "--fault-reset", "1s")
	// --limit-scale keeps YouTube's uploads a day (its unit costs scale with the pool): a pool of
	// a million units at the documented costs matches Herald's budget at --budget-scale 100.
	lim, err := http.Post(simURL+"/_sim/limits", "application/json", strings.NewReader(`{"platform":"youtube","bucket":"units","limit":1000000,"window":"25h"}`))
	require.NoError(t, err)
	lim.Body.Close()
	require.Equal(t, 200, lim.StatusCode)
	// The receiver answers one delivery in ten with 500 and Retry-After: 1, so that retries happen.
	ca := webhooktest.NewCA(t)
	var rmu sync.Mutex
	rrnd := rand.New(rand.NewPCG(seed, 2))
	rcv := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		rmu.Lock()
		defer rmu.Unlock()
		if rrnd.IntN(10) == 0 {
			w.Header().Set("Retry-After", "1")
			return 500
		}
		return 200
	})
	dir := t.TempDir()
	flags := []string{"--sandbox", "--sim-url", simURL, "--budget-scale", "100", "--plan-limits", "pro=100000000",
		"--addr", freeAddr(t), "--webhook-ca-file", ca.File}

	run := &chaosRun{t: t, seed: seed, final: map[string]bool{}, streams: map[string]int{}}
	var hookID, hookSecret string
	for round := 0; round <= chaosRounds; round++ {
		if round == chaosRounds {
			// The end: no more faults, so that what is left settles without the minute-long
			// waits some networks' 429s impose (Meta and TikTok give no reset time).
			req, _ := http.NewRequest("PUT", simURL+"/_sim/faults", strings.NewReader(`{"rate":0}`))
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
		}
		p := startServer(t, dir, flags...)
		c := newLoadClient(p.url, sandboxKey(t, dir))
		if round == 0 {
			run.accts = c.sandboxAccounts(t)
			var hook struct{ ID, Secret string }
			require.NoError(t, json.Unmarshal(c.must(t, "POST", "/v1/webhooks",
				fmt.Sprintf(`{"url":%q,"events":["post.published","post.failed","post.scheduled","post.deleted"]}`, rcv.URL)), &hook))
			hookID, hookSecret = hook.ID, hook.Secret
			for _, kind := range []string{"photo", "video"} {
				r := run.upload(c, kind, 0)
				require.NotNil(t, r, "first %s upload got no answer", kind)
				require.Equal(t, acked, r.res.outcome, "first %s upload: %s", kind, r.res)
			}
		} else {
			run.check(p, c, simURL, rcv, hookID, hookSecret)
		}
		if round == chaosRounds {
			run.settle(p, c, simURL, rcv, hookID, hookSecret)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			<-p.done
			require.Equal(t, 0, p.cmd.ProcessState.ExitCode())
			break
		}
		d := 2*time.Second + time.Duration(rnd.Int64N(int64(6*time.Second)))
		run.load(c, round, d, p.kill9)
		t.Logf("round %d: killed after %v of load", round, d.Round(time.Millisecond))
	}
	counts := map[string]map[outcome]int{}
	for _, r := range run.recs {
		if counts[r.kind] == nil {
			counts[r.kind] = map[outcome]int{}
		}
		counts[r.kind][r.res.outcome]++
	}
	faults, err := http.Get(simURL + "/_sim/faults")
	require.NoError(t, err)
	var f struct{ Injected map[string]int }
	require.NoError(t, json.NewDecoder(faults.Body).Decode(&f))
	faults.Body.Close()
	t.Logf("%d rounds in %v; writes %v; streams %v; simulator faults %v; %d webhook requests",
		chaosRounds, time.Since(started).Round(time.Second), counts, run.streams, f.Injected, len(rcv.Requests()))
}

// add records a write.
func (run *chaosRun) add(r *chaosRec) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.recs = append(run.recs, r)
	if r.res.outcome != acked {
		return
	}
	switch r.kind {
	case "create":
		run.drafts = append(run.drafts, r.postID)
	case "publish":
		run.jobs = append(run.jobs, r.jobID)
	case "media":
		if strings.HasSuffix(r.content, "video") {
			run.videos = append(run.videos, r.mediaID)
		} else {
			run.photos = append(run.photos, r.mediaID)
		}
	}
}

// load runs the mixed load, with workers of their own random streams, and kills the server
// after d while the workers go on; they stop once they have seen it gone.
func (run *chaosRun) load(c *loadClient, round int, d time.Duration, kill func()) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg, swg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(run.seed, uint64(1000+round*100+w)))
			streaming := make(chan struct{}, 1) // one stream of this worker open at a time
			for i := 0; ctx.Err() == nil; i++ {
				tag := fmt.Sprintf("chaos r%02d w%d n%04d", round, w, i)
				switch n := rnd.IntN(100); {
				case n < 18:
					run.create(c, tag, round)
				case n < 36:
					run.publish(c, tag, round, "text")
				case n < 46:
					run.publish(c, tag, round, "photo")
				case n < 52:
					run.publish(c, tag, round, "video")
				case n < 68:
					run.schedule(c, tag, round, time.Duration(1+rnd.IntN(6))*time.Second)
				case n < 78:
					run.deleteDraft(c, round, rnd)
				case n < 86:
					kind := "photo"
					if rnd.IntN(2) == 0 {
						kind = "video"
					}
					run.upload(c, kind, round)
				default:
					run.mu.Lock()
					var id string
					if len(run.jobs) > 0 {
						id = run.jobs[rnd.IntN(len(run.jobs))]
					}
					run.mu.Unlock()
					select {
					case streaming <- struct{}{}:
						swg.Add(1)
						go func() {
							defer swg.Done()
							run.follow(ctx, c, id)
							<-streaming
						}()
					default:
					}
				}
				// A pace the networks' queues keep up with (each account publishes one call at a
				// time), so that what is left at the end settles in seconds.
				time.Sleep(time.Duration(50+rnd.IntN(100)) * time.Millisecond)
			}
		}()
	}
	time.Sleep(d)
	kill()
	time.Sleep(20 * time.Millisecond) // requests meet the closed port
	cancel()
	wg.Wait()
	swg.Wait()
}

func (run *chaosRun) create(c *loadClient, tag string, round int) *chaosRec {
	content := tag + " draft"
	r := &chaosRec{kind: "create", content: content, round: round, body: fmt.Sprintf(`{"content":%q,"platforms":[%q]}`, content, run.accts["bluesky"])}
	r.res = c.do("POST", "/v1/posts", r.body, nil)
	run.expect(r)
	if r.res.outcome == acked {
		var p struct{ ID string }
		_ = json.Unmarshal(r.res.body, &p)
		r.postID = p.ID
	}
	run.add(r)
	return r
}

// publish sends a new post to networks by kind: text to X, Bluesky, LinkedIn, Threads and
// Facebook; a photo to Instagram, Pinterest and X; a video to YouTube and TikTok.
func (run *chaosRun) publish(c *loadClient, tag string, round int, kind string) *chaosRec {
	networks := map[string][]string{"text": {"twitter_x", "bluesky", "linkedin", "threads", "facebook"},
		"photo": {"instagram", "pinterest", "twitter_x"}, "video": {"youtube", "tiktok"}}[kind]
	var ids []string
	for _, n := range networks {
		ids = append(ids, strconv.Quote(run.accts[n]))
	}
	media := ""
	run.mu.Lock()
	switch kind {
	case "photo":
		media = fmt.Sprintf(`,"media":[%q]`, run.photos[len(tag)%len(run.photos)])
	case "video":
		media = fmt.Sprintf(`,"media":[%q]`, run.videos[len(tag)%len(run.videos)])
	}
	run.mu.Unlock()
	content := tag + " " + kind
	r := &chaosRec{kind: "publish", content: content, key: strings.ReplaceAll(tag, " ", "-"), round: round,
		body: fmt.Sprintf(`{"content":%q,"platforms":[%s]%s}`, content, strings.Join(ids, ","), media)}
	r.res = c.do("POST", "/v1/posts/publish", r.body, map[string]string{"Idempotency-Key": r.key})
	run.expect(r)
	if r.res.outcome == acked {
		run.accepted(r, r.res.body)
	}
	run.add(r)
	return r
}

func (run *chaosRun) accepted(r *chaosRec, body []byte) {
	var a struct {
		PostID     string `json:"post_id"`
		TrackingID string `json:"tracking_id"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.TrackingID == "" {
		run.t.Errorf("publish %q: 202 without a job: %s", r.content, body)
	}
	r.postID, r.jobID = a.PostID, a.TrackingID
}

func (run *chaosRun) schedule(c *loadClient, tag string, round int, in time.Duration) *chaosRec {
	content := tag + " scheduled"
	at := time.Now().Add(in).UTC().Format(time.RFC3339Nano)
	r := &chaosRec{kind: "schedule", content: content, round: round,
		body: fmt.Sprintf(`{"content":%q,"platforms":[%q,%q],"scheduledAt":%q}`, content, run.accts["bluesky"], run.accts["twitter_x"], at)}
	r.res = c.do("POST", "/v1/posts/schedule", r.body, nil)
	run.expect(r)
	if r.res.outcome == acked {
		var p struct{ ID string }
		_ = json.Unmarshal(r.res.body, &p)
		r.postID = p.ID
	}
	run.add(r)
	return r
}

// deleteDraft deletes one of the acknowledged drafts (post.deleted).
func (run *chaosRun) deleteDraft(c *loadClient, round int, rnd *rand.Rand) *chaosRec {
	run.mu.Lock()
	if len(run.drafts) == 0 {
		run.mu.Unlock()
		return nil
	}
	i := rnd.IntN(len(run.drafts))
	id := run.drafts[i]
	run.drafts = append(run.drafts[:i], run.drafts[i+1:]...)
	run.mu.Unlock()
	r := &chaosRec{kind: "delete", postID: id, round: round}
	r.res = c.do("DELETE", "/v1/posts/"+id, "", nil)
	run.expect(r)
	run.add(r)
	return r
}

// upload sends a photo or a video through presign, PUT and confirm; the confirm's answer is the
// write's.
func (run *chaosRun) upload(c *loadClient, kind string, round int) *chaosRec {
	data, ctype, name := chaosPNG, "image/png", "photo.png"
	if kind == "video" {
		data, ctype, name = chaosMP4, "video/mp4", "clip.mp4"
	}
	r := &chaosRec{kind: "media", content: "media " + kind, round: round}
	pre := c.do("POST", "/v1/media/presign", fmt.Sprintf(`{"filename":%q,"content_type":%q,"size_bytes":%d}`, name, ctype, len(data)), nil)
	run.expect(&chaosRec{kind: "presign", res: pre})
	if pre.outcome != acked {
		return nil
	}
	var p struct {
		UploadURL       string `json:"upload_url"`
		Key             string `json:"key"`
		StorageFilename string `json:"storage_filename"`
	}
	_ = json.Unmarshal(pre.body, &p)
	req, err := http.NewRequest("PUT", p.UploadURL, bytes.NewReader(data))
	if err != nil {
		run.t.Errorf("presign answered %s: %v", pre.body, err)
		return nil
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil // the server went away
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		run.t.Errorf("PUT of a %s upload: %d %s", kind, resp.StatusCode, body)
		return nil
	}
	r.res = c.do("POST", "/v1/media/confirm", fmt.Sprintf(`{"key":%q,"storage_filename":%q,"original_filename":%q,"content_type":%q,"size_bytes":%d}`,
		p.Key, p.StorageFilename, name, ctype, len(data)), nil)
	run.expect(r)
	if r.res.outcome == acked {
		var m struct{ ID string }
		if err := json.Unmarshal(r.res.body, &m); err != nil || m.ID == "" {
			run.t.Errorf("confirm answered %s", r.res.body)
		}
		r.mediaID = m.ID
	}
	run.add(r)
	return r
}

// follow streams an acknowledged job until it ends or the round does.
func (run *chaosRun) follow(ctx context.Context, c *loadClient, id string) {
	if id == "" {
		return
	}
	s := c.stream(ctx, id)
	end := "cut"
	switch {
	case s.status != 200:
		end = fmt.Sprintf("status %d", s.status)
	case s.done:
		end = "done"
	case s.retry:
		end = "farewell"
	}
	run.mu.Lock()
	run.streams[end]++
	run.mu.Unlock()
}

// expect fails the test on an answer no client should get: anything but a 2xx, a refusal, or a
// lost answer.
func (run *chaosRun) expect(r *chaosRec) {
	if r.res.outcome == rejected {
		run.t.Errorf("%s %q: %s", r.kind, r.content, r.res)
	}
}

// listPosts reads every post of the sandbox user.
func listPosts(t *testing.T, c *loadClient) map[string]struct{ Content, Status string } {
	t.Helper()
	out := map[string]struct{ Content, Status string }{}
	for page := 1; ; page++ {
		var l struct {
			Data []struct {
				ID, Content, Status string
			}
			Pagination struct {
				TotalPages int `json:"total_pages"`
			}
		}
		require.NoError(t, json.Unmarshal(c.must(t, "GET", fmt.Sprintf("/v1/posts?limit=100&page=%d", page), ""), &l))
		for _, p := range l.Data {
			out[p.ID] = struct{ Content, Status string }{p.Content, p.Status}
		}
		if page >= l.Pagination.TotalPages {
			return out
		}
	}
}

var resumedRE = regexp.MustCompile(`"msg":"resumed publish jobs","count":(\d+)`)

// check verifies the invariants that hold after every restart.
func (run *chaosRun) check(p *proc, c *loadClient, simURL string, rcv *webhooktest.Receiver, hookID, secret string) {
	t := run.t
	t.Helper()
	run.mu.Lock()
	recs := append([]*chaosRec(nil), run.recs...)
	run.mu.Unlock()
	posts := listPosts(t, c)
	deleted := map[string]bool{}      // acknowledged deletions
	mayBeDeleted := map[string]bool{} // deletions whose answer was lost
	for _, r := range recs {
		if r.kind == "delete" && r.res.outcome == acked {
			deleted[r.postID] = true
		}
		if r.kind == "delete" && r.res.outcome == lost {
			mayBeDeleted[r.postID] = true
		}
	}
	for _, r := range recs {
		if r.res.outcome != acked {
			continue
		}
		switch r.kind {
		case "create", "publish", "schedule":
			got, ok := posts[r.postID]
			if deleted[r.postID] {
				require.False(t, ok, "post %s was deleted (acknowledged) but is there", r.postID)
				continue
			}
			if mayBeDeleted[r.postID] && !ok {
				continue
			}
			require.True(t, ok, "acknowledged %s %q (post %s) is lost", r.kind, r.content, r.postID)
			require.Equal(t, r.content, got.Content)
		case "delete":
			_, ok := posts[r.postID]
			require.False(t, ok, "acknowledged deletion of %s undone", r.postID)
		case "media":
			c.must(t, "GET", "/v1/media/"+r.mediaID, "")
		}
	}
	require.Contains(t, string(c.must(t, "GET", "/v1/webhooks", "")), hookID, "the webhook subscription is there")

	// Jobs: there, and either final or resumed at this start.
	open := 0
	for _, r := range recs {
		if r.jobID == "" || run.final[r.jobID] {
			continue
		}
		var j struct{ Status string }
		require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/jobs/"+r.jobID, ""), &j), "job %s", r.jobID)
		if j.Status == "completed" || j.Status == "failed" {
			run.final[r.jobID] = true
		} else {
			open++
		}
	}
	resumed := 0
	if m := resumedRE.FindStringSubmatch(p.logText()); m != nil {
		resumed, _ = strconv.Atoi(m[1])
	}
	require.LessOrEqual(t, open, resumed, "every open job was resumed at the start")

	checkSimOnce(t, c, simURL)
	checkDeliveries(t, rcv, secret)
}

// checkSimOnce: no network received the same post twice. A failure shows the post's timeline.
func checkSimOnce(t *testing.T, c *loadClient, simURL string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, r := range simPublications(t, simURL) {
		seen[r.Platform+"|"+r.Text]++
	}
	for k, n := range seen {
		if n == 1 {
			continue
		}
		_, text, _ := strings.Cut(k, "|")
		var timeline []string
		for _, id := range c.postsWith(t, text) {
			timeline = append(timeline, c.timeline(t, id))
		}
		t.Fatalf("%s published %d times; the post's timeline:\n%s", k, n, strings.Join(timeline, "\n"))
	}
	return seen
}

// timeline is a post's timeline (GET /v1/posts/:id/events), one event a line, for failure
// messages.
func (c *loadClient) timeline(t *testing.T, postID string) string {
	var tl struct {
		Events []struct {
			ID, Phase, Platform, Message string
			CreatedAt                    time.Time `json:"created_at"`
		}
	}
	_ = json.Unmarshal(c.must(t, "GET", "/v1/posts/"+postID+"/events", ""), &tl)
	var out []string
	for _, e := range tl.Events {
		out = append(out, fmt.Sprintf("%s %s %s %s: %s", e.CreatedAt.Format("15:04:05.000"), e.ID, e.Platform, e.Phase, e.Message))
	}
	return strings.Join(out, "\n")
}

// checkDeliveries verifies every webhook request received: signed with the secret, the delivery
// id of the header in the body, and one delivery id per event (type and post) on every attempt.
// It returns the events that were answered with a 2xx.
func checkDeliveries(t *testing.T, rcv *webhooktest.Receiver, secret string) map[string]bool {
	t.Helper()
	ids := map[string]string{}
	delivered := map[string]bool{}
	for _, q := range rcv.Requests() {
		var ev struct {
			ID, Type string
			Data     struct {
				PostID string `json:"post_id"`
			}
		}
		err := json.Unmarshal(q.Body, &ev)
		if (q.ContentLength >= 0 && int64(len(q.Body)) < q.ContentLength) || (q.ContentLength < 0 && err != nil) {
			continue // Herald was killed while it sent the body: the receiver read part of it
		}
		require.NoError(t, err, "%q", q.Body)
		require.NoError(t, stripewebhook.ValidatePayloadWithTolerance(q.Body, q.Header.Get("X-Service-Signature"), secret, 300*time.Second),
			"%s %s", q.Header.Get("X-Service-Signature"), q.Body)
		require.Equal(t, q.Header.Get("X-Service-Delivery-Id"), ev.ID)
		require.Equal(t, q.Header.Get("X-Service-Event"), ev.Type)
		k := ev.Type + " " + ev.Data.PostID
		if prev, ok := ids[k]; ok {
			require.Equal(t, prev, ev.ID, "%s came with two delivery ids", k)
		}
		ids[k] = ev.ID
		if q.Status >= 200 && q.Status < 300 {
			delivered[k] = true
		}
	}
	return delivered
}

// settle, after the last restart, lets everything finish and checks the end state.
func (run *chaosRun) settle(p *proc, c *loadClient, simURL string, rcv *webhooktest.Receiver, hookID, secret string) {
	t := run.t
	t.Helper()
	var scheduled, published []string // post ids
	var jobs []string
	postOf := map[string]string{} // job id → post id
	expected := map[string]bool{} // webhook events: "type post_id"
	for _, r := range run.recs {
		switch {
		case r.res.outcome == refused && r.kind != "delete" && r.kind != "media":
			require.Empty(t, c.postsWith(t, r.content), "%s %q was refused (%s) but written", r.kind, r.content, r.res)
		case r.res.outcome == lost && r.kind == "publish":
			again := c.do("POST", "/v1/posts/publish", r.body, map[string]string{"Idempotency-Key": r.key})
			require.Equal(t, acked, again.outcome, "%q sent again with its key: %s", r.content, again)
			run.accepted(r, again.body)
			require.Len(t, c.postsWith(t, r.content), 1, "%q", r.content)
		case r.res.outcome == lost && (r.kind == "create" || r.kind == "schedule"):
			found := c.postsWith(t, r.content)
			require.LessOrEqual(t, len(found), 1, "%q was written twice", r.content)
			if len(found) == 1 {
				r.postID = found[0]
			}
		case r.res.outcome == lost && r.kind == "delete":
			if c.do("GET", "/v1/posts/"+r.postID, "", nil).status == 404 {
				expected["post.deleted "+r.postID] = true
			}
		case r.res.outcome == acked && r.kind == "delete":
			expected["post.deleted "+r.postID] = true
		}
		if r.postID == "" || (r.res.outcome != acked && r.res.outcome != lost) {
			continue
		}
		switch r.kind {
		case "schedule":
			scheduled = append(scheduled, r.postID)
			expected["post.scheduled "+r.postID] = true
		case "publish":
			published = append(published, r.postID)
			jobs = append(jobs, r.jobID)
			postOf[r.jobID] = r.postID
		}
	}

	// Every job ends, every scheduled post fires (once: one job), and each finished post's event
	// is expected at the receiver.
	start := time.Now()
	deadline := start.Add(90 * time.Second)
	for _, id := range jobs {
		for {
			var j struct{ Status string }
			require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/jobs/"+id, ""), &j))
			if j.Status == "completed" || j.Status == "failed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s is still %s: %s\n%s", id, j.Status, c.must(t, "GET", "/v1/jobs/"+id, ""), c.timeline(t, postOf[id]))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	type target struct{ Platform, Status string }
	var post struct {
		Content    string
		Status     string
		TrackingID *string `json:"tracking_id"`
		Platforms  []target
	}
	seen := checkSimOnce(t, c, simURL)
	for _, id := range append(scheduled, published...) {
		for {
			require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/posts/"+id, ""), &post))
			if post.Status == "published" || post.Status == "partial" || post.Status == "failed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("post %s (%q) is still %s:\n%s", id, post.Content, post.Status, c.timeline(t, id))
			}
			time.Sleep(50 * time.Millisecond)
		}
		event := "post.published "
		if post.Status == "failed" {
			event = "post.failed "
		}
		expected[event+id] = true
		var tl struct {
			Events []struct {
				TrackingID string `json:"tracking_id"`
			}
		}
		require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/posts/"+id+"/events", ""), &tl))
		jobsOf := map[string]bool{}
		for _, e := range tl.Events {
			jobsOf[e.TrackingID] = true
		}
		require.Len(t, jobsOf, 1, "post %s (%q) has one job: %v", id, post.Content, jobsOf)
		for _, pl := range post.Platforms {
			if pl.Status == "published" {
				require.Equal(t, 1, seen[pl.Platform+"|"+post.Content], "%q is published on %s but the network has no post", post.Content, pl.Platform)
			}
		}
	}
	checkSimOnce(t, c, simURL)

	final := time.Since(start)
	// Every event reaches the receiver at least once with a 2xx, and Herald's log of the
	// subscription holds no delivery still pending (an attempt answered 500 is retried a second
	// later; the dispatcher looks at the outbox every 2 s).
	deadline = time.Now().Add(30 * time.Second)
	for {
		delivered := checkDeliveries(t, rcv, secret)
		var missing []string
		for k := range expected {
			if !delivered[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d webhook events never delivered, such as %v\n%s", len(missing), missing[:min(5, len(missing))], webhookDiagnosis(t, c, rcv, hookID, missing))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		pending := 0
		for page := 1; ; page++ {
			var l struct {
				Data []struct{ Status string }
			}
			require.NoError(t, json.Unmarshal(c.must(t, "GET", fmt.Sprintf("/v1/webhooks/%s/deliveries?limit=100&page=%d", hookID, page), ""), &l))
			for _, d := range l.Data {
				if d.Status == "pending" {
					pending++
				}
			}
			if len(l.Data) < 100 {
				break
			}
		}
		if pending == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d webhook deliveries still pending", pending)
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("settled in %v (every post final after %v): %d publishes, %d scheduled posts, %d webhook events",
		time.Since(start).Round(time.Millisecond), final.Round(time.Millisecond), len(published), len(scheduled), len(expected))
}

// webhookDiagnosis says, for a failure message, what the receiver got for the missing events'
// posts, Herald's deliveries that did not succeed, and the posts' timelines.
func webhookDiagnosis(t *testing.T, c *loadClient, rcv *webhooktest.Receiver, hookID string, missing []string) string {
	var out []string
	posts := map[string]bool{}
	for _, k := range missing[:min(5, len(missing))] {
		_, id, _ := strings.Cut(k, " ")
		posts[id] = true
	}
	for _, q := range rcv.Requests() {
		for id := range posts {
			if bytes.Contains(q.Body, []byte(id)) {
				out = append(out, fmt.Sprintf("received %s %s: answered %d (%d of %d bytes)", q.Header.Get("X-Service-Event"), q.Header.Get("X-Service-Delivery-Id"), q.Status, len(q.Body), q.ContentLength))
			}
		}
	}
	for page := 1; ; page++ {
		var l struct {
			Data []map[string]any
		}
		_ = json.Unmarshal(c.must(t, "GET", fmt.Sprintf("/v1/webhooks/%s/deliveries?limit=100&page=%d", hookID, page), ""), &l)
		for _, d := range l.Data {
			if d["status"] != "succeeded" {
				b, _ := json.Marshal(d)
				out = append(out, "delivery "+string(b))
			}
		}
		if len(l.Data) < 100 {
			break
		}
	}
	for id := range posts {
		out = append(out, "post "+id+":\n"+c.timeline(t, id))
	}
	return strings.Join(out, "\n")
}
