package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	buc := http.Header{}
	buc.Set("X-Business-Use-Case-Usage", `{"123":[{"type":"pages","call_count":100,"total_cputime":20,"total_time":30,"estimated_time_to_regain_access":5}]}`)
	cases := []struct {
		name   string
		status int
		h      http.Header
		body   string
		create bool
		want   platforms.Kind
		reset  time.Duration
	}{
		{"expired", 400, nil, `{"error":{"message":"Session has expired","type":"OAuthException","code":190,"error_subcode":463}}`, false, platforms.AuthExpired, 0},
		{"throttle with regain", 400, buc, `{"error":{"message":"(#80001) too many calls","code":80001,"is_transient":true}}`, true, platforms.RateLimited, 5 * time.Minute},
		{"throttle default reset", 403, nil, `{"error":{"message":"(#4) Application request limit reached","code":4}}`, false, platforms.RateLimited, time.Hour},
		{"publish quota", 400, nil, `{"error":{"message":"limit","code":9,"error_subcode":2207042}}`, true, platforms.RateLimited, time.Hour},
		{"plain 429", 429, nil, `slow down`, false, platforms.RateLimited, time.Hour},
		{"duplicate", 400, nil, `{"error":{"message":"(#506) Duplicate status message","code":506}}`, true, platforms.Permanent, 0},
		{"transient flag", 400, nil, `{"error":{"message":"retry","code":1200,"is_transient":true}}`, true, platforms.Transient, 0},
		{"code 2 on a 5xx create", 500, nil, `{"error":{"message":"unexpected","code":2,"is_transient":true}}`, true, platforms.Unknown, 0},
		{"5xx read", 503, nil, `{"error":"service unavailable"}`, false, platforms.Transient, 0},
		{"error in a 200", 200, nil, `{"error":{"message":"bad","code":100}}`, false, platforms.Permanent, 0},
		{"instagram token envelope", 400, nil, `{"error_type":"OAuthException","code":400,"error_message":"Invalid authorization code"}`, false, platforms.Permanent, 0},
		{"401 without envelope", 401, nil, `unauthorized`, false, platforms.AuthExpired, 0},
		{"permission", 403, nil, `{"error":{"message":"(#200) permission","code":200}}`, true, platforms.Permanent, 0},
	}
	for _, c := range cases {
		e := Classify(platforms.Facebook, c.status, c.h, []byte(c.body), c.create, now)
		require.NotNil(t, e, c.name)
		require.Equal(t, c.want, e.Kind, c.name)
		if c.reset != 0 {
			require.Equal(t, now.Add(c.reset), e.ResetAt, c.name)
		}
		require.NotEmpty(t, e.Message, c.name)
	}
	require.Nil(t, Classify(platforms.Facebook, 200, nil, []byte(`{"id":"1"}`), true, now), "a success")
	e := Classify(platforms.Instagram, 400, nil, []byte(`{"error_type":"OAuthException","code":400,"error_message":"Invalid authorization code"}`), false, now)
	require.Equal(t, "Invalid authorization code", e.Message)
}

func TestParseUsage(t *testing.T) {
	t.Parallel()
	now := time.Now()
	h := http.Header{}
	h.Set("X-App-Usage", `{"call_count":28,"total_time":25,"total_cputime":25}`)
	h.Set("X-Business-Use-Case-Usage", `{"1":[{"type":"instagram","call_count":41,"total_cputime":2,"total_time":3,"estimated_time_to_regain_access":0}]}`)
	info, reset := ParseUsage(h, now)
	require.True(t, info.Known)
	require.Equal(t, 100, info.Limit)
	require.Equal(t, 59, info.Remaining)
	require.True(t, reset.IsZero())
	info, _ = ParseUsage(http.Header{}, now)
	require.False(t, info.Known, "no headers")
}

func TestIDAndTime(t *testing.T) {
	t.Parallel()
	var v struct{ A, B, C ID }
	require.NoError(t, json.Unmarshal([]byte(`{"A":17841400000000001,"B":"abc","C":null}`), &v))
	require.Equal(t, ID("17841400000000001"), v.A)
	require.Equal(t, ID("abc"), v.B)
	require.Empty(t, v.C)
	ts, err := ParseTime("2026-02-03T04:05:06+0000")
	require.NoError(t, err)
	require.True(t, ts.Equal(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)), "%s", ts)
}

func TestRedact(t *testing.T) {
	t.Parallel()
	got := redact(`Get "https://graph.facebook.com/access_token?access_token=SECRET&client_secret=S2&x=1": EOF`)
	require.NotContains(t, got, "SECRET")
	require.NotContains(t, got, "S2")
	require.Contains(t, got, "x=1")
}

func TestMultipart(t *testing.T) {
	t.Parallel()
	file := bytes.Repeat([]byte("0123456789"), 1000)
	body, ctype, length, err := Multipart(url.Values{"message": {"hi"}, "published": {"false"}}, "source", "a.jpg", "image/jpeg", bytes.NewReader(file), int64(len(file)))
	require.NoError(t, err)
	all, err := io.ReadAll(body)
	require.NoError(t, err)
	require.Len(t, all, int(length))
	_, params, err := mime.ParseMediaType(ctype)
	require.NoError(t, err)
	r := multipart.NewReader(bytes.NewReader(all), params["boundary"])
	form, err := r.ReadForm(1 << 20)
	require.NoError(t, err)
	f, err := form.File["source"][0].Open()
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, "hi", form.Value["message"][0])
	require.Equal(t, file, got)
	require.Equal(t, "image/jpeg", form.File["source"][0].Header.Get("Content-Type"))
}

