package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// client is a plain HTTP client of one Herald, as an outside program would write it: JSON in,
// JSON out, ids escaped into paths with url.PathEscape.
type client struct {
	t    *testing.T
	base string
	key  string
}

func (c *client) call(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	out := map[string]any{}
	if len(raw) > 0 {
		require.NoError(c.t, json.Unmarshal(raw, &out), "%s %s: %s", method, path, raw)
	}
	return resp.StatusCode, out
}

// ok calls and requires a 2xx answer.
func (c *client) ok(method, path string, body any) map[string]any {
	c.t.Helper()
	status, out := c.call(method, path, body)
	require.True(c.t, status >= 200 && status < 300, "%s %s: %d %v", method, path, status, out)
	return out
}

// upload sends a file through presign, PUT and confirm, and returns its media id.
func (c *client) upload(name, ctype string, data []byte) string {
	c.t.Helper()
	pre := c.ok("POST", "/v1/media/presign", map[string]any{"filename": name, "content_type": ctype, "size_bytes": len(data)})
	req, err := http.NewRequest("PUT", pre["upload_url"].(string), bytes.NewReader(data))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	resp.Body.Close()
	require.Less(c.t, resp.StatusCode, 300)
	conf := c.ok("POST", "/v1/media/confirm", map[string]any{"key": pre["key"], "storage_filename": pre["storage_filename"],
		"original_filename": name, "content_type": ctype, "size_bytes": len(data)})
	return conf["id"].(string)
}

