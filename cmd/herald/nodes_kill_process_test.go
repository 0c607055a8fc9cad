package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Nodes SIGKILLed under load: what they were doing is finished by the others, once.

// nodesCallTimeout is the publishing call time-out of the nodes of these tests: after a
// takeover, the attempts the dead node left in doubt are looked up once it has passed.
const nodesCallTimeout = 5 * time.Second

// A shard owner SIGKILLed in the middle of a bulk publish sent to every node: every accepted post
// is finished by the others, and no target is published twice.
func TestNodesSIGKILLAShardOwnerDuringABulkPublish(t *testing.T) {
	needNodes(t)
	ns := startNodes(t, 3, "--call-timeout", nodesCallTimeout.String())
	targets := quotedIDs(accountsByPlatform(t, ns.nodes[0].p, ns.key), "twitter_x", "bluesky", "linkedin")
	require.Len(t, targets, 3)
	// The victim owns the shard of the X account, so that its calls move.
	var xID string
	require.NoError(t, json.Unmarshal([]byte(targets[0]), &xID))
	victim := ns.owner(shardLease(xID))
	require.NotNil(t, victim, "the X account's shard has an owner")

	const total = 300
	var mu sync.Mutex
	accepted := map[string]string{}
	var n atomic.Int64
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += 9 {
				text := fmt.Sprintf("nodes bulk %04d", i)
				live := ns.live()
				nd := live[i%len(live)]
				id, status, err := ns.publish(client, nd, text, targets, "")
				if err != nil || status == 503 {
					continue // the node died under the request, or it answered retry later
				}
				if !assert.Equal(t, 202, status, "publish %s", text) {
					continue
				}
				mu.Lock()
				accepted[id] = text
				mu.Unlock()
				if n.Add(1) == total/3 {
					once.Do(func() { close(killed) })
				}
			}
		}()
	}
	<-killed
	victim.p.kill9()
	wg.Wait()
	t.Logf("%d posts accepted, node %s killed after %d", len(accepted), victim.addr, total/3)
	ns.waitFinal(accepted, 60*time.Second)
	var texts []string
	for _, text := range accepted {
		texts = append(texts, text)
	}
	ns.logTwice()
	ns.noneTwice(texts, "twitter_x", "bluesky", "linkedin")
}

// logTwice logs every publication of a text published more than once on one network, with its
// time, so that a failure says when each happened.
func (ns *nodes) logTwice() {
	resp, err := http.Get(ns.sim + "/_sim/publications")
	require.NoError(ns.t, err)
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			ID, Platform, Account, Text string
			CreatedAt                   string `json:"created_at"`
		}
	}
	require.NoError(ns.t, json.NewDecoder(resp.Body).Decode(&out))
	seen := map[string]int{}
	for _, r := range out.Data {
		seen[r.Platform+"|"+r.Text]++
	}
	for _, r := range out.Data {
		if seen[r.Platform+"|"+r.Text] > 1 {
			ns.t.Logf("published twice: %s %q by %s at %s (%s)", r.Platform, r.Text, r.Account, r.CreatedAt, r.ID)
		}
	}
}

