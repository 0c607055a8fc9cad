package facebook_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/facebook"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
	"github.com/stretchr/testify/require"
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

func media(ctype string, data []byte) platforms.Media {
	return platforms.Media{
		ContentType: ctype, Size: int64(len(data)), Filename: "f",
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

type env struct {
	srv   *sim.Server
	a     *facebook.Adapter
	creds platforms.Credentials
}

// acme is the simulator's account acme.
func acme(t *testing.T, srv *sim.Server, _ platforms.Adapter) platforms.Credentials {
	t.Helper()
	creds, err := srv.NewAccount(platforms.Facebook, "acme")
	require.NoError(t, err)
	return creds
}

func setup(t *testing.T, opts sim.Options) *env {
	t.Helper()
	if opts.ProcessingDelay == 0 {
		opts.ProcessingDelay = 5 * time.Millisecond
	}
	srv, cfg := platformstest.Start(t, platforms.Facebook, opts)
	creds := acme(t, srv, nil)
	return &env{srv: srv, a: facebook.New(cfg), creds: creds}
}

// kind asserts that err is a Facebook error of kind want and returns it.
func kind(t *testing.T, err error, want platforms.Kind) *platforms.Error {
	t.Helper()
	require.Equal(t, want, platformstest.KindOf(t, err, platforms.Facebook), "%v", err)
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	return e
}

func TestConformance(t *testing.T) {
	t.Parallel()
	img, vid := media("image/jpeg", jpeg), media("video/mp4", mp4)
	many := make([]platforms.Media, 11)
	for i := range many {
		many[i] = img
	}
	photos := func(*testing.T) platforms.Post {
		return platforms.Post{Text: "photos", Media: []platforms.Media{media("image/jpeg", jpeg), media("image/jpeg", jpeg)}}
	}
	fake := platforms.Credentials{UserID: "1", AccessToken: "t"}
	platformstest.Run(t, platformstest.Adapter{
		Platform: platforms.Facebook,
		New:      func(cfg platforms.Config) platforms.Adapter { return facebook.New(cfg) },
		Options: func(o *sim.Options) {
			if o.ProcessingDelay == 0 {
				o.ProcessingDelay = 5 * time.Millisecond
			}
		},
		Account:    acme,
		FakeConfig: func(url string) platforms.Config { return platforms.Config{BaseURL: url, UploadURL: url} },
		FakeCreds:  fake,
		FakePost:   platforms.Post{Text: "x"},
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "the feed post is the creating call: a 5xx may hide a created post", Post: platformstest.Text("outage"), Want: platforms.Unknown},
			{Name: "the first photo upload of a multi-photo post creates nothing", Post: photos, Want: platforms.Transient},
			{Name: "reads", Post: platformstest.Text("x"), Lookup: true, Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 100 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "feed post", Post: platformstest.Text("lost"), Want: platforms.Unknown},
			{Name: "read", Post: platformstest.Text("lost"), Lookup: true, Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Serve: func(ans platformstest.Answer) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(ans.Status)
					_, _ = io.WriteString(w, ans.Body)
				})
			},
			Answers: []platformstest.Answer{
				{Status: 200, Body: `<html>proxy error</html>`, Want: platforms.Unknown},
				{Status: 200, Body: `{"error":{"message":"(#100) Invalid parameter","type":"OAuthException","code":100,"fbtrace_id":"x"}}`, Want: platforms.Permanent},
				{Status: 200, Body: `{"id":""}`, Want: platforms.Unknown},
				{Status: 200, Body: `{"error":{"message":"Please retry","code":2,"is_transient":true}}`, Want: platforms.Unknown},
			},
			Checks: []platformstest.Check{{
				Name: "lookup",
				Serve: func(string) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						w.Header().Set("Content-Type", "application/json")
						_, _ = io.WriteString(w, `<html>proxy error</html>`)
					})
				},
				Want: []platforms.Kind{platforms.Transient},
				Call: func(ctx context.Context, a platforms.Adapter) error {
					_, _, err := a.Lookup(ctx, fake, platforms.Post{Text: "x"}, time.Now())
					return err
				},
			}},
		},
		PostThenError: platformstest.Lookup{
			Others:  []platformstest.PostFunc{platformstest.Text("an older post")},
			Post:    platformstest.Text("did it post?"),
			Missing: platformstest.Text("never posted"),
			More: func(t *testing.T, _ *sim.Server, a platforms.Adapter, c platforms.Credentials, _ platforms.Post, _ time.Time, _ platforms.Publication) {
				_, found, err := a.Lookup(context.Background(), c, platforms.Post{Text: "an older post"}, time.Now().Add(time.Hour))
				require.NoError(t, err)
				require.False(t, found, "lookup before since")
			},
		},
		Refresh: platformstest.Refresh{NotApplicable: "a Page token does not expire and comes with no refresh token: " +
			"a refused token means connecting the Page again (TestExpiredTokenAndReconnect)"},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "empty", Post: platforms.Post{}},
			{Name: "long text", Post: platforms.Post{Text: strings.Repeat("a", facebook.MaxTextRunes+1)}},
			{Name: "image and video", Post: platforms.Post{Text: "x", Media: []platforms.Media{img, vid}}},
			{Name: "two videos", Post: platforms.Post{Text: "x", Media: []platforms.Media{vid, vid}}},
			{Name: "eleven photos", Post: platforms.Post{Text: "x", Media: many}},
			{Name: "pdf", Post: platforms.Post{Text: "x", Media: []platforms.Media{media("application/pdf", jpeg)}}},
			{Name: "longest text", Post: platforms.Post{Text: strings.Repeat("é", facebook.MaxTextRunes)}, OK: true},
			{Name: "video", Post: platforms.Post{Media: []platforms.Media{vid}}, OK: true},
			{Name: "ten photos", Post: platforms.Post{Text: "x", Media: many[:10]}, OK: true},
		}},
		Revoke: platformstest.Revoke{NotApplicable: "revoking takes the user token that connecting through the consent page brings " +
			"(TestConnectPublishRevoke); an account made without it has nothing to revoke"},
		RateLimit: platformstest.RateLimit{
			Post:      platformstest.Numbered("throttled"),
			Code:      "80001",
			Reset:     platformstest.Within{Min: 30 * time.Second, Max: 3 * time.Minute},
			Window:    "calls",
			Limit:     sim.Limit{Count: 1, Window: time.Hour},
			Exhausted: platformstest.Within{Min: 50 * time.Minute, Max: 61 * time.Minute},
		},
		ProcessingFails: platformstest.ProcessingFails{NotApplicable: "the simulator's Facebook takes every video it is sent"},
	})
}

