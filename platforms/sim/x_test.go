package sim_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// xTestClock is a settable clock for the simulator tests of X, Bluesky and LinkedIn.
type xTestClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *xTestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *xTestClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// xTestEnv is a simulator on an httptest server with a settable clock.
type xTestEnv struct {
	sim   *sim.Sim
	base  string
	clock *xTestClock
	hc    *http.Client
}

func newXTestEnv(t *testing.T, p platforms.Platform) *xTestEnv {
	t.Helper()
	clock := &xTestClock{t: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)}
	s := sim.New(sim.Options{Now: clock.Now, ProcessingDelay: 10 * time.Second})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetBaseURL(srv.URL)
	hc := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &xTestEnv{sim: s, base: srv.URL + sim.Prefix(p), clock: clock, hc: hc}
}

// xTestResp is an answer read in full.
type xTestResp struct {
	status int
	header http.Header
	body   []byte
}

func (r xTestResp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

func (e *xTestEnv) do(t *testing.T, method, path, token, contentType string, body []byte, header ...string) xTestResp {
	t.Helper()
	target := path
	if !strings.HasPrefix(path, "http") {
		target = e.base + path
	}
	req, err := http.NewRequest(method, target, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return xTestResp{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *xTestEnv) form(t *testing.T, path string, v url.Values, basic ...string) xTestResp {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(v.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := e.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return xTestResp{status: resp.StatusCode, header: resp.Header, body: b}
}

func xChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// xAuthorize runs the consent page and returns the redirect's query.
func (e *xTestEnv) xAuthorize(t *testing.T, verifier, handle string) url.Values {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {"my-client"}, "redirect_uri": {"https://app.example/cb"},
		"scope": {"tweet.read tweet.write users.read media.write offline.access"}, "state": {"st-1"},
		"code_challenge": {xChallenge(verifier)}, "code_challenge_method": {"S256"}, "login_hint": {handle}}
	r := e.do(t, http.MethodGet, "/i/oauth2/authorize?"+q.Encode(), "", "", nil)
	require.Equal(t, http.StatusFound, r.status, string(r.body))
	loc, err := url.Parse(r.header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "app.example", loc.Host)
	return loc.Query()
}

func TestXOAuthFlow(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	verifier := "verifier-0123456789-0123456789-0123456789-abc"
	back := e.xAuthorize(t, verifier, "bob")
	require.Equal(t, "st-1", back.Get("state"))
	code := back.Get("code")
	require.NotEmpty(t, code)

	exchange := func(code, verifier string) xTestResp {
		return e.form(t, "/2/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"client_id": {"my-client"}, "redirect_uri": {"https://app.example/cb"}, "code_verifier": {verifier}})
	}
	r := exchange(code, "wrong-verifier")
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "invalid_request", r.json(t)["error"])

	code = e.xAuthorize(t, verifier, "bob").Get("code")
	r = exchange(code, verifier)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	tok := r.json(t)
	require.Equal(t, "bearer", tok["token_type"])
	require.EqualValues(t, 7200, tok["expires_in"])
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	require.NotEmpty(t, access)
	require.NotEmpty(t, refresh)

	require.Equal(t, http.StatusBadRequest, exchange(code, verifier).status, "codes are single use")

	me := e.do(t, http.MethodGet, "/2/users/me", access, "", nil)
	require.Equal(t, http.StatusOK, me.status)
	data := me.json(t)["data"].(map[string]any)
	require.Equal(t, "bob", data["username"])
	require.NotEmpty(t, me.header.Get("x-rate-limit-limit"))

	// Refresh tokens are single use.
	r = e.form(t, "/2/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"my-client"}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	newRefresh := r.json(t)["refresh_token"].(string)
	require.NotEqual(t, refresh, newRefresh)
	r = e.form(t, "/2/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"my-client"}})
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "invalid_request", r.json(t)["error"])

	// Herald's own client must present its secret when it uses Basic auth.
	r = e.form(t, "/2/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {newRefresh}}, sim.ClientID, "wrong")
	require.Equal(t, http.StatusUnauthorized, r.status)

	r = e.form(t, "/2/oauth2/revoke", url.Values{"token": {access}, "client_id": {"my-client"}})
	require.Equal(t, http.StatusOK, r.status)
	r = e.form(t, "/2/oauth2/revoke", url.Values{"token": {access}, "client_id": {"my-client"}})
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, e.sim.Revocations(), 1, "revoking an already revoked token records nothing")
	me = e.do(t, http.MethodGet, "/2/users/me", access, "", nil)
	require.Equal(t, http.StatusUnauthorized, me.status)
}

func TestXOAuthRefusals(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	e.sim.Deny(platforms.X)
	back := e.xAuthorize(t, "v", "bob")
	require.Equal(t, "access_denied", back.Get("error"))
	require.Equal(t, "st-1", back.Get("state"))
	require.Empty(t, back.Get("code"))

	// Codes live 30 seconds.
	verifier := "another-verifier-0123456789-0123456789-0123"
	code := e.xAuthorize(t, verifier, "bob").Get("code")
	e.clock.Advance(31 * time.Second)
	r := e.form(t, "/2/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"client_id": {"my-client"}, "redirect_uri": {"https://app.example/cb"}, "code_verifier": {verifier}})
	require.Equal(t, http.StatusBadRequest, r.status)

	// PKCE is required.
	q := url.Values{"response_type": {"code"}, "client_id": {"c"}, "redirect_uri": {"https://app.example/cb"}, "state": {"s"}}
	require.Equal(t, http.StatusBadRequest, e.do(t, http.MethodGet, "/i/oauth2/authorize?"+q.Encode(), "", "", nil).status)

	// Without offline.access there is no refresh token.
	q = url.Values{"response_type": {"code"}, "client_id": {"c"}, "redirect_uri": {"https://app.example/cb"}, "state": {"s"},
		"scope": {"tweet.read"}, "code_challenge": {"plain-verifier"}, "code_challenge_method": {"plain"}}
	loc, err := url.Parse(e.do(t, http.MethodGet, "/i/oauth2/authorize?"+q.Encode(), "", "", nil).header.Get("Location"))
	require.NoError(t, err)
	r = e.form(t, "/2/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"client_id": {"c"}, "redirect_uri": {"https://app.example/cb"}, "code_verifier": {"plain-verifier"}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.NotContains(t, r.json(t), "refresh_token")
}

func TestXTokensAndRateLimits(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	c, err := e.sim.NewAccount(platforms.X, "alice")
	require.NoError(t, err)
	e.sim.SetLimit(platforms.X, "tweets", sim.Limit{Count: 2, Window: 15 * time.Minute})
	post := func(text string) xTestResp {
		b, _ := json.Marshal(map[string]string{"text": text})
		return e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", b)
	}
	r := post("one")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.Equal(t, "2", r.header.Get("x-rate-limit-limit"))
	require.Equal(t, "1", r.header.Get("x-rate-limit-remaining"))
	reset := e.clock.Now().Add(15 * time.Minute).Unix()
	require.Equal(t, strconv.FormatInt(reset, 10), r.header.Get("x-rate-limit-reset"))
	id := r.json(t)["data"].(map[string]any)["id"].(string)
	_, err = strconv.ParseUint(id, 10, 64)
	require.NoError(t, err, "post ids are numeric")

	require.Equal(t, http.StatusCreated, post("two").status)
	r = post("three")
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "0", r.header.Get("x-rate-limit-remaining"))
	require.Equal(t, strconv.FormatInt(reset, 10), r.header.Get("x-rate-limit-reset"))
	require.JSONEq(t, `{"errors":[{"code":88,"message":"Rate limit exceeded"}]}`, string(r.body))

	e.clock.Advance(15 * time.Minute)
	require.Equal(t, http.StatusCreated, post("three").status)

	// The rate_limit fault answers in the same shape.
	require.NoError(t, e.sim.InjectFault(platforms.X, sim.FaultRateLimit, 1))
	r = e.do(t, http.MethodGet, "/2/users/me", c.AccessToken, "", nil)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "75", r.header.Get("x-rate-limit-limit"))
	require.Equal(t, "0", r.header.Get("x-rate-limit-remaining"))
	require.Contains(t, string(r.body), `"code":88`)

	// Tokens expire after two hours with X's 401 problem JSON.
	e.clock.Advance(2 * time.Hour)
	r = post("four")
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.JSONEq(t, `{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`, string(r.body))
}

func TestXPostValidation(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	c, err := e.sim.NewAccount(platforms.X, "alice")
	require.NoError(t, err)
	post := func(body string) xTestResp {
		return e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", []byte(body))
	}
	r := post(`{"text":"` + strings.Repeat("日", 141) + `"}`)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "https://api.x.com/2/problems/invalid-request", r.json(t)["type"])
	require.Contains(t, string(r.body), "282")

	require.Equal(t, http.StatusCreated, post(`{"text":"`+strings.Repeat("a", 256)+` https://example.com/`+strings.Repeat("b", 50)+`"}`).status)
	require.Equal(t, http.StatusBadRequest, post(`{}`).status)
	require.Equal(t, http.StatusBadRequest, post(`{"text":"x","media":{"media_ids":["123"]}}`).status)
	require.Equal(t, http.StatusBadRequest, post(`{"text":"x","media":{"media_ids":[]}}`).status)

	require.Equal(t, http.StatusCreated, post(`{"text":"same"}`).status)
	r = post(`{"text":"same"}`)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Contains(t, string(r.body), "duplicate content")

	// post_then_error records the post and answers 503.
	require.NoError(t, e.sim.InjectFault(platforms.X, sim.FaultPostThenError, 1))
	require.Equal(t, http.StatusServiceUnavailable, post(`{"text":"maybe"}`).status)
	pubs := e.sim.Publications(platforms.X)
	require.Equal(t, "maybe", pubs[len(pubs)-1].Text)
}

func xSegment(t *testing.T, fields map[string]string, media []byte) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		require.NoError(t, w.WriteField(k, v))
	}
	if media != nil {
		part, err := w.CreateFormFile("media", "blob")
		require.NoError(t, err)
		_, _ = part.Write(media)
	}
	require.NoError(t, w.Close())
	return b.Bytes(), w.FormDataContentType()
}

func TestXChunkedUploadAndProcessing(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	c, err := e.sim.NewAccount(platforms.X, "alice")
	require.NoError(t, err)
	video := bytes.Repeat([]byte("0123456789"), 1000)

	r := e.do(t, http.MethodPost, "/2/media/upload/initialize", c.AccessToken, "application/json",
		[]byte(`{"media_type":"video/mp4","total_bytes":10000,"media_category":"tweet_video"}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, "1875", r.header.Get("x-rate-limit-limit"))
	data := r.json(t)["data"].(map[string]any)
	id := data["id"].(string)
	require.True(t, strings.HasPrefix(data["media_key"].(string), "7_"))

	// Segment 1 as multipart, segment 0 as JSON with base64.
	body, ct := xSegment(t, map[string]string{"segment_index": "1"}, video[6000:])
	require.Equal(t, http.StatusOK, e.do(t, http.MethodPost, "/2/media/upload/"+id+"/append", c.AccessToken, ct, body).status)
	seg0, _ := json.Marshal(map[string]any{"segment_index": 0, "media": base64.StdEncoding.EncodeToString(video[:6000])})
	require.Equal(t, http.StatusOK, e.do(t, http.MethodPost, "/2/media/upload/"+id+"/append", c.AccessToken, "application/json", seg0).status)

	r = e.do(t, http.MethodPost, "/2/media/upload/"+id+"/finalize", c.AccessToken, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	info := r.json(t)["data"].(map[string]any)["processing_info"].(map[string]any)
	require.Equal(t, "pending", info["state"])
	require.EqualValues(t, 1, info["check_after_secs"])

	status := func() string {
		r := e.do(t, http.MethodGet, "/2/media/upload?command=STATUS&media_id="+id, c.AccessToken, "", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		return r.json(t)["data"].(map[string]any)["processing_info"].(map[string]any)["state"].(string)
	}
	require.Equal(t, "in_progress", status())
	r = e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", []byte(`{"text":"v","media":{"media_ids":["`+id+`"]}}`))
	require.Equal(t, http.StatusBadRequest, r.status, "a post cannot use media still processing")

	e.clock.Advance(10 * time.Second)
	require.Equal(t, "succeeded", status())
	r = e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", []byte(`{"text":"v","media":{"media_ids":["`+id+`"]}}`))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	pubs := e.sim.Publications(platforms.X)
	sum := sha256.Sum256(video)
	require.Equal(t, []string{hex.EncodeToString(sum[:])}, pubs[0].MediaSHA256)

	// Another account cannot use it.
	other, err := e.sim.NewAccount(platforms.X, "mallory")
	require.NoError(t, err)
	r = e.do(t, http.MethodPost, "/2/tweets", other.AccessToken, "application/json", []byte(`{"text":"w","media":{"media_ids":["`+id+`"]}}`))
	require.Equal(t, http.StatusBadRequest, r.status)
}

func TestXLegacyAndSimpleUpload(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	c, err := e.sim.NewAccount(platforms.X, "alice")
	require.NoError(t, err)
	gif := append([]byte("GIF89a"), bytes.Repeat([]byte{1}, 100)...)

	body, ct := xSegment(t, map[string]string{"command": "INIT", "total_bytes": strconv.Itoa(len(gif)), "media_type": "image/gif"}, nil)
	r := e.do(t, http.MethodPost, "/2/media/upload", c.AccessToken, ct, body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	id := r.json(t)["data"].(map[string]any)["id"].(string)
	body, ct = xSegment(t, map[string]string{"command": "APPEND", "media_id": id, "segment_index": "0"}, gif)
	require.Equal(t, http.StatusNoContent, e.do(t, http.MethodPost, "/2/media/upload", c.AccessToken, ct, body).status)
	body, ct = xSegment(t, map[string]string{"command": "FINALIZE", "media_id": id}, nil)
	r = e.do(t, http.MethodPost, "/2/media/upload", c.AccessToken, ct, body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), "processing_info")

	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{2}, 100)...)
	body, ct = xSegment(t, map[string]string{"media_category": "tweet_image"}, png)
	r = e.do(t, http.MethodPost, "/2/media/upload", c.AccessToken, ct, body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, "500", r.header.Get("x-rate-limit-limit"))
	data := r.json(t)["data"].(map[string]any)
	require.NotContains(t, data, "processing_info", "images need no processing")
	r = e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", []byte(`{"media":{"media_ids":["`+data["id"].(string)+`"]}}`))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))

	// Too big for an image.
	r = e.do(t, http.MethodPost, "/2/media/upload/initialize", c.AccessToken, "application/json", []byte(`{"media_type":"image/png","total_bytes":6000000}`))
	require.Equal(t, http.StatusBadRequest, r.status)
}

func TestXUserTweets(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.X)
	c, err := e.sim.NewAccount(platforms.X, "alice")
	require.NoError(t, err)
	start := e.clock.Now()
	for i := 0; i < 12; i++ {
		b, _ := json.Marshal(map[string]string{"text": "post " + strconv.Itoa(i)})
		require.Equal(t, http.StatusCreated, e.do(t, http.MethodPost, "/2/tweets", c.AccessToken, "application/json", b).status)
		e.clock.Advance(time.Second)
	}
	q := url.Values{"start_time": {start.Add(2 * time.Second).Format(time.RFC3339)}, "max_results": {"5"}, "tweet.fields": {"created_at"}}
	var texts []string
	for page := 0; page < 5; page++ {
		r := e.do(t, http.MethodGet, "/2/users/"+c.UserID+"/tweets?"+q.Encode(), c.AccessToken, "", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var out struct {
			Data []struct{ ID, Text, CreatedAt string } `json:"data"`
			Meta struct {
				ResultCount int    `json:"result_count"`
				NextToken   string `json:"next_token"`
			} `json:"meta"`
		}
		require.NoError(t, json.Unmarshal(r.body, &out))
		for _, d := range out.Data {
			texts = append(texts, d.Text)
		}
		if out.Meta.NextToken == "" {
			break
		}
		q.Set("pagination_token", out.Meta.NextToken)
	}
	require.Len(t, texts, 10)
	require.Equal(t, "post 11", texts[0])
	require.Equal(t, "post 2", texts[9])

	r := e.do(t, http.MethodGet, "/2/users/999/tweets", c.AccessToken, "", nil)
	require.JSONEq(t, `{"meta":{"result_count":0}}`, string(r.body))
}
