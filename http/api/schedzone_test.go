package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// The zone a schedule is given in is kept with the post and read back as scheduled_zone: the
// timezone named, the user's zone for +default, none for an offset alone; a move to a new time
// takes the zone it is given in.
func TestScheduledZoneIsKept(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X)
	wall := time.Now().Add(48 * time.Hour).Format("2006-01-02T15:04")
	r := h.Do("POST", "/v1/posts/schedule", map[string]any{"content": "later", "platforms": []string{x.ID},
		"scheduledAt": wall, "timezone": "Asia/Kolkata"})
	require.Equal(t, 201, r.Status, string(r.Body))
	body := r.JSON(t)
	id := body["id"].(string)
	require.Equal(t, "Asia/Kolkata", body["scheduled_zone"])
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)
	want, err := time.ParseInLocation("2006-01-02T15:04", wall, kolkata)
	require.NoError(t, err)
	got, err := time.Parse(time.RFC3339, body["scheduled_at"].(string))
	require.NoError(t, err)
	require.True(t, want.Equal(got), "the instant is the wall time in the zone: %s", got)

	detail := func() map[string]any {
		r := h.Do("GET", "/v1/posts/"+id, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		return r.JSON(t)
	}
	require.Equal(t, "Asia/Kolkata", detail()["scheduled_zone"])

	for _, tc := range []struct {
		body map[string]any
		want any
	}{
		{map[string]any{"scheduledAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)}, nil},
		{map[string]any{"scheduledAt": wall, "timezone": "America/New_York"}, "America/New_York"},
		{map[string]any{"scheduledAt": wall + "+default"}, "UTC"},
		{map[string]any{"scheduledAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339), "timezone": "Europe/Paris"}, "Europe/Paris"},
	} {
		r := h.Do("POST", "/v1/posts/"+id+"/schedule", tc.body)
		require.Equal(t, 200, r.Status, string(r.Body))
		require.Equal(t, tc.want, r.JSON(t)["scheduled_zone"], tc.body)
		require.Equal(t, tc.want, detail()["scheduled_zone"], tc.body)
	}

	// A list carries it too; a draft has none.
	r = h.Do("POST", "/v1/posts", map[string]any{"content": "draft", "platforms": []string{x.ID}})
	require.Equal(t, 201, r.Status, string(r.Body))
	r = h.Do("GET", "/v1/posts?status=scheduled", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "Europe/Paris", r.JSON(t)["data"].([]any)[0].(map[string]any)["scheduled_zone"])
	r = h.Do("GET", "/v1/posts?status=draft", nil)
	require.Nil(t, r.JSON(t)["data"].([]any)[0].(map[string]any)["scheduled_zone"])
}