// An SSE client follows, on one node, a job whose actor runs on another, which is SIGKILLed while
// the job runs: the stream still ends with done, whichever node finishes the job, and what it told
// is consistent (ids rising, no target's outcome twice, done as the job ended).
func TestNodesAnSSEStreamEndsWithDoneWhileTheJobsOwnerIsKilled(t *testing.T) {
	needNodes(t)
	// Every call takes 150 ms, and each account publishes one post at a time: the posts sent
	// before the followed one keep its job running for a few seconds.
	ns := startNodesWith(t, 3, []string{"--latency", "150ms"}, "--call-timeout", nodesCallTimeout.String())
	targets := quotedIDs(accountsByPlatform(t, ns.nodes[0].p, ns.key), "twitter_x", "bluesky", "linkedin")
	require.Len(t, targets, 3)
	client := &http.Client{Timeout: 10 * time.Second}
	accepted := map[string]string{}
	var texts []string
	var jobID string
	for i := range 25 {
		text := fmt.Sprintf("nodes stream %02d", i)
		nd := ns.nodes[i%len(ns.nodes)]
		var r struct {
			PostID     string `json:"post_id"`
			TrackingID string `json:"tracking_id"`
		}
		for try := 0; ; try++ {
			req, _ := http.NewRequest("POST", nd.p.url+"/v1/posts/publish", strings.NewReader(`{"content":"`+text+`","platforms":[`+strings.Join(targets, ",")+`]}`))
			req.Header.Set("Authorization", "Bearer "+ns.key)
			req.Header.Set("Idempotency-Key", "nodes-"+text)
			resp, err := client.Do(req)
			require.NoError(t, err)
			if resp.StatusCode == 503 && try < 20 {
				// Retry-After: the post's shard is moving, as a careful client retries.
				resp.Body.Close()
				time.Sleep(250 * time.Millisecond)
				continue
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
			resp.Body.Close()
			require.Equal(t, 202, resp.StatusCode, text)
			break
		}
		accepted[r.PostID] = text
		texts = append(texts, text)
		jobID = r.TrackingID // the last one's: it waits behind all the others
	}
	victim := ns.owner(shardLease(jobID))
	require.NotNil(t, victim, "the job's shard has an owner")
	var follower *node
	for _, nd := range ns.nodes {
		if nd != victim {
			follower = nd
			break
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events := make(chan sseEvent, 64)
	status := make(chan int, 1)
	go followStream(ctx, follower.p.url+"/v1/jobs/"+jobID+"/stream", ns.key, status, events)
	require.Equal(t, 200, <-status)
	var got []sseEvent
	// The victim dies once the stream has told of the job's first steps, or after a second.
	select {
	case e, ok := <-events:
		require.True(t, ok, "the stream ended before the job ran")
		got = append(got, e)
	case <-time.After(time.Second):
	}
	victim.p.kill9()
	killed := time.Now()
	for e := range events {
		got = append(got, e)
	}
	require.NoError(t, ctx.Err(), "the stream did not end")
	require.NotEmpty(t, got)
	last := got[len(got)-1]
	require.Equal(t, "done", last.name, "the stream ends with done: %v", got)
	t.Logf("%d events; done %s after node %s was killed", len(got), time.Since(killed).Round(time.Millisecond), victim.addr)

	// What the stream told is consistent: progress ids rising (done carries the job's last
	// change's), each target's outcome at most once, and done as the job ended.
	final := map[string]int{}
	prev := int64(-1)
	for _, e := range got {
		id, err := strconv.ParseInt(e.id, 10, 64)
		require.NoError(t, err, "event id %q", e.id)
		if e.name != "progress" {
			require.GreaterOrEqual(t, id, prev, "done follows the last change: %v", got)
			continue
		}
		require.Greater(t, id, prev, "event ids rise: %v", got)
		prev = id
		var p struct{ Phase, Platform string }
		require.NoError(t, json.Unmarshal([]byte(e.data), &p))
		if p.Phase == "platform_success" || p.Phase == "platform_failed" {
			final[p.Platform]++
			require.Equal(t, 1, final[p.Platform], "%s's outcome told twice: %v", p.Platform, got)
		}
	}
	var done struct {
		Status           string
		Total, Completed int
		PlatformStatuses []struct{ Platform, Phase string } `json:"platform_statuses"`
	}
	require.NoError(t, json.Unmarshal([]byte(last.data), &done))
	require.Equal(t, "completed", done.Status, last.data)
	require.Equal(t, 3, done.Total)
	require.Equal(t, 3, done.Completed, last.data)
	for _, ps := range done.PlatformStatuses {
		require.Equal(t, "platform_success", ps.Phase, last.data)
	}
	status2, body := follower.p.request(ns.key, "GET", "/v1/jobs/"+jobID, "")
	require.Equal(t, 200, status2, string(body))
	var j struct{ Status string }
	require.NoError(t, json.Unmarshal(body, &j))
	require.Equal(t, done.Status, j.Status, "done told the job as it is stored")

	ns.waitFinal(accepted, 60*time.Second)
	ns.logTwice()
	ns.noneTwice(texts, "twitter_x", "bluesky", "linkedin")
}

// sseEvent is one event of a stream, as a plain SSE client reads it.
type sseEvent struct{ name, id, data string }

// followStream reads an SSE stream to its end, sending its status first and then each event; it
// closes events when the stream ends.
func followStream(ctx context.Context, url, key string, status chan<- int, events chan<- sseEvent) {
	defer close(events)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req) // no overall time-out: the stream lasts the job
	if err != nil {
		status <- 0
		return
	}
	defer resp.Body.Close()
	status <- resp.StatusCode
	if resp.StatusCode != 200 {
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var e sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if e.name != "" {
				events <- e
			}
			e = sseEvent{}
		case strings.HasPrefix(line, "event:"):
			e.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "id:"):
			e.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			e.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
}
