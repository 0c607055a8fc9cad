package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// In sandbox mode a published post's "View on …" links lead to the simulator's page of each
// publication, which shows what the network received; the API's platform_post_url keeps the
// network's own shape.
func TestSandboxLinksLeadToTheSimulatorsRecord(t *testing.T) {
	t.Parallel()
	h := startHerald(t)
	id := publish(t, h, "Seen on the simulator <b>& escaped</b>", 4)
	status, post := getJSON(t, h, "/v1/posts/"+id)
	require.Equal(t, 200, status)
	require.Equal(t, "published", post["status"], "%v", post)
	base := h.app.Sim.BaseURL()
	var want []string
	for _, pl := range post["platforms"].([]any) {
		m := pl.(map[string]any)
		require.NotEmpty(t, m["platform_post_url"], "%v", m)
		require.False(t, strings.HasPrefix(m["platform_post_url"].(string), base), "the API keeps the network's URL: %v", m)
		want = append(want, base+sim.PublicationPath(platforms.Platform(m["platform"].(string)), m["platform_post_id"].(string)))
	}

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Post(h.url+"/api/session", "application/json", strings.NewReader(`{"email":"`+h.user.Email+`","password":"`+h.password+`"}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	resp, err = client.Get(h.url + "/posts/" + id)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	page := string(raw)
	require.Contains(t, page, `<meta name="sim-url" content="`+base+`">`)
	var got []string
	for _, m := range regexp.MustCompile(`<a href="([^"]+)"[^>]*class="published-link"`).FindAllStringSubmatch(page, -1) {
		got = append(got, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	require.ElementsMatch(t, want, got)
	for _, u := range got {
		resp, err := http.Get(u)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, u)
		require.Contains(t, string(raw), "Seen on the simulator &lt;b&gt;&amp; escaped&lt;/b&gt;", u)
	}
}
