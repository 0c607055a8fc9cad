package api_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// After publishing, post detail says where each target went and why the others failed; the
// job lists its failed targets.
func TestPostDetailSaysWhereEachTargetWent(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li, ig := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.LinkedIn).ID, h.Account(platforms.Instagram).ID
	before := time.Now().UTC().Add(-time.Second)
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Where did it go?", "platforms": []string{x, bsky, li, ig}, "media": []string{h.UnconvertiblePhoto()}})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID := r.JSON(t)["post_id"].(string)
	j := h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, "completed", j["status"])
	errs := j["errors"].([]any)
	require.Len(t, errs, 1, "only the failed target")
	require.Equal(t, "instagram", errs[0].(map[string]any)["platform"])
	require.Equal(t, ig, errs[0].(map[string]any)["connected_account_id"])
	require.Contains(t, errs[0].(map[string]any)["message"], apptest.UnconvertibleMessage)
	require.True(t, strings.HasPrefix(j["failure_reason"].(string), "1 of 4 platforms failed: instagram: "), j["failure_reason"])

	require.Eventually(t, func() bool { return h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)["status"] == "partial" }, 10*time.Second, 10*time.Millisecond)
	p := h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)
	require.Equal(t, j["failure_reason"], p["failure_reason"])
	require.NotEmpty(t, p["updated_at"])
	for i, pl := range p["platforms"].([]any) {
		m := pl.(map[string]any)
		platform := platforms.Platform(m["platform"].(string))
		if platform == platforms.Instagram {
			require.Equal(t, "failed", m["status"])
			for _, f := range []string{"publication_id", "platform_post_id", "platform_post_url", "published_at"} {
				require.Nil(t, m[f], f)
			}
			continue
		}
		require.Equal(t, "published", m["status"], platform)
		require.Equal(t, persistence.PublicationUUID(postID, i), m["publication_id"])
		recs := h.App.Sim.Publications(platform)
		require.Len(t, recs, 1)
		require.Equal(t, recs[0].ID, m["platform_post_id"], platform)
		require.True(t, strings.HasPrefix(m["platform_post_url"].(string), "https://"), m["platform_post_url"])
		at, err := time.Parse(time.RFC3339Nano, m["published_at"].(string))
		require.NoError(t, err)
		require.True(t, at.After(before), at)
	}

	// A job and a post that did not fail say nothing of failure.
	r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "All good", "platforms": []string{x}})
	require.Equal(t, 202, r.Status, string(r.Body))
	j = h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, []any{}, j["errors"])
	require.Nil(t, j["failure_reason"])
	require.Eventually(t, func() bool {
		return h.Do("GET", "/v1/posts/"+r.JSON(t)["post_id"].(string), nil).JSON(t)["status"] == "published"
	}, 10*time.Second, 10*time.Millisecond)
	require.Nil(t, h.Do("GET", "/v1/posts/"+r.JSON(t)["post_id"].(string), nil).JSON(t)["failure_reason"])
}

