package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// liREST calls a versioned REST endpoint with the headers LinkedIn requires.
func liREST(t *testing.T, e *xTestEnv, method, path, token string, body []byte) xTestResp {
	t.Helper()
	return e.do(t, method, path, token, "application/json", body, "LinkedIn-Version", "202610", "X-Restli-Protocol-Version", "2.0.0")
}

func liPostBody(author, commentary string, content any) []byte {
	body := map[string]any{
		"author": author, "commentary": commentary, "visibility": "PUBLIC",
		"distribution":   map[string]any{"feedDistribution": "MAIN_FEED", "targetEntities": []any{}, "thirdPartyDistributionChannels": []any{}},
		"lifecycleState": "PUBLISHED",
	}
	if content != nil {
		body["content"] = content
	}
	b, _ := json.Marshal(body)
	return b
}

func TestLinkedInHeadersAndTokens(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.LinkedIn) // clock: 2026-11-20
	c, err := e.sim.NewAccount(platforms.LinkedIn, "alice")
	require.NoError(t, err)
	author := "urn:li:person:" + c.UserID
	body := liPostBody(author, "hello", nil)

	r := e.do(t, http.MethodPost, "/rest/posts", c.AccessToken, "application/json", body, "X-Restli-Protocol-Version", "2.0.0")
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "VERSION_MISSING", r.json(t)["code"])
	for _, v := range []string{"202511", "202612", "2026-10", "202613"} {
		r = e.do(t, http.MethodPost, "/rest/posts", c.AccessToken, "application/json", body, "LinkedIn-Version", v, "X-Restli-Protocol-Version", "2.0.0")
		require.Equal(t, http.StatusUpgradeRequired, r.status, v)
		require.Equal(t, "NONEXISTENT_VERSION", r.json(t)["code"], v)
	}
	r = e.do(t, http.MethodPost, "/rest/posts", c.AccessToken, "application/json", body, "LinkedIn-Version", "202512")
	require.Equal(t, http.StatusBadRequest, r.status, "X-Restli-Protocol-Version is required")
	r = e.do(t, http.MethodPost, "/rest/posts", c.AccessToken, "application/json", body, "LinkedIn-Version", "202611.01", "X-Restli-Protocol-Version", "2.0.0")
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.True(t, strings.HasPrefix(r.header.Get("x-restli-id"), "urn:li:share:"))
	require.Empty(t, r.body)

	// 60-day tokens, then 401 65600.
	e.clock.Advance(60 * 24 * time.Hour)
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, body)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.EqualValues(t, 65600, r.json(t)["serviceErrorCode"])
	r = e.do(t, http.MethodGet, "/v2/userinfo", c.AccessToken, "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)

	// Refresh keeps the same refresh token and its fixed lifetime.
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}, "client_id": {sim.ClientID}, "client_secret": {sim.ClientSecret}}
	r = e.form(t, "/oauth/v2/accessToken", form)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	tok := r.json(t)
	require.Equal(t, c.RefreshToken, tok["refresh_token"])
	require.EqualValues(t, 5184000, tok["expires_in"])
	require.EqualValues(t, (365-60)*24*3600, tok["refresh_token_expires_in"])
	access := tok["access_token"].(string)
	r = e.do(t, http.MethodGet, "/v2/userinfo", access, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, c.UserID, r.json(t)["sub"])

	form.Set("client_secret", "wrong")
	require.Equal(t, http.StatusUnauthorized, e.form(t, "/oauth/v2/accessToken", form).status)

	// Revoked: 401 65601.
	r = e.form(t, "/oauth/v2/revoke", url.Values{"token": {access}, "client_id": {sim.ClientID}, "client_secret": {sim.ClientSecret}})
	require.Equal(t, http.StatusOK, r.status)
	r = liREST(t, e, http.MethodPost, "/rest/posts", access, body)
	require.EqualValues(t, 65601, r.json(t)["serviceErrorCode"])
	require.Len(t, e.sim.Revocations(), 1)
}

