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

type bskyTestSession struct {
	AccessJwt, RefreshJwt, Handle, DID string
}

func bskyLogin(t *testing.T, e *xTestEnv, identifier, password string) (bskyTestSession, xTestResp) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"identifier": identifier, "password": password})
	r := e.do(t, http.MethodPost, "/xrpc/com.atproto.server.createSession", "", "application/json", body)
	var s bskyTestSession
	if r.status == http.StatusOK {
		require.NoError(t, json.Unmarshal(r.body, &s))
	}
	return s, r
}

func bskyPost(t *testing.T, e *xTestEnv, s bskyTestSession, record map[string]any) xTestResp {
	t.Helper()
	if _, ok := record["$type"]; !ok {
		record["$type"] = "app.bsky.feed.post"
	}
	if _, ok := record["createdAt"]; !ok {
		record["createdAt"] = e.clock.Now().Format(time.RFC3339)
	}
	body, _ := json.Marshal(map[string]any{"repo": s.DID, "collection": "app.bsky.feed.post", "record": record})
	return e.do(t, http.MethodPost, "/xrpc/com.atproto.repo.createRecord", s.AccessJwt, "application/json", body)
}

func TestBlueskySessions(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Bluesky)
	_, r := bskyLogin(t, e, "alice.bsky.social", "hunter2")
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, "AuthenticationRequired", r.json(t)["error"])

	s, r := bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.True(t, strings.HasPrefix(s.DID, "did:plc:"))
	require.Equal(t, "alice.bsky.social", s.Handle)
	doc := r.json(t)["didDoc"].(map[string]any)
	require.Equal(t, e.base, doc["service"].([]any)[0].(map[string]any)["serviceEndpoint"])

	// The same account by its DID.
	s2, r := bskyLogin(t, e, s.DID, "abcd-efgh-ijkl-mnop")
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, s.DID, s2.DID)

	r = e.do(t, http.MethodGet, "/xrpc/com.atproto.server.getSession", s.AccessJwt, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, s.DID, r.json(t)["did"])
	require.NotEmpty(t, r.header.Get("RateLimit-Limit"))

	// Access tokens expire after 2 hours with 400 ExpiredToken.
	e.clock.Advance(2 * time.Hour)
	r = e.do(t, http.MethodGet, "/xrpc/com.atproto.server.getSession", s.AccessJwt, "", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.JSONEq(t, `{"error":"ExpiredToken","message":"Token has expired"}`, string(r.body))

	// refreshSession rotates; the old refresh token keeps working for 2 hours.
	r = e.do(t, http.MethodPost, "/xrpc/com.atproto.server.refreshSession", s.RefreshJwt, "", nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var fresh bskyTestSession
	require.NoError(t, json.Unmarshal(r.body, &fresh))
	require.NotEqual(t, s.RefreshJwt, fresh.RefreshJwt)
	require.Equal(t, http.StatusOK, e.do(t, http.MethodPost, "/xrpc/com.atproto.server.refreshSession", s2.RefreshJwt, "", nil).status)
	e.clock.Advance(time.Hour)
	require.Equal(t, http.StatusOK, e.do(t, http.MethodPost, "/xrpc/com.atproto.server.refreshSession", s2.RefreshJwt, "", nil).status)
	e.clock.Advance(61 * time.Minute)
	r = e.do(t, http.MethodPost, "/xrpc/com.atproto.server.refreshSession", s.RefreshJwt, "", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "ExpiredToken", r.json(t)["error"])

	// deleteSession revokes.
	r = e.do(t, http.MethodPost, "/xrpc/com.atproto.server.deleteSession", fresh.RefreshJwt, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, e.sim.Revocations(), 1)
	r = e.do(t, http.MethodGet, "/xrpc/com.atproto.server.getSession", fresh.AccessJwt, "", nil)
	require.Equal(t, "Token has been revoked", r.json(t)["message"])

	// createSession is limited per account.
	e.sim.SetLimit(platforms.Bluesky, "create_session", sim.Limit{Count: 1, Window: 5 * time.Minute})
	_, r = bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")
	require.Equal(t, http.StatusOK, r.status)
	_, r = bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "RateLimitExceeded", r.json(t)["error"])
}

