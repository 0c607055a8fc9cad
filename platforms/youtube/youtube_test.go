package youtube

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
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
}

func setup(t *testing.T, opts sim.Options) *testBundle {
	t.Helper()
	srv, cfg := platformstest.Start(t, platforms.YouTube, opts)
	return &testBundle{srv: srv, a: New(cfg), creds: alice(t, srv, nil)}
}

// alice is the simulator's account alice.
func alice(t *testing.T, srv *sim.Server, _ platforms.Adapter) platforms.Credentials {
	t.Helper()
	creds, err := srv.NewAccount(platforms.YouTube, "alice")
	require.NoError(t, err)
	return creds
}

func randomBytes(t *testing.T, n int) []byte { return platformstest.RandomBytes(t, n) }

func videoMedia(data []byte) platforms.Media {
	return platforms.Media{
		ID: "m1", ContentType: "video/mp4", Size: int64(len(data)), Filename: "clip.mp4",
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

func sha(data []byte) string { return platformstest.SHA256(data) }

func kindOf(t *testing.T, err error) platforms.Kind {
	return platformstest.KindOf(t, err, platforms.YouTube)
}

func TestPublishChunkedVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.a.chunkSize = chunkGranule
	data := randomBytes(t, 2*chunkGranule+12345)
	text := "Launch day\nEverything we shipped this week, in one video."
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text, Media: []platforms.Media{videoMedia(data)}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Publication.ID)
	require.Equal(t, "https://www.youtube.com/watch?v="+res.Publication.ID, res.Publication.URL)

	recs := b.srv.Publications(platforms.YouTube)
	require.Len(t, recs, 1)
	require.Equal(t, res.Publication.ID, recs[0].ID)
	require.Equal(t, b.creds.UserID, recs[0].Account)
	require.Equal(t, text, recs[0].Text)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)

	puts := 0
	for _, l := range platformstest.Requests(t, b.srv, platforms.YouTube) {
		if l.Method == http.MethodPut {
			puts++
			require.NotEmpty(t, l.Headers["Content-Range"])
		}
	}
	require.Equal(t, 3, puts, "three chunks of at most 256 KiB")
}

