package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// ytClock is a settable clock for the simulator.
type ytClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *ytClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ytClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func ytStart(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	srv, err := Start("127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := srv.NewAccount(platforms.YouTube, "alice")
	require.NoError(t, err)
	return srv, c.AccessToken
}

// ytDo makes one call and decodes a JSON answer (nil when the body is empty).
func ytDo(t *testing.T, method, u, token string, header map[string]string, body []byte) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func ytReason(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	errs, _ := e["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	first, _ := errs[0].(map[string]any)
	r, _ := first["reason"].(string)
	return r
}

// ytInit opens an upload session and returns its URL (or the failed answer).
func ytInit(t *testing.T, srv *Server, token, title, desc string, total int) (string, *http.Response, map[string]any) {
	t.Helper()
	meta, _ := json.Marshal(map[string]any{"snippet": map[string]any{"title": title, "description": desc}, "status": map[string]any{"privacyStatus": "public"}})
	resp, out := ytDo(t, http.MethodPost, srv.BaseURL()+"/youtube/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status", token,
		map[string]string{"Content-Type": "application/json", "X-Upload-Content-Length": strconv.Itoa(total), "X-Upload-Content-Type": "video/mp4"}, meta)
	return resp.Header.Get("Location"), resp, out
}

func TestYouTubeQuotaReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ at, want string }{
		{"2026-01-15T07:59:00Z", "2026-01-15T08:00:00Z"}, // 23:59 PST
		{"2026-01-15T08:00:00Z", "2026-01-16T08:00:00Z"}, // midnight PST: the next one
		{"2026-07-01T06:59:00Z", "2026-07-01T07:00:00Z"}, // 23:59 PDT
		{"2026-03-08T09:00:00Z", "2026-03-09T07:00:00Z"}, // the day clocks spring forward
	} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		want, _ := time.Parse(time.RFC3339, tc.want)
		require.True(t, want.Equal(YouTubeQuotaReset(at)), "%s: got %s", tc.at, YouTubeQuotaReset(at).UTC())
	}
}

func TestYouTubeResumableProtocol(t *testing.T) {
	t.Parallel()
	clock := &ytClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	srv, token := ytStart(t, Options{Now: clock.Now, ProcessingDelay: time.Minute})
	total := ytChunkGranule + 1000
	session, resp, _ := ytInit(t, srv, token, "Title", "Description", total)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(session, srv.BaseURL()+"/youtube/upload/youtube/v3/videos?"), session)

	data := bytes.Repeat([]byte("v"), total)
	put := func(rng string, body []byte) (*http.Response, map[string]any) {
		return ytDo(t, http.MethodPut, session, "", map[string]string{"Content-Range": rng, "Content-Type": "video/mp4"}, body)
	}
	// A non-final chunk under 256 KiB is refused.
	resp, out := put("bytes 0-99/"+strconv.Itoa(total), data[:100])
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, out["error"].(map[string]any)["message"], "262144")

	resp, _ = put("bytes */"+strconv.Itoa(total), nil)
	require.Equal(t, http.StatusPermanentRedirect, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Range"), "nothing arrived yet")
	require.Empty(t, resp.Header.Get("Location"))

	resp, _ = put("bytes 0-262143/"+strconv.Itoa(total), data[:ytChunkGranule])
	require.Equal(t, http.StatusPermanentRedirect, resp.StatusCode)
	require.Equal(t, "bytes=0-262143", resp.Header.Get("Range"))

	resp, _ = put("bytes */"+strconv.Itoa(total), nil)
	require.Equal(t, "bytes=0-262143", resp.Header.Get("Range"))

	// An overlapping resend is fine; the final chunk creates the video.
	resp, out = put("bytes 262000-"+strconv.Itoa(total-1)+"/"+strconv.Itoa(total), data[262000:])
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	id, _ := out["id"].(string)
	require.Len(t, id, 11)
	require.Equal(t, "uploaded", out["status"].(map[string]any)["uploadStatus"])
	recs := srv.Publications(platforms.YouTube)
	require.Len(t, recs, 1)
	require.Equal(t, id, recs[0].ID)

	resp, out = put("bytes */"+strconv.Itoa(total), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, id, out["id"])

	list := srv.BaseURL() + "/youtube/youtube/v3/videos?part=status,processingDetails&id=" + id
	_, out = ytDo(t, http.MethodGet, list, token, nil, nil)
	item := out["items"].([]any)[0].(map[string]any)
	require.Equal(t, "processing", item["processingDetails"].(map[string]any)["processingStatus"])
	clock.Set(clock.Now().Add(time.Minute))
	_, out = ytDo(t, http.MethodGet, list, token, nil, nil)
	item = out["items"].([]any)[0].(map[string]any)
	require.Equal(t, "processed", item["status"].(map[string]any)["uploadStatus"])
	require.Equal(t, "succeeded", item["processingDetails"].(map[string]any)["processingStatus"])
}

func TestYouTubeValidationParity(t *testing.T) {
	t.Parallel()
	srv, token := ytStart(t, Options{})
	_, resp, out := ytInit(t, srv, token, strings.Repeat("a", 101), "", 10)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "invalidTitle", ytReason(out))
	_, resp, out = ytInit(t, srv, token, "Title", strings.Repeat("é", 2501), 10)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "invalidDescription", ytReason(out))
	_, _, out = ytInit(t, srv, token, "Title", "a <b> tag", 10)
	require.Equal(t, "invalidDescription", ytReason(out))
	_, _, out = ytInit(t, srv, token, "", "", 10)
	require.Equal(t, "invalidTitle", ytReason(out))
}