func TestBlueskyCreateRecord(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Bluesky)
	s, _ := bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")

	r := bskyPost(t, e, s, map[string]any{"text": "hello"})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	out := r.json(t)
	require.True(t, strings.HasPrefix(out["uri"].(string), "at://"+s.DID+"/app.bsky.feed.post/"))
	require.True(t, strings.HasPrefix(out["cid"].(string), "bafyrei"))
	require.Equal(t, "5000", r.header.Get("RateLimit-Limit"))
	require.Equal(t, "4997", r.header.Get("RateLimit-Remaining"))
	require.Equal(t, "5000;w=3600", r.header.Get("RateLimit-Policy"))
	require.Equal(t, strconv.FormatInt(e.clock.Now().Add(time.Hour).Unix(), 10), r.header.Get("RateLimit-Reset"))

	for name, rec := range map[string]map[string]any{
		"301 graphemes":  {"text": strings.Repeat("a", 301)},
		"3001 bytes":     {"text": strings.Repeat("👩‍👩‍👧‍👦", 120) + "a"},
		"no createdAt":   {"text": "x", "createdAt": "yesterday"},
		"mid-rune facet": {"text": "é link", "facets": []any{map[string]any{"index": map[string]int{"byteStart": 1, "byteEnd": 3}, "features": []any{map[string]any{"$type": "app.bsky.richtext.facet#tag", "tag": "x"}}}}},
		"facet past end": {"text": "abc", "facets": []any{map[string]any{"index": map[string]int{"byteStart": 0, "byteEnd": 4}, "features": []any{map[string]any{"$type": "app.bsky.richtext.facet#tag", "tag": "x"}}}}},
		"unknown blob":   {"text": "x", "embed": map[string]any{"$type": "app.bsky.embed.images", "images": []any{map[string]any{"alt": "", "image": map[string]any{"$type": "blob", "ref": map[string]string{"$link": "bafkreinope"}, "mimeType": "image/png", "size": 1}}}}},
		"empty":          {"text": ""},
	} {
		r := bskyPost(t, e, s, rec)
		require.Equal(t, http.StatusBadRequest, r.status, name)
		require.Contains(t, []string{"InvalidRequest", "BlobNotFound"}, r.json(t)["error"], name)
	}
	r = bskyPost(t, e, s, map[string]any{"text": strings.Repeat("a", 301)})
	require.Contains(t, r.json(t)["message"], "300 graphemes")

	// Images: at most 4, each at most 1,000,000 bytes.
	upload := func(data []byte) map[string]any {
		r := e.do(t, http.MethodPost, "/xrpc/com.atproto.repo.uploadBlob", s.AccessJwt, "image/png", data)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		return r.json(t)["blob"].(map[string]any)
	}
	small, big := upload([]byte("small png")), upload(bytes.Repeat([]byte{1}, 1_000_001))
	images := func(blobs ...map[string]any) map[string]any {
		var list []any
		for _, b := range blobs {
			list = append(list, map[string]any{"alt": "", "image": b})
		}
		return map[string]any{"$type": "app.bsky.embed.images", "images": list}
	}
	require.Equal(t, http.StatusOK, bskyPost(t, e, s, map[string]any{"text": "", "embed": images(small, small, small, small)}).status)
	require.Equal(t, http.StatusBadRequest, bskyPost(t, e, s, map[string]any{"text": "", "embed": images(small, small, small, small, small)}).status)
	require.Equal(t, http.StatusBadRequest, bskyPost(t, e, s, map[string]any{"text": "", "embed": images(big)}).status)

	// Another account's blob cannot be referenced.
	bob, _ := bskyLogin(t, e, "bob.bsky.social", "abcd-efgh-ijkl-mnop")
	require.Equal(t, http.StatusBadRequest, bskyPost(t, e, bob, map[string]any{"text": "", "embed": images(small)}).status)

	// Only the session's own repo.
	body, _ := json.Marshal(map[string]any{"repo": bob.DID, "collection": "app.bsky.feed.post", "record": map[string]any{"$type": "app.bsky.feed.post", "text": "x", "createdAt": e.clock.Now().Format(time.RFC3339)}})
	require.Equal(t, http.StatusBadRequest, e.do(t, http.MethodPost, "/xrpc/com.atproto.repo.createRecord", s.AccessJwt, "application/json", body).status)

	// Write points: a create costs 3.
	e.sim.SetLimit(platforms.Bluesky, "writes", sim.Limit{Count: 6, Window: time.Hour})
	require.Equal(t, http.StatusOK, bskyPost(t, e, s, map[string]any{"text": "a"}).status)
	require.Equal(t, http.StatusOK, bskyPost(t, e, s, map[string]any{"text": "b"}).status)
	r = bskyPost(t, e, s, map[string]any{"text": "c"})
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "0", r.header.Get("RateLimit-Remaining"))
	require.JSONEq(t, `{"error":"RateLimitExceeded","message":"Rate Limit Exceeded"}`, string(r.body))
}

