package pinterest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

type testBundle struct {
	srv   *sim.Server
	a     *Adapter
	creds platforms.Credentials
	files *mediaServer
}

// mediaServer serves media files at public URLs, as Herald's signed S3 URLs do.
type mediaServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

func newMediaServer(t *testing.T) *mediaServer {
	m := &mediaServer{files: map[string][]byte{}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		data, ok := m.files[r.URL.Path]
		m.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(data)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mediaServer) image(t *testing.T, name string) (platforms.Media, []byte) {
	data := randomBytes(t, 3000)
	m.mu.Lock()
	m.files["/"+name] = data
	m.mu.Unlock()
	media := fileMedia("image/png", name, data)
	media.URL = m.URL + "/" + name
	return media, data
}

func setup(t *testing.T, opts sim.Options) *testBundle {
	t.Helper()
	srv, err := sim.Start("127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg := srv.AdapterConfig(platforms.Pinterest)
	cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	b := &testBundle{srv: srv, a: New(cfg), files: newMediaServer(t)}
	b.creds = connect(t, b.a, "alice")
	return b
}

// connect runs the OAuth flow for handle.
func connect(t *testing.T, a *Adapter, handle string) platforms.Credentials {
	t.Helper()
	redirect := "http://127.0.0.1:1/callback"
	q := consent(t, a.AuthorizeURL("st4te", redirect, "")+"&login_hint="+handle)
	require.Equal(t, "st4te", q.Get("state"))
	c, err := a.Exchange(context.Background(), q.Get("code"), redirect, "")
	require.NoError(t, err)
	return c
}

// consent follows the consent page once and returns the query of the redirect it answers with.
func consent(t *testing.T, authURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/callback", loc.Path)
	return loc.Query()
}

func randomBytes(t *testing.T, n int) []byte { return platformstest.RandomBytes(t, n) }

func fileMedia(ctype, name string, data []byte) platforms.Media {
	return platforms.Media{
		ID: name, ContentType: ctype, Size: int64(len(data)), Filename: name,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

func sha(data []byte) string { return platformstest.SHA256(data) }

func kindOf(t *testing.T, err error) platforms.Kind {
	return platformstest.KindOf(t, err, platforms.Pinterest)
}

func TestConnect(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	require.False(t, b.a.UsesPKCE())
	require.Equal(t, "alice", b.creds.UserID)
	require.Equal(t, "alice", b.creds.Handle)
	require.NotEmpty(t, b.creds.Extra["board_id"])
	require.Equal(t, "Herald", b.creds.Extra["board_name"])
	require.NotEmpty(t, b.creds.RefreshToken)
	require.True(t, b.creds.ExpiresAt.After(time.Now().Add(29*24*time.Hour)))
	require.True(t, b.creds.RefreshExpiresAt.After(b.creds.ExpiresAt))

	u, err := url.Parse(b.a.AuthorizeURL("s", "http://127.0.0.1:1/callback", "ignored"))
	require.NoError(t, err)
	require.Equal(t, "/pinterest/oauth/", u.Path)
	require.Empty(t, u.Query().Get("code_challenge"))

	redirect := "http://127.0.0.1:1/callback"
	q := consent(t, b.a.AuthorizeURL("s", redirect, ""))
	_, err = b.a.Exchange(context.Background(), q.Get("code"), redirect, "")
	require.NoError(t, err)
	_, err = b.a.Exchange(context.Background(), q.Get("code"), redirect, "")
	require.Equal(t, platforms.Permanent, kindOf(t, err), "codes are single-use")

	b.srv.Deny(platforms.Pinterest)
	q = consent(t, b.a.AuthorizeURL("s", redirect, ""))
	require.Equal(t, "access_denied", q.Get("error"))
}

func TestPublishImageURL(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img, data := b.files.image(t, "a.png")
	text := "Spring collection\nTen new prints, all handmade."
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text, Media: []platforms.Media{img}})
	require.NoError(t, err)
	require.Equal(t, "https://www.pinterest.com/pin/"+res.Publication.ID+"/", res.Publication.URL)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, res.Publication.ID, recs[0].ID)
	require.Equal(t, text, recs[0].Text)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
}

func TestPublishImageBase64WithoutBoardID(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	data := randomBytes(t, 5000)
	creds := b.creds
	creds.Extra = nil // the first board is looked up
	res, err := b.a.Publish(context.Background(), creds, platforms.Post{Text: "No URL", Media: []platforms.Media{fileMedia("image/jpeg", "b.jpg", data)}})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, res.Publication.ID, recs[0].ID)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
}

