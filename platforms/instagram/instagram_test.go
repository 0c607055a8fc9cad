package instagram_test

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
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/sim"
)

var (
	jpeg  = append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, bytes.Repeat([]byte("jpegdata"), 64)...)
	jpeg2 = append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, bytes.Repeat([]byte("otherjpg"), 64)...)
	mp4   = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte("videodata"), 512)...)
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type env struct {
	srv   *sim.Server
	a     *instagram.Adapter
	cfg   platforms.Config
	creds platforms.Credentials
	files *httptest.Server
}

// media is served by a local "CDN" that the simulator fetches from.
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
		case "/b.jpg":
			_, _ = w.Write(jpeg2)
		case "/v.mp4":
			_, _ = w.Write(mp4)
		case "/named.jpg": // a PNG, whatever its name and Content-Type say
			w.Header().Set("Content-Type", "image/jpeg")
			_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR not a jpeg"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(files.Close)
	cfg := srv.AdapterConfig(platforms.Instagram)
	cfg.HTTPClient = &http.Client{Timeout: 3 * time.Second}
	creds, err := srv.NewAccount(platforms.Instagram, "acme")
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, a: instagram.New(cfg), cfg: cfg, creds: creds, files: files}
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

func TestImagePost(t *testing.T) {
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "hello #insta", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Publication.ID == "" || !strings.HasPrefix(res.Publication.URL, "https://www.instagram.com/p/") {
		t.Fatalf("publication = %+v", res.Publication)
	}
	if !res.Rate.Known || res.Rate.Limit != 100 || res.Rate.Remaining != 99 {
		t.Fatalf("rate = %+v", res.Rate)
	}
	pubs := e.srv.Publications(platforms.Instagram)
	if len(pubs) != 1 || pubs[0].ID != res.Publication.ID || pubs[0].Text != "hello #insta" || len(pubs[0].MediaSHA256) != 1 || pubs[0].MediaSHA256[0] != sum(jpeg) {
		t.Fatalf("publications = %+v", pubs)
	}
}

func TestReelAndCarousel(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	if _, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "a reel", Media: []platforms.Media{e.media("video/mp4", "v.mp4")}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "a carousel", Media: []platforms.Media{e.media("image/jpeg", "b.jpg"), e.media("video/mp4", "v.mp4"), e.media("image/jpeg", "a.jpg")}})
	if err != nil {
		t.Fatal(err)
	}
	pubs := e.srv.Publications(platforms.Instagram)
	if len(pubs) != 2 || pubs[0].MediaSHA256[0] != sum(mp4) {
		t.Fatalf("publications = %+v", pubs)
	}
	want := []string{sum(jpeg2), sum(mp4), sum(jpeg)}
	if pubs[1].ID != res.Publication.ID || strings.Join(pubs[1].MediaSHA256, ",") != strings.Join(want, ",") {
		t.Fatalf("carousel = %+v", pubs[1])
	}
}

func TestUnreachableMedia(t *testing.T) {
	e := setup(t, sim.Options{})
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "missing.jpg")}})
	if pe := kind(t, err, platforms.Permanent); !strings.Contains(pe.Message, "HTTP 404") {
		t.Fatalf("message = %s", pe.Message)
	}
	_, err = e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{{ContentType: "image/jpeg"}}})
	kind(t, err, platforms.Permanent)
	if n := len(e.srv.Publications(platforms.Instagram)); n != 0 {
		t.Fatalf("%d publications", n)
	}
}