func TestLinkedInOAuth(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.LinkedIn)
	authorize := func(extra url.Values) *url.URL {
		q := url.Values{"response_type": {"code"}, "client_id": {sim.ClientID}, "redirect_uri": {"https://app.example/cb"}, "state": {"s1"}, "scope": {"openid profile w_member_social"}}
		for k, v := range extra {
			q[k] = v
		}
		r := e.do(t, http.MethodGet, "/oauth/v2/authorization?"+q.Encode(), "", "", nil)
		require.Equal(t, http.StatusFound, r.status, string(r.body))
		loc, err := url.Parse(r.header.Get("Location"))
		require.NoError(t, err)
		return loc
	}
	exchange := func(code, verifier string) xTestResp {
		return e.form(t, "/oauth/v2/accessToken", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"https://app.example/cb"},
			"client_id": {sim.ClientID}, "client_secret": {sim.ClientSecret}, "code_verifier": {verifier}})
	}
	loc := authorize(url.Values{"login_hint": {"erin"}})
	require.Equal(t, "s1", loc.Query().Get("state"))
	r := exchange(loc.Query().Get("code"), "")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.EqualValues(t, 5184000, r.json(t)["expires_in"])
	r = e.do(t, http.MethodGet, "/v2/userinfo", r.json(t)["access_token"].(string), "", nil)
	require.Equal(t, "erin", r.json(t)["name"])

	// PKCE when a challenge was sent.
	verifier := "linkedin-verifier-0123456789-0123456789-0123456789"
	loc = authorize(url.Values{"code_challenge": {xChallenge(verifier)}, "code_challenge_method": {"S256"}})
	require.Equal(t, http.StatusBadRequest, exchange(loc.Query().Get("code"), "wrong").status)
	loc = authorize(url.Values{"code_challenge": {xChallenge(verifier)}, "code_challenge_method": {"S256"}})
	require.Equal(t, http.StatusOK, exchange(loc.Query().Get("code"), verifier).status)

	// Codes live 30 minutes.
	loc = authorize(nil)
	e.clock.Advance(31 * time.Minute)
	require.Equal(t, http.StatusBadRequest, exchange(loc.Query().Get("code"), "").status)

	e.sim.Deny(platforms.LinkedIn)
	loc = authorize(nil)
	require.Equal(t, "access_denied", loc.Query().Get("error"))
}

func TestLinkedInPostsAndLimits(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.LinkedIn)
	c, err := e.sim.NewAccount(platforms.LinkedIn, "alice")
	require.NoError(t, err)
	author := "urn:li:person:" + c.UserID

	r := liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, strings.Repeat("a", 3001), nil))
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Contains(t, r.json(t)["message"], "3000")
	// Escapes do not count.
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, strings.Repeat(`\(`, 3000), nil))
	require.Equal(t, http.StatusCreated, r.status)
	require.Equal(t, strings.Repeat("(", 3000), e.sim.Publications(platforms.LinkedIn)[0].Text)
	e.clock.Advance(time.Second)

	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody("urn:li:organization:1", "x", nil))
	require.Equal(t, http.StatusForbidden, r.status)

	// Daily limits: 429 without headers until 00:00 UTC.
	e.sim.SetLimit(platforms.LinkedIn, "posts", sim.Limit{Count: 1, Window: 24 * time.Hour})
	require.Equal(t, http.StatusCreated, liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "two", nil)).status)
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "three", nil))
	require.Equal(t, http.StatusTooManyRequests, r.status)
	for k := range r.header {
		require.NotContains(t, strings.ToLower(k), "ratelimit")
		require.NotEqual(t, "Retry-After", k)
	}
	e.clock.Advance(11*time.Hour + 58*time.Minute + 59*time.Second) // 23:59 UTC
	require.Equal(t, http.StatusTooManyRequests, liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "three", nil)).status)
	e.clock.Advance(time.Minute) // 00:00 UTC
	require.Equal(t, http.StatusCreated, liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "three", nil)).status)

	// The author finder, newest first.
	r = liREST(t, e, http.MethodGet, "/rest/posts?q=author&author="+url.QueryEscape(author)+"&count=2&sortBy=CREATED", c.AccessToken, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var out struct {
		Elements []struct {
			ID         string `json:"id"`
			Commentary string `json:"commentary"`
			CreatedAt  int64  `json:"createdAt"`
		} `json:"elements"`
		Paging struct{ Total int } `json:"paging"`
	}
	require.NoError(t, json.Unmarshal(r.body, &out))
	require.Len(t, out.Elements, 2)
	require.Equal(t, "three", out.Elements[0].Commentary)
	require.Equal(t, "two", out.Elements[1].Commentary)
	require.Equal(t, 3, out.Paging.Total)
	r = liREST(t, e, http.MethodGet, "/rest/posts/"+url.QueryEscape(out.Elements[0].ID), c.AccessToken, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "three", r.json(t)["commentary"])

	other, err := e.sim.NewAccount(platforms.LinkedIn, "bob")
	require.NoError(t, err)
	r = liREST(t, e, http.MethodGet, "/rest/posts?q=author&author="+url.QueryEscape(author), other.AccessToken, nil)
	require.Equal(t, http.StatusForbidden, r.status)

	// The rate_limit fault answers the same way, and post_then_error records the post.
	require.NoError(t, e.sim.InjectFault(platforms.LinkedIn, sim.FaultRateLimit, 1))
	r = liREST(t, e, http.MethodGet, "/rest/posts?q=author&author="+url.QueryEscape(author), c.AccessToken, nil)
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.EqualValues(t, 429, r.json(t)["status"])
	e.sim.SetLimit(platforms.LinkedIn, "posts", sim.Limit{Count: 150, Window: 24 * time.Hour})
	require.NoError(t, e.sim.InjectFault(platforms.LinkedIn, sim.FaultPostThenError, 1))
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "maybe", nil))
	require.Equal(t, http.StatusInternalServerError, r.status)
	pubs := e.sim.Publications(platforms.LinkedIn)
	require.Equal(t, "maybe", pubs[len(pubs)-1].Text)
}

