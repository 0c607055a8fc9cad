package tiktok

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	srv, cfg := platformstest.Start(t, platforms.TikTok, opts)
	b := &testBundle{srv: srv, a: New(cfg)}
	b.creds = connect(t, b.a, "alice")
	return b
}

// connect runs the OAuth flow with PKCE for handle.
func connect(t *testing.T, a *Adapter, handle string) platforms.Credentials {
	t.Helper()
	verifier, challenge := platformstest.PKCE(t)
	redirect := "http://127.0.0.1:1/callback"
	q := platformstest.Consent(t, a.AuthorizeURL("st4te", redirect, challenge)+"&login_hint="+handle, redirect).Query()
	require.Equal(t, "st4te", q.Get("state"))
	c, err := a.Exchange(context.Background(), q.Get("code"), redirect, verifier)
	require.NoError(t, err)
	return c
}

func randomBytes(t *testing.T, n int) []byte { return platformstest.RandomBytes(t, n) }

func videoMedia(data []byte) platforms.Media {
	return platforms.Media{
		ID: "v", ContentType: "video/mp4", Size: int64(len(data)), Filename: "clip.mp4",
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

func sha(data []byte) string { return platformstest.SHA256(data) }

func kindOf(t *testing.T, err error) platforms.Kind {
	return platformstest.KindOf(t, err, platforms.TikTok)
}

func uploads(t *testing.T, srv *sim.Server) []sim.RequestLog {
	t.Helper()
	var puts []sim.RequestLog
	for _, l := range platformstest.Requests(t, srv, platforms.TikTok) {
		if l.Method == http.MethodPut {
			puts = append(puts, l)
		}
	}
	return puts
}

func TestConnect(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	require.True(t, b.a.UsesPKCE())
	alice, err := b.srv.NewAccount(platforms.TikTok, "alice")
	require.NoError(t, err)
	require.Equal(t, alice.UserID, b.creds.UserID, "UserID is the open_id")
	require.Equal(t, "alice", b.creds.Handle)
	require.NotEmpty(t, b.creds.RefreshToken)
	require.True(t, b.creds.ExpiresAt.After(time.Now().Add(23*time.Hour)))
	require.True(t, b.creds.RefreshExpiresAt.After(time.Now().Add(300*24*time.Hour)))

	_, challenge := platformstest.PKCE(t)
	redirect := "http://127.0.0.1:1/callback"
	authURL := b.a.AuthorizeURL("s", redirect, challenge)
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	require.Equal(t, "/tiktok/v2/auth/authorize/", u.Path)
	require.Equal(t, sim.ClientID, u.Query().Get("client_key"))
	q := platformstest.Consent(t, authURL, redirect).Query()
	_, err = b.a.Exchange(context.Background(), q.Get("code"), redirect, "not-the-verifier")
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	_, err = b.a.Exchange(context.Background(), q.Get("code"), redirect, "not-the-verifier")
	require.Equal(t, platforms.Permanent, kindOf(t, err), "codes are single-use")

	b.srv.Deny(platforms.TikTok)
	q = platformstest.Consent(t, authURL, redirect).Query()
	require.Equal(t, "access_denied", q.Get("error"))
	require.Equal(t, "s", q.Get("state"))
}

func TestPublishSmallVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	data := randomBytes(t, 100000)
	text := "Behind the scenes 🎬 #studio"
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text, Media: []platforms.Media{videoMedia(data)}, Options: selfOnly})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.TikTok)
	require.Len(t, recs, 1)
	require.Equal(t, recs[0].ID, res.Publication.ID)
	require.Equal(t, "https://www.tiktok.com/@alice/video/"+res.Publication.ID, res.Publication.URL)
	require.Equal(t, b.creds.UserID, recs[0].Account)
	require.Equal(t, text, recs[0].Text)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
	puts := uploads(t, b.srv)
	require.Len(t, puts, 1, "a file under 5 MB goes in one piece")
	require.Equal(t, "bytes 0-99999/100000", puts[0].Headers["Content-Range"])
}

func TestPublishChunkedVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.a.chunkSize = 5 << 20
	data := randomBytes(t, 11<<20+123)
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Chunked", Media: []platforms.Media{videoMedia(data)}, Options: selfOnly})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.TikTok)
	require.Len(t, recs, 1)
	require.Equal(t, recs[0].ID, res.Publication.ID)
	require.Equal(t, []string{sha(data)}, recs[0].MediaSHA256)
	puts := uploads(t, b.srv)
	require.Len(t, puts, 2, "floor(11 MB / 5 MB) chunks, the last taking the remainder")
	require.Equal(t, "bytes 0-5242879/11534459", puts[0].Headers["Content-Range"])
	require.Equal(t, "bytes 5242880-11534458/11534459", puts[1].Headers["Content-Range"])
}

func TestChunkPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size, chunk, wantChunk int64
		wantCount              int
	}{
		{100, 10 << 20, 100, 1},
		{10 << 20, 10 << 20, 10 << 20, 1},
		{25 << 20, 10 << 20, 10 << 20, 2},
		{4 << 30, 10 << 20, 10 << 20, 409},
	} {
		c, n := ChunkPlan(tc.size, tc.chunk)
		require.Equal(t, tc.wantChunk, c)
		require.Equal(t, tc.wantCount, n)
		require.LessOrEqual(t, tc.size-int64(n-1)*c, int64(128<<20), "the last chunk stays within 128 MB")
	}
}

func TestUnauditedClientPostsPrivately(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.srv.SetTikTokAudited(false)
	creds := b.creds
	creds.Extra = map[string]string{"privacy_level": "PUBLIC_TO_EVERYONE"} // not offered: ignored
	_, err := b.a.Publish(context.Background(), creds, platforms.Post{Text: "Private", Media: []platforms.Media{videoMedia([]byte("video"))}, Options: selfOnly})
	require.NoError(t, err)
	require.Len(t, b.srv.Publications(platforms.TikTok), 1)
}

func TestModerationWait(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.srv.SetTikTokModerationDelay(time.Hour)
	b.a.moderationWait = 50 * time.Millisecond
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "In review", Media: []platforms.Media{videoMedia([]byte("video"))}, Options: selfOnly})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Publication.ID, "v_pub_file~"), "the publish_id stands in for the post id")
	require.Empty(t, res.Publication.URL)
	require.Len(t, b.srv.Publications(platforms.TikTok), 1)
}

// The last chunk answered 500 after TikTok took the video: the publish's status (read again when
// a read fails) says every byte arrived, so the publish goes on to its end instead of leaving an unknown outcome to a lookup
// (which would not list a video still in moderation). Lookup finds the post once it is listed.
func TestPostThenErrorAndLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	since := time.Now()
	other := platforms.Post{Text: "Another video", Media: []platforms.Media{videoMedia([]byte("video one"))}, Options: selfOnly}
	post := platforms.Post{Text: "Maybe posted\nThe answer to the last chunk is an error.", Media: []platforms.Media{videoMedia([]byte("video two"))}, Options: selfOnly}
	_, err := b.a.Publish(context.Background(), b.creds, other)
	require.NoError(t, err)
	require.NoError(t, b.srv.InjectFault(platforms.TikTok, sim.FaultPostThenError, 1))
	require.NoError(t, b.srv.InjectFault(platforms.TikTok, sim.FaultError5xx, 1)) // the first status read fails too
	res, err := b.a.Publish(context.Background(), b.creds, post)
	require.NoError(t, err)

	recs := b.srv.Publications(platforms.TikTok)
	require.Len(t, recs, 2)
	require.Equal(t, recs[1].ID, res.Publication.ID)
	var pub platforms.Publication
	require.Eventually(t, func() bool { // the post is listed once moderation passed
		var found bool
		pub, found, err = b.a.Lookup(context.Background(), b.creds, post, since)
		require.NoError(t, err)
		return found
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, recs[1].ID, pub.ID)
	require.Equal(t, "https://www.tiktok.com/@alice/video/"+pub.ID, pub.URL)

	_, found, err := b.a.Lookup(context.Background(), b.creds, post, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.False(t, found)
	bob := connect(t, b.a, "bob")
	_, found, err = b.a.Lookup(context.Background(), bob, post, since)
	require.NoError(t, err)
	require.False(t, found)
}

// The answer to the last chunk is lost after TikTok took the video: the publish's status says so
// and the publish goes on; when the status cannot be read either, the outcome is unknown.
func TestLostAnswerToLastChunkIsUnknown(t *testing.T) {
	t.Parallel()
	for _, statusReadable := range []bool{true, false} {
		t.Run(fmt.Sprintf("status readable: %v", statusReadable), func(t *testing.T) {
			t.Parallel()
			b := setup(t, sim.Options{})
			lost := false
			b.a.hc = &http.Client{Timeout: 5 * time.Second, Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				if lost && !statusReadable && strings.Contains(r.URL.Path, "/status/fetch/") {
					return nil, errors.New("connection refused")
				}
				resp, err := http.DefaultTransport.RoundTrip(r)
				if err == nil && r.Method == http.MethodPut {
					resp.Body.Close()
					lost = true
					return nil, errors.New("connection reset after sending")
				}
				return resp, err
			})}
			_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Lost", Media: []platforms.Media{videoMedia([]byte("video"))}, Options: selfOnly})
			if statusReadable {
				require.NoError(t, err)
			} else {
				require.Equal(t, platforms.Unknown, kindOf(t, err))
			}
			require.Len(t, b.srv.Publications(platforms.TikTok), 1)
		})
	}
}

