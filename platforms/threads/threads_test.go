package threads_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
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

// cdn serves the test's media files for the test's duration.
func cdn(t *testing.T) *httptest.Server {
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
	return files
}

func simOptions(o *sim.Options) {
	if o.ProcessingDelay == 0 {
		o.ProcessingDelay = 5 * time.Millisecond
	}
}

// acme is the simulator's account acme.
func acme(t *testing.T, srv *sim.Server, _ platforms.Adapter) platforms.Credentials {
	t.Helper()
	creds, err := srv.NewAccount(platforms.Threads, "acme")
	require.NoError(t, err)
	return creds
}

func setup(t *testing.T, opts sim.Options) *env {
	t.Helper()
	simOptions(&opts)
	srv, cfg := platformstest.Start(t, platforms.Threads, opts)
	creds := acme(t, srv, nil)
	return &env{srv: srv, a: threads.New(cfg), cfg: cfg, creds: creds, files: cdn(t)}
}

// kind asserts that err is a Threads error of kind want and returns it.
func kind(t *testing.T, err error, want platforms.Kind) *platforms.Error {
	t.Helper()
	require.Equal(t, want, platformstest.KindOf(t, err, platforms.Threads), "%v", err)
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	return e
}

// fakeThreads answers the publishing sequence normally and threads_publish with publish.
func fakeThreads(publish platformstest.Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/threads_publishing_limit"):
			_, _ = io.WriteString(w, `{"data":[{"quota_usage":0,"config":{"quota_total":250,"quota_duration":86400}}]}`)
		case strings.HasSuffix(r.URL.Path, "/threads_publish"):
			w.WriteHeader(publish.Status)
			_, _ = io.WriteString(w, publish.Body)
		case strings.HasSuffix(r.URL.Path, "/threads"):
			_, _ = io.WriteString(w, `{"id":"1"}`)
		default:
			_, _ = io.WriteString(w, `{"id":"1","status":"FINISHED"}`)
		}
	})
}

func TestConformance(t *testing.T) {
	t.Parallel()
	img := platforms.Media{ContentType: "image/jpeg", URL: "https://cdn.example/a.jpg"}
	many := make([]platforms.Media, 21)
	for i := range many {
		many[i] = img
	}
	platformstest.Run(t, platformstest.Adapter{
		Platform: platforms.Threads,
		New:      func(cfg platforms.Config) platforms.Adapter { return threads.New(cfg) },
		Options:  simOptions,
		Account:  acme,
		FakeConfig: func(url string) platforms.Config {
			return platforms.Config{BaseURL: url, PollInterval: time.Millisecond}
		},
		FakeCreds: platforms.Credentials{UserID: "1", AccessToken: "t"},
		FakePost:  platforms.Post{Text: "x"},
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "the container creates nothing", Post: platformstest.Text("x"), Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 100 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "the container creates nothing", Post: platformstest.Text("x"), Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Serve: fakeThreads,
			Answers: []platformstest.Answer{
				{Status: 200, Body: `not json`, Want: platforms.Unknown},
				{Status: 200, Body: `{"id":null}`, Want: platforms.Unknown},
				{Status: 200, Body: `{"error":{"message":"Some error","type":"THApiException","code":100}}`, Want: platforms.Permanent},
				{Status: 503, Body: `upstream unavailable`, Want: platforms.Unknown},
			},
		},
		PostThenError: platformstest.Lookup{
			Post: func(t *testing.T) platforms.Post {
				return platforms.Post{Text: "did it post?", Media: []platforms.Media{{ContentType: "image/jpeg", URL: cdn(t).URL + "/a.jpg"}}}
			},
			Missing: platformstest.Text("did it post"),
		},
		Refresh: platformstest.Refresh{
			Post:     platformstest.Text("after refresh"),
			Code:     "190",
			Lifetime: 59 * 24 * time.Hour,
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "empty", Post: platforms.Post{}},
			{Name: "long text", Post: platforms.Post{Text: strings.Repeat("a", threads.MaxText+1)}},
			{Name: "126 emoji", Post: platforms.Post{Text: strings.Repeat("😀", 126)}},
			{Name: "six links", Post: platforms.Post{Text: "https://a.example https://b.example www.c.example https://d.example https://e.example https://f.example"}},
			{Name: "21 items", Post: platforms.Post{Text: "x", Media: many}},
			{Name: "gif", Post: platforms.Post{Text: "x", Media: []platforms.Media{{ContentType: "image/gif"}}}},
			{Name: "longest text", Post: platforms.Post{Text: strings.Repeat("é", threads.MaxText)}, OK: true},
			{Name: "125 emoji", Post: platforms.Post{Text: strings.Repeat("😀", 125)}, OK: true},
			{Name: "five distinct links", Post: platforms.Post{Text: "https://a.example https://a.example www.c.example https://d.example https://e.example https://f.example"}, OK: true},
			{Name: "20 items", Post: platforms.Post{Media: many[:20]}, OK: true},
		}},
		// Threads offers no token revocation (TestConnectPublishRevoke).
		Revoke: platformstest.Revoke{NoOp: true},
		RateLimit: platformstest.RateLimit{
			Post:      platformstest.Numbered("x"),
			Code:      "4",
			Reset:     platformstest.Within{Min: 30 * time.Second, Max: 3 * time.Minute},
			Window:    "publish",
			Limit:     sim.Limit{Count: 1, Window: 24 * time.Hour},
			Exhausted: platformstest.Within{Min: 50 * time.Minute},
		},
		// A container that fails processing is TestContainerProcessingFails, against a fake network.
		ProcessingFails: platformstest.ProcessingFails{NotApplicable: "the simulator's Threads does not fail processing on the marker"},
	})
}