func TestDoClassifiesTransportFailures(t *testing.T) {
	t.Parallel()
	c := &Client{Platform: platforms.Threads, HTTP: &http.Client{Timeout: 200 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Do(ctx, Call{Method: http.MethodPost, URL: "http://127.0.0.1:1/x", Create: true}, nil)
	require.Equal(t, platforms.Transient, platforms.KindOf(err), "cancelled: %v", err)
	// A server that reads the request and never answers: Unknown for the creating call only.
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		<-block
	}))
	defer srv.Close()
	defer close(block)
	_, err = c.Do(context.Background(), Call{Method: http.MethodPost, URL: srv.URL, Params: url.Values{"a": {"b"}, "access_token": {"SECRET"}}, Create: true}, nil)
	require.Equal(t, platforms.Unknown, platforms.KindOf(err), "create: %v", err)
	require.NotContains(t, err.Error(), "SECRET")
	_, err = c.Do(context.Background(), Call{Method: http.MethodGet, URL: srv.URL, Params: url.Values{"access_token": {"SECRET"}}}, nil)
	require.Equal(t, platforms.Transient, platforms.KindOf(err), "read: %v", err)
	require.NotContains(t, err.Error(), "SECRET")
}

func TestQuotaCheck(t *testing.T) {
	t.Parallel()
	var q Quota
	require.NoError(t, json.Unmarshal([]byte(`{"data":[{"quota_usage":50,"config":{"quota_total":50,"quota_duration":86400}}]}`), &q))
	info, err := q.Check(platforms.Instagram, Response{Header: http.Header{}})
	require.Equal(t, platforms.RateLimited, platforms.KindOf(err), "%v", err)
	require.Equal(t, 0, info.Remaining)
	require.Equal(t, 50, info.Limit)
}

func TestReconnectError(t *testing.T) {
	t.Parallel()
	err := ReconnectError(&platforms.Error{Kind: platforms.AuthExpired, Message: "expired"})
	require.Equal(t, platforms.Permanent, platforms.KindOf(err))
	require.Contains(t, err.Error(), "reconnect")
	require.Equal(t, platforms.Transient, platforms.KindOf(ReconnectError(&platforms.Error{Kind: platforms.Transient})), "transient changed")
}

// FindComment says "not found" only of a listing read to its end or, newest first, past the
// attempt's time; three pages that end before either are ErrLookupIncomplete, never "not found".
func TestFindCommentSaysNotFoundOnlyOfAListingItReadPastTheAttempt(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	type comment struct{ text, at string }
	// serve answers pages of the given comments, one per page, the next page linked while one is left.
	serve := func(comments []comment) string {
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i := 0
			if p := r.URL.Query().Get("page"); p != "" {
				_ = json.Unmarshal([]byte(p), &i)
			}
			out := map[string]any{"data": []map[string]any{}}
			if i < len(comments) {
				out["data"] = []map[string]any{{"id": "c" + comments[i].text, "message": comments[i].text, "created_time": comments[i].at, "from": map[string]string{"id": "me"}}}
			}
			if i+1 < len(comments) {
				out["paging"] = map[string]string{"next": srv.URL + "/comments?page=" + string(rune('0'+i+1))}
			}
			_ = json.NewEncoder(w).Encode(out)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/comments"
	}
	c := &Client{Platform: platforms.Facebook, HTTP: http.DefaultClient}
	after, before := "2026-11-01T12:00:05+0000", "2026-11-01T11:59:00+0000"
	find := func(url string, f CommentFields) (string, bool, error) {
		return c.FindComment(context.Background(), url, "token", f, "me", "", "the comment", since)
	}
	newest := CommentFields{Text: "message", Time: "created_time", Order: "reverse_chronological"}
	unordered := CommentFields{Text: "message", Time: "created_time"}

	id, found, err := find(serve([]comment{{"other", after}, {"the comment", after}}), unordered)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "cthe comment", id)

	_, found, err = find(serve([]comment{{"other", after}, {"another", after}}), unordered)
	require.NoError(t, err, "a listing read to its end")
	require.False(t, found)

	_, found, err = find(serve([]comment{{"other", after}, {"older", before}, {"more", before}, {"still more", before}}), newest)
	require.NoError(t, err, "newest first, read past the attempt's time")
	require.False(t, found)

	_, found, err = find(serve([]comment{{"a", after}, {"b", after}, {"c", after}, {"the comment", after}}), unordered)
	require.ErrorIs(t, err, platforms.ErrLookupIncomplete, "three pages that reach neither the end nor the attempt's time")
	require.False(t, found)
	require.Equal(t, platforms.Permanent, platforms.KindOf(err))
	_, _, err = find(serve([]comment{{"a", after}, {"b", after}, {"c", after}, {"d", after}}), newest)
	require.ErrorIs(t, err, platforms.ErrLookupIncomplete)
}
