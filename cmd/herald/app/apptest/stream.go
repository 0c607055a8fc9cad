package apptest

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	sse "github.com/tmaxmax/go-sse"
)

// SSEEvent is one event of a stream, its data decoded.
type SSEEvent struct {
	Type, ID string
	Data     map[string]any
}

// JobStream follows a job's stream with the Herald's key until the server ends it.
func (h *Herald) JobStream(ctx context.Context, jobID string) ([]SSEEvent, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/v1/jobs/"+jobID+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.Key)
	return ReadStream(&http.Client{}, req, nil)
}

// ReadStream follows an SSE stream with a real SSE client until the server ends it, calling
// after (when not nil) after each event, which may end the request's context to drop the stream.
func ReadStream(hc *http.Client, req *http.Request, after func(SSEEvent)) ([]SSEEvent, error) {
	client := &sse.Client{HTTPClient: hc, Backoff: sse.Backoff{MaxRetries: -1}}
	conn := client.NewConnection(req)
	var mu sync.Mutex
	var events []SSEEvent
	conn.SubscribeToAll(func(e sse.Event) {
		var data map[string]any
		_ = json.Unmarshal([]byte(e.Data), &data)
		mu.Lock()
		ev := SSEEvent{Type: e.Type, ID: e.LastEventID, Data: data}
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
