package instagram_test

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
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/platformstest"
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

// cdn serves the test's media files for the test's duration.
func cdn(t *testing.T) *httptest.Server {
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
	return files
}

// photo is a post of text with a photo the CDN serves.
func photo(text string) platformstest.PostFunc {
	return func(t *testing.T) platforms.Post {
		return platforms.Post{Text: text, Media: []platforms.Media{{ContentType: "image/jpeg", URL: cdn(t).URL + "/a.jpg"}}}
	}
}

func simOptions(o *sim.Options) {
	if o.ProcessingDelay == 0 {
		o.ProcessingDelay = 5 * time.Millisecond
	}
}

// acme is the simulator's account acme.
func acme(t *testing.T, srv *sim.Server, _ platforms.Adapter) platforms.Credentials {
	t.Helper()
	creds, err := srv.NewAccount(platforms.Instagram, "acme")
	require.NoError(t, err)
	return creds
}

func setup(t *testing.T, opts sim.Options) *env {
	t.Helper()
	simOptions(&opts)
	srv, cfg := platformstest.Start(t, platforms.Instagram, opts)
	creds := acme(t, srv, nil)
	return &env{srv: srv, a: instagram.New(cfg), cfg: cfg, creds: creds, files: cdn(t)}
}

// kind asserts that err is an Instagram error of kind want and returns it.
func kind(t *testing.T, err error, want platforms.Kind) *platforms.Error {
	t.Helper()
	require.Equal(t, want, platformstest.KindOf(t, err, platforms.Instagram), "%v", err)
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	return e
}

// fakeGraph answers the publishing sequence normally and media_publish with ans.
func fakeGraph(ans platformstest.Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/content_publishing_limit"):
			_, _ = io.WriteString(w, `{"data":[{"quota_usage":0,"config":{"quota_total":100,"quota_duration":86400}}]}`)
		case strings.HasSuffix(r.URL.Path, "/media_publish"):
			w.WriteHeader(ans.Status)
			_, _ = io.WriteString(w, ans.Body)
		case strings.HasSuffix(r.URL.Path, "/media"):
			_, _ = io.WriteString(w, `{"id":"17890000000000001"}`)
		default:
			_, _ = io.WriteString(w, `{"id":"17890000000000001","status_code":"FINISHED"}`)
		}
	})
}

func TestConformance(t *testing.T) {
	t.Parallel()
	img := platforms.Media{ContentType: "image/jpeg", URL: "https://cdn.example/a.jpg"}
	many := make([]platforms.Media, 11)
	for i := range many {
		many[i] = img
	}
	fake := platforms.Credentials{UserID: "1", AccessToken: "t"}
	platformstest.Run(t, platformstest.Adapter{
		Platform: platforms.Instagram,
		New:      func(cfg platforms.Config) platforms.Adapter { return instagram.New(cfg) },
		Options:  simOptions,
		Account:  acme,
		FakeConfig: func(url string) platforms.Config {
			return platforms.Config{BaseURL: url, PollInterval: time.Millisecond}
		},
		FakeCreds: fake,
		FakePost:  platforms.Post{Text: "x", Media: []platforms.Media{img}},
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "the container creates nothing", Post: photo("x"), Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 100 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "the container creates nothing", Post: photo("x"), Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Serve: fakeGraph,
			Answers: []platformstest.Answer{
				{Status: 200, Body: `<html>oops</html>`, Want: platforms.Unknown},
				{Status: 200, Body: `{}`, Want: platforms.Unknown},
				{Status: 200, Body: `{"error":{"message":"(#10) Application does not have permission for this action","type":"OAuthException","code":10}}`, Want: platforms.Permanent},
				{Status: 500, Body: `{"error":{"message":"An unknown error occurred","code":1,"is_transient":true}}`, Want: platforms.Unknown},
				{Status: 400, Body: `{"error":{"message":"Invalid OAuth access token","type":"OAuthException","code":190}}`, Want: platforms.AuthExpired},
				{Status: 400, Body: `{"error":{"message":"Media ID is not available","code":9007,"error_subcode":2207027}}`, Want: platforms.Transient},
			},
			// A garbage answer to a read is Transient.
			Checks: []platformstest.Check{{
				Name: "read",
				Serve: func(string) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>") })
				},
				Want: []platforms.Kind{platforms.Transient},
				Call: func(ctx context.Context, a platforms.Adapter) error {
					_, err := a.Publish(ctx, fake, platforms.Post{Media: []platforms.Media{img}})
					return err
				},
			}},
		},
		PostThenError: platformstest.Lookup{
			Post:    photo("did it post?"),
			Missing: platformstest.Text("other"),
		},
		Refresh: platformstest.Refresh{
			Post:     photo("after refresh"),
			Code:     "190",
			Lifetime: 59 * 24 * time.Hour,
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "text only", Post: platforms.Post{Text: "text only"}},
			{Name: "photo without URL", Post: platforms.Post{Text: "x", Media: []platforms.Media{{ContentType: "image/png"}}}},
			{Name: "eleven items", Post: platforms.Post{Text: "x", Media: many}},
			{Name: "long caption", Post: platforms.Post{Text: strings.Repeat("a", instagram.MaxCaptionRunes+1), Media: many[:1]}},
			{Name: "too many hashtags", Post: platforms.Post{Text: strings.Repeat("#tag ", instagram.MaxHashtags+1), Media: many[:1]}},
			{Name: "too many mentions", Post: platforms.Post{Text: strings.Repeat("@someone ", instagram.MaxMentions+1), Media: many[:1]}},
			{Name: "photo only", Post: platforms.Post{Media: many[:1]}, OK: true},
			{Name: "longest caption, ten items", Post: platforms.Post{Text: strings.Repeat("é", instagram.MaxCaptionRunes), Media: many[:10]}, OK: true},
			{Name: "most hashtags", Post: platforms.Post{Text: strings.Repeat("#tag ", instagram.MaxHashtags) + "email@example.com a#b", Media: many[:1]}, OK: true},
		}},
		// Instagram Login offers no token revocation (TestConnectPublishRevoke).
		Revoke:       platformstest.Revoke{NoOp: true},
		FirstComment: platformstest.FirstComment{Post: photo("commented")},
		RateLimit: platformstest.RateLimit{
			Post:        photo("x"),
			Code:        "80002",
			Reset:       platformstest.Within{Min: 30 * time.Second, Max: 3 * time.Minute},
			Window:      "publish",
			Limit:       sim.Limit{Count: 1, Window: 24 * time.Hour},
			Exhausted:   platformstest.Within{Min: 50 * time.Minute},
			ReportsRate: true,
		},
		ProcessingFails: platformstest.ProcessingFails{NotApplicable: "the simulator's Instagram judges media by the bytes it fetches " +
			"(TestSimRefusesPNGBytes), not by the processing marker"},
	})
}

