package api_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// Connecting TikTok in the browser ends on a page that offers a default privacy level among those
// TikTok offers the creator, none chosen; the choice is saved as the account's default options.
func TestTikTokConnectOffersADefaultPrivacy(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	br := h.SignedIn()
	r := h.Do("POST", "/v1/accounts/connect", map[string]any{"platform": "tiktok"})
	require.Equal(t, 200, r.Status, string(r.Body))
	follow := &http.Client{Jar: br.Client.Jar}
	resp, err := follow.Get(r.JSON(t)["authorization_url"].(string))
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(page))
	html := string(page)
	require.Contains(t, html, `<select id="privacy_level" name="privacy_level">`)
	require.Contains(t, html, `<option value="">No default: choose for each post</option>`)
	require.Contains(t, html, `<option value="FOLLOWER_OF_CREATOR">Followers</option>`)
	assert.NotContains(t, html, " selected", "nothing is chosen for the creator")
	field := func(name string) string {
		m := regexp.MustCompile(`name="` + name + `" value="([^"]+)"`).FindStringSubmatch(html)
		require.NotNil(t, m, name)
		return m[1]
	}
	csrf, id := field("csrf_token"), field("account_id")

	post := func(form url.Values) (int, string) {
		req, err := http.NewRequest("POST", h.URL+"/v1/accounts/connect/defaults", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := br.Client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := post(url.Values{"csrf_token": {"forged"}, "account_id": {id}, "privacy_level": {"SELF_ONLY"}})
	assert.Equal(t, 403, status, body)
	status, body = post(url.Values{"csrf_token": {csrf}, "account_id": {id}, "privacy_level": {"EVERYONE"}})
	assert.Equal(t, 400, status, body)
	status, body = post(url.Values{"csrf_token": {csrf}, "account_id": {h.Account("twitter_x").ID}, "privacy_level": {"SELF_ONLY"}})
	assert.Equal(t, 404, status, body)
	caps := h.Do("GET", "/v1/accounts/"+id+"/capabilities", nil).JSON(t)
	assert.Equal(t, map[string]any{}, caps["default_options"], "nothing saved by refused forms")

	status, body = post(url.Values{"csrf_token": {csrf}, "account_id": {id}, "privacy_level": {"FOLLOWER_OF_CREATOR"}})
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, "Default privacy saved")
	caps = h.Do("GET", "/v1/accounts/"+id+"/capabilities", nil).JSON(t)
	assert.Equal(t, map[string]any{"privacy_level": "FOLLOWER_OF_CREATOR"}, caps["default_options"])
	status, _ = post(url.Values{"csrf_token": {csrf}, "account_id": {id}, "privacy_level": {""}})
	require.Equal(t, 200, status)
	caps = h.Do("GET", "/v1/accounts/"+id+"/capabilities", nil).JSON(t)
	assert.Equal(t, map[string]any{}, caps["default_options"], "cleared")
}