func list(v any) []map[string]any {
	var out []map[string]any
	for _, e := range v.([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func walkPNG(t *testing.T) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			img.Set(x, y, color.NRGBA{R: uint8(x * 4), G: uint8(y * 5), B: 200, A: uint8(128 + x)})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// The outside client's walk-through, against the sandbox binary: publish to every network, find
// each post on its network, work the comments (like, hide, reply) on X, Bluesky and YouTube, the
// direct messages on X and Bluesky, and read the post's timeline and analytics.
func TestOutsideClientWalkThrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	key, err := os.ReadFile(filepath.Join(dir, "sandbox-api-key"))
	require.NoError(t, err)
	simURL := regexp.MustCompile(`sandbox network simulator listening on (http://[0-9.:]+)`).FindStringSubmatch(p.logText())
	require.NotNil(t, simURL, p.logText())
	api := &client{t: t, base: p.url, key: strings.TrimSpace(string(key))}
	sim := &client{t: t, base: simURL[1]}

	accounts := map[string]map[string]any{}
	for _, a := range list(api.ok("GET", "/v1/accounts", nil)["data"]) {
		accounts[a["platform"].(string)] = a
		require.Equal(t, "ok", a["token_status"], "a fresh sandbox account needs nothing from its user: %v", a)
	}
	require.Len(t, accounts, 9)
	acct := func(ps ...string) []any {
		var out []any
		for _, p := range ps {
			out = append(out, accounts[p]["id"])
		}
		return out
	}

	// Publish: a PNG everywhere a photo goes (Instagram gets it as a JPEG), a video to YouTube
	// and TikTok.
	photo := api.upload("photo.png", "image/png", walkPNG(t))
	video := api.upload("clip.mp4", "video/mp4", append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), make([]byte, 4096)...))
	photoPost := api.ok("POST", "/v1/posts/publish", map[string]any{"content": "Walk-through, with a photo",
		"platforms": acct("linkedin", "instagram", "pinterest", "threads", "facebook", "twitter_x", "bluesky"), "media": []string{photo}})
	videoPost := api.ok("POST", "/v1/posts/publish", map[string]any{"content": "Walk-through, with a video",
		"platforms": acct("youtube", "tiktok"), "media": []string{video}})
	detail := map[string]map[string]any{} // platform → the post detail's platform entry
	postOf := map[string]string{}         // platform → post id
	for _, acc := range []map[string]any{photoPost, videoPost} {
		postID := acc["post_id"].(string)
		var post map[string]any
		require.Eventually(t, func() bool {
			post = api.ok("GET", "/v1/posts/"+postID, nil)
			return post["status"] == "published"
		}, 60*time.Second, 20*time.Millisecond, "post %s", postID)
		job := api.ok("GET", "/v1/jobs/"+acc["tracking_id"].(string), nil)
		require.Equal(t, "completed", job["status"])
		require.Equal(t, []any{}, job["errors"])
		for _, pl := range list(post["platforms"]) {
			require.Equal(t, "published", pl["status"], pl)
			require.NotEmpty(t, pl["publication_id"], pl)
			require.NotEmpty(t, pl["platform_post_id"], pl)
			require.True(t, strings.HasPrefix(pl["platform_post_url"].(string), "https://"), pl)
			require.NotEmpty(t, pl["published_at"], pl)
			detail[pl["platform"].(string)] = pl
			postOf[pl["platform"].(string)] = postID
		}
	}
	require.Len(t, detail, 9)
	for _, r := range list(sim.ok("GET", "/_sim/publications?platform=instagram", nil)["data"]) {
		require.Equal(t, []any{"image/jpeg"}, r["media_types"], "Instagram got the PNG as a JPEG")
	}
	networkUser := map[string]string{}
	for _, pf := range []string{"twitter_x", "bluesky"} {
		recs := list(sim.ok("GET", "/_sim/publications?platform="+pf, nil)["data"])
		require.Len(t, recs, 1)
		networkUser[pf] = recs[0]["account"].(string)
	}

	// Comments: someone comments on X, Bluesky and YouTube; the client finds them in the inbox,
	// likes, hides and answers each (YouTube has no comment likes).
	for _, pf := range []string{"twitter_x", "bluesky", "youtube"} {
		sim.ok("POST", "/_sim/comments", map[string]any{"platform": pf, "post_id": detail[pf]["platform_post_id"], "text": "Nice one on " + pf, "author": "fan"})
		sim.ok("POST", "/_sim/comments", map[string]any{"platform": pf, "post_id": detail[pf]["platform_post_id"], "text": "Spam on " + pf, "author": "spammer"})
	}
	inbox := api.ok("GET", "/v1/inbox/comments?fresh=true&limit=24", nil)
	comments := map[string]map[string]map[string]any{} // platform → text → comment
	for _, th := range list(inbox["threads"]) {
		c := th["comment"].(map[string]any)
		if comments[c["platform"].(string)] == nil {
			comments[c["platform"].(string)] = map[string]map[string]any{}
		}
		comments[c["platform"].(string)][c["text"].(string)] = c
	}
	for _, pf := range []string{"twitter_x", "bluesky", "youtube"} {
		nice, spam := comments[pf]["Nice one on "+pf], comments[pf]["Spam on "+pf]
		require.NotNil(t, nice, "%s: %v", pf, inbox)
		require.NotNil(t, spam, pf)
		require.Equal(t, detail[pf]["publication_id"], nice["publication_id"], "the inbox and post detail name the publication alike")
		path := "/v1/inbox/comments/" + url.PathEscape(nice["id"].(string))
		status, out := api.call("POST", path+"/like", map[string]any{"publication_id": nice["publication_id"]})
		if pf == "youtube" {
			require.Equal(t, 400, status, "%v", out)
			require.Equal(t, "validation_error", out["error"].(map[string]any)["code"])
		} else {
			require.Equal(t, 200, status, "%s: %v", pf, out)
			require.Equal(t, true, out["liked"])
		}
		out = api.ok("POST", "/v1/inbox/comments/"+url.PathEscape(spam["id"].(string))+"/hide", map[string]any{"publication_id": spam["publication_id"]})
		require.Equal(t, true, out["hidden"], pf)
		out = api.ok("POST", path+"/reply", map[string]any{"publication_id": nice["publication_id"], "text": "Thank you!"})
		require.Equal(t, true, out["ok"])
		require.NotEmpty(t, out["reply_id"], pf)
	}
	replies := list(sim.ok("GET", "/_sim/replies", nil)["data"])
	require.Len(t, replies, 3, "one reply on each network")

	// Direct messages: a stranger writes to the X and Bluesky accounts; the client lists the
	// conversations, reads one and answers it.
	for _, pf := range []string{"twitter_x", "bluesky"} {
		sim.ok("POST", "/_sim/dms", map[string]any{"platform": pf, "account": networkUser[pf], "peer": "stranger", "text": "<b>hello</b> from a stranger"})
		dms := api.ok("GET", "/v1/inbox/dms?fresh=true&account_id="+accounts[pf]["id"].(string), nil)
		convs := list(dms["conversations"])
		require.Len(t, convs, 1, "%s: %v", pf, dms)
		conv := convs[0]
		require.Equal(t, "<b>hello</b> from a stranger", conv["last_message"].(map[string]any)["text"], "data, never markup")
		q := "?account_id=" + accounts[pf]["id"].(string)
		thread := api.ok("GET", "/v1/inbox/dms/"+url.PathEscape(conv["id"].(string))+q, nil)
		require.NotEmpty(t, thread["messages"])
		out := api.ok("POST", "/v1/inbox/dms/"+url.PathEscape(conv["id"].(string))+"/reply", map[string]any{"account_id": accounts[pf]["id"], "text": "Hi, how can we help?"})
		require.NotEmpty(t, out["message_id"], pf)
	}
	require.Len(t, list(sim.ok("GET", "/_sim/dms", nil)["data"]), 2, "one answer on each network")

	// The post's timeline and its analytics.
	events := api.ok("GET", "/v1/posts/"+postOf["twitter_x"]+"/events", nil)
	phases := map[string][]string{}
	for _, e := range list(events["events"]) {
		phases[e["platform"].(string)] = append(phases[e["platform"].(string)], e["phase"].(string))
	}
	require.Len(t, phases, 7)
	for pf, ph := range phases {
		require.Equal(t, "queued", ph[0], pf)
		require.Equal(t, "platform_success", ph[len(ph)-1], pf)
	}
	sim.ok("POST", "/_sim/metrics", map[string]any{"platform": "twitter_x", "post_id": detail["twitter_x"]["platform_post_id"], "views": 1200, "likes": 34})
	an := api.ok("GET", "/v1/analytics/posts/"+postOf["twitter_x"]+"?fresh=true", nil)
	byPlatform := map[string]map[string]any{}
	for _, pub := range list(an["publications"]) {
		byPlatform[pub["platform"].(string)] = pub
	}
	require.Len(t, byPlatform, 7)
	require.EqualValues(t, 1200, byPlatform["twitter_x"]["views"])
	require.EqualValues(t, 34, byPlatform["twitter_x"]["likes"])
	require.Equal(t, detail["twitter_x"]["publication_id"], byPlatform["twitter_x"]["publication_id"])
	require.Equal(t, false, byPlatform["linkedin"]["live"], "LinkedIn has no live analytics")
}