// eventPhases returns the phases of a post's events on one platform, oldest first.
func eventPhases(t *testing.T, h *apptest.Herald, postID string, platform platforms.Platform) []string {
	r := h.Do("GET", "/v1/posts/"+postID+"/events", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	body := r.JSON(t)
	require.Equal(t, postID, body["post_id"])
	var out []string
	for _, e := range body["events"].([]any) {
		m := e.(map[string]any)
		if m["platform"] == string(platform) {
			out = append(out, m["phase"].(string))
		}
	}
	return out
}

// The timeline of a post: every job's steps per target, oldest first, stored as they happen.
func TestPostEventsTimeline(t *testing.T) {
	t.Parallel()
	rules := map[platforms.Platform][]account.Rule{}
	for p, rs := range account.DefaultRules {
		rules[p] = append([]account.Rule(nil), rs...)
	}
	// Facebook allows one publish an hour here, so that a second one waits for its budget.
	rules[platforms.Facebook] = []account.Rule{{Name: "calls", Limit: 1, Window: time.Hour, Cost: 1}}
	h := apptest.Start(t, apptest.Options{Demo: true, Budgets: rules})
	x, bsky, fb, ig, th := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.Facebook).ID,
		h.Account(platforms.Instagram).ID, h.Account(platforms.Threads).ID

	// X answers its post with a 5xx: the outcome is unknown until Herald looks the post up and
	// sends it again. Threads fails its container with a 5xx (nothing created): retried.
	// Facebook goes through.
	require.NoError(t, h.App.Sim.InjectFault(platforms.X, sim.FaultError5xx, 1))
	require.NoError(t, h.App.Sim.InjectFault(platforms.Threads, sim.FaultError5xx, 1))
	// Bluesky creates the post and then fails the answer: the look-up finds it.
	require.NoError(t, h.App.Sim.InjectFault(platforms.Bluesky, sim.FaultPostThenError, 1))
	r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "A timeline", "platforms": []string{x, bsky, fb, th}})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID, jobID := r.JSON(t)["post_id"].(string), r.JSON(t)["tracking_id"].(string)
	h.WaitJob(jobID)
	require.Equal(t, []string{"queued", "platform_resolved", "platform_success"}, eventPhases(t, h, postID, platforms.X))
	require.Equal(t, []string{"queued", "platform_retrying", "platform_success"}, eventPhases(t, h, postID, platforms.Threads))
	require.Equal(t, []string{"queued", "platform_resolved", "platform_success"}, eventPhases(t, h, postID, platforms.Bluesky))
	require.Len(t, h.App.Sim.Publications(platforms.Bluesky), 1, "found, not sent twice")
	require.Equal(t, []string{"queued", "platform_success"}, eventPhases(t, h, postID, platforms.Facebook))

	r = h.Do("GET", "/v1/posts/"+postID+"/events", nil)
	events := r.JSON(t)["events"].([]any)
	seen := map[string]bool{}
	var last time.Time
	for _, e := range events {
		m := e.(map[string]any)
		require.False(t, seen[m["id"].(string)], "event ids are unique")
		seen[m["id"].(string)] = true
		require.Equal(t, jobID, m["tracking_id"])
		at, err := time.Parse(time.RFC3339Nano, m["created_at"].(string))
		require.NoError(t, err)
		require.False(t, at.Before(last), "oldest first")
		last = at
		switch m["phase"] {
		case "platform_retrying":
			require.Contains(t, m["message"], "retrying in")
			require.Equal(t, th, m["connected_account_id"])
		case "platform_resolved":
			if m["platform"] == "bluesky" {
				require.Equal(t, "the outcome was unknown; the post was found on the network", m["message"])
			} else {
				require.Contains(t, m["message"], "it is sent again")
				require.Equal(t, x, m["connected_account_id"])
			}
		}
	}

	// Instagram cannot convert the photo: its target fails (a post with a photo has its own
	// post here, since the photo would change the other networks' calls above).
	r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "A broken photo", "platforms": []string{ig}, "media": []string{h.UnconvertiblePhoto()}})
	require.Equal(t, 202, r.Status, string(r.Body))
	failedID := r.JSON(t)["post_id"].(string)
	h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, []string{"queued", "platform_failed"}, eventPhases(t, h, failedID, platforms.Instagram))
	for _, e := range h.Do("GET", "/v1/posts/"+failedID+"/events", nil).JSON(t)["events"].([]any) {
		if m := e.(map[string]any); m["phase"] == "platform_failed" {
			require.Contains(t, m["message"], apptest.UnconvertibleMessage)
		}
	}

	// Facebook's budget is spent: a second post waits for it, and its timeline says so.
	r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Waits for Facebook", "platforms": []string{fb}})
	require.Equal(t, 202, r.Status, string(r.Body))
	waiting := r.JSON(t)["post_id"].(string)
	require.Eventually(t, func() bool {
		return slices.Equal([]string{"queued", "platform_waiting"}, eventPhases(t, h, waiting, platforms.Facebook))
	}, 10*time.Second, 10*time.Millisecond)

	// Publishing the failed post again adds the new job's events after the first job's.
	r = h.Do("POST", "/v1/posts/"+failedID+"/publish", nil)
	require.Equal(t, 202, r.Status, string(r.Body))
	h.WaitJob(r.JSON(t)["tracking_id"].(string))
	require.Equal(t, []string{"queued", "platform_failed", "queued", "platform_failed"}, eventPhases(t, h, failedID, platforms.Instagram))
}

func TestPostEventsBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	draft := h.CreatePost("a draft", h.Accounts[0])
	r := h.Do("GET", "/v1/posts/"+draft+"/events", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, map[string]any{"post_id": draft, "events": []any{}}, r.JSON(t), "a draft has no events")

	_, otherKey := h.NewUser("other@example.com", "pro")
	r = h.DoKey(otherKey, "GET", "/v1/posts/"+draft+"/events", nil, nil)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, "forbidden", r.ErrorCode(t))
	r = h.Do("GET", "/v1/posts/"+uuid.NewString()+"/events", nil)
	require.Equal(t, 404, r.Status, string(r.Body))
	require.Equal(t, "not_found", r.ErrorCode(t))
	r = h.Do("GET", "/v1/posts/not-a-uuid/events", nil)
	require.Equal(t, 400, r.Status, string(r.Body))
	require.Equal(t, "validation_error", r.ErrorCode(t))
}