func TestLength(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5, threads.Length("😀é"))
}

// A container that fails processing is Permanent, with the network's message.
func TestContainerProcessingFails(t *testing.T) {
	t.Parallel()
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
	t.Cleanup(srv.Close)
	_, err := threads.New(platforms.Config{BaseURL: srv.URL, PollInterval: time.Millisecond}).Publish(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Text: "x"})
	require.Contains(t, kind(t, err, platforms.Permanent).Message, "FAILED_PROCESSING_IMAGE")
}

func TestTextPost(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "hello threads"})
	require.NoError(t, err)
	require.NotEmpty(t, res.Publication.ID)
	require.True(t, strings.HasPrefix(res.Publication.URL, "https://www.threads.com/@acme/post/"), "publication = %+v", res.Publication)
	require.True(t, res.Rate.Known)
	require.Equal(t, 250, res.Rate.Limit)
	require.Equal(t, 249, res.Rate.Remaining)
	pubs := e.srv.Publications(platforms.Threads)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, "hello threads", pubs[0].Text)
	require.Empty(t, pubs[0].MediaSHA256)
}

func TestMediaPosts(t *testing.T) {
	t.Parallel()
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
		require.NoError(t, err)
		rec := e.srv.Publications(platforms.Threads)[i]
		require.Equal(t, res.Publication.ID, rec.ID, "post %d", i)
		require.Equal(t, p.post.Text, rec.Text, "post %d", i)
		require.Equal(t, p.want, rec.MediaSHA256, "post %d", i)
	}
}

func TestUnreachableMedia(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("video/mp4", "gone.mp4")}})
	require.Contains(t, kind(t, err, platforms.Permanent).Message, "HTTP 404")
	_, err = e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{{ContentType: "image/png"}}})
	_ = kind(t, err, platforms.Permanent)
	require.Empty(t, e.srv.Publications(platforms.Threads))
}

func TestSimRefusesLongText(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	for _, text := range []string{strings.Repeat("a", threads.MaxText+1), strings.Repeat("😀", 126)} {
		form := url.Values{"media_type": {"TEXT"}, "text": {text}}
		req, err := http.NewRequest(http.MethodPost, e.cfg.BaseURL+"/v1.0/"+e.creds.UserID+"/threads", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+e.creds.AccessToken)
		resp, err := testHTTP.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "body %s", body)
		require.Contains(t, string(body), `"code":100`)
	}
}

func TestRefreshNeedsADayOldToken(t *testing.T) {
	t.Parallel()
	clk := platformstest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := setup(t, sim.Options{Now: clk.Now})
	creds := connect(t, e, "acme")
	_, err := e.a.Refresh(context.Background(), creds)
	_ = kind(t, err, platforms.Permanent)
	clk.Add(25 * time.Hour)
	fresh, err := e.a.Refresh(context.Background(), creds)
	require.NoError(t, err)
	_, _, err = e.a.Lookup(context.Background(), fresh, platforms.Post{Text: "x"}, clk.Now())
	require.NoError(t, err)
}

