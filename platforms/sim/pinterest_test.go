package sim

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

func pinStart(t *testing.T, opts Options) (*Server, platforms.Credentials) {
	t.Helper()
	srv, err := Start("127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c, err := srv.NewAccount(platforms.Pinterest, "alice")
	require.NoError(t, err)
	return srv, c
}

// pinJSONCall sends a JSON body and decodes the JSON answer.
func pinJSONCall(t *testing.T, srv *Server, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var b []byte
	if body != nil {
		var err error
		b, err = json.Marshal(body)
		require.NoError(t, err)
	}
	resp, out := ytDo(t, method, srv.BaseURL()+"/pinterest"+path, token, map[string]string{"Content-Type": "application/json"}, b)
	return resp.StatusCode, out
}

func pinBoardOf(t *testing.T, srv *Server, token string) string {
	t.Helper()
	status, out := pinJSONCall(t, srv, http.MethodGet, "/v5/boards", token, nil)
	require.Equal(t, http.StatusOK, status)
	items := out["items"].([]any)
	require.NotEmpty(t, items)
	return items[0].(map[string]any)["id"].(string)
}

func TestPinterestExpiredTokenShape(t *testing.T) {
	t.Parallel()
	srv, c := pinStart(t, Options{})
	require.NoError(t, srv.InjectFault(platforms.Pinterest, FaultExpireTokens, 0))
	status, out := pinJSONCall(t, srv, http.MethodGet, "/v5/user_account", c.AccessToken, nil)
	require.Equal(t, http.StatusUnauthorized, status)
	require.EqualValues(t, 2, out["code"])
	require.Equal(t, "Authentication failed.", out["message"])
	require.Equal(t, "failure", out["status"])
}

func TestPinterestPinValidation(t *testing.T) {
	t.Parallel()
	srv, c := pinStart(t, Options{})
	board := pinBoardOf(t, srv, c.AccessToken)
	b64 := map[string]any{"source_type": "image_base64", "content_type": "image/png", "data": "aGVsbG8="}
	for _, tc := range []struct {
		name   string
		pin    map[string]any
		status int
		code   float64
	}{
		{"long title", map[string]any{"board_id": board, "title": strings.Repeat("a", 101), "media_source": b64}, 400, 1},
		{"long description", map[string]any{"board_id": board, "description": strings.Repeat("é", 801), "media_source": b64}, 400, 1},
		{"long alt text", map[string]any{"board_id": board, "alt_text": strings.Repeat("a", 501), "media_source": b64}, 400, 1},
		{"no board", map[string]any{"media_source": b64}, 400, 1},
		{"unknown board", map[string]any{"board_id": "123", "media_source": b64}, 404, 40},
		{"no media", map[string]any{"board_id": board}, 400, 1},
		{"one-item carousel", map[string]any{"board_id": board, "media_source": map[string]any{"source_type": "multiple_image_urls", "items": []any{map[string]any{"url": "http://127.0.0.1:1/a.png"}}}}, 400, 1},
		{"unknown video", map[string]any{"board_id": board, "media_source": map[string]any{"source_type": "video_id", "media_id": "9", "cover_image_key_frame_time": 0}}, 404, 4161},
	} {
		status, out := pinJSONCall(t, srv, http.MethodPost, "/v5/pins", c.AccessToken, tc.pin)
		require.Equal(t, tc.status, status, tc.name)
		require.EqualValues(t, tc.code, out["code"], tc.name)
	}
	bob, err := srv.NewAccount(platforms.Pinterest, "bob")
	require.NoError(t, err)
	status, out := pinJSONCall(t, srv, http.MethodPost, "/v5/pins", bob.AccessToken, map[string]any{"board_id": board, "media_source": b64})
	require.Equal(t, http.StatusForbidden, status)
	require.EqualValues(t, 29, out["code"])
	require.Empty(t, srv.Publications(platforms.Pinterest))

	status, out = pinJSONCall(t, srv, http.MethodPost, "/v5/pins", c.AccessToken, map[string]any{"board_id": board, "description": "ok", "media_source": b64})
	require.Equal(t, http.StatusCreated, status)
	require.Len(t, srv.Publications(platforms.Pinterest), 1)
	require.Equal(t, out["id"], srv.Publications(platforms.Pinterest)[0].ID)
}

func TestPinterestVideoMachine(t *testing.T) {
	t.Parallel()
	clock := &ytClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	srv, c := pinStart(t, Options{Now: clock.Now, ProcessingDelay: time.Minute})
	board := pinBoardOf(t, srv, c.AccessToken)
	status, reg := pinJSONCall(t, srv, http.MethodPost, "/v5/media", c.AccessToken, map[string]any{"media_type": "video"})
	require.Equal(t, http.StatusCreated, status)
	id := reg["media_id"].(string)
	uploadURL := reg["upload_url"].(string)
	require.True(t, strings.HasPrefix(uploadURL, srv.BaseURL()+"/pinterest/"), uploadURL)
	params := reg["upload_parameters"].(map[string]any)

	mediaStatus := func() string {
		_, out := pinJSONCall(t, srv, http.MethodGet, "/v5/media/"+id, c.AccessToken, nil)
		return out["status"].(string)
	}
	require.Equal(t, "registered", mediaStatus())

	post := func(signature string) *http.Response {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for k, v := range params {
			if k == "x-amz-signature" {
				v = signature
			}
			require.NoError(t, mw.WriteField(k, v.(string)))
		}
		fw, err := mw.CreateFormFile("file", "v.mp4")
		require.NoError(t, err)
		_, _ = fw.Write([]byte("video bytes"))
		require.NoError(t, mw.Close())
		resp, err := http.Post(uploadURL, mw.FormDataContentType(), &body)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusForbidden, post("forged").StatusCode)
	require.Equal(t, http.StatusNoContent, post(params["x-amz-signature"].(string)).StatusCode)
	require.Equal(t, "processing", mediaStatus())

	pin := map[string]any{"board_id": board, "media_source": map[string]any{"source_type": "video_id", "media_id": id, "cover_image_key_frame_time": 0}}
	status, _ = pinJSONCall(t, srv, http.MethodPost, "/v5/pins", c.AccessToken, pin)
	require.Equal(t, http.StatusBadRequest, status, "not processed yet")

	clock.Set(clock.Now().Add(time.Minute))
	require.Equal(t, "succeeded", mediaStatus())
	status, out := pinJSONCall(t, srv, http.MethodPost, "/v5/pins", c.AccessToken, pin)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "video", out["media"].(map[string]any)["media_type"])
}

