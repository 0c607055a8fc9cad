package api_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

func TestPostLifecycle(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	id := h.CreatePost("hello world", h.Accounts[0], h.Accounts[1])

	r := h.Do("GET", "/v1/posts/"+id, nil)
	require.Equal(t, 200, r.Status)
	p := r.JSON(t)
	require.Equal(t, "hello world", p["content"])
	require.Equal(t, "draft", p["status"])
	plats := p["platforms"].([]any)
	require.Len(t, plats, 2)
	first := plats[0].(map[string]any)
	require.Equal(t, h.Accounts[0].ID, first["connected_account_id"])
	require.Equal(t, "linkedin", first["platform"])
	require.Equal(t, "pending", first["status"])
	require.Nil(t, first["error"])

	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": "changed", "platforms": []string{h.Accounts[2].ID}})
	require.Equal(t, 200, r.Status, string(r.Body))
	p = r.JSON(t)
	require.Equal(t, "changed", p["content"])
	require.Equal(t, "draft", p["status"], "PATCH keeps the status")
	require.Len(t, p["platforms"], 1)

	r = h.Do("DELETE", "/v1/posts/"+id, nil)
	require.Equal(t, 204, r.Status)
	require.Empty(t, r.Body)
	r = h.Do("GET", "/v1/posts/"+id, nil)
	require.Equal(t, 404, r.Status)
	require.Equal(t, "not_found", r.ErrorCode(t))
	require.Equal(t, 0, h.CountPosts())
}

func TestPostOwnership(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	id := h.CreatePost("mine", h.Accounts[0])
	other, otherKey := h.NewUser("other@example.com", "pro")
	otherAcct := h.NewAccount(other.ID, "linkedin")

	for _, tc := range []struct{ method, body string }{{"GET", ""}, {"PATCH", `{"content":"x"}`}, {"DELETE", ""}} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		r := h.DoKey(otherKey, tc.method, "/v1/posts/"+id, body, nil)
		require.Equal(t, 403, r.Status, tc.method)
		require.Equal(t, "forbidden", r.ErrorCode(t))
	}
	// Another user's account in platforms is refused and creates nothing.
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "x", "platforms": []string{otherAcct.ID}})
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "not yours")
	r = h.Do("GET", "/v1/posts/"+id, nil)
	require.Equal(t, "mine", r.JSON(t)["content"])
	require.Equal(t, 1, h.CountPosts())

	// Accounts: another user's is 403, an unknown one 404.
	r = h.Do("DELETE", "/v1/accounts/"+otherAcct.ID, nil)
	require.Equal(t, 403, r.Status)
	require.Equal(t, "forbidden", r.ErrorCode(t))
	r = h.Do("DELETE", "/v1/accounts/"+uuid.NewString(), nil)
	require.Equal(t, 404, r.Status)
	r = h.Do("DELETE", "/v1/accounts/"+h.Accounts[2].ID, nil)
	require.Equal(t, 204, r.Status)
	r = h.Do("GET", "/v1/accounts", nil)
	require.Len(t, r.JSON(t)["data"], 2)
}

