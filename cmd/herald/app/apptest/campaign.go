package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	sse "github.com/tmaxmax/go-sse"

	"github.com/heraldhq/herald/persistence"
)

// CampaignPost is one post of a campaign's JSON body.
func CampaignPost(content string, accounts ...*persistence.Account) map[string]any {
	ids := make([]string, len(accounts))
	for i, a := range accounts {
		ids[i] = a.ID
	}
	return map[string]any{"content": content, "platforms": ids}
}

// CreateCampaign posts a campaign's JSON body with the Herald's key.
func (h *Herald) CreateCampaign(body map[string]any, hdr http.Header) *Response {
	h.T.Helper()
	return h.DoKey(h.Key, "POST", "/v1/campaigns", body, hdr)
}

// RowErrors reads details.rows of a 400, each row's errors by its number.
func RowErrors(t testing.TB, r *Response) map[int][]string {
	t.Helper()
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	details, ok := r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)
	require.True(t, ok, "details in %s", r.Body)
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

// FollowCampaign follows a campaign's stream with a real SSE client until the server ends it,
// calling each for every event as it arrives; lastEventID resumes after an event.
func (h *Herald) FollowCampaign(ctx context.Context, id, lastEventID string, each func(SSEEvent)) ([]SSEEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/v1/campaigns/"+id+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.Key)
	client := &sse.Client{HTTPClient: &http.Client{}, Backoff: sse.Backoff{MaxRetries: -1}}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	conn := client.NewConnection(req)
	conn.Buffer(nil, 4<<20) // done carries the campaign: its failed targets may be many
	var mu sync.Mutex
	var events []SSEEvent
	conn.SubscribeToAll(func(e sse.Event) {
		var data map[string]any
		_ = json.Unmarshal([]byte(e.Data), &data)
		ev := SSEEvent{Type: e.Type, ID: e.LastEventID, Data: data}
		if each != nil {
			each(ev)
		}
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	err = conn.Connect()
	if errors.Is(err, io.EOF) {
		err = nil // the server ended the stream (after done)
	}
	mu.Lock()
	defer mu.Unlock()
	return events, err
}
