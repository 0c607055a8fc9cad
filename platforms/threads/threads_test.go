package threads_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
	"github.com/heraldhq/herald/platforms/threads"
)

var (
	jpeg = append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, bytes.Repeat([]byte("jpegdata"), 64)...)
	png  = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("pngdata"), 64)...)
	mp4  = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte("videodata"), 512)...)
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type env struct {
	srv   *sim.Server
	a     *threads.Adapter
	cfg   platforms.Config
	creds platforms.Credentials
	files *httptest.Server
}

func (e *env) media(ctype, name string) platforms.Media {
	return platforms.Media{ContentType: ctype, URL: e.files.URL + "/" + name}
}

func setup(t *testing.T, opts sim.Options) *env {
	t.Helper()
	if opts.ProcessingDelay == 0 {
		opts.ProcessingDelay = 5 * time.Millisecond
	}
	srv, err := sim.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.jpg":
			_, _ = w.Write(jpeg)
		case "/b.png":
			_, _ = w.Write(png)
		case "/v.mp4":
			_, _ = w.Write(mp4)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(files.Close)
	cfg := srv.AdapterConfig(platforms.Threads)
	cfg.HTTPClient = &http.Client{Timeout: 3 * time.Second}
	creds, err := srv.NewAccount(platforms.Threads, "acme")
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, a: threads.New(cfg), cfg: cfg, creds: creds, files: files}
}

func kind(t *testing.T, err error, want platforms.Kind) *platforms.Error {
	t.Helper()
	var e *platforms.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *platforms.Error", err)
	}
	if e.Kind != want {
		t.Fatalf("kind = %s, want %s (%v)", e.Kind, want, err)
	}
	return e
}

func TestTextPost(t *testing.T) {
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "hello threads"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Publication.ID == "" || !strings.HasPrefix(res.Publication.URL, "https://www.threads.com/@acme/post/") {
		t.Fatalf("publication = %+v", res.Publication)
	}
	if !res.Rate.Known || res.Rate.Limit != 250 || res.Rate.Remaining != 249 {
		t.Fatalf("rate = %+v", res.Rate)
	}
	pubs := e.srv.Publications(platforms.Threads)
	if len(pubs) != 1 || pubs[0].ID != res.Publication.ID || pubs[0].Text != "hello threads" || len(pubs[0].MediaSHA256) != 0 {
		t.Fatalf("publications = %+v", pubs)
	}
}

func TestMediaPosts(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	posts := []struct {
		post platforms.Post
		want []string
	}{
		{platforms.Post{Text: "image", Media: []platforms.Media{e.media("image/png", "b.png")}}, []string{sum(png)}},
		{platforms.Post{Media: []platforms.Media{e.media("video/mp4", "v.mp4")}}, []string{sum(mp4)}},
		{platforms.Post{Text: "carousel", Media: []platforms.Media{e.media("image/jpeg", "a.jpg"), e.media("video/mp4", "v.mp4"), e.media("image/png", "b.png")}}, []string{sum(jpeg), sum(mp4), sum(png)}},
	}
	for i, p := range posts {
		res, err := e.a.Publish(ctx, e.creds, p.post)
		if err != nil {
			t.Fatal(err)
		}
		rec := e.srv.Publications(platforms.Threads)[i]
		if rec.ID != res.Publication.ID || rec.Text != p.post.Text || strings.Join(rec.MediaSHA256, ",") != strings.Join(p.want, ",") {
			t.Fatalf("post %d: record %+v", i, rec)
		}
	}
}

func TestUnreachableMedia(t *testing.T) {
	e := setup(t, sim.Options{})
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("video/mp4", "gone.mp4")}})
	if pe := kind(t, err, platforms.Permanent); !strings.Contains(pe.Message, "HTTP 404") {
		t.Fatalf("message = %s", pe.Message)
	}
	_, err = e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{{ContentType: "image/png"}}})
	kind(t, err, platforms.Permanent)
	if n := len(e.srv.Publications(platforms.Threads)); n != 0 {
		t.Fatalf("%d publications", n)
	}
}

