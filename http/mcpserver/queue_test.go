package mcpserver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// add_to_queue, through the official SDK's client, schedules a draft in the workspace queue's
// first slot after now, and refuses a draft when the queue has no slots and a post that is not
// a draft.
func TestMCPAddToQueue(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.MCPSession(h.Key)
	d := apptest.OKJSON(t, apptest.CallTool(t, s, "create_draft", map[string]any{"content": "queued", "accounts": []string{"bluesky"}}))
	require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, s, "add_to_queue", map[string]any{"post_id": d["post_id"]})), "no slots")

	r := h.Do("PUT", "/v1/queue", map[string]any{"timezone": "UTC", "slots": []map[string]any{{"weekday": "monday", "time": "07:15"}}})
	require.Equal(t, 200, r.Status, string(r.Body))
	before := time.Now().UTC()
	q := apptest.OKJSON(t, apptest.CallTool(t, s, "add_to_queue", map[string]any{"post_id": d["post_id"]}))
	require.Equal(t, "scheduled", q["status"])
	at, err := time.Parse(time.RFC3339, q["scheduled_at"].(string))
	require.NoError(t, err)
	at = at.UTC()
	require.Equal(t, time.Monday, at.Weekday())
	require.Equal(t, "07:15", at.Format("15:04"))
	require.True(t, at.After(before) && at.Before(before.Add(7*24*time.Hour)), "the next Monday 07:15 UTC: %s", at)

	require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, s, "add_to_queue", map[string]any{"post_id": d["post_id"]})), "only a draft")
}