func TestValidate(t *testing.T) {
	a := instagram.New(platforms.Config{})
	img := platforms.Media{ContentType: "image/jpeg", URL: "https://cdn.example/a.jpg"}
	many := make([]platforms.Media, 11)
	for i := range many {
		many[i] = img
	}
	bad := []platforms.Post{
		{Text: "text only"},
		{Text: "x", Media: []platforms.Media{{ContentType: "image/png"}}},
		{Text: "x", Media: many},
		{Text: strings.Repeat("a", instagram.MaxCaptionRunes+1), Media: many[:1]},
		{Text: strings.Repeat("#tag ", instagram.MaxHashtags+1), Media: many[:1]},
		{Text: strings.Repeat("@someone ", instagram.MaxMentions+1), Media: many[:1]},
	}
	for i, p := range bad {
		kind(t, a.Validate(p), platforms.Invalid)
		if _, err := a.Publish(context.Background(), platforms.Credentials{}, p); platforms.KindOf(err) != platforms.Invalid {
			t.Fatalf("post %d: Publish error %v", i, err)
		}
	}
	good := []platforms.Post{
		{Media: many[:1]},
		{Text: strings.Repeat("é", instagram.MaxCaptionRunes), Media: many[:10]},
		{Text: strings.Repeat("#tag ", instagram.MaxHashtags) + "email@example.com a#b", Media: many[:1]},
	}
	for i, p := range good {
		if err := a.Validate(p); err != nil {
			t.Fatalf("good post %d: %v", i, err)
		}
	}
}

