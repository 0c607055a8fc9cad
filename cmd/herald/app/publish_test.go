package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/platforms"
)

// waitJob polls a job until it is completed or failed.
func (b *testBundle) waitJob(id string) map[string]any {
	b.t.Helper()
	h := *b.h
	h.T = b.t
	return h.WaitJob(id)
}

func (b *testBundle) publishNew(body map[string]any, hdr http.Header) *response {
	return b.doKey(b.key, "POST", "/v1/posts/publish", body, hdr)
}

func ids(accts ...string) []string { return accts }

type sseEvent struct {
	Type, ID string
	Data     map[string]any
}

func (b *testBundle) stream(ctx context.Context, jobID string) ([]sseEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/jobs/"+jobID+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	return readStream(&http.Client{}, req)
}

// readStream follows an SSE stream with a real SSE client until the server ends it.
func readStream(hc *http.Client, req *http.Request) ([]sseEvent, error) {
	return readStreamUntil(hc, req, nil)
}

// readStreamUntil is readStream with a callback after each event (which may end the request's
// context to drop the stream).
func readStreamUntil(hc *http.Client, req *http.Request, after func(sseEvent)) ([]sseEvent, error) {
	client := &sse.Client{HTTPClient: hc, Backoff: sse.Backoff{MaxRetries: -1}}
	conn := client.NewConnection(req)
	var mu sync.Mutex
	var events []sseEvent
	conn.SubscribeToAll(func(e sse.Event) {
		var data map[string]any
		_ = json.Unmarshal([]byte(e.Data), &data)
		mu.Lock()
		ev := sseEvent{Type: e.Type, ID: e.LastEventID, Data: data}
		events = append(events, ev)
		mu.Unlock()
		if after != nil {
			after(ev)
		}
	})
	err := conn.Connect()
	mu.Lock()
	defer mu.Unlock()
	return events, err
}

// A real SSE client gets progress and done for a live job, and a late client exactly one done.
func TestJobStream(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: 150 * time.Millisecond})
	r := b.publishNew(map[string]any{"content": "streamed", "platforms": ids(b.account(platforms.X).ID, b.account(platforms.Bluesky).ID)}, nil)
	require.Equal(t, 202, r.status)
	jobID := r.json(t)["tracking_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := b.stream(ctx, jobID)
	require.GreaterOrEqual(t, len(events), 3, "%v", events)
	last := events[len(events)-1]
	require.Equal(t, "done", last.Type)
	require.Equal(t, "completed", last.Data["status"])
	require.Equal(t, 2.0, last.Data["completed"])
	require.Len(t, last.Data["platform_statuses"], 2)
	progress := 0
	for _, e := range events[:len(events)-1] {
		require.Equal(t, "progress", e.Type)
		require.NotEmpty(t, e.ID)
		for _, k := range []string{"status", "phase", "platform", "message", "completed", "failed", "total"} {
			require.Contains(t, e.Data, k)
		}
		progress++
	}
	require.GreaterOrEqual(t, progress, 2)
	require.Equal(t, "platform_success", events[len(events)-2].Data["phase"])

	late, _ := b.stream(ctx, jobID)
	require.Len(t, late, 1, "a late client gets a single done")
	require.Equal(t, "done", late[0].Type)

	// Unknown and foreign jobs are refused before any event.
	resp := b.doKey(b.key, "GET", "/v1/jobs/"+uuid.NewString()+"/stream", nil, nil)
	require.Equal(t, 404, resp.status)
	require.Equal(t, "application/json", resp.header.Get("Content-Type"))
	_, otherKey := b.newUser("peeker@example.com", "pro")
	resp = b.doKey(otherKey, "GET", "/v1/jobs/"+jobID+"/stream", nil, nil)
	require.Equal(t, 403, resp.status)
	resp = b.doKey(otherKey, "GET", "/v1/jobs/"+jobID, nil, nil)
	require.Equal(t, 403, resp.status)
}

// A client that opens 100 streams and drops them mid-way frees everything. (One user may open
// that many here: the cap per user is TestStreamsPerUserAreCapped's.)
func TestDroppedStreamsAreFreed(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, config: func(c *app.Config) { c.MaxStreamsPerUser = -1 },
		budgets: map[platforms.Platform][]account.Rule{platforms.X: {{Name: "tweets", Limit: 1, Window: time.Hour, Cost: 1}}}})
	x := b.account(platforms.X).ID
	b.waitJob(b.publishNew(map[string]any{"content": "spends the budget", "platforms": ids(x)}, nil).json(t)["tracking_id"].(string))
	r := b.publishNew(map[string]any{"content": "waits an hour", "platforms": ids(x)}, nil)
	jobID := r.json(t)["tracking_id"].(string)
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The client drops the stream as soon as its first event arrives.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/jobs/"+jobID+"/stream", nil)
			assert.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+b.key)
			events, _ := readStreamUntil(&http.Client{}, req, func(sseEvent) { cancel() })
			if len(events) == 0 || events[0].Type != "progress" {
				t.Errorf("a running job's stream starts with its state: %v", events)
			}
		}()
	}
	wg.Wait()
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, b.app.MetricsURL()), "herald_sse_subscribers 0")
	}, 10*time.Second, 20*time.Millisecond, "every stream was freed")
	j := b.do("GET", "/v1/jobs/"+jobID, nil).json(t)
	require.Equal(t, "processing", j["status"])
	require.Contains(t, j["platform_statuses"].([]any)[0].(map[string]any)["message"], "waiting for rate budget until ")
}