func TestValidate(t *testing.T) {
	a := threads.New(platforms.Config{})
	img := platforms.Media{ContentType: "image/jpeg", URL: "https://cdn.example/a.jpg"}
	many := make([]platforms.Media, 21)
	for i := range many {
		many[i] = img
	}
	if n := threads.Length("😀é"); n != 5 {
		t.Fatalf("Length = %d", n)
	}
	bad := []platforms.Post{
		{},
		{Text: strings.Repeat("a", threads.MaxText+1)},
		{Text: strings.Repeat("😀", 126)},
		{Text: "https://a.example https://b.example www.c.example https://d.example https://e.example https://f.example"},
		{Text: "x", Media: many},
		{Text: "x", Media: []platforms.Media{{ContentType: "image/gif"}}},
	}
	for i, p := range bad {
		kind(t, a.Validate(p), platforms.Invalid)
		if _, err := a.Publish(context.Background(), platforms.Credentials{}, p); platforms.KindOf(err) != platforms.Invalid {
			t.Fatalf("post %d: Publish error %v", i, err)
		}
	}
	good := []platforms.Post{
		{Text: strings.Repeat("é", threads.MaxText)},
		{Text: strings.Repeat("😀", 125)},
		{Text: "https://a.example https://a.example www.c.example https://d.example https://e.example https://f.example"},
		{Media: many[:20]},
	}
	for i, p := range good {
		if err := a.Validate(p); err != nil {
			t.Fatalf("good post %d: %v", i, err)
		}
	}
}

