package linkedin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

type testBundle struct {
	sim   *sim.Server
	a     *Adapter
	creds platforms.Credentials
}

func setup(t *testing.T, opts sim.Options) *testBundle {
	t.Helper()
	srv, cfg := platformstest.Start(t, platforms.LinkedIn, opts)
	return &testBundle{sim: srv, a: New(cfg), creds: alice(t, srv, nil)}
}

// alice is the simulator's account alice.
func alice(t *testing.T, srv *sim.Server, _ platforms.Adapter) platforms.Credentials {
	t.Helper()
	creds, err := srv.NewAccount(platforms.LinkedIn, "alice")
	require.NoError(t, err)
	return creds
}

func fileMedia(ct string, data []byte, knownSize bool) platforms.Media {
	return platformstest.Media("m", ct, "f", data, knownSize)
}

func randomBytes(t *testing.T, n int) []byte { return platformstest.RandomBytes(t, n) }

func sha(b []byte) string { return platformstest.SHA256(b) }

func kindOf(t *testing.T, err error) platforms.Kind {
	return platformstest.KindOf(t, err, platforms.LinkedIn)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	img := fileMedia("image/png", []byte("x"), true)
	vid := fileMedia("video/mp4", []byte("x"), true)
	var twentyOne []platforms.Media
	for i := 0; i < 21; i++ {
		twentyOne = append(twentyOne, img)
	}
	png := func(*testing.T) platforms.Post {
		return platforms.Post{Text: "with image", Media: []platforms.Media{fileMedia("image/png", []byte("png"), true)}}
	}
	fake := platforms.Credentials{AccessToken: "t", UserID: "1"}
	// A network that refuses the post finder and answers every other call with garbage.
	noFinder := func(string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/rest/posts" && r.Method == http.MethodGet {
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"status":403,"serviceErrorCode":100,"code":"ACCESS_DENIED","message":"Not enough permissions"}`))
				return
			}
			_, _ = w.Write([]byte("not json"))
		})
	}
	platformstest.Run(t, platformstest.Adapter{
		Platform:   platforms.LinkedIn,
		New:        func(cfg platforms.Config) platforms.Adapter { return New(cfg) },
		Account:    alice,
		FakeConfig: func(url string) platforms.Config { return platforms.Config{BaseURL: url, AuthURL: url} },
		FakeCreds:  fake,
		FakePost:   platforms.Post{Text: "x"},
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "post", Post: platformstest.Text("text only"), Want: platforms.Unknown},
			{Name: "upload", Post: png, Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 2 * time.Second, ClientTimeout: 200 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "post", Post: platformstest.Text("slow"), Want: platforms.Unknown},
			{Name: "upload", Post: png, Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Answers: []platformstest.Answer{
				{Status: 201, Body: "", Want: platforms.Unknown},
				{Status: 200, Body: `{"status":403,"serviceErrorCode":100,"message":"denied"}`, Want: platforms.Permanent},
				{Status: 401, Body: `{"status":401,"serviceErrorCode":65600,"message":"Invalid access token"}`, Want: platforms.AuthExpired},
				{Status: 422, Body: `{"status":422,"message":"/commentary :: too long"}`, Want: platforms.Permanent},
				{Status: 426, Body: `{"status":426,"code":"NONEXISTENT_VERSION","message":"Requested version 202001 is not active"}`, Want: platforms.Permanent},
				{Status: 504, Body: "<html>gateway</html>", Want: platforms.Unknown},
			},
			Checks: []platformstest.Check{
				{Name: "upload", Serve: noFinder, Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, err := a.Publish(ctx, fake, platforms.Post{Media: []platforms.Media{fileMedia("image/png", []byte("p"), true)}})
					return err
				}},
				{Name: "refresh", Serve: noFinder, Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, err := a.Refresh(ctx, platforms.Credentials{RefreshToken: "r"})
					return err
				}},
				{Name: "lookup refused", Serve: noFinder, Want: []platforms.Kind{platforms.Permanent}, Is: platforms.ErrLookupUnsupported, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, _, err := a.Lookup(ctx, fake, platforms.Post{Text: "x"}, time.Now())
					return err
				}},
			},
		},
		PostThenError: platformstest.Lookup{
			Others:  []platformstest.PostFunc{platformstest.Text("earlier (post)")},
			Post:    platformstest.Text("did this go out? (really) #maybe"),
			Missing: platformstest.Text("never posted"),
		},
		Refresh: platformstest.Refresh{
			Post: platformstest.Text("after expiry"),
			Code: "65600",
			Old:  platformstest.OldRefreshWorks,
			Refused: func(c platforms.Credentials) []platforms.Credentials {
				none, unknown := c, c
				none.RefreshToken = ""
				unknown.RefreshToken = "sim_rt_unknown"
				return []platforms.Credentials{none, unknown}
			},
			More: func(t *testing.T, old, fresh platforms.Credentials) {
				require.WithinDuration(t, old.RefreshExpiresAt, fresh.RefreshExpiresAt, 2*time.Second, "the refresh token keeps its fixed lifetime")
				require.WithinDuration(t, time.Now().Add(60*24*time.Hour), fresh.ExpiresAt, time.Minute)
			},
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "text", Post: platforms.Post{Text: "hi"}, OK: true},
			{Name: "3000 characters", Post: platforms.Post{Text: strings.Repeat("é", 3000)}, OK: true},
			{Name: "3001 characters", Post: platforms.Post{Text: strings.Repeat("a", 3001)}, Contains: "text is 3001 characters; LinkedIn allows 3000"},
			{Name: "empty", Post: platforms.Post{}},
			{Name: "twenty images", Post: platforms.Post{Media: twentyOne[:20]}, OK: true},
			{Name: "21 images", Post: platforms.Post{Media: twentyOne}},
			{Name: "video", Post: platforms.Post{Media: []platforms.Media{vid}}, OK: true},
			{Name: "video and image", Post: platforms.Post{Media: []platforms.Media{vid, img}}},
			{Name: "quicktime", Post: platforms.Post{Media: []platforms.Media{fileMedia("video/quicktime", nil, false)}}},
		}},
		Revoke: platformstest.Revoke{Post: platformstest.Text("after revoke"), Code: "65601"},
		RateLimit: platformstest.RateLimit{
			Post: platformstest.Numbered("limited"),
			// LinkedIn's daily limits reset at 00:00 UTC.
			ResetAt: nextMidnight,
			Window:  "posts",
			Limit:   sim.Limit{Count: 1, Window: 24 * time.Hour},
		},
		ProcessingFails: platformstest.ProcessingFails{Post: func(t *testing.T) platforms.Post {
			return platforms.Post{Text: "bad clip", Media: []platforms.Media{fileMedia("video/mp4", platformstest.FailingVideo(t), true)}}
		}},
	})
}

func TestLittleText(t *testing.T) {
	t.Parallel()
	text := `Hello (world) #go @bob [x] {y} <z> a|b *bold* _it_ ~s~ back\slash`
	esc := escapeCommentary(text)
	require.Equal(t, `Hello \(world\) \#go \@bob \[x\] \{y\} \<z\> a\|b \*bold\* \_it\_ \~s\~ back\\slash`, esc)
	require.Equal(t, text, unescapeCommentary(esc))
}

