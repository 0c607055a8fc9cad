package api_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// everyDay is a queue with two slots a day in Paris.
func everyDay() map[string]any {
	var slots []map[string]any
	for _, d := range []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		slots = append(slots, map[string]any{"weekday": d, "time": "18:00"}, map[string]any{"weekday": d, "time": "09:00"})
	}
	return map[string]any{"timezone": "Europe/Paris", "slots": slots}
}

// A queue is set and read back in order; drafts added to it take its earliest slot free for
// their accounts: a second draft of one account the next slot, a draft of another account the
// first one again; a post that is not a draft, and bad queues, are refused.
func TestQueue(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	a, b := h.Accounts[0], h.Accounts[1]

	r := h.Do("GET", "/v1/queue", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Empty(t, r.JSON(t)["slots"])

	draft := h.CreatePost("first in line", a)
	r = h.Do("POST", "/v1/posts/"+draft+"/queue", nil)
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Contains(t, r.ErrorMessage(t), "no slots")

	r = h.Do("PUT", "/v1/queue", everyDay())
	require.Equal(t, 200, r.Status, string(r.Body))
	q := r.JSON(t)
	require.Equal(t, "Europe/Paris", q["timezone"])
	slots := q["slots"].([]any)
	require.Len(t, slots, 14)
	require.Equal(t, map[string]any{"weekday": "monday", "time": "09:00"}, slots[0])
	require.Equal(t, map[string]any{"weekday": "monday", "time": "18:00"}, slots[1])
	require.Equal(t, q, h.Do("GET", "/v1/queue", nil).JSON(t))

	before := time.Now()
	r = h.Do("POST", "/v1/posts/"+draft+"/queue", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	first := r.JSON(t)
	require.Equal(t, "scheduled", first["status"])
	at1, err := time.Parse(time.RFC3339, first["scheduled_at"].(string))
	require.NoError(t, err)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	local := at1.In(paris)
	require.Contains(t, []string{"09:00", "18:00"}, local.Format("15:04"))
	require.True(t, at1.After(before))
	// The longest wait between the slots is from 18:00 to 09:00 the next day.
	require.True(t, at1.Before(before.Add(15*time.Hour)), "the first slot after now is at most 15 hours away: %s", at1)

	second := h.CreatePost("second in line", a)
	r = h.Do("POST", "/v1/posts/"+second+"/queue", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	at2, err := time.Parse(time.RFC3339, r.JSON(t)["scheduled_at"].(string))
	require.NoError(t, err)
	require.True(t, at2.After(at1), "%s after %s", at2, at1)
	require.True(t, at2.Before(at1.Add(16*time.Hour)), "the slot after %s: %s", at1, at2)

	other := h.CreatePost("another account", b)
	r = h.Do("POST", "/v1/posts/"+other+"/queue", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	at3, err := time.Parse(time.RFC3339, r.JSON(t)["scheduled_at"].(string))
	require.NoError(t, err)
	require.True(t, at3.Equal(at1), "another account's post takes the first slot: %s, not %s", at3, at1)

	// The post itself is scheduled at its slot.
	got := h.Do("GET", "/v1/posts/"+draft, nil).JSON(t)
	require.Equal(t, "scheduled", got["status"])
	require.Equal(t, first["scheduled_at"], got["scheduled_at"])

	// A scheduled post is not a draft.
	r = h.Do("POST", "/v1/posts/"+draft+"/queue", nil)
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "only a draft")

	r = h.Do("POST", "/v1/posts/0190a7a4-7c1e-7000-8000-000000000000/queue", nil)
	require.Equal(t, 404, r.Status, string(r.Body))

	for _, bad := range []struct {
		body any
		want string
	}{
		{map[string]any{"timezone": "Europe/Paris", "slots": []any{map[string]any{"weekday": "someday", "time": "09:00"}}}, "slots[0].weekday"},
		{map[string]any{"timezone": "Europe/Paris", "slots": []any{map[string]any{"weekday": "monday", "time": "9am"}}}, "slots[0].time"},
		{map[string]any{"timezone": "Europe/Paris", "slots": []any{map[string]any{"weekday": "monday", "time": "24:00"}}}, "slots[0].time"},
		{map[string]any{"timezone": "Mars/Olympus", "slots": []any{map[string]any{"weekday": "monday", "time": "09:00"}}}, "timezone"},
		{map[string]any{"timezone": "UTC", "slots": []any{}}, "at least one slot"},
		{map[string]any{"timezone": "UTC"}, "slots: Required"},
		{map[string]any{"timezone": "UTC", "slots": []any{map[string]any{"weekday": "monday", "time": "09:00"}, map[string]any{"weekday": "monday", "time": "09:00"}}}, "already a slot"},
		{map[string]any{"timezone": "UTC", "slots": []any{map[string]any{"weekday": "monday"}}}, "slots[0].time: Required"},
		{"not json", "Expected object"},
	} {
		r := h.DoKey(h.Key, "PUT", "/v1/queue", bad.body, nil)
		require.Equal(t, 400, r.Status, "%v: %s", bad.body, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
		require.Contains(t, r.ErrorMessage(t), bad.want)
	}
	// Nothing of the refused queues was stored.
	require.Equal(t, q, h.Do("GET", "/v1/queue", nil).JSON(t))
}

// In a workspace that requires approval, a draft an editor's key adds to the queue is held as a
// schedule is, its slot kept in its request; the slot is then taken for its accounts, and
// approved, the post is scheduled at it.
func TestQueuedDraftHeldForApproval(t *testing.T) {
	t.Parallel()
	a := newApprovals(t)
	r := a.DoKey(a.Key, "PUT", "/v1/queue", everyDay(), in(a.ws))
	require.Equal(t, 200, r.Status, string(r.Body))

	queue := func() map[string]any {
		t.Helper()
		r := a.DoKey(a.editor, "POST", "/v1/posts", a.post(t), nil)
		require.Equal(t, 201, r.Status, string(r.Body))
		r = a.DoKey(a.editor, "POST", "/v1/posts/"+r.JSON(t)["id"].(string)+"/queue", nil, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		return r.JSON(t)
	}
	held := queue()
	require.Equal(t, "pending_approval", held["status"])
	approval := held["approval"].(map[string]any)
	require.Equal(t, "schedule", approval["requested_action"])
	slot := approval["scheduled_at"].(string)

	next := queue()
	require.Equal(t, "pending_approval", next["status"])
	require.NotEqual(t, slot, next["approval"].(map[string]any)["scheduled_at"], "the held post's slot is taken")

	r = a.DoKey(a.Key, "POST", "/v1/posts/"+held["id"].(string)+"/approve", nil, in(a.ws))
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "scheduled", r.JSON(t)["status"])
	require.Equal(t, slot, r.JSON(t)["scheduled_at"])

	// The queue is the workspace's: the main workspace has none.
	r = a.Do("GET", "/v1/queue", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Empty(t, r.JSON(t)["slots"])
}

// Drafts of one account added at once each take their own slot.
func TestQueueConcurrentAdditions(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	r := h.Do("PUT", "/v1/queue", everyDay())
	require.Equal(t, 200, r.Status, string(r.Body))
	const n = 6
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.CreatePost("at once", h.Accounts[0])
	}
	times := make([]string, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.Do("POST", "/v1/posts/"+id+"/queue", nil)
			if r.Status == 200 {
				times[i], _ = r.JSON(t)["scheduled_at"].(string)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, at := range times {
		require.NotEmpty(t, at, "every addition was scheduled")
		require.False(t, seen[at], "two drafts in the slot %s", at)
		seen[at] = true
	}
}
