package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// campaignPost is one post of a campaign's JSON body.
func campaignPost(content string, accounts ...*persistence.Account) map[string]any {
	ids := make([]string, len(accounts))
	for i, a := range accounts {
		ids[i] = a.ID
	}
	return map[string]any{"content": content, "platforms": ids}
}

func (b *testBundle) createCampaign(body map[string]any, hdr http.Header) *response {
	b.t.Helper()
	return b.doKey(b.key, "POST", "/v1/campaigns", body, hdr)
}

// csvCampaign posts a CSV campaign with the query (name, publish, dry_run).
func (b *testBundle) csvCampaign(csv, query string) *response {
	b.t.Helper()
	return b.doKey(b.key, "POST", "/v1/campaigns?"+query, []byte(csv), http.Header{"Content-Type": {"text/csv; charset=utf-8"}})
}

// rowErrors reads details.rows of a 400.
func rowErrors(t *testing.T, r *response) map[int][]string {
	t.Helper()
	require.Equal(t, 400, r.status, string(r.body))
	require.Equal(t, "validation_error", r.errorCode(t))
	details, ok := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	require.True(t, ok, "details in %s", r.body)
	out := map[int][]string{}
	for _, it := range details["rows"].([]any) {
		m := it.(map[string]any)
		var errs []string
		for _, e := range m["errors"].([]any) {
			errs = append(errs, e.(string))
		}
		out[int(m["row"].(float64))] = errs
	}
	return out
}

// followCampaign follows a campaign's stream with a real SSE client until the server ends it,
// calling each for every event as it arrives; lastEventID resumes after an event.
func (b *testBundle) followCampaign(ctx context.Context, id, lastEventID string, each func(sseEvent)) ([]sseEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/campaigns/"+id+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.key)
	client := &sse.Client{HTTPClient: &http.Client{}, Backoff: sse.Backoff{MaxRetries: -1}}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	conn := client.NewConnection(req)
	conn.Buffer(nil, 4<<20) // done carries the campaign: its failed targets may be many
	var mu sync.Mutex
	var events []sseEvent
	conn.SubscribeToAll(func(e sse.Event) {
		var data map[string]any
		_ = json.Unmarshal([]byte(e.Data), &data)
		ev := sseEvent{Type: e.Type, ID: e.LastEventID, Data: data}
		if each != nil {
			each(ev)
		}
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	err = conn.Connect()
	mu.Lock()
	defer mu.Unlock()
	return events, err
}

// simTexts counts what the simulator published, by text.
func (b *testBundle) simTexts() map[string]int {
	out := map[string]int{}
	for _, r := range b.app.Sim.Publications("") {
		out[r.Text]++
	}
	return out
}

// A campaign published at once: 202 with every post and its job in the order of the request,
// one stream from the first step to done, its totals and targets per network, the posts in the
// post list, one request against the hourly quota, and Idempotency-Key as on publish.
func TestCampaignPublishesOnOneStream(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	x, bsky, li := b.account(platforms.X), b.account(platforms.Bluesky), b.account(platforms.LinkedIn)
	var posts []any
	for i := 0; i < 6; i++ {
		posts = append(posts, campaignPost(fmt.Sprintf("launch %d", i), []*persistence.Account{x, bsky, li}[i%3]))
	}
	posts = append(posts, campaignPost("everywhere", x, bsky))
	body := map[string]any{"name": "Launch", "publish": "now", "posts": posts}
	before := b.do("GET", "/v1/me", nil)
	r := b.createCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}})
	require.Equal(t, 202, r.status, string(r.body))
	acc := r.json(t)
	id := acc["campaign_id"].(string)
	require.Equal(t, "/v1/campaigns/"+id, r.header.Get("Location"))
	require.Equal(t, "/v1/campaigns/"+id+"/stream", acc["stream_url"])
	require.Len(t, acc["posts"], 7)
	remaining := func(r *response) int { n, _ := strconv.Atoi(r.header.Get("RateLimit-Remaining")); return n }
	require.Equal(t, remaining(before)-1, remaining(r), "a campaign is one request against the hourly quota")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events, _ := b.followCampaign(ctx, id, "", nil)
	require.NotEmpty(t, events)
	done := events[len(events)-1]
	require.Equal(t, "done", done.Type)
	require.Equal(t, "completed", done.Data["status"])
	require.Equal(t, 7.0, done.Data["totals"].(map[string]any)["published"])
	success := map[string]int{}
	last := 0
	for _, e := range events[:len(events)-1] {
		require.Equal(t, "progress", e.Type)
		n, err := strconv.Atoi(e.ID)
		require.NoError(t, err)
		require.Greater(t, n, last, "ids follow the timeline")
		last = n
		for _, k := range []string{"post_id", "tracking_id", "target", "platform", "connected_account_id", "phase", "message", "at"} {
			require.Contains(t, e.Data, k)
		}
		if e.Data["phase"] == persistence.PhaseSuccess {
			success[e.Data["post_id"].(string)]++
		}
	}
	require.Len(t, success, 7)
	require.Equal(t, 2, success[acc["posts"].([]any)[6].(map[string]any)["post_id"].(string)], "both targets of the last post")

	g := b.do("GET", "/v1/campaigns/"+id, nil)
	require.Equal(t, 200, g.status, string(g.body))
	d := g.json(t)
	require.Equal(t, "Launch", d["name"])
	require.Equal(t, "now", d["publish"])
	require.Equal(t, 7.0, d["posts"])
	require.Equal(t, map[string]any{"targets": 3.0, "pending": 0.0, "publishing": 0.0, "published": 3.0, "failed": 0.0}, d["by_platform"].(map[string]any)["twitter_x"])
	require.Empty(t, d["failed_targets"])
	l := b.do("GET", "/v1/campaigns?limit=5", nil)
	require.Equal(t, 200, l.status)
	require.Equal(t, 1.0, l.json(t)["pagination"].(map[string]any)["total"])
	require.Equal(t, 7, b.countPosts())
	for i, p := range acc["posts"].([]any) {
		m := p.(map[string]any)
		pd := b.do("GET", "/v1/posts/"+m["post_id"].(string), nil).json(t)
		require.Equal(t, "published", pd["status"])
		require.Equal(t, m["tracking_id"], pd["tracking_id"])
		if i < 6 {
			require.Equal(t, fmt.Sprintf("launch %d", i), pd["content"], "posts in the order of the request")
		}
	}

	// The same key and body replay the answer; another body is refused.
	again := b.createCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}})
	require.Equal(t, 202, again.status)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(r.body), string(again.body))
	body["name"] = "Another"
	require.Equal(t, 422, b.createCampaign(body, http.Header{"Idempotency-Key": {"launch-1"}}).status)
	require.Equal(t, 7, b.countPosts())
	texts := b.simTexts()
	require.Len(t, texts, 7)
	for text, n := range texts {
		require.Equal(t, map[bool]int{true: 2, false: 1}[text == "everywhere"], n, text)
	}

	// A late client gets the whole timeline again, then done; one that resumes after the last
	// progress gets only done.
	late, _ := b.followCampaign(ctx, id, "", nil)
	require.Equal(t, len(events), len(late))
	resumed, _ := b.followCampaign(ctx, id, strconv.Itoa(last), nil)
	require.Len(t, resumed, 1)
	require.Equal(t, "done", resumed[0].Type)
}
