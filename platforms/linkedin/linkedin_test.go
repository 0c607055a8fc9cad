package linkedin

import (
	"context"
	"encoding/json"
	"errors"
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
)

type testBundle struct {
	sim   *sim.Server
	a     *Adapter
	creds platforms.Credentials
}

func setup(t *testing.T, opts sim.Options) *testBundle {
	t.Helper()
	srv, err := sim.Start("127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg := srv.AdapterConfig(platforms.LinkedIn)
	cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	creds, err := srv.NewAccount(platforms.LinkedIn, "alice")
	require.NoError(t, err)
	return &testBundle{sim: srv, a: New(cfg), creds: creds}
}

func fileMedia(ct string, data []byte, knownSize bool) platforms.Media {
	return platformstest.Media("m", ct, "f", data, knownSize)
}

func randomBytes(t *testing.T, n int) []byte { return platformstest.RandomBytes(t, n) }

func sha(b []byte) string { return platformstest.SHA256(b) }

func kindOf(t *testing.T, err error) platforms.Kind {
	return platformstest.KindOf(t, err, platforms.LinkedIn)
}

func requests(t *testing.T, s *sim.Server) []sim.RequestLog {
	t.Helper()
	resp, err := http.Get(s.BaseURL() + "/_sim/requests?platform=" + string(platforms.LinkedIn))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Data []sim.RequestLog `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Data
}

func TestValidate(t *testing.T) {
	t.Parallel()
	a := New(platforms.Config{})
	img := fileMedia("image/png", []byte("x"), true)
	vid := fileMedia("video/mp4", []byte("x"), true)
	var twenty, twentyOne []platforms.Media
	for i := 0; i < 21; i++ {
		twentyOne = append(twentyOne, img)
	}
	twenty = twentyOne[:20]
	for name, tc := range map[string]struct {
		post platforms.Post
		ok   bool
	}{
		"text":            {platforms.Post{Text: "hi"}, true},
		"3000 characters": {platforms.Post{Text: strings.Repeat("é", 3000)}, true},
		"3001 characters": {platforms.Post{Text: strings.Repeat("a", 3001)}, false},
		"empty":           {platforms.Post{}, false},
		"twenty images":   {platforms.Post{Media: twenty}, true},
		"21 images":       {platforms.Post{Media: twentyOne}, false},
		"video":           {platforms.Post{Media: []platforms.Media{vid}}, true},
		"video and image": {platforms.Post{Media: []platforms.Media{vid, img}}, false},
		"quicktime":       {platforms.Post{Media: []platforms.Media{fileMedia("video/quicktime", nil, false)}}, false},
	} {
		err := a.Validate(tc.post)
		if tc.ok {
			require.NoError(t, err, name)
			continue
		}
		require.Equal(t, platforms.Invalid, kindOf(t, err), name)
	}
	require.Contains(t, a.Validate(platforms.Post{Text: strings.Repeat("a", 3001)}).Error(), "text is 3001 characters; LinkedIn allows 3000")
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
	for _, l := range requests(t, b.sim) {
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
	for _, l := range requests(t, b.sim) {
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

func TestPublishVideoProcessingFails(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	video := append([]byte(sim.ProcessingFailureMarker), randomBytes(t, 100)...)
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "bad clip", Media: []platforms.Media{fileMedia("video/mp4", video, true)}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Empty(t, b.sim.Publications(platforms.LinkedIn))
}

func TestRefreshAndRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.sim.InjectFault(platforms.LinkedIn, sim.FaultExpireTokens, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "after expiry"})
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	var e *platforms.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, "65600", e.Code)

	fresh, err := b.a.Refresh(ctx, b.creds)
	require.NoError(t, err)
	require.NotEqual(t, b.creds.AccessToken, fresh.AccessToken)
	require.Equal(t, b.creds.RefreshToken, fresh.RefreshToken, "LinkedIn does not rotate refresh tokens")
	require.WithinDuration(t, b.creds.RefreshExpiresAt, fresh.RefreshExpiresAt, 2*time.Second, "the refresh token keeps its fixed lifetime")
	require.WithinDuration(t, time.Now().Add(60*24*time.Hour), fresh.ExpiresAt, time.Minute)

	_, err = b.a.Publish(ctx, fresh, platforms.Post{Text: "after expiry"})
	require.NoError(t, err)
	require.Len(t, b.sim.Publications(platforms.LinkedIn), 1)

	c := b.creds
	c.RefreshToken = ""
	_, err = b.a.Refresh(ctx, c)
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	c.RefreshToken = "sim_rt_unknown"
	_, err = b.a.Refresh(ctx, c)
	require.Equal(t, platforms.Permanent, kindOf(t, err))
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	midnight := nextMidnight(time.Now())
	require.NoError(t, b.sim.InjectFault(platforms.LinkedIn, sim.FaultRateLimit, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "limited"})
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	var e *platforms.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, midnight, e.ResetAt, "LinkedIn's daily limits reset at 00:00 UTC")

	b.sim.SetLimit(platforms.LinkedIn, "posts", sim.Limit{Count: 1, Window: 24 * time.Hour})
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "one"})
	require.NoError(t, err)
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "two"})
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	require.True(t, errors.As(err, &e))
	require.Equal(t, midnight, e.ResetAt)
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.sim.InjectFault(platforms.LinkedIn, sim.FaultError5xx, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "text only"})
	require.Equal(t, platforms.Unknown, kindOf(t, err))

	require.NoError(t, b.sim.InjectFault(platforms.LinkedIn, sim.FaultError5xx, 1))
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "with image", Media: []platforms.Media{fileMedia("image/png", []byte("png"), true)}})
	require.Equal(t, platforms.Transient, kindOf(t, err))
	require.Empty(t, b.sim.Publications(platforms.LinkedIn))
}

func TestPostThenErrorThenLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now()
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "earlier (post)"})
	require.NoError(t, err)
	post := platforms.Post{Text: "did this go out? (really) #maybe"}
	require.NoError(t, b.sim.InjectFault(platforms.LinkedIn, sim.FaultPostThenError, 1))
	_, err = b.a.Publish(ctx, b.creds, post)
	require.Equal(t, platforms.Unknown, kindOf(t, err))

	pub, found, err := b.a.Lookup(ctx, b.creds, post, since)
	require.NoError(t, err)
	require.True(t, found)
	var matches int
	for _, r := range b.sim.Publications(platforms.LinkedIn) {
		if r.Text == post.Text {
			matches++
			require.Equal(t, r.ID, pub.ID)
		}
	}
	require.Equal(t, 1, matches)

	_, found, err = b.a.Lookup(ctx, b.creds, platforms.Post{Text: "never posted"}, since)
	require.NoError(t, err)
	require.False(t, found)
	_, found, err = b.a.Lookup(ctx, b.creds, post, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.False(t, found)
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{TimeoutHold: 2 * time.Second})
	b.a.hc = &http.Client{Timeout: 200 * time.Millisecond}
	ctx := context.Background()
	require.NoError(t, b.sim.InjectFault(platforms.LinkedIn, sim.FaultTimeout, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "slow"})
	require.Equal(t, platforms.Unknown, kindOf(t, err))

	require.NoError(t, b.sim.InjectFault(platforms.LinkedIn, sim.FaultTimeout, 1))
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "slow upload", Media: []platforms.Media{fileMedia("image/png", []byte("png"), true)}})
	require.Equal(t, platforms.Transient, kindOf(t, err))
}

func TestGarbageAnswers(t *testing.T) {
	t.Parallel()
	creds := platforms.Credentials{AccessToken: "t", UserID: "1"}
	for name, tc := range map[string]struct {
		status int
		header map[string]string
		body   string
		want   platforms.Kind
	}{
		"201 without x-restli-id": {201, nil, "", platforms.Unknown},
		"200 with an error":       {200, nil, `{"status":403,"serviceErrorCode":100,"message":"denied"}`, platforms.Permanent},
		"401":                     {401, nil, `{"status":401,"serviceErrorCode":65600,"message":"Invalid access token"}`, platforms.AuthExpired},
		"422":                     {422, nil, `{"status":422,"message":"/commentary :: too long"}`, platforms.Permanent},
		"426":                     {426, nil, `{"status":426,"code":"NONEXISTENT_VERSION","message":"Requested version 202001 is not active"}`, platforms.Permanent},
		"html 504":                {504, nil, "<html>gateway</html>", platforms.Unknown},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		a := New(platforms.Config{BaseURL: srv.URL})
		_, err := a.Publish(context.Background(), creds, platforms.Post{Text: "x"})
		require.Equal(t, tc.want, kindOf(t, err), name)
		srv.Close()
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/rest/posts" && r.Method == http.MethodGet {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"status":403,"serviceErrorCode":100,"code":"ACCESS_DENIED","message":"Not enough permissions"}`))
			return
		}
		_, _ = w.Write([]byte("not json"))
	}))
	defer srv.Close()
	a := New(platforms.Config{BaseURL: srv.URL, AuthURL: srv.URL})
	_, err := a.Publish(context.Background(), creds, platforms.Post{Media: []platforms.Media{fileMedia("image/png", []byte("p"), true)}})
	require.Equal(t, platforms.Transient, kindOf(t, err))
	_, err = a.Refresh(context.Background(), platforms.Credentials{RefreshToken: "r"})
	require.Equal(t, platforms.Transient, kindOf(t, err))
	_, _, err = a.Lookup(context.Background(), creds, platforms.Post{Text: "x"}, time.Now())
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.ErrorIs(t, err, platforms.ErrLookupUnsupported)
}

func TestRetiredVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.a.Version = "202301"
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "old version"})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	var e *platforms.Error
	require.True(t, errors.As(err, &e))
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

func TestRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.a.Revoke(ctx, b.creds))
	revs := b.sim.Revocations()
	require.Len(t, revs, 1)
	require.Equal(t, string(platforms.LinkedIn), revs[0].Platform)
	require.Equal(t, b.creds.UserID, revs[0].Account)
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "after revoke"})
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	var e *platforms.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, "65601", e.Code)
}