func TestSimRefusesLongText(t *testing.T) {
	e := setup(t, sim.Options{})
	for _, text := range []string{strings.Repeat("a", threads.MaxText+1), strings.Repeat("😀", 126)} {
		form := url.Values{"media_type": {"TEXT"}, "text": {text}}
		req, _ := http.NewRequest(http.MethodPost, e.cfg.BaseURL+"/v1.0/"+e.creds.UserID+"/threads", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+e.creds.AccessToken)
		resp, err := testHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"code":100`) {
			t.Fatalf("status %d body %s", resp.StatusCode, body)
		}
	}
}

func TestExpiredTokenRefreshAndRetry(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	_ = e.srv.InjectFault(platforms.Threads, sim.FaultExpireTokens, 1)
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "after refresh"})
	if pe := kind(t, err, platforms.AuthExpired); pe.Code != "190" {
		t.Fatalf("code = %s", pe.Code)
	}
	creds, err := e.a.Refresh(ctx, e.creds)
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessToken == e.creds.AccessToken || creds.UserID != e.creds.UserID || time.Until(creds.ExpiresAt) < 59*24*time.Hour {
		t.Fatalf("refreshed = %+v", creds)
	}
	if _, err := e.a.Publish(ctx, creds, platforms.Post{Text: "after refresh"}); err != nil {
		t.Fatal(err)
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestRefreshNeedsADayOldToken(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	e := setup(t, sim.Options{Now: clk.Now})
	creds := connect(t, e, "acme")
	_, err := e.a.Refresh(context.Background(), creds)
	kind(t, err, platforms.Permanent)
	clk.Add(25 * time.Hour)
	fresh, err := e.a.Refresh(context.Background(), creds)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.a.Lookup(context.Background(), fresh, platforms.Post{Text: "x"}, clk.Now()); err != nil {
		t.Fatal(err)
	}
}

func TestRateLimitFaultAndQuota(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	_ = e.srv.InjectFault(platforms.Threads, sim.FaultRateLimit, 1)
	before := time.Now()
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "x"})
	pe := kind(t, err, platforms.RateLimited)
	if pe.Code != "4" || pe.ResetAt.Before(before.Add(30*time.Second)) || pe.ResetAt.After(before.Add(3*time.Minute)) {
		t.Fatalf("error = %+v", pe)
	}
	e.srv.SetLimit(platforms.Threads, "publish", sim.Limit{Count: 1, Window: 24 * time.Hour})
	if _, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "second"})
	pe = kind(t, err, platforms.RateLimited)
	if pe.ResetAt.Before(time.Now().Add(50 * time.Minute)) {
		t.Fatalf("reset = %s", pe.ResetAt)
	}
}

// hook is a transport that can fail after a request was answered.
type hook struct{ dropAfter func(r *http.Request) bool }

func (h hook) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && h.dropAfter(r) {
		_ = resp.Body.Close()
		return nil, errors.New("connection reset by peer")
	}
	return resp, err
}

func TestError5xxTimeoutAndLostAnswer(t *testing.T) {
	e := setup(t, sim.Options{TimeoutHold: 100 * time.Millisecond})
	ctx := context.Background()
	_ = e.srv.InjectFault(platforms.Threads, sim.FaultTimeout, 1)
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "x"})
	kind(t, err, platforms.Transient)
	_ = e.srv.InjectFault(platforms.Threads, sim.FaultError5xx, 1)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "x"})
	kind(t, err, platforms.Transient)
	if n := len(e.srv.Publications(platforms.Threads)); n != 0 {
		t.Fatalf("%d publications", n)
	}
	cfg := e.cfg
	cfg.HTTPClient = &http.Client{Timeout: 3 * time.Second, Transport: hook{dropAfter: func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/threads_publish")
	}}}
	since := time.Now().Add(-time.Second)
	_, err = threads.New(cfg).Publish(ctx, e.creds, platforms.Post{Text: "lost answer"})
	kind(t, err, platforms.Unknown)
	if _, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "lost answer"}, since); err != nil || !found {
		t.Fatalf("found=%v err=%v", found, err)
	}
}

func TestPostThenErrorAndLookup(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	_ = e.srv.InjectFault(platforms.Threads, sim.FaultPostThenError, 1)
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "did it post?", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	kind(t, err, platforms.Unknown)
	pub, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "did it post?"}, since)
	if err != nil || !found {
		t.Fatalf("lookup: found=%v err=%v", found, err)
	}
	pubs := e.srv.Publications(platforms.Threads)
	if len(pubs) != 1 || pubs[0].ID != pub.ID || pub.URL == "" {
		t.Fatalf("records %+v, lookup %+v", pubs, pub)
	}
	if _, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "did it post"}, since); err != nil || found {
		t.Fatalf("found=%v err=%v", found, err)
	}
}

func TestGarbageAnswers(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   platforms.Kind
	}{
		{200, `not json`, platforms.Unknown},
		{200, `{"id":null}`, platforms.Unknown},
		{200, `{"error":{"message":"Some error","type":"THApiException","code":100}}`, platforms.Permanent},
		{503, `upstream unavailable`, platforms.Unknown},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/threads_publishing_limit"):
				_, _ = io.WriteString(w, `{"data":[{"quota_usage":0,"config":{"quota_total":250,"quota_duration":86400}}]}`)
			case strings.HasSuffix(r.URL.Path, "/threads_publish"):
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			case strings.HasSuffix(r.URL.Path, "/threads"):
				_, _ = io.WriteString(w, `{"id":"1"}`)
			default:
				_, _ = io.WriteString(w, `{"id":"1","status":"FINISHED"}`)
			}
		}))
		a := threads.New(platforms.Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
		res, err := a.Publish(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Text: "x"})
		if err == nil {
			t.Fatalf("%s: success %+v", c.body, res)
		}
		kind(t, err, c.want)
		srv.Close()
	}
	// A container that fails processing is Permanent, with the network's message.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/threads_publishing_limit"):
			_, _ = io.WriteString(w, `{"data":[]}`)
		case strings.HasSuffix(r.URL.Path, "/threads"):
			_, _ = io.WriteString(w, `{"id":"1"}`)
		default:
			_, _ = io.WriteString(w, `{"id":"1","status":"ERROR","error_message":"FAILED_PROCESSING_IMAGE"}`)
		}
	}))
	defer srv.Close()
	_, err := threads.New(platforms.Config{BaseURL: srv.URL, PollInterval: time.Millisecond}).Publish(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Text: "x"})
	if pe := kind(t, err, platforms.Permanent); !strings.Contains(pe.Message, "FAILED_PROCESSING_IMAGE") {
		t.Fatalf("message = %s", pe.Message)
	}
}

func connect(t *testing.T, e *env, handle string) platforms.Credentials {
	t.Helper()
	redirect := "https://herald.example/callback"
	loc := authorize(t, e, handle, redirect)
	creds, err := e.a.Exchange(context.Background(), loc.Query().Get("code"), redirect, "")
	if err != nil {
		t.Fatal(err)
	}
	return creds
}

func authorize(t *testing.T, e *env, handle, redirect string) *url.URL {
	t.Helper()
	u := e.a.AuthorizeURL("st4te", redirect, "")
	if !strings.Contains(u, "/oauth/authorize?") || !strings.Contains(u, "threads_content_publish") {
		t.Fatalf("authorize url = %s", u)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(u + "&login_hint=" + url.QueryEscape(handle))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), redirect) || loc.Query().Get("state") != "st4te" {
		t.Fatalf("consent answered %d, location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc
}

func TestConnectPublishRevoke(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	creds := connect(t, e, "acme")
	if creds.UserID != e.creds.UserID || creds.Handle != "acme" || time.Until(creds.ExpiresAt) < 59*24*time.Hour {
		t.Fatalf("credentials = %+v", creds)
	}
	if _, err := e.a.Publish(ctx, creds, platforms.Post{Text: "connected"}); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Revoke(ctx, creds); err != nil {
		t.Fatal(err)
	}
	if r := e.srv.Revocations(); len(r) != 0 {
		t.Fatalf("revocations = %+v", r)
	}
	redirect := "https://herald.example/callback"
	e.srv.Deny(platforms.Threads)
	if loc := authorize(t, e, "acme", redirect); loc.Query().Get("error") != "access_denied" {
		t.Fatalf("denied redirect = %s", loc)
	}
	code := authorize(t, e, "acme", redirect).Query().Get("code")
	if _, err := e.a.Exchange(ctx, code, redirect, ""); err != nil {
		t.Fatal(err)
	}
	_, err := e.a.Exchange(ctx, code, redirect, "")
	kind(t, err, platforms.Permanent)
}