func TestBlueskyListRecords(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Bluesky)
	s, _ := bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")
	for i := 0; i < 5; i++ {
		require.Equal(t, http.StatusOK, bskyPost(t, e, s, map[string]any{"text": "post " + strconv.Itoa(i)}).status)
	}
	list := func(q url.Values) (texts []string, cursor string) {
		r := e.do(t, http.MethodGet, "/xrpc/com.atproto.repo.listRecords?"+q.Encode(), "", "", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var out struct {
			Records []struct {
				Value struct{ Text string } `json:"value"`
			} `json:"records"`
			Cursor string `json:"cursor"`
		}
		require.NoError(t, json.Unmarshal(r.body, &out))
		for _, rec := range out.Records {
			texts = append(texts, rec.Value.Text)
		}
		return texts, out.Cursor
	}
	q := url.Values{"repo": {s.DID}, "collection": {"app.bsky.feed.post"}, "limit": {"2"}}
	texts, cursor := list(q)
	require.Equal(t, []string{"post 4", "post 3"}, texts)
	q.Set("cursor", cursor)
	texts, _ = list(q)
	require.Equal(t, []string{"post 2", "post 1"}, texts)

	texts, _ = list(url.Values{"repo": {"alice.bsky.social"}, "collection": {"app.bsky.feed.post"}, "reverse": {"true"}})
	require.Equal(t, []string{"post 0", "post 1", "post 2", "post 3", "post 4"}, texts)
}

