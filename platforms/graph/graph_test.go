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
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
)

func TestClassify(t *testing.T) {
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
		if e == nil || e.Kind != c.want {
			t.Fatalf("%s: got %v, want %s", c.name, e, c.want)
		}
		if c.reset != 0 && !e.ResetAt.Equal(now.Add(c.reset)) {
			t.Fatalf("%s: reset %s", c.name, e.ResetAt)
		}
		if e.Message == "" {
			t.Fatalf("%s: no message", c.name)
		}
	}
	if e := Classify(platforms.Facebook, 200, nil, []byte(`{"id":"1"}`), true, now); e != nil {
		t.Fatalf("success classified as %v", e)
	}
	e := Classify(platforms.Instagram, 400, nil, []byte(`{"error_type":"OAuthException","code":400,"error_message":"Invalid authorization code"}`), false, now)
	if e.Message != "Invalid authorization code" {
		t.Fatalf("message = %q", e.Message)
	}
}

func TestParseUsage(t *testing.T) {
	now := time.Now()
	h := http.Header{}
	h.Set("X-App-Usage", `{"call_count":28,"total_time":25,"total_cputime":25}`)
	h.Set("X-Business-Use-Case-Usage", `{"1":[{"type":"instagram","call_count":41,"total_cputime":2,"total_time":3,"estimated_time_to_regain_access":0}]}`)
	info, reset := ParseUsage(h, now)
	if !info.Known || info.Limit != 100 || info.Remaining != 59 || !reset.IsZero() {
		t.Fatalf("info = %+v reset %s", info, reset)
	}
	if info, _ := ParseUsage(http.Header{}, now); info.Known {
		t.Fatalf("no headers gave %+v", info)
	}
}

func TestIDAndTime(t *testing.T) {
	var v struct{ A, B, C ID }
	if err := json.Unmarshal([]byte(`{"A":17841400000000001,"B":"abc","C":null}`), &v); err != nil || v.A != "17841400000000001" || v.B != "abc" || v.C != "" {
		t.Fatalf("%+v %v", v, err)
	}
	ts, err := ParseTime("2026-02-03T04:05:06+0000")
	if err != nil || !ts.Equal(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)) {
		t.Fatalf("%s %v", ts, err)
	}
}

func TestRedact(t *testing.T) {
	got := redact(`Get "https://graph.facebook.com/access_token?access_token=SECRET&client_secret=S2&x=1": EOF`)
	if strings.Contains(got, "SECRET") || strings.Contains(got, "S2") || !strings.Contains(got, "x=1") {
		t.Fatalf("redacted = %s", got)
	}
}

func TestMultipart(t *testing.T) {
	file := bytes.Repeat([]byte("0123456789"), 1000)
	body, ctype, length, err := Multipart(url.Values{"message": {"hi"}, "published": {"false"}}, "source", "a.jpg", "image/jpeg", bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(body)
	if int64(len(all)) != length {
		t.Fatalf("length %d, body %d", length, len(all))
	}
	_, params, _ := mime.ParseMediaType(ctype)
	r := multipart.NewReader(bytes.NewReader(all), params["boundary"])
	form, err := r.ReadForm(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	f, err := form.File["source"][0].Open()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	if form.Value["message"][0] != "hi" || !bytes.Equal(got, file) || form.File["source"][0].Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("form = %+v", form.Value)
	}
}

func TestDoClassifiesTransportFailures(t *testing.T) {
	c := &Client{Platform: platforms.Threads, HTTP: &http.Client{Timeout: 200 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Do(ctx, Call{Method: http.MethodPost, URL: "http://127.0.0.1:1/x", Create: true}, nil)
	if platforms.KindOf(err) != platforms.Transient {
		t.Fatalf("cancelled: %v", err)
	}
	// A server that reads the request and never answers: Unknown for the creating call only.
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		<-block
	}))
	defer srv.Close()
	defer close(block)
	_, err = c.Do(context.Background(), Call{Method: http.MethodPost, URL: srv.URL, Params: url.Values{"a": {"b"}, "access_token": {"SECRET"}}, Create: true}, nil)
	if platforms.KindOf(err) != platforms.Unknown || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("create: %v", err)
	}
	_, err = c.Do(context.Background(), Call{Method: http.MethodGet, URL: srv.URL, Params: url.Values{"access_token": {"SECRET"}}}, nil)
	if platforms.KindOf(err) != platforms.Transient || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("read: %v", err)
	}
}

func TestQuotaCheck(t *testing.T) {
	var q Quota
	_ = json.Unmarshal([]byte(`{"data":[{"quota_usage":50,"config":{"quota_total":50,"quota_duration":86400}}]}`), &q)
	info, err := q.Check(platforms.Instagram, Response{Header: http.Header{}})
	if platforms.KindOf(err) != platforms.RateLimited || info.Remaining != 0 || info.Limit != 50 {
		t.Fatalf("info %+v err %v", info, err)
	}
}

func TestReconnectError(t *testing.T) {
	err := ReconnectError(&platforms.Error{Kind: platforms.AuthExpired, Message: "expired"})
	if platforms.KindOf(err) != platforms.Permanent || !strings.Contains(err.Error(), "reconnect") {
		t.Fatalf("%v", err)
	}
	if platforms.KindOf(ReconnectError(&platforms.Error{Kind: platforms.Transient})) != platforms.Transient {
		t.Fatal("transient changed")
	}
}