func TestImagePost(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "hello #insta", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Publication.ID)
	require.True(t, strings.HasPrefix(res.Publication.URL, "https://www.instagram.com/p/"), "publication = %+v", res.Publication)
	require.True(t, res.Rate.Known)
	require.Equal(t, 100, res.Rate.Limit)
	require.Equal(t, 99, res.Rate.Remaining)
	pubs := e.srv.Publications(platforms.Instagram)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, "hello #insta", pubs[0].Text)
	require.Equal(t, []string{sum(jpeg)}, pubs[0].MediaSHA256)
}

func TestReelAndCarousel(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "a reel", Media: []platforms.Media{e.media("video/mp4", "v.mp4")}})
	require.NoError(t, err)
	res, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "a carousel", Media: []platforms.Media{e.media("image/jpeg", "b.jpg"), e.media("video/mp4", "v.mp4"), e.media("image/jpeg", "a.jpg")}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Instagram)
	require.Len(t, pubs, 2)
	require.Equal(t, sum(mp4), pubs[0].MediaSHA256[0])
	require.Equal(t, res.Publication.ID, pubs[1].ID)
	require.Equal(t, []string{sum(jpeg2), sum(mp4), sum(jpeg)}, pubs[1].MediaSHA256)
}

func TestUnreachableMedia(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "missing.jpg")}})
	require.Contains(t, kind(t, err, platforms.Permanent).Message, "HTTP 404")
	_, err = e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{{ContentType: "image/jpeg"}}})
	_ = kind(t, err, platforms.Permanent)
	require.Empty(t, e.srv.Publications(platforms.Instagram))
}

func TestSimRefusesLongCaption(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	form := url.Values{"image_url": {e.files.URL + "/a.jpg"}, "caption": {strings.Repeat("a", instagram.MaxCaptionRunes+1)}}
	req, err := http.NewRequest(http.MethodPost, e.cfg.BaseURL+"/v25.0/"+e.creds.UserID+"/media", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+e.creds.AccessToken)
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "body %s", body)
	require.Contains(t, string(body), `"error_subcode":2207010`)
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
	clk.Add(61 * 24 * time.Hour)
	_, _, err = e.a.Lookup(context.Background(), fresh, platforms.Post{Text: "x"}, clk.Now())
	_ = kind(t, err, platforms.AuthExpired)
}