func TestYouTubeExpiredTokenShape(t *testing.T) {
	t.Parallel()
	srv, token := ytStart(t, Options{})
	require.NoError(t, srv.InjectFault(platforms.YouTube, FaultExpireTokens, 0))
	resp, out := ytDo(t, http.MethodGet, srv.BaseURL()+"/youtube/youtube/v3/channels?part=id&mine=true", token, nil, nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "authError", ytReason(out))
	e := out["error"].(map[string]any)
	require.Equal(t, "Invalid Credentials", e["errors"].([]any)[0].(map[string]any)["message"])
	require.Equal(t, "UNAUTHENTICATED", e["status"])
	require.Contains(t, resp.Header.Get("WWW-Authenticate"), "invalid_token")
}

func TestYouTubeQuotaModels(t *testing.T) {
	t.Parallel()
	// 23:30 Pacific (PDT): the quota resets half an hour later.
	clock := &ytClock{now: time.Date(2026, 6, 2, 6, 30, 0, 0, time.UTC)}
	srv, token := ytStart(t, Options{Now: clock.Now, LimitScale: 0.01})
	srv.SetLimit(platforms.YouTube, YouTubeBucketChannelUploads, Limit{Count: 100, Window: 24 * time.Hour})
	insert := func() (int, map[string]any) {
		_, resp, out := ytInit(t, srv, token, "Quota", "", 10)
		return resp.StatusCode, out
	}
	// Units pool: 10,000 units scaled to 100, inserts scaled to 16: six a day.
	for i := 0; i < 6; i++ {
		code, _ := insert()
		require.Equal(t, http.StatusOK, code, "insert %d", i+1)
	}
	code, out := insert()
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "quotaExceeded", ytReason(out))
	require.Equal(t, "youtube.quota", out["error"].(map[string]any)["errors"].([]any)[0].(map[string]any)["domain"])
	clock.Set(time.Date(2026, 6, 2, 7, 0, 0, 0, time.UTC)) // midnight Pacific
	code, _ = insert()
	require.Equal(t, http.StatusOK, code, "a new Pacific day")

	// Method buckets: inserts have their own bucket; other calls still spend units.
	srv.SetYouTubeQuotaModel(YouTubeMethodBuckets)
	srv.SetLimit(platforms.YouTube, YouTubeBucketInsert, Limit{Count: 2, Window: 25 * time.Hour})
	for i := 0; i < 2; i++ {
		code, _ := insert()
		require.Equal(t, http.StatusOK, code)
	}
	code, out = insert()
	require.Equal(t, http.StatusForbidden, code)
	require.Equal(t, "quotaExceeded", ytReason(out))
	resp, _ := ytDo(t, http.MethodGet, srv.BaseURL()+"/youtube/youtube/v3/channels?part=id&mine=true", token, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestYouTubeOAuthOfflineAccess(t *testing.T) {
	t.Parallel()
	srv, _ := ytStart(t, Options{})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code := func(offline bool) string {
		q := url.Values{"client_id": {ClientID}, "redirect_uri": {"http://127.0.0.1:1/cb"}, "response_type": {"code"}, "scope": {"s"}, "state": {"x"}}
		if offline {
			q.Set("access_type", "offline")
		}
		resp, err := noRedirect.Get(srv.BaseURL() + "/youtube/o/oauth2/v2/auth?" + q.Encode())
		require.NoError(t, err)
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		return loc.Query().Get("code")
	}
	token := func(form url.Values) (int, map[string]any) {
		form.Set("client_id", ClientID)
		form.Set("client_secret", ClientSecret)
		resp, out := ytDo(t, http.MethodPost, srv.BaseURL()+"/youtube/token", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, []byte(form.Encode()))
		return resp.StatusCode, out
	}
	status, out := token(url.Values{"grant_type": {"authorization_code"}, "code": {code(false)}, "redirect_uri": {"http://127.0.0.1:1/cb"}})
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, out, "refresh_token")
	require.EqualValues(t, 3599, out["expires_in"])

	status, out = token(url.Values{"grant_type": {"authorization_code"}, "code": {code(true)}, "redirect_uri": {"http://127.0.0.1:1/cb"}})
	require.Equal(t, http.StatusOK, status)
	rt, _ := out["refresh_token"].(string)
	require.NotEmpty(t, rt)

	status, out = token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, out, "refresh_token", "Google does not rotate refresh tokens")
	status, _ = token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
	require.Equal(t, http.StatusOK, status, "the same refresh token keeps working")

	resp, _ := ytDo(t, http.MethodPost, srv.BaseURL()+"/youtube/revoke?token="+rt, "", nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	status, out = token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", out["error"])
}

func TestYouTubeUnverifiedProject(t *testing.T) {
	t.Parallel()
	srv, token := ytStart(t, Options{})
	srv.SetYouTubeUnverifiedProject(true)
	session, _, _ := ytInit(t, srv, token, "Locked", "", 3)
	resp, out := ytDo(t, http.MethodPut, session, "", nil, []byte("abc"))
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, "private", out["status"].(map[string]any)["privacyStatus"])
}