func TestPinterestTokenEndpoint(t *testing.T) {
	t.Parallel()
	srv, c := pinStart(t, Options{})
	call := func(basic bool, form url.Values) (int, map[string]any) {
		req, err := http.NewRequest(http.MethodPost, srv.BaseURL()+"/pinterest/v5/oauth/token", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basic {
			req.SetBasicAuth(ClientID, ClientSecret)
		}
		resp, err := testHTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}}
	status, _ := call(false, refresh)
	require.Equal(t, http.StatusUnauthorized, status, "the client authenticates with HTTP Basic")

	status, out := call(true, refresh)
	require.Equal(t, http.StatusOK, status)
	require.NotEqual(t, c.RefreshToken, out["refresh_token"])
	require.Equal(t, "refresh_token", out["response_type"])
	require.Greater(t, out["refresh_token_expires_at"].(float64), float64(time.Now().Unix()))
	status, _ = call(true, refresh)
	require.Equal(t, http.StatusBadRequest, status, "the old refresh token is retired")
}

func TestPinterestRateLimit(t *testing.T) {
	t.Parallel()
	srv, c := pinStart(t, Options{})
	srv.SetLimit(platforms.Pinterest, "org_read", Limit{Count: 1, Window: time.Minute})
	status, _ := pinJSONCall(t, srv, http.MethodGet, "/v5/boards", c.AccessToken, nil)
	require.Equal(t, http.StatusOK, status)
	status, out := pinJSONCall(t, srv, http.MethodGet, "/v5/boards", c.AccessToken, nil)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.EqualValues(t, 8, out["code"])
	require.NotEmpty(t, out["message"])
}
