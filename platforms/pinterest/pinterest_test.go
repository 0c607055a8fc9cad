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
	srv, cfg := platformstest.Start(t, platforms.Pinterest, opts)
	b := &testBundle{srv: srv, a: New(cfg), files: newMediaServer(t)}
	b.creds = connect(t, b.a, "alice")
	return b
}

// connect runs the OAuth flow for handle.
func connect(t *testing.T, a *Adapter, handle string) platforms.Credentials {
	t.Helper()
	redirect := "http://127.0.0.1:1/callback"
	q := platformstest.Consent(t, a.AuthorizeURL("st4te", redirect, "")+"&login_hint="+handle, redirect).Query()
	require.Equal(t, "st4te", q.Get("state"))
	c, err := a.Exchange(context.Background(), q.Get("code"), redirect, "")
	require.NoError(t, err)
	return c
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
	q := platformstest.Consent(t, b.a.AuthorizeURL("s", redirect, ""), redirect).Query()
	_, err = b.a.Exchange(context.Background(), q.Get("code"), redirect, "")
	require.NoError(t, err)
	_, err = b.a.Exchange(context.Background(), q.Get("code"), redirect, "")
	require.Equal(t, platforms.Permanent, kindOf(t, err), "codes are single-use")

	b.srv.Deny(platforms.Pinterest)
	q = platformstest.Consent(t, b.a.AuthorizeURL("s", redirect, ""), redirect).Query()
	require.Equal(t, "access_denied", q.Get("error"))
}

func TestPublishImageURL(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img, data := b.files.image(t, "a.png")
	text := "Spring collection\nTen new prints, all handmade."
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text, Media: []platforms.Media{img}, Options: onBoard(b.creds)})
	require.NoError(t, err)
	require.Equal(t, "https://www.pinterest.com/pin/"+res.Publication.ID+"/", res.Publication.URL)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, res.Publication.ID, recs[0].ID)
	require.Equal(t, text, recs[0].Text)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
}

func TestPublishImageBase64(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	data := randomBytes(t, 5000)
	creds := b.creds
	res, err := b.a.Publish(context.Background(), creds, platforms.Post{Text: "No URL", Media: []platforms.Media{fileMedia("image/jpeg", "b.jpg", data)}, Options: onBoard(creds)})
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
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Three prints", Media: media, Options: onBoard(b.creds)})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, want, recs[0].MediaSHA256)
}

func TestPublishVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{ProcessingDelay: 30 * time.Millisecond})
	data := randomBytes(t, 300000)
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Studio tour", Media: []platforms.Media{fileMedia("video/mp4", "tour.mp4", data)}, Options: onBoard(b.creds)})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, res.Publication.ID, recs[0].ID)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
}

func TestUnreachableImageURL(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img, _ := b.files.image(t, "gone.png")
	img.URL = b.files.URL + "/missing.png"
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Gone", Media: []platforms.Media{img}, Options: onBoard(b.creds)})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Contains(t, err.Error(), "could not fetch")
	require.Empty(t, b.srv.Publications(platforms.Pinterest))
}

