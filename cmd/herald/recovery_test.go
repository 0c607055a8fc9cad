package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startSim runs `herald sim` as its own process, so that its record outlives Herald's crashes.
func startSim(t *testing.T, extra ...string) string {
	t.Helper()
	cmd := exec.Command(heraldBin, append([]string{"sim", "--addr", "127.0.0.1:0"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "simulator listening on "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return u
		}
	}
	t.Fatal("herald sim did not start")
	return ""
}

type simRecord struct {
	ID, Platform, Account, Text string
}

func simPublications(t *testing.T, simURL string) []simRecord {
	t.Helper()
	resp, err := http.Get(simURL + "/_sim/publications")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct{ Data []simRecord }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Data
}

// A SIGKILL in the middle of a 1,000-post bulk publish loses no acknowledged post and publishes no
// target twice: after a restart every acknowledged post reaches a final state.
func TestBulkPublishSurvivesSIGKILL(t *testing.T) { eachBackend(t, bulkPublishSurvivesSIGKILL) }

func bulkPublishSurvivesSIGKILL(t *testing.T, store []string) {
	simURL := startSim(t, "--limit-scale", "100", "--latency", "2ms")
	dir := t.TempDir()
	flags := append(store, "--sandbox", "--sim-url", simURL, "--budget-scale", "100", "--plan-limits", "pro=1000000")
	p := startServer(t, dir, flags...)
	key := sandboxKey(t, dir)
	targets := quotedIDs(accountsByPlatform(t, p, key), "twitter_x", "bluesky", "linkedin")
	require.Len(t, targets, 3)

	const total = 1000
	var acked sync.Map // post id → text
	var n atomic.Int64
	var wg sync.WaitGroup
	killed := make(chan struct{})
	work := make(chan int, total)
	for i := 0; i < total; i++ {
		work <- i
	}
	close(work)
	client := &http.Client{Timeout: 10 * time.Second}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				text := fmt.Sprintf("bulk post %04d", i)
				req, _ := http.NewRequest("POST", p.url+"/v1/posts/publish", strings.NewReader(`{"content":"`+text+`","platforms":[`+strings.Join(targets, ",")+`]}`))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					return // the server is gone
				}
				var r struct {
					PostID string `json:"post_id"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if resp.StatusCode == 202 {
					acked.Store(r.PostID, text)
					if n.Add(1) == 400 {
						close(killed)
					}
				}
			}
		}()
	}
	<-killed
	p.kill9()
	wg.Wait()
	ackedN := 0
	acked.Range(func(_, _ any) bool { ackedN++; return true })
	require.GreaterOrEqual(t, ackedN, 400)
	t.Logf("%d posts acknowledged before the SIGKILL", ackedN)

	p2 := startServer(t, dir, flags...)
	deadline := time.Now().Add(90 * time.Second)
	acked.Range(func(k, v any) bool {
		for {
			status, body := p2.request(key, "GET", "/v1/posts/"+k.(string), "")
			require.Equal(t, 200, status, "acknowledged post %s is lost: %s", k, body)
			var post struct{ Status string }
			require.NoError(t, json.Unmarshal(body, &post))
			if post.Status == "published" || post.Status == "partial" || post.Status == "failed" {
				return true
			}
			if time.Now().After(deadline) {
				t.Fatalf("post %s is still %s", k, post.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	require.Contains(t, p2.logText(), "resumed publish jobs", "jobs were running at the SIGKILL")
	seen := map[string]int{}
	for _, r := range simPublications(t, simURL) {
		seen[r.Platform+"|"+r.Text]++
	}
	acked.Range(func(_, v any) bool {
		for _, pl := range []string{"twitter_x", "bluesky", "linkedin"} {
			require.LessOrEqual(t, seen[pl+"|"+v.(string)], 1, "%s published twice on %s", v, pl)
		}
		return true
	})
	for k, c := range seen {
		require.Equal(t, 1, c, "%s published %d times", k, c)
	}
}
