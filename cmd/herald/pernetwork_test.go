package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// One post to all nine networks against the sandbox binary, each network with its own text and
// options: YouTube a title and privacy, TikTok a privacy level chosen from the creator's choices
// (read from capabilities) with the commercial-content disclosure, Pinterest a board chosen from
// the account's boards, Instagram a story, X an image with alt text. The simulator's record shows
// that each network received exactly its own text, media and options.
func TestOnePostNineNetworksEachItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	key, err := os.ReadFile(filepath.Join(dir, "sandbox-api-key"))
	require.NoError(t, err)
	simURL := regexp.MustCompile(`sandbox network simulator listening on (http://[0-9.:]+)`).FindStringSubmatch(p.logText())
	require.NotNil(t, simURL, p.logText())
	api := &client{t: t, base: p.url, key: strings.TrimSpace(string(key))}
	sim := &client{t: t, base: simURL[1]}

	id := map[string]string{}
	for _, a := range list(api.ok("GET", "/v1/accounts", nil)["data"]) {
		id[a["platform"].(string)] = a["id"].(string)
	}
	require.Len(t, id, 9)

	// What each account allows, read as a form would be built from it.
	tiktok := api.ok("GET", "/v1/accounts/"+id["tiktok"]+"/capabilities", nil)
	require.Equal(t, []any{"privacy_level"}, tiktok["required_options"])
	levels := tiktok["choices"].(map[string]any)["privacy_level_options"].([]any)
	require.Contains(t, levels, "FOLLOWER_OF_CREATOR")
	pinterest := api.ok("GET", "/v1/accounts/"+id["pinterest"]+"/capabilities", nil)
	boards := pinterest["choices"].(map[string]any)["boards"].([]any)
	require.Len(t, boards, 2)
	board := boards[1].(map[string]any)["id"].(string) // not the default: a real choice

	photo := api.upload("photo.png", "image/png", walkPNG(t))
	api.ok("PATCH", "/v1/media/"+photo, map[string]any{"alt_text": "A gradient in blue"})
	video := api.upload("clip.mp4", "video/mp4", append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), make([]byte, 4096)...))
	var all []string
	for _, pf := range []string{"linkedin", "instagram", "youtube", "pinterest", "tiktok", "threads", "facebook", "twitter_x", "bluesky"} {
		all = append(all, id[pf])
	}
	body := map[string]any{
		"content": "The shared text", "platforms": all, "media": []string{photo},
		"targets": []map[string]any{
			{"account_id": id["twitter_x"], "content": "Short, for X #launch", "options": map[string]any{"reply_settings": "following"}},
			{"account_id": id["bluesky"], "content": "For Bluesky", "options": map[string]any{"langs": []string{"en"}}},
			{"account_id": id["linkedin"], "content": "For LinkedIn, at length.", "media": []string{}, "options": map[string]any{"visibility": "CONNECTIONS"}},
			{"account_id": id["threads"], "content": "For Threads", "options": map[string]any{"topic_tag": "Launch"}},
			{"account_id": id["facebook"], "content": "For Facebook", "media": []string{}, "options": map[string]any{"link": "https://example.com/launch"}},
			{"account_id": id["instagram"], "content": "For an Instagram story", "options": map[string]any{"type": "story"}},
			{"account_id": id["pinterest"], "content": "For Pinterest", "options": map[string]any{"board_id": board, "title": "Launch day"}},
			{"account_id": id["youtube"], "content": "For YouTube\nThe description.", "media": []string{video},
				"options": map[string]any{"title": "Launch day, the video", "privacy_status": "unlisted"}},
			{"account_id": id["tiktok"], "content": "For TikTok #launch", "media": []string{video},
				"options": map[string]any{"privacy_level": "FOLLOWER_OF_CREATOR", "brand_organic": true, "allow_comment": true}},
		},
	}
	v := api.ok("POST", "/v1/posts/validate", body)
	require.Equal(t, true, v["valid"], "%v", v)
	acc := api.ok("POST", "/v1/posts/publish", body)
	postID := acc["post_id"].(string)
	var post map[string]any
	require.Eventually(t, func() bool {
		post = api.ok("GET", "/v1/posts/"+postID, nil)
		return post["status"] == "published"
	}, 60*time.Second, 20*time.Millisecond, "post %s: %v", postID, post)

	got := func(pf string) map[string]any {
		recs := list(sim.ok("GET", "/_sim/publications?platform="+pf, nil)["data"])
		require.Len(t, recs, 1, pf)
		return recs[0]
	}
	expect := []struct {
		platform, text string
		media          int
		options        map[string]any
		alts           []any
	}{
		{"twitter_x", "Short, for X #launch", 1, map[string]any{"reply_settings": "following"}, []any{"A gradient in blue"}},
		{"bluesky", "For Bluesky", 1, map[string]any{"langs": []any{"en"}}, []any{"A gradient in blue"}},
		{"linkedin", "For LinkedIn, at length.", 0, map[string]any{"visibility": "CONNECTIONS"}, nil},
		{"threads", "For Threads", 1, map[string]any{"topic_tag": "Launch"}, []any{"A gradient in blue"}},
		{"facebook", "For Facebook", 0, map[string]any{"type": "feed", "link": "https://example.com/launch"}, nil},
		{"instagram", "", 1, map[string]any{"media_type": "STORIES"}, nil},
		{"pinterest", "For Pinterest", 1, map[string]any{"board_id": board, "title": "Launch day"}, []any{"A gradient in blue"}},
		{"youtube", "For YouTube\nThe description.", 1, map[string]any{"title": "Launch day, the video", "privacyStatus": "unlisted", "categoryId": "22", "notifySubscribers": true}, nil},
		{"tiktok", "For TikTok #launch", 1, map[string]any{"privacy_level": "FOLLOWER_OF_CREATOR", "disable_comment": false, "disable_duet": true, "disable_stitch": true,
			"brand_content_toggle": false, "brand_organic_toggle": true, "is_aigc": false}, nil},
	}
	for _, e := range expect {
		r := got(e.platform)
		require.Equal(t, e.text, r["text"], e.platform)
		require.Len(t, r["media_sha256"], e.media, e.platform)
		require.Equal(t, e.options, r["options"], e.platform)
		if e.alts == nil {
			require.Nil(t, r["alt_texts"], e.platform)
		} else {
			require.Equal(t, e.alts, r["alt_texts"], e.platform)
		}
	}
	// The post's detail shows each target's own text and its options.
	for _, pl := range list(post["platforms"]) {
		if pl["platform"] == "tiktok" {
			require.Equal(t, "For TikTok #launch", pl["content"])
			require.Equal(t, "FOLLOWER_OF_CREATOR", pl["options"].(map[string]any)["privacy_level"])
		}
	}
}