func TestCreatePostBadInput(t *testing.T) { //nolint:tparallel // each case checks that no post was created, which a case running beside it would change
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	acct := h.Accounts[0].ID
	cases := []struct {
		name, body, contentType, message string
		status                           int
	}{
		{"not JSON", `{"content": "x", `, "application/json", "Malformed JSON", 400},
		{"plain text", `hello there`, "text/plain", "Expected object, received string", 400},
		{"JSON string", `"hello"`, "application/json", "Expected object, received string", 400},
		{"JSON array", `[1,2]`, "application/json", "Expected object, received array", 400},
		{"empty body", ``, "application/json", "Expected object, received nothing", 400},
		{"content wrong type", `{"content": 5, "platforms": ["` + acct + `"]}`, "", "content: Expected string, received number", 400},
		{"platforms wrong type", `{"content": "x", "platforms": "` + acct + `"}`, "", "platforms: Expected array, received string", 400},
		{"platform item wrong type", `{"content": "x", "platforms": [5]}`, "", "platforms.0: Expected string, received number", 400},
		{"missing content", `{"platforms": ["` + acct + `"]}`, "", "content: Required", 400},
		{"missing platforms", `{"content": "x"}`, "", "platforms: Required", 400},
		{"empty platforms", `{"content": "x", "platforms": []}`, "", "platforms: must contain at least one", 400},
		{"platform name", `{"content": "x", "platforms": ["linkedin"]}`, "", "platforms: Invalid uuid", 400},
		{"duplicate platforms", `{"content": "x", "platforms": ["` + acct + `","` + acct + `"]}`, "", "platforms: duplicate id", 400},
		{"unknown account", `{"content": "x", "platforms": ["` + uuid.NewString() + `"]}`, "", "does not exist or is not yours", 400},
		{"unknown media", `{"content": "x", "platforms": ["` + acct + `"], "media": ["` + uuid.NewString() + `"]}`, "", "is not a confirmed media of yours", 400},
		{"media not uuid", `{"content": "x", "platforms": ["` + acct + `"], "media": ["a.png"]}`, "", "media: Invalid uuid", 400},
		{"empty content without media", `{"content": "  ", "platforms": ["` + acct + `"]}`, "", "content: must not be empty", 400},
		{"content too long", `{"content": "` + strings.Repeat("a", 63207) + `", "platforms": ["` + acct + `"]}`, "", "at most 63206", 400},
		{"2 MiB body", `{"content": "` + strings.Repeat("a", 2<<20) + `", "platforms": ["` + acct + `"]}`, "", "larger than", 413},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string][]string{}
			if tc.contentType != "" {
				hdr["Content-Type"] = []string{tc.contentType}
			}
			r := h.DoKey(h.Key, "POST", "/v1/posts", []byte(tc.body), hdr)
			require.Equal(t, tc.status, r.Status, string(r.Body))
			require.Equal(t, "validation_error", r.ErrorCode(t))
			require.Contains(t, r.ErrorMessage(t), tc.message)
			require.Equal(t, 0, h.CountPosts(), "a refused request changes nothing")
		})
	}
}

func TestUpdateAndPathBadInput(t *testing.T) { //nolint:tparallel // each case checks that the post is unchanged, which a case running beside it would change
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	id := h.CreatePost("keep me", h.Accounts[0])
	for _, tc := range []struct {
		name, method, path, body, message string
		status                            int
	}{
		{"empty patch", "PATCH", "/v1/posts/" + id, `{}`, "nothing to update", 400},
		{"patch bad type", "PATCH", "/v1/posts/" + id, `{"content": true}`, "content: Expected string, received boolean", 400},
		{"patch empty platforms", "PATCH", "/v1/posts/" + id, `{"platforms": []}`, "at least one", 400},
		{"patch not json", "PATCH", "/v1/posts/" + id, `nope`, "Expected object", 400},
		{"get bad id", "GET", "/v1/posts/not-a-uuid", ``, "id: Invalid uuid", 400},
		{"patch bad id", "PATCH", "/v1/posts/123", `{"content":"x"}`, "id: Invalid uuid", 400},
		{"delete bad id", "DELETE", "/v1/posts/123", ``, "id: Invalid uuid", 400},
		{"delete account bad id", "DELETE", "/v1/accounts/123", ``, "id: Invalid uuid", 400},
		{"unknown post", "GET", "/v1/posts/" + uuid.NewString(), ``, "post not found", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := h.Do(tc.method, tc.path, body)
			require.Equal(t, tc.status, r.Status, string(r.Body))
			require.Contains(t, r.ErrorMessage(t), tc.message)
		})
	}
	r := h.Do("GET", "/v1/posts/"+id, nil)
	require.Equal(t, "keep me", r.JSON(t)["content"])
}

