package web_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// accountIDs are the first n of the demo user's accounts.
func accountIDs(t *testing.T, h *herald, n int) []string {
	t.Helper()
	var ids []string
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		acc, err := tx.AccountsOfUser(h.user.ID)
		for _, a := range acc {
			if len(ids) < n {
				ids = append(ids, a.ID)
			}
		}
		return err
	}))
	return ids
}

func postJSON(t *testing.T, h *herald, path string, body any, want int) map[string]any {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	resp := apiCall(t, "POST", h.url+path, h.key, strings.NewReader(string(raw)))
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, want, resp.StatusCode, "%v", out)
	return out
}

// publish publishes through /v1 to n accounts and waits until the job is done.
func publish(t *testing.T, h *herald, text string, n int) string {
	t.Helper()
	out := postJSON(t, h, "/v1/posts/publish", map[string]any{"content": text, "platforms": accountIDs(t, h, n)}, 202)
	id := out["tracking_id"].(string)
	require.Eventually(t, func() bool {
		resp := apiCall(t, "GET", h.url+"/v1/jobs/"+id, h.key, nil)
		var j map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&j)
		return j["status"] == "completed" || j["status"] == "failed"
	}, 20*time.Second, 50*time.Millisecond)
	return out["post_id"].(string)
}

func schedule(t *testing.T, h *herald, text string, at time.Time) string {
	t.Helper()
	out := postJSON(t, h, "/v1/posts/schedule", map[string]any{"content": text, "platforms": accountIDs(t, h, 2),
		"scheduledAt": at.UTC().Format(time.RFC3339)}, 201)
	return out["id"].(string)
}

func draft(t *testing.T, h *herald, text string) string {
	t.Helper()
	out := postJSON(t, h, "/v1/posts", map[string]any{"content": text, "platforms": accountIDs(t, h, 2)}, 201)
	return out["id"].(string)
}