func TestTextPost(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "hello pages"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Publication.ID, e.creds.UserID+"_"), "publication = %+v", res.Publication)
	require.Contains(t, res.Publication.URL, "/posts/")
	require.True(t, res.Rate.Known)
	require.Equal(t, 100, res.Rate.Limit)
	require.Positive(t, res.Rate.Remaining)
	require.LessOrEqual(t, res.Rate.Remaining, 100)
	pubs := e.srv.Publications(platforms.Facebook)
	require.Len(t, pubs, 1)
	require.Equal(t, "hello pages", pubs[0].Text)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, e.creds.UserID, pubs[0].Account)
}

func TestPhotoPosts(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	res, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "one photo", Media: []platforms.Media{media("image/jpeg", jpeg)}})
	require.NoError(t, err)
	res2, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "two photos", Media: []platforms.Media{media("image/png", png), media("image/jpeg", jpeg)}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Facebook)
	require.Len(t, pubs, 2)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, []string{sum(jpeg)}, pubs[0].MediaSHA256)
	require.Equal(t, "one photo", pubs[0].Text)
	require.Equal(t, res2.Publication.ID, pubs[1].ID)
	require.Equal(t, []string{sum(png), sum(jpeg)}, pubs[1].MediaSHA256)
}

func TestVideoPost(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "a video", Media: []platforms.Media{media("video/mp4", mp4)}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Facebook)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, sum(mp4), pubs[0].MediaSHA256[0])
	require.Equal(t, "a video", pubs[0].Text)
	require.Contains(t, res.Publication.URL, "/videos/")
}