func TestVersion(t *testing.T) {
	t.Parallel()
	a := New(platforms.Config{})
	v := a.version()
	require.Len(t, v, 6)
	want := time.Now().UTC().AddDate(0, 0, -time.Now().UTC().Day()+1).AddDate(0, -2, 0).Format("200601")
	require.Equal(t, want, v)
	a.Version = "202511"
	require.Equal(t, "202511", a.version())
}

func TestPublishText(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	text := "Launch day (finally) #herald @team *yay*"
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Publication.ID, "urn:li:share:"))
	require.Equal(t, "https://www.linkedin.com/feed/update/"+res.Publication.ID+"/", res.Publication.URL)
	require.False(t, res.Rate.Known, "LinkedIn sends no rate-limit headers")
	pubs := b.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, text, pubs[0].Text)
	require.Equal(t, b.creds.UserID, pubs[0].Account)

	var sawPost bool
	for _, l := range platformstest.Requests(t, b.sim, platforms.LinkedIn) {
		if l.Method == http.MethodPost && l.Path == "/rest/posts" {
			sawPost = true
			require.Equal(t, "2.0.0", l.Headers["X-Restli-Protocol-Version"])
			require.Regexp(t, `^\d{6}$`, l.Headers["LinkedIn-Version"])
		}
	}
	require.True(t, sawPost)
}