func TestConnectionLostAfterPublishIsUnknown(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	cfg := e.cfg
	cfg.HTTPClient = &http.Client{Timeout: 3 * time.Second, Transport: platformstest.LoseAnswers(func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/threads_publish")
	})}
	since := time.Now().Add(-time.Second)
	_, err := threads.New(cfg).Publish(ctx, e.creds, platforms.Post{Text: "lost answer"})
	_ = kind(t, err, platforms.Unknown)
	_, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "lost answer"}, since)
	require.NoError(t, err)
	require.True(t, found)
}

func connect(t *testing.T, e *env, handle string) platforms.Credentials {
	t.Helper()
	redirect := "https://herald.example/callback"
	loc := authorize(t, e, handle, redirect)
	creds, err := e.a.Exchange(context.Background(), loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	return creds
}

func authorize(t *testing.T, e *env, handle, redirect string) *url.URL {
	t.Helper()
	u := e.a.AuthorizeURL("st4te", redirect, "")
	require.Contains(t, u, "/oauth/authorize?")
	require.Contains(t, u, "threads_content_publish")
	loc := platformstest.Consent(t, u+"&login_hint="+url.QueryEscape(handle), redirect)
	require.Equal(t, "st4te", loc.Query().Get("state"))
	return loc
}

func TestConnectPublishRevoke(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	creds := connect(t, e, "acme")
	require.Equal(t, e.creds.UserID, creds.UserID)
	require.Equal(t, "acme", creds.Handle)
	require.GreaterOrEqual(t, time.Until(creds.ExpiresAt), 59*24*time.Hour)
	_, err := e.a.Publish(ctx, creds, platforms.Post{Text: "connected"})
	require.NoError(t, err)
	require.NoError(t, e.a.Revoke(ctx, creds))
	require.Empty(t, e.srv.Revocations())
	redirect := "https://herald.example/callback"
	e.srv.Deny(platforms.Threads)
	require.Equal(t, "access_denied", authorize(t, e, "acme", redirect).Query().Get("error"))
	code := authorize(t, e, "acme", redirect).Query().Get("code")
	_, err = e.a.Exchange(ctx, code, redirect, "")
	require.NoError(t, err)
	_, err = e.a.Exchange(ctx, code, redirect, "")
	_ = kind(t, err, platforms.Permanent)
}

// A post carries its reply control and topic, and each image its alt text.
func TestPublishWithOptions(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	img := e.media("image/png", "b.png")
	img.AltText = "A chart going up"
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "numbers", Media: []platforms.Media{img},
		Options: &platforms.ThreadsOptions{ReplyControl: "mentioned_only", TopicTag: "Quarterly results"}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Threads)
	require.Len(t, pubs, 1)
	require.Equal(t, map[string]any{"reply_control": "mentioned_only", "topic_tag": "Quarterly results"}, pubs[0].Options)
	require.Equal(t, []string{"A chart going up"}, pubs[0].AltTexts)
}

// A text post's link card is its link_attachment: options.link, else the text's first link;
// none with link_card false or with media (Threads takes it on text posts only).
func TestPublishLinkAttachment(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	off := false
	for _, tc := range []struct {
		name string
		post platforms.Post
		want any
	}{
		{"the text's link", platforms.Post{Text: "read https://example.com/a, then https://example.com/b"}, "https://example.com/a"},
		{"options.link", platforms.Post{Text: "read https://example.com/a", Options: &platforms.ThreadsOptions{Link: "https://example.com/c"}}, "https://example.com/c"},
		{"turned off", platforms.Post{Text: "read https://example.com/d", Options: &platforms.ThreadsOptions{LinkCard: &off}}, nil},
		{"with media", platforms.Post{Text: "read https://example.com/e", Media: []platforms.Media{e.media("image/png", "b.png")}}, nil},
	} {
		res, err := e.a.Publish(context.Background(), e.creds, tc.post)
		require.NoError(t, err, tc.name)
		var rec sim.Record
		for _, r := range e.srv.Publications(platforms.Threads) {
			if r.ID == res.Publication.ID {
				rec = r
			}
		}
		require.Equal(t, res.Publication.ID, rec.ID, tc.name)
		require.Equal(t, tc.want, rec.Options["link_attachment"], tc.name)
	}
}