func TestLinkedInMedia(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.LinkedIn)
	c, err := e.sim.NewAccount(platforms.LinkedIn, "alice")
	require.NoError(t, err)
	author := "urn:li:person:" + c.UserID
	initBody := func(extra map[string]any) []byte {
		req := map[string]any{"owner": author}
		for k, v := range extra {
			req[k] = v
		}
		b, _ := json.Marshal(map[string]any{"initializeUploadRequest": req})
		return b
	}

	image := func() string {
		r := liREST(t, e, http.MethodPost, "/rest/images?action=initializeUpload", c.AccessToken, initBody(nil))
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		v := r.json(t)["value"].(map[string]any)
		uploadURL := v["uploadUrl"].(string)
		require.True(t, strings.HasPrefix(uploadURL, "http"), "upload URLs are absolute")
		urn := v["image"].(string)
		r = liREST(t, e, http.MethodGet, "/rest/images/"+url.QueryEscape(urn), c.AccessToken, nil)
		require.Equal(t, "WAITING_UPLOAD", r.json(t)["status"])
		require.Equal(t, http.StatusCreated, e.do(t, http.MethodPut, uploadURL, c.AccessToken, "image/png", []byte("png "+urn)).status)
		return urn
	}
	one := image()
	r := liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "", map[string]any{"media": map[string]any{"id": one}}))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "x", map[string]any{"multiImage": map[string]any{"images": []any{map[string]any{"id": one}}}}))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "multiImage needs 2 to 20 images")
	two := image()
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "x", map[string]any{"multiImage": map[string]any{"images": []any{map[string]any{"id": one}, map[string]any{"id": two}}}}))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.Len(t, e.sim.Publications(platforms.LinkedIn)[1].MediaSHA256, 2)

	// Video: 4 MiB parts, ETags, finalize, PROCESSING then AVAILABLE.
	video := bytes.Repeat([]byte("v"), 4<<20+10)
	r = liREST(t, e, http.MethodPost, "/rest/videos?action=initializeUpload", c.AccessToken, initBody(map[string]any{"fileSizeBytes": len(video)}))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var init struct {
		Value struct {
			Video              string `json:"video"`
			UploadToken        string `json:"uploadToken"`
			UploadInstructions []struct {
				UploadURL           string `json:"uploadUrl"`
				FirstByte, LastByte int
			} `json:"uploadInstructions"`
		} `json:"value"`
	}
	require.NoError(t, json.Unmarshal(r.body, &init))
	require.Len(t, init.Value.UploadInstructions, 2)
	require.Equal(t, 4<<20-1, init.Value.UploadInstructions[0].LastByte)
	var etags []string
	for _, p := range init.Value.UploadInstructions {
		r := e.do(t, http.MethodPut, p.UploadURL, "", "application/octet-stream", video[p.FirstByte:p.LastByte+1])
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		etags = append(etags, r.header.Get("ETag"))
	}
	finalize := func(parts []string) xTestResp {
		b, _ := json.Marshal(map[string]any{"finalizeUploadRequest": map[string]any{"video": init.Value.Video, "uploadToken": init.Value.UploadToken, "uploadedPartIds": parts}})
		return liREST(t, e, http.MethodPost, "/rest/videos?action=finalizeUpload", c.AccessToken, b)
	}
	require.Equal(t, http.StatusBadRequest, finalize([]string{etags[1], etags[0]}).status)
	require.Equal(t, http.StatusOK, finalize(etags).status)
	status := func() string {
		r := liREST(t, e, http.MethodGet, "/rest/videos/"+url.QueryEscape(init.Value.Video), c.AccessToken, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		return r.json(t)["status"].(string)
	}
	require.Equal(t, "PROCESSING", status())
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "v", map[string]any{"media": map[string]any{"id": init.Value.Video}}))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "a video still processing cannot be posted")
	e.clock.Advance(10 * time.Second)
	require.Equal(t, "AVAILABLE", status())
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "v", map[string]any{"media": map[string]any{"id": init.Value.Video}}))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	pubs := e.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs[len(pubs)-1].MediaSHA256, 1)

	// A part of the wrong size is refused.
	r = liREST(t, e, http.MethodPost, "/rest/videos?action=initializeUpload", c.AccessToken, initBody(map[string]any{"fileSizeBytes": 100}))
	require.NoError(t, json.Unmarshal(r.body, &init))
	require.Equal(t, http.StatusBadRequest, e.do(t, http.MethodPut, init.Value.UploadInstructions[0].UploadURL, "", "", []byte("short")).status)
	require.Equal(t, strconv.Itoa(100-1), strconv.Itoa(init.Value.UploadInstructions[0].LastByte))
}