func TestSimRefusesLongCaption(t *testing.T) {
	e := setup(t, sim.Options{})
	form := url.Values{"image_url": {e.files.URL + "/a.jpg"}, "caption": {strings.Repeat("a", instagram.MaxCaptionRunes+1)}}
	req, _ := http.NewRequest(http.MethodPost, e.cfg.BaseURL+"/v25.0/"+e.creds.UserID+"/media", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+e.creds.AccessToken)
	resp, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"error_subcode":2207010`) {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

func TestExpiredTokenRefreshAndRetry(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	post := platforms.Post{Text: "after refresh", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}}
	_ = e.srv.InjectFault(platforms.Instagram, sim.FaultExpireTokens, 1)
	_, err := e.a.Publish(ctx, e.creds, post)
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
	if _, err := e.a.Publish(ctx, creds, post); err != nil {
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
	clk.Add(61 * 24 * time.Hour)
	_, _, err = e.a.Lookup(context.Background(), fresh, platforms.Post{Text: "x"}, clk.Now())
	kind(t, err, platforms.AuthExpired)
}

func TestRateLimitFault(t *testing.T) {
	e := setup(t, sim.Options{})
	_ = e.srv.InjectFault(platforms.Instagram, sim.FaultRateLimit, 1)
	before := time.Now()
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	pe := kind(t, err, platforms.RateLimited)
	if pe.Code != "80002" || pe.ResetAt.Before(before.Add(30*time.Second)) || pe.ResetAt.After(before.Add(3*time.Minute)) {
		t.Fatalf("error = %+v", pe)
	}
}

func TestPublishQuota(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	e.srv.SetLimit(platforms.Instagram, "publish", sim.Limit{Count: 1, Window: 24 * time.Hour})
	post := platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}}
	res, err := e.a.Publish(ctx, e.creds, post)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rate.Limit != 1 || res.Rate.Remaining != 0 {
		t.Fatalf("rate = %+v", res.Rate)
	}
	_, err = e.a.Publish(ctx, e.creds, post)
	pe := kind(t, err, platforms.RateLimited)
	if pe.ResetAt.Before(time.Now().Add(50 * time.Minute)) {
		t.Fatalf("reset = %s", pe.ResetAt)
	}
	if n := len(e.srv.Publications(platforms.Instagram)); n != 1 {
		t.Fatalf("%d publications", n)
	}
}

// TestQuotaAtPublish exhausts the quota between the check and media_publish: the network's own
// code 9 / 2207042 answer.
func TestQuotaAtPublish(t *testing.T) {
	e := setup(t, sim.Options{})
	e.srv.SetLimit(platforms.Instagram, "publish", sim.Limit{Count: 1, Window: 24 * time.Hour})
	var otherErr error
	hc := &http.Client{Timeout: 3 * time.Second, Transport: hook{before: func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/media_publish") {
			// Another publisher takes the last slot first.
			_, otherErr = e.a.Publish(r.Context(), e.creds, platforms.Post{Text: "other", Media: []platforms.Media{e.media("image/jpeg", "b.jpg")}})
		}
	}}}
	cfg := e.cfg
	cfg.HTTPClient = hc
	_, err := instagram.New(cfg).Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	pe := kind(t, err, platforms.RateLimited)
	if pe.Code != "9" || !strings.Contains(pe.Message, "2207042") || time.Until(pe.ResetAt) < 23*time.Hour {
		t.Fatalf("error = %+v", pe)
	}
}

// hook is a transport that runs before (and may fail after) each request.
type hook struct {
	before    func(r *http.Request)
	dropAfter func(r *http.Request) bool
}

func (h hook) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.before != nil {
		h.before(r)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && h.dropAfter != nil && h.dropAfter(r) {
		_ = resp.Body.Close()
		return nil, errors.New("connection reset by peer")
	}
	return resp, err
}

func TestError5xxAndTimeout(t *testing.T) {
	e := setup(t, sim.Options{TimeoutHold: 100 * time.Millisecond})
	ctx := context.Background()
	post := platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}}
	// The timeout comes first, on a fresh connection: Go's transport replays an idempotent GET
	// that fails on a reused keep-alive connection.
	_ = e.srv.InjectFault(platforms.Instagram, sim.FaultTimeout, 1)
	_, err := e.a.Publish(ctx, e.creds, post)
	kind(t, err, platforms.Transient)
	_ = e.srv.InjectFault(platforms.Instagram, sim.FaultError5xx, 1)
	_, err = e.a.Publish(ctx, e.creds, post)
	kind(t, err, platforms.Transient)
	if n := len(e.srv.Publications(platforms.Instagram)); n != 0 {
		t.Fatalf("%d publications", n)
	}
}

func TestPostThenErrorAndLookup(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	_ = e.srv.InjectFault(platforms.Instagram, sim.FaultPostThenError, 1)
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "did it post?", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	kind(t, err, platforms.Unknown)
	pub, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "did it post?"}, since)
	if err != nil || !found {
		t.Fatalf("lookup: found=%v err=%v", found, err)
	}
	pubs := e.srv.Publications(platforms.Instagram)
	if len(pubs) != 1 || pubs[0].ID != pub.ID || pub.URL == "" {
		t.Fatalf("records %+v, lookup %+v", pubs, pub)
	}
	if _, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "other"}, since); err != nil || found {
		t.Fatalf("found=%v err=%v", found, err)
	}
}

func TestConnectionLostAfterPublishIsUnknown(t *testing.T) {
	e := setup(t, sim.Options{})
	cfg := e.cfg
	cfg.HTTPClient = &http.Client{Timeout: 3 * time.Second, Transport: hook{dropAfter: func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/media_publish")
	}}}
	since := time.Now().Add(-time.Second)
	_, err := instagram.New(cfg).Publish(context.Background(), e.creds, platforms.Post{Text: "lost answer", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	kind(t, err, platforms.Unknown)
	if _, found, err := e.a.Lookup(context.Background(), e.creds, platforms.Post{Text: "lost answer"}, since); err != nil || !found {
		t.Fatalf("found=%v err=%v", found, err)
	}
}

// fakeGraph answers the publishing sequence normally and media_publish with body.
func fakeGraph(status int, publishBody string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/content_publishing_limit"):
			_, _ = io.WriteString(w, `{"data":[{"quota_usage":0,"config":{"quota_total":100,"quota_duration":86400}}]}`)
		case strings.HasSuffix(r.URL.Path, "/media_publish"):
			w.WriteHeader(status)
			_, _ = io.WriteString(w, publishBody)
		case strings.HasSuffix(r.URL.Path, "/media"):
			_, _ = io.WriteString(w, `{"id":"17890000000000001"}`)
		default:
			_, _ = io.WriteString(w, `{"id":"17890000000000001","status_code":"FINISHED"}`)
		}
	}))
}

func TestGarbageAnswers(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   platforms.Kind
	}{
		{200, `<html>oops</html>`, platforms.Unknown},
		{200, `{}`, platforms.Unknown},
		{200, `{"error":{"message":"(#10) Application does not have permission for this action","type":"OAuthException","code":10}}`, platforms.Permanent},
		{500, `{"error":{"message":"An unknown error occurred","code":1,"is_transient":true}}`, platforms.Unknown},
		{400, `{"error":{"message":"Invalid OAuth access token","type":"OAuthException","code":190}}`, platforms.AuthExpired},
		{400, `{"error":{"message":"Media ID is not available","code":9007,"error_subcode":2207027}}`, platforms.Transient},
	}
	img := platforms.Media{ContentType: "image/jpeg", URL: "https://cdn.example/a.jpg"}
	for _, c := range cases {
		srv := fakeGraph(c.status, c.body)
		a := instagram.New(platforms.Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
		res, err := a.Publish(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Text: "x", Media: []platforms.Media{img}})
		if err == nil {
			t.Fatalf("%s: success %+v", c.body, res)
		}
		kind(t, err, c.want)
		srv.Close()
	}
	// A garbage answer to a read is Transient.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>") }))
	defer srv.Close()
	_, err := instagram.New(platforms.Config{BaseURL: srv.URL}).Publish(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Media: []platforms.Media{img}})
	kind(t, err, platforms.Transient)
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
	if !strings.Contains(u, "/oauth/authorize?") || !strings.Contains(u, "instagram_business_content_publish") {
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
	if creds.UserID != e.creds.UserID || creds.Handle != "acme" || creds.RefreshToken != "" || time.Until(creds.ExpiresAt) < 59*24*time.Hour {
		t.Fatalf("credentials = %+v", creds)
	}
	if _, err := e.a.Publish(ctx, creds, platforms.Post{Text: "connected", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Revoke(ctx, creds); err != nil {
		t.Fatal(err)
	}
	if r := e.srv.Revocations(); len(r) != 0 {
		t.Fatalf("revocations = %+v", r)
	}
	// Denied consent and a reused code.
	redirect := "https://herald.example/callback"
	e.srv.Deny(platforms.Instagram)
	if loc := authorize(t, e, "acme", redirect); loc.Query().Get("error") != "access_denied" {
		t.Fatalf("denied redirect = %s", loc)
	}
	code := authorize(t, e, "acme", redirect).Query().Get("code")
	if _, err := e.a.Exchange(ctx, code, redirect, ""); err != nil {
		t.Fatal(err)
	}
	_, err := e.a.Exchange(ctx, code, redirect, "")
	if pe := kind(t, err, platforms.Permanent); !strings.Contains(pe.Message, "used") {
		t.Fatalf("message = %s", pe.Message)
	}
}

// Instagram judges a photo by the bytes it fetches: a PNG served as a JPEG fails its container.
// A PNG whose media can be converted passes Validate; one that cannot is refused before any call.
func TestSimRefusesPNGBytes(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "named.jpg")}})
	pe := kind(t, err, platforms.Permanent)
	if !strings.Contains(pe.Error(), "Instagram takes JPEG photos; the media URI returned image/png") {
		t.Fatalf("error %v", pe)
	}
	if n := len(e.srv.Publications(platforms.Instagram)); n != 0 {
		t.Fatalf("%d publications", n)
	}
	png := e.media("image/png", "a.jpg")
	if err := e.a.Validate(platforms.Post{Media: []platforms.Media{png}}); err == nil {
		t.Fatal("a PNG that cannot be converted passed Validate")
	}
	png.Conform = func(context.Context, platforms.ImageRule) (platforms.Media, error) {
		return e.media("image/jpeg", "a.jpg"), nil
	}
	if err := e.a.Validate(platforms.Post{Media: []platforms.Media{png}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "converted", Media: []platforms.Media{png}}); err != nil {
		t.Fatal(err)
	}
	pubs := e.srv.Publications(platforms.Instagram)
	if len(pubs) != 1 || pubs[0].MediaSHA256[0] != sum(jpeg) || pubs[0].MediaTypes[0] != "image/jpeg" || pubs[0].MediaSizes[0] != int64(len(jpeg)) {
		t.Fatalf("publications %+v", pubs)
	}
}