func TestSimRefusesOverlongText(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	req, err := http.NewRequest(http.MethodPost, e.srv.BaseURL()+"/facebook/v25.0/"+e.creds.UserID+"/feed",
		strings.NewReader(url.Values{"message": {strings.Repeat("a", facebook.MaxTextRunes+1)}}.Encode()))
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

func TestDuplicateIsPermanent(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "same"})
	require.NoError(t, err)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "same"})
	require.Equal(t, "506", kind(t, err, platforms.Permanent).Code)
}

func TestExpiredTokenAndReconnect(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, e.srv.InjectFault(platforms.Facebook, sim.FaultExpireTokens, 1))
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "after expiry"})
	require.Equal(t, "190", kind(t, err, platforms.AuthExpired).Code)
	_, err = e.a.Refresh(ctx, e.creds)
	_ = kind(t, err, platforms.Permanent)
	creds := connect(t, e, "acme")
	require.Equal(t, e.creds.UserID, creds.UserID, "the same Page reconnects")
	_, err = e.a.Publish(ctx, creds, platforms.Post{Text: "after expiry"})
	require.NoError(t, err)
}

func TestLookupPages(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	for i := 0; i < 120; i++ {
		_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "post " + strings.Repeat("x", i)})
		require.NoError(t, err)
	}
	// The oldest post is on the second page of 100.
	pub, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "post "}, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, e.srv.Publications(platforms.Facebook)[0].ID, pub.ID)
}

// connect runs the consent flow for handle and exchanges the code.
func connect(t *testing.T, e *env, handle string) platforms.Credentials {
	t.Helper()
	redirect := "https://herald.example/callback"
	loc := authorize(t, e, handle, redirect)
	require.Equal(t, "st4te", loc.Query().Get("state"), "redirect = %s", loc)
	require.NotEmpty(t, loc.Query().Get("code"), "redirect = %s", loc)
	creds, err := e.a.Exchange(context.Background(), loc.Query().Get("code"), redirect, "")
	require.NoError(t, err)
	return creds
}

func authorize(t *testing.T, e *env, handle, redirect string) *url.URL {
	t.Helper()
	u := e.a.AuthorizeURL("st4te", redirect, "")
	require.Contains(t, u, "/v25.0/dialog/oauth?")
	require.Contains(t, u, "pages_manage_posts")
	return platformstest.Consent(t, u+"&login_hint="+url.QueryEscape(handle), redirect)
}

func TestConnectPublishRevoke(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	require.False(t, e.a.UsesPKCE(), "facebook does not take PKCE")
	creds := connect(t, e, "bistro")
	require.Equal(t, "bistro", creds.Handle)
	require.NotEmpty(t, creds.UserID)
	require.NotEmpty(t, creds.AccessToken)
	require.True(t, creds.ExpiresAt.IsZero(), "a Page token does not expire")
	require.NotEmpty(t, creds.Extra["user_token"])
	_, err := e.a.Publish(ctx, creds, platforms.Post{Text: "from the connected page"})
	require.NoError(t, err)
	require.NoError(t, e.a.Revoke(ctx, creds))
	require.True(t, revoked(e.srv, platforms.Facebook, creds.UserID), "revocations = %+v", e.srv.Revocations())
	_, err = e.a.Publish(ctx, creds, platforms.Post{Text: "after revoke"})
	_ = kind(t, err, platforms.AuthExpired)
	// Credentials without a user token have nothing to revoke.
	require.NoError(t, e.a.Revoke(ctx, e.creds))
}

