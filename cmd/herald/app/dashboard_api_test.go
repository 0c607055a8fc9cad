package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/platforms"
)

// stream follows an SSE stream on the browser's session until the server ends it.
func (br *browser) stream(ctx context.Context, path string) ([]sseEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, br.b.url+path, nil)
	if err != nil {
		return nil, err
	}
	client := &sse.Client{HTTPClient: br.client, Backoff: sse.Backoff{MaxRetries: -1}}
	conn := client.NewConnection(req)
	var mu sync.Mutex
	var events []sseEvent
	conn.SubscribeToAll(func(e sse.Event) {
		var data map[string]any
		_ = json.Unmarshal([]byte(e.Data), &data)
		mu.Lock()
		events = append(events, sseEvent{Type: e.Type, ID: e.LastEventID, Data: data})
		mu.Unlock()
	})
	err = conn.Connect()
	mu.Lock()
	defer mu.Unlock()
	return events, err
}

// The mirror rule: every operation of the /v1 door is served by the /api door with the same
// handler, and nothing else is added to /api but the dashboard's own routes.
func TestDashboardDoorMirrorsV1(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	v1 := map[string]string{}
	dash := map[string]string{}
	for _, r := range b.app.Server.Echo.Router().Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		switch {
		case strings.HasPrefix(r.Path, "/v1/"):
			v1[r.Method+" "+strings.TrimPrefix(r.Path, "/v1")] = r.Path
		case strings.HasPrefix(r.Path, "/api/"):
			dash[r.Method+" "+strings.TrimPrefix(r.Path, "/api")] = r.Path
		}
	}
	// Outside the doors: the document, the signed media URLs, the connect flow's browser routes.
	for _, own := range []string{"GET /openapi.json", "PUT /media/uploads/:userId/:storageFilename",
		"GET /media/files/:storageFilename", "GET /accounts/connect/authorize", "GET /accounts/connect/callback"} {
		require.Contains(t, v1, own)
		delete(v1, own)
	}
	for op := range v1 {
		require.Contains(t, dash, op, "the /api door serves %s", op)
	}
	for _, own := range []string{"POST /session", "GET /session", "DELETE /session", "PATCH /profile", "POST /profile/password"} {
		require.Contains(t, dash, own)
		delete(dash, own)
	}
	for op := range dash {
		require.Contains(t, v1, op, "%s on /api is a /v1 operation", op)
	}
	require.Contains(t, dash, "GET /jobs/:trackingId/stream")
	require.Contains(t, dash, "POST /media/presign")
	require.Contains(t, dash, "GET /inbox/comments")
	require.Contains(t, dash, "POST /webhooks")
}

// A person publishes through /api on the session and the CSRF token, and follows the job's
// stream on the session; the links point back through /api. The doors stay shut to the other
// credential, and the hourly quota is /v1's only.
func TestPublishThroughTheDashboardDoor(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true, simLatency: 50 * time.Millisecond})
	br := b.signedIn()
	x, bsky := b.account(platforms.X).ID, b.account(platforms.Bluesky).ID
	body := map[string]any{"content": "from the dashboard", "platforms": ids(x, bsky)}

	r := br.send("POST", "/api/posts/publish", body, nil)
	require.Equal(t, 403, r.status, "no CSRF token")
	require.Equal(t, "forbidden", r.errorCode(t))
	r = br.send("POST", "/api/posts/publish", body, http.Header{"Authorization": {"Bearer " + b.key}, "X-Csrf-Token": {br.csrf}})
	require.Equal(t, 401, r.status, "an API key on /api")
	require.Equal(t, "unauthorized", r.errorCode(t))
	r = b.newBrowser().send("GET", "/api/posts", nil, http.Header{"Authorization": {"Bearer " + b.key}})
	require.Equal(t, 401, r.status, "an API key on /api/posts")
	r = br.send("GET", "/v1/posts", nil, nil)
	require.Equal(t, 401, r.status, "a cookie on /v1/posts")
	require.Equal(t, "invalid_api_key", r.errorCode(t))
	require.Empty(t, b.app.Sim.Publications(platforms.X), "nothing was published by a refused request")

	r = br.send("POST", "/api/posts/publish", body, br.csrfHeader())
	require.Equal(t, 202, r.status, string(r.body))
	requireSecurityHeaders(t, r)
	require.Empty(t, r.header.Get("RateLimit-Limit"), "the dashboard's door is not metered by the plan's hourly quota")
	acc := r.json(t)
	jobID := acc["tracking_id"].(string)
	require.Equal(t, "/api/jobs/"+jobID+"/stream", acc["stream_url"])
	require.Equal(t, "/api/jobs/"+jobID, r.header.Get("Location"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := br.stream(ctx, acc["stream_url"].(string))
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, "done", last.Type, "%v", events)
	require.Equal(t, "completed", last.Data["status"])
	require.Equal(t, 2.0, last.Data["completed"])

	r = br.send("GET", r.header.Get("Location"), nil, nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, "completed", r.json(t)["status"])
	r = br.send("GET", "/api/posts/"+acc["post_id"].(string), nil, nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, b.do("GET", "/v1/posts/"+acc["post_id"].(string), nil).json(t), r.json(t), "one behaviour, two doors")
	require.Len(t, b.app.Sim.Publications(platforms.X), 1)

	// Another user's job through /api is the same 403 as through /v1.
	other, _ := b.newUser("other@example.com", "pro")
	ob := b.newBrowser()
	require.Equal(t, 200, ob.signIn(other.Email, passwordOf(other.Email)).status)
	r = ob.send("GET", "/api/jobs/"+jobID, nil, nil)
	require.Equal(t, 403, r.status)
	require.Equal(t, "forbidden", r.errorCode(t))
}

// An Idempotency-Key names one operation whichever the door: a replay through the other door is
// the same job, its links pointing through the door of the replay.
func TestIdempotencyAcrossDoors(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	br := b.signedIn()
	body := map[string]any{"content": "once", "platforms": ids(b.account(platforms.Bluesky).ID)}
	hdr := br.csrfHeader()
	hdr.Set("Idempotency-Key", "door-1")
	first := br.send("POST", "/api/posts/publish", body, hdr)
	require.Equal(t, 202, first.status, string(first.body))
	jobID := first.json(t)["tracking_id"].(string)

	again := b.publishNew(body, http.Header{"Idempotency-Key": {"door-1"}})
	require.Equal(t, 202, again.status, string(again.body))
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, jobID, again.json(t)["tracking_id"])
	require.Equal(t, "/v1/jobs/"+jobID+"/stream", again.json(t)["stream_url"])
	require.Equal(t, "/v1/jobs/"+jobID, again.header.Get("Location"))

	same := br.send("POST", "/api/posts/publish", body, hdr)
	require.Equal(t, 202, same.status)
	require.Equal(t, first.body, same.body, "a replay through the first door is its stored answer")
	require.Equal(t, "/api/jobs/"+jobID, same.header.Get("Location"))
	b.waitJob(jobID)
	require.Len(t, b.app.Sim.Publications(platforms.Bluesky), 1, "one publication for one key")
}