func TestPublishWholeFileOfUnknownSize(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	data := randomBytes(t, 70000)
	m := videoMedia(data)
	m.Size = 0
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Short clip", Media: []platforms.Media{m}})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.YouTube)
	require.Len(t, recs, 1)
	require.Equal(t, res.Publication.ID, recs[0].ID)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	vid := videoMedia([]byte("x"))
	img := platforms.Media{ContentType: "image/png", Filename: "a.png"}
	video := func(text string) platformstest.PostFunc {
		return func(*testing.T) platforms.Post {
			return platforms.Post{Text: text, Media: []platforms.Media{videoMedia([]byte("abc"))}}
		}
	}
	data := randomBytes(t, 5000)
	lookupVideo := func(text string) platformstest.PostFunc {
		return func(*testing.T) platforms.Post {
			return platforms.Post{Text: text, Media: []platforms.Media{videoMedia(data)}}
		}
	}
	fake := platforms.Credentials{AccessToken: "t"}
	fakePost := platforms.Post{Text: "Garbage", Media: []platforms.Media{videoMedia([]byte("abc"))}}
	platformstest.Run(t, platformstest.Adapter{
		Platform:   platforms.YouTube,
		New:        func(cfg platforms.Config) platforms.Adapter { return New(cfg) },
		Account:    alice,
		FakeConfig: func(url string) platforms.Config { return platforms.Config{BaseURL: url, UploadURL: url} },
		FakeCreds:  fake,
		FakePost:   fakePost,
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "opening the session", Post: video("Outage"), Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 50 * time.Millisecond, ClientTimeout: 2 * time.Second, Steps: []platformstest.Step{
			{Name: "opening the session creates nothing", Post: video("Slow"), Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Answers: []platformstest.Answer{
				// A session answer without a session URL: nothing was created.
				{Status: 200, Body: "<html>hello</html>", Want: platforms.Transient},
			},
			Checks: []platformstest.Check{
				{
					Name: "a garbage answer to the last chunk: the video may exist",
					Serve: func(base string) http.Handler {
						return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
							if r.Method == http.MethodPost {
								w.Header().Set("Location", base+"/session")
								w.WriteHeader(http.StatusOK)
								return
							}
							w.WriteHeader(http.StatusOK)
							_, _ = w.Write([]byte(`{"error":{"code":200,"message":"odd"}}`))
						})
					},
					Want: []platforms.Kind{platforms.Unknown},
					Call: func(ctx context.Context, a platforms.Adapter) error {
						_, err := a.Publish(ctx, fake, fakePost)
						return err
					},
				},
				{
					Name: "a 200 error body from the token endpoint is not a token",
					Serve: func(string) http.Handler {
						return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
							w.Header().Set("Content-Type", "application/json")
							_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Bad Request"}`))
						})
					},
					Want: []platforms.Kind{platforms.Permanent},
					Call: func(ctx context.Context, a platforms.Adapter) error {
						_, err := a.Refresh(ctx, platforms.Credentials{RefreshToken: "r"})
						return err
					},
				},
			},
		},
		PostThenError: platformstest.Lookup{
			Others:  []platformstest.PostFunc{lookupVideo("Maybe posted\nA different description.")},
			Post:    lookupVideo("Maybe posted\nThe answer to this upload is lost."),
			Missing: lookupVideo("Never posted"),
		},
		Refresh: platformstest.Refresh{
			Post: func(t *testing.T) platforms.Post {
				return platforms.Post{Text: "After refresh", Media: []platforms.Media{videoMedia(randomBytes(t, 1000))}}
			},
			ExpireAll: true,
			Old:       platformstest.OldRefreshWorks,
			Refused: func(platforms.Credentials) []platforms.Credentials {
				return []platforms.Credentials{{RefreshToken: "sim_rt_unknown"}}
			},
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "no media", Post: platforms.Post{Text: "Hello"}, Contains: "needs a video"},
			{Name: "two videos", Post: platforms.Post{Text: "Hello", Media: []platforms.Media{vid, vid}}, Contains: "exactly one video"},
			{Name: "image", Post: platforms.Post{Text: "Hello", Media: []platforms.Media{img}}, Contains: "videos only"},
			{Name: "empty title", Post: platforms.Post{Text: "\nbody", Media: []platforms.Media{vid}}, Contains: "needs a title"},
			{Name: "long title", Post: platforms.Post{Text: strings.Repeat("é", 101), Media: []platforms.Media{vid}}, Contains: "101 characters"},
			{Name: "long description", Post: platforms.Post{Text: "Title\n" + strings.Repeat("é", 2500), Media: []platforms.Media{vid}}, Contains: "5006 bytes"},
			{Name: "angle brackets", Post: platforms.Post{Text: "Title\n<b>bold</b>", Media: []platforms.Media{vid}}, Contains: "< or >"},
			{Name: "huge video", Post: platforms.Post{Text: "Title", Media: []platforms.Media{{ContentType: "video/mp4", Size: MaxVideoBytes + 1}}}, Contains: "256 GB"},
			{Name: "longest title and description", Post: platforms.Post{Text: strings.Repeat("é", 100) + "\n" + strings.Repeat("a", 4000), Media: []platforms.Media{vid}}, OK: true},
		}},
		Revoke:       platformstest.Revoke{Post: video("Revoked")},
		FirstComment: platformstest.FirstComment{Post: video("Commented")},
		RateLimit: platformstest.RateLimit{
			Post:    video("Limited"),
			Code:    "quotaExceeded",
			Reset:   platformstest.Within{Max: 25 * time.Hour},
			ResetAt: QuotaReset,
			// Room for one insert (1,600 units) and a few videos.list calls (1 unit each).
			Window: sim.YouTubeBucketUnits,
			Limit:  sim.Limit{Count: 1700, Window: 25 * time.Hour},
			More: func(t *testing.T, _ *sim.Server, _ platforms.Adapter, _ platforms.Credentials) {
				require.Zero(t, QuotaReset(time.Now()).In(pacific).Hour())
			},
		},
		ProcessingFails: platformstest.ProcessingFails{Contains: "could not process", Kept: true, Post: func(t *testing.T) platforms.Post {
			return platforms.Post{Text: "Broken file", Media: []platforms.Media{videoMedia(platformstest.FailingVideo(t))}}
		}},
	})
}

// flaky is a transport that sabotages one chosen call.
type flaky struct {
	base http.RoundTripper
	// fail decides for each request whether to drop it before sending (before) or to drop its
	// answer after the server handled it (after).
	fail func(r *http.Request) (before, after bool)
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	before, after := f.fail(r)
	if before {
		return nil, errors.New("connection reset before sending")
	}
	resp, err := f.base.RoundTrip(r)
	if err == nil && after {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset after sending")
	}
	return resp, err
}

func TestResumeAfterFailedChunk(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.a.chunkSize = chunkGranule
	var dropped atomic.Int32
	b.a.hc = &http.Client{Timeout: 5 * time.Second, Transport: &flaky{base: http.DefaultTransport, fail: func(r *http.Request) (bool, bool) {
		if r.Method == http.MethodPut && strings.HasPrefix(r.Header.Get("Content-Range"), "bytes 262144-") && dropped.Add(1) == 1 {
			return true, false
		}
		return false, false
	}}}
	data := randomBytes(t, 3*chunkGranule)
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Resumed", Media: []platforms.Media{videoMedia(data)}})
	require.NoError(t, err)
	require.EqualValues(t, 2, dropped.Load(), "the second chunk was sent again after a status query")
	recs := b.srv.Publications(platforms.YouTube)
	require.Len(t, recs, 1)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
}

func TestLostAnswerToLastChunkIsUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	since := time.Now()
	b.a.hc = &http.Client{Timeout: 5 * time.Second, Transport: &flaky{base: http.DefaultTransport, fail: func(r *http.Request) (bool, bool) {
		return false, r.Method == http.MethodPut
	}}}
	post := platforms.Post{Text: "Lost answer", Media: []platforms.Media{videoMedia([]byte("abcdef"))}}
	_, err := b.a.Publish(context.Background(), b.creds, post)
	require.Equal(t, platforms.Unknown, kindOf(t, err))
	b.a.hc = &http.Client{Timeout: 5 * time.Second}
	pub, found, err := b.a.Lookup(context.Background(), b.creds, post, since)
	require.NoError(t, err)
	require.True(t, found)
	recs := b.srv.Publications(platforms.YouTube)
	require.Len(t, recs, 1)
	require.Equal(t, recs[0].ID, pub.ID)
}

func TestConnect(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	require.True(t, b.a.UsesPKCE())
	verifier, challenge := platformstest.PKCE(t)
	redirect := "http://127.0.0.1:1/callback"
	authURL := b.a.AuthorizeURL("st4te", redirect, challenge)
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	require.Equal(t, "/youtube/o/oauth2/v2/auth", u.Path)
	require.Equal(t, "offline", u.Query().Get("access_type"))
	require.Equal(t, "S256", u.Query().Get("code_challenge_method"))

	q := platformstest.Consent(t, authURL+"&login_hint=bob@example.com", redirect).Query()
	require.Equal(t, "st4te", q.Get("state"))
	code := q.Get("code")
	require.NotEmpty(t, code)

	_, err = b.a.Exchange(context.Background(), code, redirect, "wrong-verifier")
	require.Equal(t, platforms.Permanent, kindOf(t, err))

	q = platformstest.Consent(t, authURL+"&login_hint=bob@example.com", redirect).Query()
	creds, err := b.a.Exchange(context.Background(), q.Get("code"), redirect, verifier)
	require.NoError(t, err)
	bob, err := b.srv.NewAccount(platforms.YouTube, "bob")
	require.NoError(t, err)
	require.Equal(t, bob.UserID, creds.UserID)
	require.Equal(t, "@bob", creds.Handle)
	require.NotEmpty(t, creds.RefreshToken)
	require.True(t, creds.ExpiresAt.After(time.Now()))

	_, err = b.a.Exchange(context.Background(), q.Get("code"), redirect, verifier)
	require.Equal(t, platforms.Permanent, kindOf(t, err), "codes are single-use")

	_, err = b.a.Publish(context.Background(), creds, platforms.Post{Text: "Connected", Media: []platforms.Media{videoMedia([]byte("abc"))}})
	require.NoError(t, err)
	require.Equal(t, creds.UserID, b.srv.Publications(platforms.YouTube)[0].Account)

	b.srv.Deny(platforms.YouTube)
	q = platformstest.Consent(t, authURL, redirect).Query()
	require.Equal(t, "access_denied", q.Get("error"))
	require.Equal(t, "st4te", q.Get("state"))
}

// The upload carries the title, privacy, audience, category and tags its options give, the
// subscribers are notified or not as asked, and the video is added to the chosen playlist; the
// channel's categories and playlists are read as its choices.
func TestPublishWithOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ch, err := b.a.Choices(context.Background(), b.creds)
	require.NoError(t, err)
	require.Contains(t, ch.Categories, platforms.Choice{ID: "27", Name: "Education"})
	require.Len(t, ch.Playlists, 2)
	kids, notify := false, false
	opts := &platforms.YouTubeOptions{Title: "Studio tour", PrivacyStatus: "unlisted", MadeForKids: &kids, CategoryID: "27", Tags: []string{"studio", "tour"},
		PlaylistID: ch.Playlists[1].ID, NotifySubscribers: &notify}
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "A walk through the studio\nMore below.", Media: []platforms.Media{videoMedia([]byte("video"))}, Options: opts})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.YouTube)
	require.Len(t, recs, 1)
	require.Equal(t, map[string]any{"title": "Studio tour", "privacyStatus": "unlisted", "selfDeclaredMadeForKids": false, "categoryId": "27",
		"tags": []string{"studio", "tour"}, "notifySubscribers": false, "playlistId": ch.Playlists[1].ID}, recs[0].Options)

	// Without options: the text's first line is the title, public, category 22.
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "First line\nsecond", Media: []platforms.Media{videoMedia([]byte("video 2"))}})
	require.NoError(t, err)
	recs = b.srv.Publications(platforms.YouTube)
	require.Equal(t, map[string]any{"title": "First line", "privacyStatus": "public", "categoryId": "22", "notifySubscribers": true}, recs[1].Options)

	// A category YouTube does not offer is refused by it.
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "x", Media: []platforms.Media{videoMedia([]byte("video 3"))}, Options: &platforms.YouTubeOptions{CategoryID: "99"}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
}
