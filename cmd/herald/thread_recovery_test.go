package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// threadRecord is a record of the simulator with what a thread's check needs.
type threadRecord struct {
	ID       string `json:"id"`
	Platform string `json:"platform"`
	Text     string `json:"text"`
	ReplyTo  string `json:"reply_to"`
}

func threadRecords(t *testing.T, simURL, platform, prefix string) []threadRecord {
	t.Helper()
	resp, err := http.Get(simURL + "/_sim/publications?platform=" + platform)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct{ Data []threadRecord }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	var mine []threadRecord
	for _, r := range out.Data {
		if strings.HasPrefix(r.Text, prefix) {
			mine = append(mine, r)
		}
	}
	return mine
}

// A SIGKILL at any point of a five-part thread on X and on Bluesky loses nothing and publishes
// nothing twice: after a restart each thread is complete, and the network holds each part once,
// in order, each answering the one before.
func TestThreadSurvivesSIGKILL(t *testing.T) { eachBackend(t, threadSurvivesSIGKILL) }

func threadSurvivesSIGKILL(t *testing.T, store []string) {
	// Each call takes a while, so that the kills land between a part's attempt and its answer as
	// well as between parts, and the test's polling of the simulator sees four parts on each
	// network before the fifth is made even on a busy machine.
	simURL := startSim(t, "--latency", "150ms")
	// One data directory (and store) for every kill point: each starts the server again on it.
	dir := t.TempDir()
	flags := append(append([]string(nil), store...), "--sandbox", "--sim-url", simURL)
	// Kill points: right after the publish is acknowledged; as soon as two parts are on each
	// network (the network has made them, Herald may not have heard); during the call of a
	// fourth part (the sim answers 150 ms after a call arrives); once four are.
	for _, kp := range []struct {
		parts int
		wait  time.Duration
	}{{0, 0}, {2, 0}, {3, 75 * time.Millisecond}, {4, 0}} {
		killAfter := kp.parts
		t.Run(fmt.Sprintf("after %d parts and %s", killAfter, kp.wait), func(t *testing.T) {
			p := startServer(t, dir, flags...)
			key := sandboxKey(t, dir)
			ids := accountsByPlatform(t, p, key)
			prefix := fmt.Sprintf("kill-%d-%d", killAfter, kp.wait.Milliseconds())
			part := func(i int) string { return fmt.Sprintf("%s part %d", prefix, i) }
			thread := fmt.Sprintf(`[{"content":%q},{"content":%q},{"content":%q},{"content":%q}]`, part(2), part(3), part(4), part(5))
			req := fmt.Sprintf(`{"content":%q,"platforms":[%q,%q],"targets":[{"account_id":%q,"thread":%s},{"account_id":%q,"thread":%s}]}`,
				part(1), ids["twitter_x"], ids["bluesky"], ids["twitter_x"], thread, ids["bluesky"], thread)
			status, body := p.request(key, "POST", "/v1/posts/publish", req)
			require.Equal(t, 202, status, string(body))
			var ack struct {
				PostID     string `json:"post_id"`
				TrackingID string `json:"tracking_id"`
			}
			require.NoError(t, json.Unmarshal(body, &ack))
			deadline := time.Now().Add(20 * time.Second)
			for killAfter > 0 && len(threadRecords(t, simURL, "twitter_x", prefix))+len(threadRecords(t, simURL, "bluesky", prefix)) < 2*killAfter {
				require.True(t, time.Now().Before(deadline), "the threads did not start")
				time.Sleep(time.Millisecond)
			}
			time.Sleep(kp.wait)
			p.kill9()
			before := len(threadRecords(t, simURL, "twitter_x", prefix)) + len(threadRecords(t, simURL, "bluesky", prefix))
			require.Less(t, before, 10, "the kill landed before the threads were complete")
			t.Logf("%d of 10 parts were on the networks at the SIGKILL", before)

			p2 := startServer(t, dir, flags...)
			deadline = time.Now().Add(60 * time.Second)
			for {
				status, body := p2.request(key, "GET", "/v1/jobs/"+ack.TrackingID, "")
				require.Equal(t, 200, status, string(body))
				var job struct{ Status string }
				require.NoError(t, json.Unmarshal(body, &job))
				if job.Status == "completed" || job.Status == "failed" {
					require.Equal(t, "completed", job.Status, string(body))
					break
				}
				require.True(t, time.Now().Before(deadline), "the job did not finish: %s", body)
				time.Sleep(20 * time.Millisecond)
			}
			for _, platform := range []string{"twitter_x", "bluesky"} {
				recs := threadRecords(t, simURL, platform, prefix)
				require.Len(t, recs, 5, "%s holds each part once: %+v", platform, recs)
				for i, r := range recs {
					require.Equal(t, part(i+1), r.Text, "%s: the parts in order", platform)
					if i == 0 {
						require.Empty(t, r.ReplyTo, platform)
					} else {
						require.Equal(t, recs[i-1].ID, r.ReplyTo, "%s: part %d answers part %d", platform, i+1, i)
					}
				}
			}
			status, body = p2.request(key, "GET", "/v1/posts/"+ack.PostID, "")
			require.Equal(t, 200, status)
			require.Equal(t, 2*4, strings.Count(string(body), `"platform_post_id":"`)-2, "every part's id is in the post: %s", body)
			p2.kill9()
		})
	}
}
