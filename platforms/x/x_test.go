package x

import (
	"context"
	"net/http"
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
	srv, cfg := platformstest.Start(t, platforms.X, opts)
	return &testBundle{sim: srv, a: New(cfg), creds: alice(t, srv, nil)}
}

// alice is the simulator's account alice, connected with the simulator's OAuth client.
func alice(t *testing.T, srv *sim.Server, _ platforms.Adapter) platforms.Credentials {
	t.Helper()
	creds, err := srv.NewAccount(platforms.X, "alice")
	require.NoError(t, err)
	creds.Extra = map[string]string{"client_id": sim.ClientID}
	return creds
}

func fileMedia(ct string, data []byte, knownSize bool) platforms.Media {
	return platformstest.Media("m", ct, "f", data, knownSize)
}

func randomBytes(t *testing.T, n int) []byte { return platformstest.RandomBytes(t, n) }

func sha(b []byte) string { return platformstest.SHA256(b) }

func kindOf(t *testing.T, err error) platforms.Kind { return platformstest.KindOf(t, err, platforms.X) }

func TestWeightedLength(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello", 5},
		{"héllo wörld", 11},
		{"日本語", 6},
		{"see https://example.com/a/very/long/path?with=query", 4 + 23},
		{"two http://a.b and https://c.d.", 4 + 23 + 5 + 23 + 1},
		{"😀", 2},
		{"👩‍👩‍👧‍👦", 2},
		{"👍🏽", 2},
		{"\u2019quotes\u201d", 8},
		{strings.Repeat("a", 280), 280},
	} {
		require.Equal(t, tc.want, WeightedLength(tc.text), "%q", tc.text)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	img := fileMedia("image/png", []byte("x"), true)
	vid := fileMedia("video/mp4", []byte("x"), true)
	big := img
	big.Size = 6 << 20
	png := func(*testing.T) platforms.Post {
		return platforms.Post{Text: "with image", Media: []platforms.Media{fileMedia("image/png", []byte("png"), true)}}
	}
	fake := platforms.Credentials{AccessToken: "t"}
	platformstest.Run(t, platformstest.Adapter{
		Platform:  platforms.X,
		New:       func(cfg platforms.Config) platforms.Adapter { return New(cfg) },
		Account:   alice,
		FakeCreds: fake,
		FakePost:  platforms.Post{Text: "x"},
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "a 5xx answer to the post-creating call leaves the outcome unknown", Post: platformstest.Text("text only"), Want: platforms.Unknown},
			{Name: "a 5xx answer to an upload call is transient", Post: png, Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 2 * time.Second, ClientTimeout: 200 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "a timeout after sending the post leaves the outcome unknown", Post: platformstest.Text("slow"), Want: platforms.Unknown},
			{Name: "a timeout on an upload call is transient", Post: png, Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Answers: []platformstest.Answer{
				{Status: 201, Body: "<html>oops</html>", Want: platforms.Unknown},
				{Status: 201, Body: `{"data":{}}`, Want: platforms.Unknown},
				{Status: 200, Body: `{"errors":[{"message":"Your account is suspended","code":64}]}`, Want: platforms.Permanent},
				{Status: 403, Body: `{"detail":"You are not allowed to create a Tweet with duplicate content.","type":"about:blank","title":"Forbidden","status":403}`, Want: platforms.Permanent},
				{Status: 502, Body: "<html>bad gateway</html>", Want: platforms.Unknown},
				{Status: 401, Body: `{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`, Want: platforms.AuthExpired},
			},
			// Garbage from an upload call or a lookup is transient, never a success.
			Checks: []platformstest.Check{
				{Name: "upload", Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, err := a.Publish(ctx, fake, platforms.Post{Media: []platforms.Media{fileMedia("image/png", []byte("p"), true)}})
					return err
				}},
				{Name: "lookup", Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, _, err := a.Lookup(ctx, platforms.Credentials{AccessToken: "t", UserID: "1"}, platforms.Post{Text: "x"}, time.Now())
					return err
				}},
			},
		},
		PostThenError: platformstest.Lookup{
			Others:  []platformstest.PostFunc{platformstest.Text("older post")},
			Post:    platformstest.Text("did this go out? https://example.com/x & <y>"),
			Missing: platformstest.Text("never posted"),
			More: func(t *testing.T, _ *sim.Server, a platforms.Adapter, c platforms.Credentials, post platforms.Post, since time.Time, pub platforms.Publication) {
				// Lookup without a user id identifies the account first.
				c.UserID = ""
				pub2, found, err := a.Lookup(context.Background(), c, post, since)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, pub.ID, pub2.ID)
			},
		},
		Refresh: platformstest.Refresh{
			Post:     platformstest.Text("after expiry"),
			Rotates:  true,
			Old:      platformstest.OldRefreshRefused,
			Lifetime: time.Hour,
			Refused: func(c platforms.Credentials) []platforms.Credentials {
				c.RefreshToken = ""
				return []platforms.Credentials{c}
			},
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "text", Post: platforms.Post{Text: "hi"}, OK: true},
			{Name: "280 weighted", Post: platforms.Post{Text: strings.Repeat("日", 140)}, OK: true},
			{Name: "281 weighted", Post: platforms.Post{Text: strings.Repeat("日", 140) + "a"}},
			{Name: "281 characters", Post: platforms.Post{Text: strings.Repeat("a", 281)}, Contains: "281 weighted characters"},
			{Name: "url counts 23", Post: platforms.Post{Text: strings.Repeat("a", 256) + " https://example.com/" + strings.Repeat("x", 100)}, OK: true},
			{Name: "empty", Post: platforms.Post{}},
			{Name: "media only", Post: platforms.Post{Media: []platforms.Media{img}}, OK: true},
			{Name: "four images", Post: platforms.Post{Media: []platforms.Media{img, img, img, img}}, OK: true},
			{Name: "five images", Post: platforms.Post{Media: []platforms.Media{img, img, img, img, img}}},
			{Name: "video and image", Post: platforms.Post{Media: []platforms.Media{vid, img}}},
			{Name: "oversize image", Post: platforms.Post{Media: []platforms.Media{big}}},
			{Name: "pdf", Post: platforms.Post{Media: []platforms.Media{fileMedia("application/pdf", nil, false)}}},
		}},
		Revoke: platformstest.Revoke{Post: platformstest.Text("after revoke")},
		RateLimit: platformstest.RateLimit{
			Post:        platformstest.Numbered("limited"),
			Code:        "88",
			Reset:       platformstest.Within{Min: time.Minute - 5*time.Second, Max: time.Minute + 5*time.Second},
			Options:     sim.Options{LimitScale: 0.01}, // 100 per 15 min becomes 1
			Exhausted:   platformstest.Within{Min: 15*time.Minute - 5*time.Second, Max: 15*time.Minute + 5*time.Second},
			ReportsRate: true,
		},
		ProcessingFails: platformstest.ProcessingFails{Post: func(t *testing.T) platforms.Post {
			return platforms.Post{Text: "bad clip", Media: []platforms.Media{fileMedia("video/mp4", platformstest.FailingVideo(t), true)}}
		}},
	})
}