// The last chunk answered 500 without reaching TikTok: the publish's status has fewer bytes than
// the video, so nothing was created and the publish may be sent again (Transient).
func TestLastChunkRefusedIsTransient(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	b.a.hc = &http.Client{Timeout: 5 * time.Second, Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPut {
			return &http.Response{StatusCode: 503, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"error":{"code":"internal_error","message":"upstream down"}}`)), Request: r}, nil
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Refused", Media: []platforms.Media{videoMedia([]byte("video"))}, Options: selfOnly})
	require.Equal(t, platforms.Transient, kindOf(t, err), "%v", err)
	require.ErrorContains(t, err, "nothing was published")
	require.Empty(t, b.srv.Publications(platforms.TikTok))
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestConformance(t *testing.T) {
	t.Parallel()
	vid := videoMedia([]byte("x"))
	video := func(text string) platformstest.PostFunc {
		return func(*testing.T) platforms.Post {
			return platforms.Post{Text: text, Media: []platforms.Media{videoMedia([]byte("video"))}, Options: selfOnly}
		}
	}
	fake := platforms.Credentials{AccessToken: "t"}
	fakePost := platforms.Post{Text: "Garbage", Media: []platforms.Media{videoMedia([]byte("video"))}, Options: selfOnly}
	platformstest.Run(t, platformstest.Adapter{
		Platform: platforms.TikTok,
		New:      func(cfg platforms.Config) platforms.Adapter { return New(cfg) },
		Account: func(t *testing.T, _ *sim.Server, a platforms.Adapter) platforms.Credentials {
			return connect(t, a.(*Adapter), "alice")
		},
		FakeConfig: func(url string) platforms.Config {
			return platforms.Config{BaseURL: url, PollInterval: time.Millisecond}
		},
		FakeCreds: fake,
		FakePost:  fakePost,
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "creator_info creates nothing", Post: video("Outage"), Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 50 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "creator_info creates nothing", Post: video("Outage"), Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Answers: []platformstest.Answer{
				{Status: 200, Body: "<html>oops</html>", Want: platforms.Transient},
				{Status: 200, Body: `{"data":{},"error":{"code":"invalid_params","message":"bad"}}`, Want: platforms.Permanent},
				{Status: 200, Body: `{"data":{"privacy_level_options":["SELF_ONLY"]}}`, Want: platforms.Transient},
			},
			Checks: []platformstest.Check{{
				// An error envelope on the last chunk, and the publish's status cannot be read
				// either (five tries): the post may exist.
				Name: "error on the last chunk",
				Serve: func(base string) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						switch r.URL.Path {
						case "/v2/post/publish/creator_info/query/":
							_, _ = w.Write([]byte(`{"data":{"privacy_level_options":["SELF_ONLY"]},"error":{"code":"ok"}}`))
						case "/v2/post/publish/video/init/":
							_, _ = w.Write([]byte(`{"data":{"publish_id":"p1","upload_url":"` + base + `/up"},"error":{"code":"ok"}}`))
						default:
							w.WriteHeader(http.StatusInternalServerError)
							_, _ = w.Write([]byte(`{"data":{},"error":{"code":"internal_error","message":"boom"}}`))
						}
					})
				},
				Want: []platforms.Kind{platforms.Unknown},
				Call: func(ctx context.Context, a platforms.Adapter) error {
					_, err := a.Publish(ctx, fake, fakePost)
					return err
				},
			}},
		},
		PostThenError: platformstest.Lookup{NotApplicable: "after an error on the last chunk the publish reads its status, which says whether TikTok took the video, " +
			"so the publish ends without an unknown outcome (TestPostThenErrorAndLookup, TestLostAnswerToLastChunkIsUnknown)"},
		Refresh: platformstest.Refresh{
			Post:      video("After refresh"),
			ExpireAll: true,
			Rotates:   true,
			Old:       platformstest.OldRefreshRefused,
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "no media", Post: platforms.Post{Text: "Hi"}, Contains: "needs a video or photos"},
			{Name: "two videos", Post: platforms.Post{Media: []platforms.Media{vid, vid}}, Contains: "a video goes alone"},
			{Name: "one photo", Post: platforms.Post{Media: []platforms.Media{{ContentType: "image/jpeg", Filename: "a.jpg"}}}, Contains: "photo post takes 2 to 35"},
			{Name: "photos and a video", Post: platforms.Post{Media: []platforms.Media{{ContentType: "image/jpeg", Filename: "a.jpg"}, vid}}, Contains: "a video goes alone"},
			{Name: "36 photos", Post: platforms.Post{Media: slices.Repeat([]platforms.Media{{ContentType: "image/jpeg", Filename: "a.jpg"}}, 36)}, Contains: "2 to 35"},
			{Name: "PNG photos not convertible", Post: platforms.Post{Media: []platforms.Media{{ContentType: "image/png", Filename: "a.png"}, {ContentType: "image/png", Filename: "b.png"}}}, Contains: "JPEG or WebP"},
			{Name: "pdf", Post: platforms.Post{Media: []platforms.Media{{ContentType: "application/pdf", Filename: "a.pdf"}}}, Contains: "LinkedIn only"},
			{Name: "avi", Post: platforms.Post{Media: []platforms.Media{{ContentType: "video/x-msvideo", Filename: "a.avi"}}}, Contains: "MP4, MOV or WebM"},
			{Name: "long caption", Post: platforms.Post{Text: strings.Repeat("😀", 1101), Media: []platforms.Media{vid}}, Contains: "2202 characters"},
			{Name: "huge", Post: platforms.Post{Media: []platforms.Media{{ContentType: "video/mp4", Size: MaxVideoBytes + 1}}}, Contains: "4 GB"},
			{Name: "1100 emoji", Post: platforms.Post{Text: strings.Repeat("😀", 1100), Media: []platforms.Media{vid}}, OK: true},
		}},
		Revoke: platformstest.Revoke{Post: video("Revoked")},
		RateLimit: platformstest.RateLimit{
			Post:   video("Limited"),
			Code:   "rate_limit_exceeded",
			Reset:  platformstest.Within{Max: 2 * time.Minute},
			Window: "video_init",
			Limit:  sim.Limit{Count: 1, Window: time.Minute},
			More: func(t *testing.T, srv *sim.Server, a platforms.Adapter, c platforms.Credentials) {
				srv.SetLimit(platforms.TikTok, "video_init", sim.Limit{Count: 6, Window: time.Minute})
				srv.SetLimit(platforms.TikTok, "daily_posts", sim.Limit{Count: 0, Window: 24 * time.Hour})
				_, err := a.Publish(context.Background(), c, video("Limited")(t))
				require.Equal(t, platforms.RateLimited, kindOf(t, err))
				var e *platforms.Error
				require.ErrorAs(t, err, &e)
				require.Equal(t, "spam_risk_too_many_posts", e.Code)
			},
		},
		ProcessingFails: platformstest.ProcessingFails{Code: "file_format_check_failed", Post: func(t *testing.T) platforms.Post {
			return platforms.Post{Text: "Broken", Media: []platforms.Media{videoMedia(platformstest.FailingVideo(t))}, Options: selfOnly}
		}},
	})
}

// selfOnly is the options of a post its user chose to keep private.
var selfOnly = &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY"}

// The post goes out with the privacy level, interactions and disclosures its user chose, and
// nothing is chosen for the user: without a privacy level, or with an interaction the creator
// turned off, nothing is sent.
func TestPublishWithTheUsersChoices(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ch, err := b.a.Choices(context.Background(), b.creds)
	require.NoError(t, err)
	require.Equal(t, []string{"PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "FOLLOWER_OF_CREATOR", "SELF_ONLY"}, ch.PrivacyLevelOptions)
	require.Equal(t, "alice", ch.Nickname)
	require.Equal(t, 600, ch.MaxVideoPostDurationSec)

	opts := &platforms.TikTokOptions{PrivacyLevel: "FOLLOWER_OF_CREATOR", AllowComment: true, BrandOrganic: true, IsAIGenerated: true}
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Mine", Media: []platforms.Media{videoMedia([]byte("video"))}, Options: opts})
	require.NoError(t, err)
	recs := b.srv.Publications(platforms.TikTok)
	require.Len(t, recs, 1)
	require.Equal(t, map[string]any{"privacy_level": "FOLLOWER_OF_CREATOR", "disable_comment": false, "disable_duet": true, "disable_stitch": true,
		"brand_content_toggle": false, "brand_organic_toggle": true, "is_aigc": true}, recs[0].Options)

	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "No choice", Media: []platforms.Media{videoMedia([]byte("video"))}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Contains(t, err.Error(), "TikTok asks the creator to choose who can see the post")

	b.srv.TikTokInteractions(false, true, false)
	ch, err = b.a.Choices(context.Background(), b.creds)
	require.NoError(t, err)
	require.True(t, ch.DuetDisabled)
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Duet me", Media: []platforms.Media{videoMedia([]byte("video"))},
		Options: &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", AllowDuet: true}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Len(t, b.srv.Publications(platforms.TikTok), 1, "nothing more was posted")
}