// TestQuotaAtPublish exhausts the quota between the check and media_publish: the network's own
// code 9 / 2207042 answer.
func TestQuotaAtPublish(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	e.srv.SetLimit(platforms.Instagram, "publish", sim.Limit{Count: 1, Window: 24 * time.Hour})
	var otherErr error
	hc := &http.Client{Timeout: 3 * time.Second, Transport: platformstest.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/media_publish") {
			// Another publisher takes the last slot first.
			_, otherErr = e.a.Publish(r.Context(), e.creds, platforms.Post{Text: "other", Media: []platforms.Media{e.media("image/jpeg", "b.jpg")}})
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	cfg := e.cfg
	cfg.HTTPClient = hc
	_, err := instagram.New(cfg).Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	require.NoError(t, otherErr)
	pe := kind(t, err, platforms.RateLimited)
	require.Equal(t, "9", pe.Code)
	require.Contains(t, pe.Message, "2207042")
	require.GreaterOrEqual(t, time.Until(pe.ResetAt), 23*time.Hour)
}

func TestConnectionLostAfterPublishIsUnknown(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	cfg := e.cfg
	cfg.HTTPClient = &http.Client{Timeout: 3 * time.Second, Transport: platformstest.LoseAnswers(func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/media_publish")
	})}
	since := time.Now().Add(-time.Second)
	_, err := instagram.New(cfg).Publish(context.Background(), e.creds, platforms.Post{Text: "lost answer", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	_ = kind(t, err, platforms.Unknown)
	_, found, err := e.a.Lookup(context.Background(), e.creds, platforms.Post{Text: "lost answer"}, since)
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
	require.Contains(t, u, "instagram_business_content_publish")
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
	require.Empty(t, creds.RefreshToken)
	require.GreaterOrEqual(t, time.Until(creds.ExpiresAt), 59*24*time.Hour)
	_, err := e.a.Publish(ctx, creds, platforms.Post{Text: "connected", Media: []platforms.Media{e.media("image/jpeg", "a.jpg")}})
	require.NoError(t, err)
	require.NoError(t, e.a.Revoke(ctx, creds))
	require.Empty(t, e.srv.Revocations())
	// Denied consent and a reused code.
	redirect := "https://herald.example/callback"
	e.srv.Deny(platforms.Instagram)
	require.Equal(t, "access_denied", authorize(t, e, "acme", redirect).Query().Get("error"))
	code := authorize(t, e, "acme", redirect).Query().Get("code")
	_, err = e.a.Exchange(ctx, code, redirect, "")
	require.NoError(t, err)
	_, err = e.a.Exchange(ctx, code, redirect, "")
	require.Contains(t, kind(t, err, platforms.Permanent).Message, "used")
}

// Instagram judges a photo by the bytes it fetches: a PNG served as a JPEG fails its container.
// A PNG whose media can be converted passes Validate; one that cannot is refused before any call.
func TestSimRefusesPNGBytes(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "x", Media: []platforms.Media{e.media("image/jpeg", "named.jpg")}})
	require.Contains(t, kind(t, err, platforms.Permanent).Error(), "Instagram takes JPEG photos; the media URI returned image/png")
	require.Empty(t, e.srv.Publications(platforms.Instagram))
	png := e.media("image/png", "a.jpg")
	require.Error(t, e.a.Validate(platforms.Post{Media: []platforms.Media{png}}), "a PNG that cannot be converted passed Validate")
	png.Conform = func(context.Context, platforms.ImageRule) (platforms.Media, error) {
		return e.media("image/jpeg", "a.jpg"), nil
	}
	require.NoError(t, e.a.Validate(platforms.Post{Media: []platforms.Media{png}}))
	_, err = e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "converted", Media: []platforms.Media{png}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Instagram)
	require.Len(t, pubs, 1)
	require.Equal(t, sum(jpeg), pubs[0].MediaSHA256[0])
	require.Equal(t, "image/jpeg", pubs[0].MediaTypes[0])
	require.Equal(t, int64(len(jpeg)), pubs[0].MediaSizes[0])
}

// A feed photo with alt text and collaborators, a reel kept out of the feed and a story, each as
// its options make it.
func TestPostTypesAndOptions(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	photo := e.media("image/jpeg", "a.jpg")
	photo.AltText = "A bowl of ramen"
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "lunch", Media: []platforms.Media{photo},
		Options: &platforms.InstagramOptions{Type: "feed", Collaborators: []string{"@chef.ana", "noodlebar"}}})
	require.NoError(t, err)
	off := false
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "a reel", Media: []platforms.Media{e.media("video/mp4", "v.mp4")},
		Options: &platforms.InstagramOptions{Type: "reel", ShareToFeed: &off}})
	require.NoError(t, err)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "not shown", Media: []platforms.Media{e.media("image/jpeg", "b.jpg")},
		Options: &platforms.InstagramOptions{Type: "story"}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Instagram)
	require.Len(t, pubs, 3)
	require.Equal(t, map[string]any{"media_type": "IMAGE", "collaborators": []string{"chef.ana", "noodlebar"}}, pubs[0].Options)
	require.Equal(t, []string{"A bowl of ramen"}, pubs[0].AltTexts)
	require.Equal(t, map[string]any{"media_type": "REELS", "share_to_feed": false}, pubs[1].Options)
	require.Equal(t, map[string]any{"media_type": "STORIES"}, pubs[2].Options)
	require.Empty(t, pubs[2].Text, "a story has no caption")
}