func TestPublishText(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "hello from herald"})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.X)
	require.Len(t, pubs, 1)
	require.Equal(t, pubs[0].ID, res.Publication.ID)
	require.Equal(t, "hello from herald", pubs[0].Text)
	require.Equal(t, b.creds.UserID, pubs[0].Account)
	require.Equal(t, "https://x.com/alice/status/"+res.Publication.ID, res.Publication.URL)
	require.True(t, res.Rate.Known)
	require.Equal(t, 100, res.Rate.Limit)
	require.Equal(t, 99, res.Rate.Remaining)
	require.True(t, res.Rate.Reset.After(time.Now()))
}

func TestPublishImages(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	one, two := randomBytes(t, 1000), randomBytes(t, 5<<20-1)
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "pics", Media: []platforms.Media{
		fileMedia("image/jpeg", one, true), fileMedia("image/png", two, false),
	}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.X)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, []string{sha(one), sha(two)}, pubs[0].MediaSHA256)
}

func TestPublishVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{ProcessingDelay: 50 * time.Millisecond})
	video := randomBytes(t, 9<<20+123) // three segments
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "clip", Media: []platforms.Media{fileMedia("video/mp4", video, true)}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.X)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, []string{sha(video)}, pubs[0].MediaSHA256)

	var appends, statuses int
	for _, l := range platformstest.Requests(t, b.sim, platforms.X) {
		if strings.HasSuffix(l.Path, "/append") {
			appends++
		}
		if l.Method == http.MethodGet && l.Path == "/2/media/upload" {
			statuses++
		}
	}
	require.Equal(t, 3, appends)
	require.GreaterOrEqual(t, statuses, 1, "the adapter must poll STATUS while the video processes")
}