func TestListPosts(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	var ids []string
	for i := 0; i < 25; i++ {
		acct := h.Accounts[i%2]
		ids = append(ids, h.CreatePost(fmt.Sprintf("post %02d %s", i, map[bool]string{true: "Sale", false: "news"}[i%5 == 0]), acct))
	}
	r := h.Do("GET", "/v1/posts", nil)
	require.Equal(t, 200, r.Status)
	m := r.JSON(t)
	data := m["data"].([]any)
	require.Len(t, data, 20, "default limit is 20")
	require.Equal(t, ids[24], data[0].(map[string]any)["id"], "newest first")
	require.Equal(t, map[string]any{"page": 1.0, "limit": 20.0, "total": 25.0, "total_pages": 2.0}, m["pagination"])
	require.NotEmpty(t, data[0].(map[string]any)["updated_at"])

	r = h.Do("GET", "/v1/posts?page=2&limit=20", nil)
	require.Len(t, r.JSON(t)["data"], 5)
	require.Equal(t, ids[4], r.JSON(t)["data"].([]any)[0].(map[string]any)["id"])

	r = h.Do("GET", "/v1/posts?platform=twitter_x", nil)
	require.Equal(t, 12.0, r.JSON(t)["pagination"].(map[string]any)["total"])
	r = h.Do("GET", "/v1/posts?search=sale&limit=100", nil)
	require.Equal(t, 5.0, r.JSON(t)["pagination"].(map[string]any)["total"])
	r = h.Do("GET", "/v1/posts?status=draft&platform=linkedin&search=SALE", nil)
	require.Equal(t, 3.0, r.JSON(t)["pagination"].(map[string]any)["total"], "posts 0, 10 and 20 are linkedin sales")
	r = h.Do("GET", "/v1/posts?search=sale&limit=5", nil)
	require.Equal(t, 1.0, r.JSON(t)["pagination"].(map[string]any)["total_pages"], "5 matches fill one page of 5")
	r = h.Do("GET", "/v1/posts?status=published", nil)
	require.Equal(t, 0.0, r.JSON(t)["pagination"].(map[string]any)["total"])
	require.Equal(t, 0.0, r.JSON(t)["pagination"].(map[string]any)["total_pages"])
	require.Empty(t, r.JSON(t)["data"])

	for _, q := range []string{"limit=0", "limit=101", "limit=abc", "page=0", "page=x", "status=bogus", "platform=myspace"} {
		r := h.Do("GET", "/v1/posts?"+q, nil)
		require.Equal(t, 400, r.Status, q)
		require.Equal(t, "validation_error", r.ErrorCode(t), q)
	}
}

func TestConcurrentCreatesAreAllListed(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{PlanLimits: map[string]int{"free": 60, "starter": 300, "growth": 1000, "pro": 1_000_000, "max": 10000}, NoValidate: true})
	const n, workers = 10000, 32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				r := h.Do("POST", "/v1/posts", map[string]any{"content": fmt.Sprintf("bulk %d", i), "platforms": []string{h.Accounts[0].ID}})
				if r.Status != 201 {
					errs <- fmt.Errorf("post %d: %d %s", i, r.Status, r.Body)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	for page := 1; ; page++ {
		r := h.Do("GET", fmt.Sprintf("/v1/posts?limit=100&page=%d", page), nil)
		require.Equal(t, 200, r.Status)
		m := r.JSON(t)
		require.Equal(t, float64(n), m["pagination"].(map[string]any)["total"])
		data := m["data"].([]any)
		if len(data) == 0 {
			break
		}
		for _, d := range data {
			seen[d.(map[string]any)["id"].(string)] = true
		}
	}
	require.Len(t, seen, n)
}

func TestPassivatedPostComesBackWithItsState(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{PostIdle: 50 * time.Millisecond})
	id := h.CreatePost("before sleep", h.Accounts[0])
	r := h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": "after edit"})
	require.Equal(t, 200, r.Status)
	require.Eventually(t, func() bool { return h.App.Posts.Live() == 0 }, 10*time.Second, 10*time.Millisecond, "the idle actor passivates")
	activations := testutil.ToFloat64(h.App.Actors.Metrics.Activations.WithLabelValues("post"))
	r = h.Do("GET", "/v1/posts/"+id, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "after edit", r.JSON(t)["content"])
	require.Equal(t, activations+1, testutil.ToFloat64(h.App.Actors.Metrics.Activations.WithLabelValues("post")), "a message re-activates it")
}
