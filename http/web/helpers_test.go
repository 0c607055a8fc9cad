package web_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

// accountIDs are the first n of the demo user's accounts whose networks take a post of text
// alone (a post a network's rules refuse is refused when it is published or scheduled).
func accountIDs(t *testing.T, h *herald, n int) []string {
	t.Helper()
	needMedia := map[string]bool{"instagram": true, "tiktok": true, "youtube": true, "pinterest": true}
	var ids []string
	require.NoError(t, h.app.Store.View(func(tx *persistence.Tx) error {
		acc, err := tx.AccountsIn(h.user.ID)
		for _, a := range acc {
			if len(ids) < n && !needMedia[a.Platform] {
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

// unconvertiblePhoto uploads, through /v1/media, a PNG every network takes at submission
// (Instagram converts PNGs to JPEG) whose bytes are corrupt: Instagram fails its target when it
// publishes. A post a network's own rules refuse is refused at submission, so this is how a test
// makes a target fail on its network.
func unconvertiblePhoto(t *testing.T, h *herald) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 32, 16))))
	data := append(buf.Bytes()[:60:60], bytes.Repeat([]byte{0x5A}, 200)...)
	p := postJSON(t, h, "/v1/media/presign", map[string]any{"filename": "broken.png", "content_type": "image/png", "size_bytes": len(data)}, 200)
	req, err := http.NewRequest("PUT", p["upload_url"].(string), bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "image/png")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	m := postJSON(t, h, "/v1/media/confirm", map[string]any{"key": p["key"], "storage_filename": p["storage_filename"],
		"original_filename": "broken.png", "content_type": "image/png", "size_bytes": len(data)}, 201)
	return m["id"].(string)
}