func TestPublishCarousel(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	var media []platforms.Media
	var want []string
	for _, n := range []string{"1.png", "2.png", "3.png"} {
		m, data := b.files.image(t, n)
		media = append(media, m)
		want = append(want, sha(data))
	}
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Three prints", Media: media})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, want, recs[0].MediaSHA256)
}

func TestPublishVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{ProcessingDelay: 30 * time.Millisecond})
	data := randomBytes(t, 300000)
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Studio tour", Media: []platforms.Media{fileMedia("video/mp4", "tour.mp4", data)}})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, res.Publication.ID, recs[0].ID)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)

	bad := append([]byte(sim.ProcessingFailureMarker), randomBytes(t, 100)...)
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Broken", Media: []platforms.Media{fileMedia("video/mp4", "bad.mp4", bad)}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Len(t, b.srv.Publications(platforms.Pinterest), 1)
}

func TestUnreachableImageURL(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img, _ := b.files.image(t, "gone.png")
	img.URL = b.files.URL + "/missing.png"
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Gone", Media: []platforms.Media{img}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Contains(t, err.Error(), "could not fetch")
	require.Empty(t, b.srv.Publications(platforms.Pinterest))
}

func TestValidate(t *testing.T) {
	t.Parallel()
	a := New(platforms.Config{})
	png := platforms.Media{ContentType: "image/png", Filename: "a.png", URL: "https://example.com/a.png"}
	local := platforms.Media{ContentType: "image/png", Filename: "a.png"}
	webp := platforms.Media{ContentType: "image/webp", Filename: "a.webp"}
	vid := platforms.Media{ContentType: "video/mp4", Filename: "a.mp4"}
	cases := []struct {
		name string
		post platforms.Post
		want string
	}{
		{"no media", platforms.Post{Text: "Hi"}, "needs an image or a video"},
		{"long description", platforms.Post{Text: strings.Repeat("é", 801), Media: []platforms.Media{png}}, "801 characters"},
		{"six images", platforms.Post{Media: []platforms.Media{png, png, png, png, png, png}}, "2 to 5"},
		{"image and video", platforms.Post{Media: []platforms.Media{png, vid}}, "not both"},
		{"carousel without URLs", platforms.Post{Media: []platforms.Media{png, local}}, "public URL"},
		{"webp without URL", platforms.Post{Media: []platforms.Media{webp}}, "JPEG or PNG"},
		{"pdf", platforms.Post{Media: []platforms.Media{{ContentType: "application/pdf", Filename: "a.pdf"}}}, "application/pdf"},
		{"webm", platforms.Post{Media: []platforms.Media{{ContentType: "video/webm", Filename: "a.webm"}}}, "MP4, MOV or M4V"},
		{"big image", platforms.Post{Media: []platforms.Media{{ContentType: "image/png", Filename: "b.png", Size: MaxImageBytes + 1}}}, "20 MB"},
	}
	for _, tc := range cases {
		err := a.Validate(tc.post)
		require.Equal(t, platforms.Invalid, kindOf(t, err), tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
	require.NoError(t, a.Validate(platforms.Post{Text: strings.Repeat("é", 800), Media: []platforms.Media{local}}))
	require.NoError(t, a.Validate(platforms.Post{Media: []platforms.Media{vid}}))

	require.Equal(t, "Short first line", Title("Short first line\nbody"))
	require.Empty(t, Title(strings.Repeat("a", 101)))
}

func TestRefreshAndRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img, _ := b.files.image(t, "r.png")
	post := platforms.Post{Text: "After refresh", Media: []platforms.Media{img}}
	require.NoError(t, b.srv.InjectFault(platforms.Pinterest, sim.FaultExpireTokens, 0))
	_, err := b.a.Publish(context.Background(), b.creds, post)
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))

	fresh, err := b.a.Refresh(context.Background(), b.creds)
	require.NoError(t, err)
	require.NotEqual(t, b.creds.AccessToken, fresh.AccessToken)
	require.NotEqual(t, b.creds.RefreshToken, fresh.RefreshToken, "Pinterest returns a new refresh token")
	require.Equal(t, b.creds.Extra, fresh.Extra)
	require.Equal(t, b.creds.UserID, fresh.UserID)

	_, err = b.a.Refresh(context.Background(), b.creds)
	require.Equal(t, platforms.Permanent, kindOf(t, err), "the old refresh token is retired")

	_, err = b.a.Publish(context.Background(), fresh, post)
	require.NoError(t, err)
	require.Len(t, b.srv.Publications(platforms.Pinterest), 1)
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img, _ := b.files.image(t, "l.png")
	post := platforms.Post{Text: "Limited", Media: []platforms.Media{img}}

	require.NoError(t, b.srv.InjectFault(platforms.Pinterest, sim.FaultRateLimit, 1))
	_, err := b.a.Publish(context.Background(), b.creds, post)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.True(t, e.ResetAt.After(time.Now()) && e.ResetAt.Before(time.Now().Add(2*time.Minute)))

	b.srv.SetLimit(platforms.Pinterest, "org_write", sim.Limit{Count: 1, Window: time.Hour})
	_, err = b.a.Publish(context.Background(), b.creds, post)
	require.NoError(t, err)
	_, err = b.a.Publish(context.Background(), b.creds, post)
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	require.Len(t, b.srv.Publications(platforms.Pinterest), 1)
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	since := time.Now()
	img, _ := b.files.image(t, "e.png")
	post := platforms.Post{Text: "Outage", Media: []platforms.Media{img}}
	require.NoError(t, b.srv.InjectFault(platforms.Pinterest, sim.FaultError5xx, 1))
	_, err := b.a.Publish(context.Background(), b.creds, post)
	require.Equal(t, platforms.Unknown, kindOf(t, err), "a 5xx to POST /v5/pins may hide a Pin")
	_, found, err := b.a.Lookup(context.Background(), b.creds, post, since)
	require.NoError(t, err)
	require.False(t, found, "this time it does not")

	// A 5xx before the Pin call (registering a video) can be retried.
	require.NoError(t, b.srv.InjectFault(platforms.Pinterest, sim.FaultError5xx, 1))
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Video", Media: []platforms.Media{fileMedia("video/mp4", "v.mp4", []byte("video"))}})
	require.Equal(t, platforms.Transient, kindOf(t, err))
	require.Empty(t, b.srv.Publications(platforms.Pinterest))
}

func TestPostThenErrorAndLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	since := time.Now()
	img, _ := b.files.image(t, "p.png")
	other := platforms.Post{Text: "Another Pin", Media: []platforms.Media{img}}
	post := platforms.Post{Text: "Maybe pinned\nThe answer is lost.", Media: []platforms.Media{img}}
	_, err := b.a.Publish(context.Background(), b.creds, other)
	require.NoError(t, err)
	require.NoError(t, b.srv.InjectFault(platforms.Pinterest, sim.FaultPostThenError, 1))
	_, err = b.a.Publish(context.Background(), b.creds, post)
	require.Equal(t, platforms.Unknown, kindOf(t, err))

	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 2)
	pub, found, err := b.a.Lookup(context.Background(), b.creds, post, since)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, recs[1].ID, pub.ID)

	_, found, err = b.a.Lookup(context.Background(), b.creds, post, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.False(t, found)
	bob := connect(t, b.a, "bob")
	_, found, err = b.a.Lookup(context.Background(), bob, post, since)
	require.NoError(t, err)
	require.False(t, found, "another account's Pins are not this one's")
}

func TestTimeoutFault(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{TimeoutHold: 50 * time.Millisecond})
	img, _ := b.files.image(t, "t.png")
	require.NoError(t, b.srv.InjectFault(platforms.Pinterest, sim.FaultTimeout, 1))
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Slow", Media: []platforms.Media{img}})
	require.Equal(t, platforms.Unknown, kindOf(t, err), "the Pin call was sent and never answered")
	require.Empty(t, b.srv.Publications(platforms.Pinterest))
}

func TestGarbageAnswers(t *testing.T) {
	t.Parallel()
	post := platforms.Post{Text: "Garbage", Media: []platforms.Media{{ContentType: "image/png", Filename: "a.png", URL: "https://example.com/a.png"}}}
	creds := platforms.Credentials{AccessToken: "t", Extra: map[string]string{"board_id": "1"}}
	for _, body := range []string{"<html>oops</html>", `{"code":3,"message":"odd"}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		a := New(platforms.Config{BaseURL: srv.URL})
		_, err := a.Publish(context.Background(), creds, post)
		require.Equal(t, platforms.Unknown, kindOf(t, err), body)
		_, err = a.Refresh(context.Background(), platforms.Credentials{RefreshToken: "r"})
		require.Contains(t, []platforms.Kind{platforms.Permanent, platforms.Transient}, kindOf(t, err), body)
		_, _, err = a.Lookup(context.Background(), creds, post, time.Now())
		if body[0] == '<' {
			require.Equal(t, platforms.Transient, kindOf(t, err))
		}
	}
}

func TestRevokeIsANoOp(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	require.NoError(t, b.a.Revoke(context.Background(), b.creds))
	require.Empty(t, b.srv.Revocations())
}
