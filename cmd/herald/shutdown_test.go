package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// shutdownExitBound is how long a SIGTERM may take: the drain (1 s), the HTTP grace period (10 s)
// and the actors' budget (10 s), all in App.Shutdown.
const shutdownExitBound = 21 * time.Second

// loadRecord is one write a load client sent, and how it ended.
type loadRecord struct {
	kind    string // "create" or "publish"
	content string // unique: the post is found by it
	key     string // the publish's Idempotency-Key
	body    string
	res     loadResult
	postID  string
	jobID   string
}

// A SIGTERM while 64 clients create posts, publish them to three networks and follow the jobs'
// streams: every request is either acknowledged with a durable 2xx or refused before anything was
// written (503 with Retry-After, or a refused connection); an answer lost in transit is settled
// after the restart (loadclient_test.go); open streams end cleanly with a retry: field after the
// last complete event; the process exits 0 within its grace period; and after a restart on the
// same data directory every acknowledged post is there, every job that was running resumes and
// ends, and no target is published twice (the simulator, a process of its own, is the witness).
func TestShutdownUnderLoad(t *testing.T) {
	simURL := startSim(t, "--limit-scale", "100", "--latency", "20ms")
	dir := t.TempDir()
	flags := []string{"--sandbox", "--sim-url", simURL, "--budget-scale", "100", "--plan-limits", "pro=100000000", "--addr", freeAddr(t)}
	p := startServer(t, dir, flags...)
	c := newLoadClient(p.url, sandboxKey(t, dir))
	accts := c.sandboxAccounts(t)
	textNetworks := []string{"twitter_x", "bluesky", "linkedin", "threads", "facebook"}

	const clients = 64
	var (
		mu      sync.Mutex
		records []*loadRecord
		streams []streamResult
		acks    atomic.Int64
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		swg     sync.WaitGroup
	)
	term := make(chan struct{})
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			streaming := make(chan struct{}, 1) // one stream of this client open at a time
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var rec *loadRecord
				if i%2 == 0 {
					content := fmt.Sprintf("shutdown create %02d-%04d", w, i)
					rec = &loadRecord{kind: "create", content: content,
						body: fmt.Sprintf(`{"content":%q,"platforms":[%q]}`, content, accts["twitter_x"])}
					rec.res = c.do("POST", "/v1/posts", rec.body, nil)
					if rec.res.outcome == acked {
						var r struct{ ID string }
						_ = json.Unmarshal(rec.res.body, &r)
						rec.postID = r.ID
					}
				} else {
					content := fmt.Sprintf("shutdown publish %02d-%04d", w, i)
					var ids []string
					for k := 0; k < 3; k++ {
						ids = append(ids, fmt.Sprintf("%q", accts[textNetworks[(w+i+k)%len(textNetworks)]]))
					}
					rec = &loadRecord{kind: "publish", content: content, key: fmt.Sprintf("shutdown-%02d-%04d", w, i),
						body: fmt.Sprintf(`{"content":%q,"platforms":[%s]}`, content, strings.Join(ids, ","))}
					rec.res = c.do("POST", "/v1/posts/publish", rec.body, map[string]string{"Idempotency-Key": rec.key})
					if rec.res.outcome == acked {
						var r struct {
							PostID     string `json:"post_id"`
							TrackingID string `json:"tracking_id"`
						}
						_ = json.Unmarshal(rec.res.body, &r)
						rec.postID, rec.jobID = r.PostID, r.TrackingID
						select {
						case streaming <- struct{}{}:
							swg.Add(1)
							go func() {
								defer swg.Done()
								s := c.stream(context.Background(), rec.jobID)
								mu.Lock()
								streams = append(streams, s)
								mu.Unlock()
								<-streaming
							}()
						default:
						}
					}
				}
				mu.Lock()
				records = append(records, rec)
				mu.Unlock()
				if rec.res.outcome == acked && acks.Add(1) == 600 {
					close(term)
				}
				if rec.res.outcome != acked {
					time.Sleep(5 * time.Millisecond) // refused or cut off: do not spin
				}
			}
		}()
	}

	select {
	case <-term:
	case <-time.After(60 * time.Second):
		t.Fatal("the load did not reach 600 acknowledged writes")
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	termAt := time.Now()
	select {
	case <-p.done:
	case <-time.After(shutdownExitBound + 10*time.Second):
		t.Fatalf("no exit %s after SIGTERM", shutdownExitBound+10*time.Second)
	}
	exitAfter := time.Since(termAt)
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), p.logText())
	require.Less(t, exitAfter, shutdownExitBound, "exit within the grace period")
	require.Contains(t, p.logText(), `"msg":"stopped"`)
	time.Sleep(50 * time.Millisecond) // the clients meet a refused connection
	close(stop)
	wg.Wait()
	swg.Wait()

	count := map[string]map[outcome]int{"create": {}, "publish": {}}
	drained := 0 // refused with a 503 rather than a closed door
	for _, r := range records {
		count[r.kind][r.res.outcome]++
		if r.res.status == 503 {
			drained++
		}
		if r.res.outcome == lost {
			t.Logf("lost: %s %q: %s", r.kind, r.content, r.res)
		}
		require.NotEqual(t, rejected, r.res.outcome, "%s %q: %s", r.kind, r.content, r.res)
	}
	t.Logf("exit %v after SIGTERM; creates %v, publishes %v (%d refused with 503); %d streams", exitAfter.Round(time.Millisecond), count["create"], count["publish"], drained, len(streams))
	require.NotZero(t, drained, "the drain answers 503")

	// Every stream ended after a complete event: with done, or with the retry: field Herald sends
	// when it lets a stream go at shutdown. The jobs of the others resume after the restart.
	var cut []string
	for _, s := range streams {
		if s.status != 200 && (s.err == nil || classify(0, nil, nil, s.err) == refused) {
			continue // refused: the shutdown had begun
		}
		require.NoError(t, s.err)
		require.True(t, s.clean, "the stream ended in the middle of an event: %+v", s)
		require.True(t, s.done || s.retry, "the stream ended with neither done nor retry: %+v", s)
		if !s.done {
			cut = append(cut, s.lastID)
		}
	}
	require.NotEmpty(t, cut, "some streams were open at the SIGTERM")

	p2 := startServer(t, dir, flags...)
	c2 := newLoadClient(p2.url, c.key)
	require.Contains(t, p2.logText(), "resumed publish jobs", "jobs were running at the SIGTERM")
	settle(t, c2, records)
	for _, r := range records {
		if r.kind == "publish" && r.jobID != "" {
			s := c2.stream(context.Background(), r.jobID)
			require.True(t, s.done, "job %s: %+v", r.jobID, s)
		}
	}
	checkPublishedOnce(t, c2, simURL, records)
}

