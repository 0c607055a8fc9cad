package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

func ttStart(t *testing.T, opts Options) (*Server, platforms.Credentials) {
	t.Helper()
	srv, err := Start("127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := srv.NewAccount(platforms.TikTok, "alice")
	require.NoError(t, err)
	return srv, c
}

// ttCall posts a JSON body to a TikTok endpoint and returns the status, data and error code.
func ttCall(t *testing.T, srv *Server, path, token string, body any) (int, map[string]any, string) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, out := ytDo(t, http.MethodPost, srv.BaseURL()+"/tiktok"+path, token, map[string]string{"Content-Type": "application/json"}, b)
	e, _ := out["error"].(map[string]any)
	code, _ := e["code"].(string)
	if code != "" {
		require.NotEmpty(t, e["log_id"])
	}
	data, _ := out["data"].(map[string]any)
	return resp.StatusCode, data, code
}

func ttInit(t *testing.T, srv *Server, token, privacy string, size, chunk int64, count int) (int, map[string]any, string) {
	t.Helper()
	return ttCall(t, srv, "/v2/post/publish/video/init/", token, map[string]any{
		"post_info":   map[string]any{"title": "caption", "privacy_level": privacy},
		"source_info": map[string]any{"source": "FILE_UPLOAD", "video_size": size, "chunk_size": chunk, "total_chunk_count": count},
	})
}

func ttPut(t *testing.T, uploadURL string, first int64, chunk []byte, total int64) (int, string) {
	t.Helper()
	last := first + int64(len(chunk)) - 1
	resp, out := ytDo(t, http.MethodPut, uploadURL, "", map[string]string{
		"Content-Type": "video/mp4", "Content-Range": "bytes " + strconv.FormatInt(first, 10) + "-" + strconv.FormatInt(last, 10) + "/" + strconv.FormatInt(total, 10),
	}, chunk)
	e, _ := out["error"].(map[string]any)
	code, _ := e["code"].(string)
	return resp.StatusCode, code
}

func TestTikTokChunkRules(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	for _, tc := range []struct {
		size, chunk int64
		count       int
		ok          bool
	}{
		{3 * mb, 3 * mb, 1, true},
		{3 * mb, 1 * mb, 3, false}, // under 5 MB: whole
		{20 * mb, 20 * mb, 1, true},
		{20 * mb, 4 * mb, 5, false}, // chunks of at least 5 MB
		{23 * mb, 10 * mb, 2, true}, // last chunk takes the remainder
		{23 * mb, 10 * mb, 3, false},
		{100 * mb, 100 * mb, 1, false}, // over 64 MB: chunked
		{700 * mb, 64 * mb, 10, true},
		{1000 * mb, 64 * mb, 15, true},
	} {
		problem := ttChunkProblem(tc.size, tc.chunk, tc.count)
		require.Equal(t, tc.ok, problem == "", "%d/%d/%d: %s", tc.size, tc.chunk, tc.count, problem)
	}
}

func TestTikTokStatusMachine(t *testing.T) {
	t.Parallel()
	clock := &ytClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	srv, c := ttStart(t, Options{Now: clock.Now, ProcessingDelay: time.Minute})
	srv.SetTikTokModerationDelay(5 * time.Minute)
	const mb = 1 << 20
	size := int64(10*mb + 1)
	status, data, code := ttInit(t, srv, c.AccessToken, "PUBLIC_TO_EVERYONE", size, 5*mb, 2)
	require.Equal(t, http.StatusOK, status, code)
	require.Equal(t, "ok", code)
	uploadURL := data["upload_url"].(string)
	require.True(t, strings.HasPrefix(uploadURL, srv.BaseURL()+"/tiktok/"))
	publishID := data["publish_id"].(string)
	video := bytes.Repeat([]byte("t"), int(size))

	fetch := func() map[string]any {
		status, data, code := ttCall(t, srv, "/v2/post/publish/status/fetch/", c.AccessToken, map[string]any{"publish_id": publishID})
		require.Equal(t, http.StatusOK, status, code)
		return data
	}
	require.Equal(t, "PROCESSING_UPLOAD", fetch()["status"])

	st, code := ttPut(t, uploadURL, 5*mb, video[5*mb:], size)
	require.Equal(t, http.StatusBadRequest, st, "chunks go in order")
	require.Equal(t, "invalid_file_upload", code)
	st, _ = ttPut(t, uploadURL, 0, video[:5*mb], size)
	require.Equal(t, http.StatusPartialContent, st)
	st, _ = ttPut(t, uploadURL, 5*mb, video[5*mb:size-1], size)
	require.Equal(t, http.StatusBadRequest, st, "the last chunk takes the whole remainder")
	st, _ = ttPut(t, uploadURL, 5*mb, video[5*mb:], size)
	require.Equal(t, http.StatusCreated, st)
	require.Len(t, srv.Publications(platforms.TikTok), 1)

	d := fetch()
	require.Equal(t, "PROCESSING_UPLOAD", d["status"])
	require.EqualValues(t, size, d["uploaded_bytes"])
	list := func() []any {
		_, data, _ := ttCall(t, srv, "/v2/video/list/?fields=id,video_description,create_time", c.AccessToken, map[string]any{"max_count": 20})
		return data["videos"].([]any)
	}
	clock.Set(clock.Now().Add(time.Minute))
	d = fetch()
	require.Equal(t, "PUBLISH_COMPLETE", d["status"])
	require.Empty(t, d["publicaly_available_post_id"], "moderation is still running")
	require.Empty(t, list())
	clock.Set(clock.Now().Add(5 * time.Minute))
	d = fetch()
	ids := d["publicaly_available_post_id"].([]any)
	require.Len(t, ids, 1)
	videos := list()
	require.Len(t, videos, 1)
	require.Equal(t, srv.Publications(platforms.TikTok)[0].ID, videos[0].(map[string]any)["id"])
	require.Equal(t, "caption", videos[0].(map[string]any)["video_description"])
}