func TestConnectDeniedAndCodeReuse(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	redirect := "https://herald.example/callback"
	e.srv.Deny(platforms.Facebook)
	loc := authorize(t, e, "acme", redirect)
	require.Equal(t, "access_denied", loc.Query().Get("error"))
	require.Empty(t, loc.Query().Get("code"))
	loc = authorize(t, e, "acme", redirect)
	code := loc.Query().Get("code")
	_, err := e.a.Exchange(context.Background(), code, "https://elsewhere.example/cb", "")
	require.Error(t, err, "exchange with another redirect_uri")
	loc = authorize(t, e, "acme", redirect)
	code = loc.Query().Get("code")
	_, err = e.a.Exchange(context.Background(), code, redirect, "")
	require.NoError(t, err)
	_, err = e.a.Exchange(context.Background(), code, redirect, "")
	_ = kind(t, err, platforms.Permanent)
}

// revoked reports whether the simulator recorded a revocation of account on p.
func revoked(srv *sim.Server, p platforms.Platform, account string) bool {
	for _, r := range srv.Revocations() {
		if r.Platform == string(p) && r.Account == account {
			return true
		}
	}
	return false
}

// A feed post with a link, photos with alt text, a reel and stories (photo and video), each as
// the Page API takes them.
func TestPostTypesAndOptions(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "read this", Options: &platforms.FacebookOptions{Link: "https://example.com/news"}})
	require.NoError(t, err)
	photo := media("image/jpeg", jpeg)
	photo.AltText = "A lighthouse at dusk"
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "two photos", Media: []platforms.Media{photo, media("image/png", png)}})
	require.NoError(t, err)
	reel, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "a reel", Media: []platforms.Media{media("video/mp4", mp4)}, Options: &platforms.FacebookOptions{Type: "reel"}})
	require.NoError(t, err)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Media: []platforms.Media{media("image/jpeg", jpeg)}, Options: &platforms.FacebookOptions{Type: "story"}})
	require.NoError(t, err)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Media: []platforms.Media{media("video/mp4", mp4)}, Options: &platforms.FacebookOptions{Type: "story"}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Facebook)
	require.Len(t, pubs, 5)
	require.Equal(t, map[string]any{"type": "feed", "link": "https://example.com/news"}, pubs[0].Options)
	require.Equal(t, []string{"A lighthouse at dusk", ""}, pubs[1].AltTexts)
	require.Equal(t, map[string]any{"type": "reel"}, pubs[2].Options)
	require.Equal(t, reel.Publication.ID, pubs[2].ID)
	require.Equal(t, "a reel", pubs[2].Text)
	require.Equal(t, []string{sum(mp4)}, pubs[2].MediaSHA256)
	require.Equal(t, map[string]any{"type": "story"}, pubs[3].Options)
	require.Equal(t, map[string]any{"type": "story"}, pubs[4].Options)
}

// A feed post without options.link attaches the text's first link (Facebook reads the page);
// link_card false attaches none, and a post with photos none either.
func TestFeedLinkFromText(t *testing.T) {
	t.Parallel()
	e := setup(t, sim.Options{})
	ctx := context.Background()
	off := false
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "new on the blog: https://example.com/post-1."})
	require.NoError(t, err)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "quiet: https://example.com/post-2", Options: &platforms.FacebookOptions{LinkCard: &off}})
	require.NoError(t, err)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "photos of https://example.com/post-3", Media: []platforms.Media{media("image/jpeg", jpeg), media("image/png", png)}})
	require.NoError(t, err)
	pubs := e.srv.Publications(platforms.Facebook)
	require.Len(t, pubs, 3)
	require.Equal(t, "https://example.com/post-1", pubs[0].Options["link"])
	require.Nil(t, pubs[1].Options["link"])
	require.Nil(t, pubs[2].Options["link"])
}