// settle checks, after a restart, what every record's answer promised: an acknowledged post is
// there with its content and its job ends; a refused one was never written; a lost publish is
// sent again with its Idempotency-Key and then ends like an acknowledged one; a lost create is
// there at most once.
func settle(t *testing.T, c *loadClient, records []*loadRecord) {
	t.Helper()
	for _, r := range records {
		switch r.res.outcome {
		case acked:
			var post struct{ Content string }
			require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/posts/"+r.postID, ""), &post), "acknowledged post %s (%q) is lost", r.postID, r.content)
			require.Equal(t, r.content, post.Content)
		case refused:
			require.Empty(t, c.postsWith(t, r.content), "%s %q was refused (%s) but written", r.kind, r.content, r.res)
		case lost:
			if r.kind == "publish" {
				again := c.do("POST", "/v1/posts/publish", r.body, map[string]string{"Idempotency-Key": r.key})
				require.Equal(t, acked, again.outcome, "%q sent again with its key: %s", r.content, again)
				var a struct {
					PostID     string `json:"post_id"`
					TrackingID string `json:"tracking_id"`
				}
				require.NoError(t, json.Unmarshal(again.body, &a))
				r.postID, r.jobID = a.PostID, a.TrackingID
			}
			require.LessOrEqual(t, len(c.postsWith(t, r.content)), 1, "%q was written twice", r.content)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, r := range records {
		if r.jobID == "" {
			continue
		}
		for {
			var j struct{ Status string }
			require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/jobs/"+r.jobID, ""), &j))
			if j.Status == "completed" || j.Status == "failed" {
				break
			}
			require.True(t, time.Now().Before(deadline), "job %s of %q is still %s", r.jobID, r.content, j.Status)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// checkPublishedOnce compares the simulator's record with Herald's: no network received a post
// twice, and every target Herald reports published was received exactly once.
func checkPublishedOnce(t *testing.T, c *loadClient, simURL string, records []*loadRecord) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range simPublications(t, simURL) {
		seen[r.Platform+"|"+r.Text]++
	}
	for k, n := range seen {
		require.Equal(t, 1, n, "%s published %d times", k, n)
	}
	for _, r := range records {
		if r.jobID == "" {
			continue
		}
		var post struct {
			Platforms []struct{ Platform, Status string }
		}
		require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/posts/"+r.postID, ""), &post))
		for _, pl := range post.Platforms {
			if pl.Status == "published" {
				require.Equal(t, 1, seen[pl.Platform+"|"+r.content], "%q is published on %s but the network has no post", r.content, pl.Platform)
			}
		}
	}
}