func TestPublishMediaLongerThanDeclared(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	m := fileMedia("image/png", randomBytes(t, 100), true)
	m.Size = 50
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "lies", Media: []platforms.Media{m}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Empty(t, b.sim.Publications(platforms.X))
}

func TestIdentify(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	c, err := b.a.Identify(context.Background(), platforms.Credentials{AccessToken: b.creds.AccessToken})
	require.NoError(t, err)
	require.Equal(t, b.creds.UserID, c.UserID)
	require.Equal(t, "alice", c.Handle)
}

func TestMaskURLs(t *testing.T) {
	t.Parallel()
	require.Equal(t, maskURLs("a https://t.co/abc b"), maskURLs("a https://example.com/long b"))
	require.Equal(t, maskURLs("see https://example.com."), maskURLs("see https://t.co/x."))
	require.NotEqual(t, maskURLs("a b"), maskURLs("a c"))
}

// The ASCII shortcut of the weighted length agrees with grapheme segmentation.
func FuzzWeighASCII(f *testing.F) {
	for _, s := range []string{"", "hello world", "a\r\nb", "\x00\x1f\x7f", "#tag @handle"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !platforms.IsASCII(s) {
			return
		}
		if got, want := weighText(s), weighGraphemes(s); got != want {
			t.Fatalf("%q weighs %d, segmentation says %d", s, got, want)
		}
	})
}

// A post carries its reply settings and poll as X takes them, and each image its alt text.
func TestPublishWithOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img := fileMedia("image/jpeg", randomBytes(t, 1000), true)
	img.AltText = "A red bicycle"
	plain := fileMedia("image/png", randomBytes(t, 1200), false)
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "bikes", Media: []platforms.Media{img, plain},
		Options: &platforms.XOptions{ReplySettings: "mentioned_users"}})
	require.NoError(t, err)
	_, err = b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Which one?",
		Options: &platforms.XOptions{ReplySettings: "following", Poll: &platforms.XPoll{Options: []string{"Red", "Blue"}, DurationMinutes: 60}}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.X)
	require.Len(t, pubs, 2)
	require.Equal(t, map[string]any{"reply_settings": "mentionedUsers"}, pubs[0].Options)
	require.Equal(t, []string{"A red bicycle", ""}, pubs[0].AltTexts)
	require.Equal(t, map[string]any{"reply_settings": "following", "poll": map[string]any{"options": []string{"Red", "Blue"}, "duration_minutes": 60}}, pubs[1].Options)
	require.Nil(t, pubs[1].AltTexts)
}

// A post buried under more of the account's posts than Lookup reads is neither found nor reported
// absent (platformstest.BuriedLookup).
func TestLookupThatDoesNotReachBackIsIncomplete(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{LimitScale: 1000})
	platformstest.BuriedLookup(t, b.a, b.creds, lookupPages*100)
}