func TestPublishImages(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	one := randomBytes(t, 2000)
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "one image", Media: []platforms.Media{fileMedia("image/jpeg", one, true)}})
	require.NoError(t, err)

	imgs := [][]byte{randomBytes(t, 100), randomBytes(t, 200), randomBytes(t, 300)}
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "three images", Media: []platforms.Media{
		fileMedia("image/png", imgs[0], true), fileMedia("image/png", imgs[1], false), fileMedia("image/gif", imgs[2], true),
	}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 2)
	require.Equal(t, []string{sha(one)}, pubs[0].MediaSHA256)
	require.Equal(t, res.Publication.ID, pubs[1].ID)
	require.Equal(t, []string{sha(imgs[0]), sha(imgs[1]), sha(imgs[2])}, pubs[1].MediaSHA256)
}

func TestPublishVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{ProcessingDelay: 50 * time.Millisecond})
	ctx := context.Background()
	video := randomBytes(t, 9<<20+77) // three parts
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "clip", Media: []platforms.Media{fileMedia("video/mp4", video, true)}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, []string{sha(video)}, pubs[0].MediaSHA256)
	var parts, polls int
	for _, l := range platformstest.Requests(t, b.sim, platforms.LinkedIn) {
		if l.Method == http.MethodPut && strings.Contains(l.Path, "/parts/") {
			parts++
		}
		if l.Method == http.MethodGet && strings.HasPrefix(l.Path, "/rest/videos/") {
			polls++
		}
	}
	require.Equal(t, 3, parts)
	require.GreaterOrEqual(t, polls, 2, "the adapter polls until the video is AVAILABLE")

	// A video of unknown size is read first.
	small := randomBytes(t, 1000)
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "small clip", Media: []platforms.Media{fileMedia("video/mp4", small, false)}})
	require.NoError(t, err)
	require.Equal(t, []string{sha(small)}, b.sim.Publications(platforms.LinkedIn)[1].MediaSHA256)
}

func TestRetiredVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.a.Version = "202301"
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "old version"})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusUpgradeRequired, e.Status)
}

func TestConnect(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.False(t, b.a.UsesPKCE())
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	consent := func(state string) *url.URL {
		t.Helper()
		u := b.a.AuthorizeURL(state, "https://herald.example/callback", "")
		require.Contains(t, u, "/oauth/v2/authorization?")
		require.Contains(t, u, "scope=openid+profile+email+w_member_social")
		resp, err := noRedirect.Get(u + "&login_hint=dana")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode)
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, "herald.example", loc.Host)
		require.Equal(t, state, loc.Query().Get("state"))
		return loc
	}
	loc := consent("st-1")
	code := loc.Query().Get("code")
	require.NotEmpty(t, code)
	c, err := b.a.Exchange(ctx, code, "https://herald.example/callback", "")
	require.NoError(t, err)
	require.Equal(t, "dana", c.Handle)
	require.NotEmpty(t, c.UserID)
	require.NotEmpty(t, c.RefreshToken)
	require.WithinDuration(t, time.Now().Add(60*24*time.Hour), c.ExpiresAt, time.Minute)

	res, err := b.a.Publish(ctx, c, platforms.Post{Text: "connected"})
	require.NoError(t, err)
	require.Equal(t, c.UserID, b.sim.Publications(platforms.LinkedIn)[0].Account)
	require.NotEmpty(t, res.Publication.ID)

	_, err = b.a.Exchange(ctx, code, "https://herald.example/callback", "")
	require.Equal(t, platforms.Permanent, kindOf(t, err), "codes are single use")

	b.sim.Deny(platforms.LinkedIn)
	loc = consent("st-2")
	require.Equal(t, "access_denied", loc.Query().Get("error"))
	require.Empty(t, loc.Query().Get("code"))
}

// A post carries its visibility, and each image its alt text.
func TestPublishWithOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img := fileMedia("image/jpeg", randomBytes(t, 2000), true)
	img.AltText = "Our team at the launch"
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "connections only", Media: []platforms.Media{img},
		Options: &platforms.LinkedInOptions{Visibility: "CONNECTIONS"}})
	require.NoError(t, err)
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "everyone"})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 2)
	require.Equal(t, map[string]any{"visibility": "CONNECTIONS"}, pubs[0].Options)
	require.Equal(t, []string{"Our team at the launch"}, pubs[0].AltTexts)
	require.Equal(t, map[string]any{"visibility": "PUBLIC"}, pubs[1].Options)
}

// A post buried under more of the account's posts than Lookup reads is neither found nor reported
// absent (platformstest.BuriedLookup).
func TestLookupThatDoesNotReachBackIsIncomplete(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{LimitScale: 1000})
	platformstest.BuriedLookup(t, b.a, b.creds, lookupPages*lookupPageSize)
}
