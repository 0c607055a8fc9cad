package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// session is a signed-in dashboard client: its cookie and CSRF token.
type session struct {
	t      *testing.T
	h      *herald
	client *http.Client
	csrf   string
}

func signInClient(t *testing.T, h *herald) *session {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	s := &session{t: t, h: h, client: &http.Client{Jar: jar}}
	resp, err := s.client.Post(h.url+"/api/session", "application/json",
		strings.NewReader(`{"email":"`+h.user.Email+`","password":"`+h.password+`"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	s.csrf = out["csrf_token"].(string)
	return s
}

// page reads a dashboard page: its status and HTML.
func (s *session) page(path string) (int, string) {
	s.t.Helper()
	resp, err := s.client.Get(s.h.url + path)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, string(raw)
}

// switchTo chooses the session's workspace as the header's switcher does.
func (s *session) switchTo(id string) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.h.url+"/api/session/workspace", strings.NewReader(`{"workspace_id":"`+id+`"}`))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", s.csrf)
	resp, err := s.client.Do(req)
	require.NoError(s.t, err)
	_ = resp.Body.Close()
	require.Equal(s.t, 200, resp.StatusCode)
}

// Every page shows the session's workspace only: main's drafts, scheduled post, accounts and
// webhook are on main's pages and on none of an empty workspace's (the overview's counts
// included), main's post is not found there, and the switcher names the workspace and lists
// both; switching back shows main's again.
func TestPagesShowTheSessionsWorkspace(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	d1 := draft(t, h, "Main's first draft")
	draft(t, h, "Main's second draft")
	schedule(t, h, "Main's scheduled post", time.Now().Add(2*time.Hour))
	postJSON(t, h, "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/main-only", "events": []string{"post.published"}}, 201)
	ws := postJSON(t, h, "/v1/workspaces", map[string]any{"name": "Client <i>A</i>"}, 201)["id"].(string)
	s := signInClient(t, h)

	inMain := map[string]string{
		"/":            "2 drafts</a> · <a href=\"/posts?status=scheduled\">1 scheduled",
		"/posts":       "Main&#39;s first draft",
		"/calendar":    "Main&#39;s scheduled post",
		"/compose":     "demo-",
		"/accounts":    "demo-",
		"/developer":   "https://hooks.example.com/main-only",
		"/posts/" + d1: "Main&#39;s first draft",
	}
	check := func(want bool) {
		t.Helper()
		for path, text := range inMain {
			code, html := s.page(path)
			if !want && strings.HasPrefix(path, "/posts/") {
				require.Equal(t, 404, code, path)
				continue
			}
			require.Equal(t, 200, code, path)
			require.Equal(t, want, strings.Contains(html, text), "%s shows %q: %v", path, text, want)
		}
	}
	check(true)
	_, html := s.page("/")
	require.Contains(t, html, `<span class="ws-current">Main</span>`)

	s.switchTo(ws)
	check(false)
	_, html = s.page("/")
	require.Contains(t, html, "0 drafts</a> · <a href=\"/posts?status=scheduled\">0 scheduled")
	require.Contains(t, html, `<span class="ws-current">Client &lt;i&gt;A&lt;/i&gt;</span>`)
	require.Contains(t, html, `<button type="submit" class="ws-choice">Main</button>`)
	require.Contains(t, html, `<button type="submit" class="ws-choice" aria-current="true">Client &lt;i&gt;A&lt;/i&gt;</button>`)
	_, html = s.page("/posts")
	require.Contains(t, html, "0 posts")

	s.switchTo("main")
	check(true)
}