func TestTikTokPrivacyAndCaption(t *testing.T) {
	t.Parallel()
	srv, c := ttStart(t, Options{})
	status, _, code := ttInit(t, srv, c.AccessToken, "FRIENDS_ONLY", 100, 100, 1)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_params", code)

	status, _, code = ttCall(t, srv, "/v2/post/publish/video/init/", c.AccessToken, map[string]any{
		"post_info":   map[string]any{"title": strings.Repeat("😀", 1101), "privacy_level": "SELF_ONLY"},
		"source_info": map[string]any{"source": "FILE_UPLOAD", "video_size": 100, "chunk_size": 100, "total_chunk_count": 1},
	})
	require.Equal(t, http.StatusBadRequest, status, "2,202 UTF-16 units")
	require.Equal(t, "invalid_params", code)

	srv.SetTikTokAudited(false)
	_, data, _ := ttCall(t, srv, "/v2/post/publish/creator_info/query/", c.AccessToken, map[string]any{})
	require.Equal(t, []any{"SELF_ONLY"}, data["privacy_level_options"])
	status, _, code = ttInit(t, srv, c.AccessToken, "PUBLIC_TO_EVERYONE", 100, 100, 1)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, "unaudited_client_can_only_post_to_private_accounts", code)
	status, _, _ = ttInit(t, srv, c.AccessToken, "SELF_ONLY", 100, 100, 1)
	require.Equal(t, http.StatusOK, status)
}

func TestTikTokExpiredTokenAndRateLimit(t *testing.T) {
	t.Parallel()
	srv, c := ttStart(t, Options{})
	srv.SetLimit(platforms.TikTok, "creator_info", Limit{Count: 1, Window: time.Minute})
	status, _, code := ttCall(t, srv, "/v2/post/publish/creator_info/query/", c.AccessToken, map[string]any{})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok", code)
	status, _, code = ttCall(t, srv, "/v2/post/publish/creator_info/query/", c.AccessToken, map[string]any{})
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, "rate_limit_exceeded", code)

	require.NoError(t, srv.InjectFault(platforms.TikTok, FaultExpireTokens, 0))
	status, _, code = ttCall(t, srv, "/v2/video/list/?fields=id", c.AccessToken, map[string]any{})
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "access_token_invalid", code)
}

func TestTikTokPullFromURL(t *testing.T) {
	t.Parallel()
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v.mp4" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("pulled video"))
	}))
	t.Cleanup(files.Close)
	clock := &ytClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	srv, c := ttStart(t, Options{Now: clock.Now, ProcessingDelay: time.Minute})
	srv.SetTikTokModerationDelay(0)
	pull := func(u string) string {
		status, data, code := ttCall(t, srv, "/v2/post/publish/video/init/", c.AccessToken, map[string]any{
			"post_info":   map[string]any{"title": "pulled", "privacy_level": "SELF_ONLY"},
			"source_info": map[string]any{"source": "PULL_FROM_URL", "video_url": u},
		})
		require.Equal(t, http.StatusOK, status, code)
		return data["publish_id"].(string)
	}
	good, bad := pull(files.URL+"/v.mp4"), pull(files.URL+"/missing.mp4")
	fetch := func(id string) map[string]any {
		_, data, _ := ttCall(t, srv, "/v2/post/publish/status/fetch/", c.AccessToken, map[string]any{"publish_id": id})
		return data
	}
	require.Equal(t, "PROCESSING_DOWNLOAD", fetch(good)["status"])
	require.Equal(t, "FAILED", fetch(bad)["status"])
	require.Equal(t, "video_pull_failed", fetch(bad)["fail_reason"])
	clock.Set(clock.Now().Add(time.Minute))
	require.Equal(t, "PUBLISH_COMPLETE", fetch(good)["status"])
	recs := srv.Publications(platforms.TikTok)
	require.Len(t, recs, 1)
	require.Equal(t, "pulled", recs[0].Text)
	require.Len(t, recs[0].MediaSHA256, 1)
	sum := sha256.Sum256([]byte("pulled video"))
	require.Equal(t, []string{hex.EncodeToString(sum[:])}, recs[0].MediaSHA256)
}