func TestBlueskyVideoService(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Bluesky)
	s, _ := bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")
	serviceToken := func(lxm string) string {
		q := url.Values{"aud": {"did:web:pds.example"}, "lxm": {lxm}, "exp": {strconv.FormatInt(e.clock.Now().Add(30*time.Minute).Unix(), 10)}}
		r := e.do(t, http.MethodGet, "/xrpc/com.atproto.server.getServiceAuth?"+q.Encode(), s.AccessJwt, "", nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		return r.json(t)["token"].(string)
	}
	r := e.do(t, http.MethodGet, "/xrpc/app.bsky.video.getUploadLimits", serviceToken("app.bsky.video.getUploadLimits"), "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, true, r.json(t)["canUpload"])
	require.EqualValues(t, 25, r.json(t)["remainingDailyVideos"])

	video := bytes.Repeat([]byte("video"), 1000)
	uploadPath := "/xrpc/app.bsky.video.uploadVideo?did=" + url.QueryEscape(s.DID) + "&name=a.mp4"
	r = e.do(t, http.MethodPost, uploadPath, serviceToken("app.bsky.video.getUploadLimits"), "video/mp4", video)
	require.Equal(t, http.StatusUnauthorized, r.status, "the service token must be for uploadBlob")

	r = e.do(t, http.MethodPost, uploadPath, serviceToken("com.atproto.repo.uploadBlob"), "video/mp4", video)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	job := r.json(t)["jobId"].(string)
	status := func() map[string]any {
		r := e.do(t, http.MethodGet, "/xrpc/app.bsky.video.getJobStatus?jobId="+job, "", "", nil)
		require.Equal(t, http.StatusOK, r.status)
		return r.json(t)["jobStatus"].(map[string]any)
	}
	require.Equal(t, "JOB_STATE_ENCODING", status()["state"])
	require.NotContains(t, status(), "blob")

	e.clock.Advance(10 * time.Second)
	st := status()
	require.Equal(t, "JOB_STATE_COMPLETED", st["state"])
	blob := st["blob"].(map[string]any)
	r = bskyPost(t, e, s, map[string]any{"text": "clip", "embed": map[string]any{"$type": "app.bsky.embed.video", "video": blob}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	pubs := e.sim.Publications(platforms.Bluesky)
	require.Len(t, pubs[0].MediaSHA256, 1)

	// The same bytes again: 409 already_exists with the earlier job and its blob.
	r = e.do(t, http.MethodPost, uploadPath, serviceToken("com.atproto.repo.uploadBlob"), "video/mp4", video)
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, "already_exists", r.json(t)["error"])
	require.Equal(t, job, r.json(t)["jobId"])
	require.Equal(t, blob, r.json(t)["blob"])

	// A video still processing cannot be posted.
	r = e.do(t, http.MethodPost, uploadPath, serviceToken("com.atproto.repo.uploadBlob"), "video/mp4", append(video, 'x'))
	require.Equal(t, http.StatusOK, r.status)
	job = r.json(t)["jobId"].(string)
	r = e.do(t, http.MethodGet, "/xrpc/app.bsky.video.getJobStatus?jobId="+job, "", "", nil)
	require.NotContains(t, r.json(t)["jobStatus"], "blob")
	r = e.do(t, http.MethodPost, "/xrpc/com.atproto.repo.uploadBlob", s.AccessJwt, "video/mp4", append(video, 'x'))
	require.Equal(t, http.StatusOK, r.status, "uploadBlob is the simple method and is ready at once")
}

func TestBlueskyFaults(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.Bluesky)
	s, _ := bskyLogin(t, e, "alice.bsky.social", "abcd-efgh-ijkl-mnop")
	require.NoError(t, e.sim.InjectFault(platforms.Bluesky, sim.FaultRateLimit, 1))
	r := bskyPost(t, e, s, map[string]any{"text": "x"})
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "RateLimitExceeded", r.json(t)["error"])
	require.Equal(t, strconv.FormatInt(e.clock.Now().Add(time.Minute).Unix(), 10), r.header.Get("RateLimit-Reset"))

	require.NoError(t, e.sim.InjectFault(platforms.Bluesky, sim.FaultPostThenError, 1))
	r = bskyPost(t, e, s, map[string]any{"text": "maybe"})
	require.Equal(t, http.StatusInternalServerError, r.status)
	pubs := e.sim.Publications(platforms.Bluesky)
	require.Len(t, pubs, 1)
	require.Equal(t, "maybe", pubs[0].Text)
	require.Equal(t, s.DID, pubs[0].Account)

	r = e.do(t, http.MethodGet, "/xrpc/com.atproto.identity.resolveHandle?handle=bob.bsky.social", "", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	bob, _ := bskyLogin(t, e, "bob.bsky.social", "abcd-efgh-ijkl-mnop")
	require.Equal(t, bob.DID, r.json(t)["did"], "resolveHandle agrees with createSession")
}