func TestConformance(t *testing.T) {
	t.Parallel()
	png := platforms.Media{ContentType: "image/png", Filename: "a.png", URL: "https://example.com/a.png"}
	local := platforms.Media{ContentType: "image/png", Filename: "a.png"}
	webp := platforms.Media{ContentType: "image/webp", Filename: "a.webp"}
	vid := platforms.Media{ContentType: "video/mp4", Filename: "a.mp4"}
	// pin is a post with an image served at a public URL for the test's duration.
	pin := func(text string) platformstest.PostFunc {
		return func(t *testing.T) platforms.Post {
			img, _ := newMediaServer(t).image(t, "p.png")
			return platforms.Post{Text: text, Media: []platforms.Media{img}}
		}
	}
	fake := platforms.Credentials{AccessToken: "t", Extra: map[string]string{"board_id": "1"}}
	answer := func(body string) func(string) http.Handler {
		return func(string) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(body))
			})
		}
	}
	refresh := func(ctx context.Context, a platforms.Adapter) error {
		_, err := a.Refresh(ctx, platforms.Credentials{RefreshToken: "r"})
		return err
	}
	platformstest.Run(t, platformstest.Adapter{
		PostOptions: func(c platforms.Credentials) platforms.Options { return onBoard(c) },
		Platform:    platforms.Pinterest,
		New:         func(cfg platforms.Config) platforms.Adapter { return New(cfg) },
		Account: func(t *testing.T, _ *sim.Server, a platforms.Adapter) platforms.Credentials {
			return connect(t, a.(*Adapter), "alice")
		},
		FakeCreds: fake,
		FakePost:  platforms.Post{Text: "Garbage", Media: []platforms.Media{png}, Options: onBoard(fake)},
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "a 5xx to POST /v5/pins may hide a Pin", Post: pin("Outage"), Want: platforms.Unknown},
			{Name: "a 5xx before the Pin call (registering a video) can be retried", Want: platforms.Transient, Post: func(*testing.T) platforms.Post {
				return platforms.Post{Text: "Video", Media: []platforms.Media{fileMedia("video/mp4", "v.mp4", []byte("video"))}}
			}},
		}},
		Timeout: platformstest.Faults{Hold: 50 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "the Pin call was sent and never answered", Post: pin("Slow"), Want: platforms.Unknown},
		}},
		Garbage: platformstest.Garbage{
			Answers: []platformstest.Answer{
				{Status: 200, Body: "<html>oops</html>", Want: platforms.Unknown},
				{Status: 200, Body: `{"code":3,"message":"odd"}`, Want: platforms.Unknown},
			},
			Checks: []platformstest.Check{
				{Name: "refresh, html", Serve: answer("<html>oops</html>"), Call: refresh, Want: []platforms.Kind{platforms.Permanent, platforms.Transient}},
				{Name: "refresh, error body", Serve: answer(`{"code":3,"message":"odd"}`), Call: refresh, Want: []platforms.Kind{platforms.Permanent, platforms.Transient}},
				{Name: "lookup, html", Serve: answer("<html>oops</html>"), Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, _, err := a.Lookup(ctx, fake, platforms.Post{Text: "Garbage", Media: []platforms.Media{png}}, time.Now())
					return err
				}},
			},
		},
		PostThenError: platformstest.Lookup{
			Others:  []platformstest.PostFunc{pin("Another Pin")},
			Post:    pin("Maybe pinned\nThe answer is lost."),
			Missing: pin("Never pinned"),
			Another: func(t *testing.T, _ *sim.Server, a platforms.Adapter) platforms.Credentials {
				return connect(t, a.(*Adapter), "bob")
			},
		},
		Refresh: platformstest.Refresh{
			Post:      pin("After refresh"),
			ExpireAll: true,
			Rotates:   true,
			Old:       platformstest.OldRefreshRefused,
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "no media", Post: platforms.Post{Text: "Hi"}, Contains: "needs an image or a video"},
			{Name: "long description", Post: platforms.Post{Text: strings.Repeat("é", 801), Media: []platforms.Media{png}}, Contains: "801 characters"},
			{Name: "six images", Post: platforms.Post{Media: []platforms.Media{png, png, png, png, png, png}}, Contains: "2 to 5"},
			{Name: "image and video", Post: platforms.Post{Media: []platforms.Media{png, vid}}, Contains: "a video goes alone"},
			{Name: "carousel without URLs", Post: platforms.Post{Media: []platforms.Media{png, local}}, Contains: "public URL"},
			{Name: "webp without URL", Post: platforms.Post{Media: []platforms.Media{webp}}, Contains: "JPEG or PNG"},
			{Name: "pdf", Post: platforms.Post{Media: []platforms.Media{{ContentType: "application/pdf", Filename: "a.pdf"}}}, Contains: "application/pdf"},
			{Name: "webm", Post: platforms.Post{Media: []platforms.Media{{ContentType: "video/webm", Filename: "a.webm"}}}, Contains: "MP4, MOV or M4V"},
			{Name: "big image", Post: platforms.Post{Media: []platforms.Media{{ContentType: "image/png", Filename: "b.png", Size: MaxImageBytes + 1}}}, Contains: "20 MB"},
			{Name: "800 characters", Post: platforms.Post{Text: strings.Repeat("é", 800), Media: []platforms.Media{local}}, OK: true},
			{Name: "video", Post: platforms.Post{Media: []platforms.Media{vid}}, OK: true},
		}},
		// Pinterest offers no token revocation endpoint.
		Revoke: platformstest.Revoke{NoOp: true},
		RateLimit: platformstest.RateLimit{
			Post:   pin("Limited"),
			Reset:  platformstest.Within{Max: 2 * time.Minute},
			Window: "org_write",
			Limit:  sim.Limit{Count: 1, Window: time.Hour},
		},
		ProcessingFails: platformstest.ProcessingFails{Post: func(t *testing.T) platforms.Post {
			return platforms.Post{Text: "Broken", Media: []platforms.Media{fileMedia("video/mp4", "bad.mp4", platformstest.FailingVideo(t))}}
		}},
	})
}

func TestTitle(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Short first line", Title("Short first line\nbody"))
	require.Empty(t, Title(strings.Repeat("a", 101)))
}

// onBoard is the options of a Pin to the board the account's connection chose.
func onBoard(c platforms.Credentials) *platforms.PinterestOptions {
	return &platforms.PinterestOptions{BoardID: c.Extra["board_id"]}
}

// A Pin goes to the board, with the title, link and alt text, its options and media give; without
// a board nothing is sent; the account's boards are read as its choices.
func TestPublishWithOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ch, err := b.a.Choices(context.Background(), b.creds)
	require.NoError(t, err)
	require.Len(t, ch.Boards, 2)
	require.Equal(t, []string{"Herald", "Ideas"}, []string{ch.Boards[0].Name, ch.Boards[1].Name})
	img, _ := b.files.image(t, "o.png")
	img.AltText = "Three prints on a wall"
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Prints", Media: []platforms.Media{img},
		Options: &platforms.PinterestOptions{BoardID: ch.Boards[1].ID, Title: "New prints", Link: "https://example.com/prints"}})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.Pinterest)
	require.Len(t, recs, 1)
	require.Equal(t, map[string]any{"board_id": ch.Boards[1].ID, "title": "New prints", "link": "https://example.com/prints"}, recs[0].Options)
	require.Equal(t, []string{"Three prints on a wall"}, recs[0].AltTexts)

	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Nowhere", Media: []platforms.Media{img}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Not mine", Media: []platforms.Media{img}, Options: &platforms.PinterestOptions{BoardID: "123456"}})
	require.Equal(t, platforms.Permanent, kindOf(t, err), "a board that is not the account's is refused by Pinterest")
	require.Len(t, b.srv.Publications(platforms.Pinterest), 1)
}
