package bluesky

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

const appPassword = "abcd-efgh-ijkl-mnop"

type testBundle struct {
	sim   *sim.Server
	a     *Adapter
	creds platforms.Credentials
}

func setup(t *testing.T, opts sim.Options) *testBundle {
	t.Helper()
	srv, cfg := platformstest.Start(t, platforms.Bluesky, opts)
	a := New(cfg)
	return &testBundle{sim: srv, a: a, creds: alice(t, srv, a)}
}

// alice logs in as alice.bsky.social with her app password.
func alice(t *testing.T, _ *sim.Server, a platforms.Adapter) platforms.Credentials {
	t.Helper()
	creds, err := a.(*Adapter).Login(context.Background(), "alice.bsky.social", appPassword)
	require.NoError(t, err)
	return creds
}

func fileMedia(ct string, data []byte) platforms.Media {
	return platforms.Media{ID: "m", ContentType: ct, Size: int64(len(data)), Filename: "f", Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

func randomBytes(t *testing.T, n int) []byte { return platformstest.RandomBytes(t, n) }

func pngBytes(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{R: uint8(w), G: uint8(h), A: 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func sha(b []byte) string { return platformstest.SHA256(b) }

func kindOf(t *testing.T, err error) platforms.Kind {
	return platformstest.KindOf(t, err, platforms.Bluesky)
}

// records reads the account's post records through the simulator's listRecords.
func records(t *testing.T, b *testBundle) []map[string]any {
	t.Helper()
	resp, err := http.Get(b.sim.BaseURL() + sim.Prefix(platforms.Bluesky) + "/xrpc/com.atproto.repo.listRecords?collection=app.bsky.feed.post&repo=" + b.creds.UserID)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Records []struct {
			Value map[string]any `json:"value"`
		} `json:"records"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	var vals []map[string]any
	for _, r := range out.Records {
		vals = append(vals, r.Value)
	}
	return vals
}

func TestConformance(t *testing.T) {
	t.Parallel()
	img := fileMedia("image/png", []byte("x"))
	vid := fileMedia("video/mp4", []byte("x"))
	big := img
	big.Size = maxImageBytes + 1
	png := func(t *testing.T) platforms.Post {
		return platforms.Post{Text: "with image", Media: []platforms.Media{fileMedia("image/png", pngBytes(t, 2, 2))}}
	}
	fake := platforms.Credentials{AccessToken: "t", UserID: "did:plc:x"}
	platformstest.Run(t, platformstest.Adapter{
		Platform:  platforms.Bluesky,
		New:       func(cfg platforms.Config) platforms.Adapter { return New(cfg) },
		Account:   alice,
		FakeCreds: fake,
		FakePost:  platforms.Post{Text: "x"},
		ServerError: platformstest.Faults{Steps: []platformstest.Step{
			{Name: "a 5xx answer to createRecord leaves the outcome unknown", Post: platformstest.Text("text only"), Want: platforms.Unknown},
			{Name: "a 5xx answer to uploadBlob is transient", Post: png, Want: platforms.Transient},
		}},
		Timeout: platformstest.Faults{Hold: 2 * time.Second, ClientTimeout: 200 * time.Millisecond, Steps: []platformstest.Step{
			{Name: "createRecord", Post: platformstest.Text("slow"), Want: platforms.Unknown},
			{Name: "uploadBlob", Post: png, Want: platforms.Transient},
		}},
		Garbage: platformstest.Garbage{
			Answers: []platformstest.Answer{
				{Status: 200, Body: "<html>oops</html>", Want: platforms.Unknown},
				{Status: 200, Body: `{"cid":"x"}`, Want: platforms.Unknown},
				{Status: 200, Body: `{"error":"InvalidRequest","message":"nope"}`, Want: platforms.Permanent},
				{Status: 400, Body: `{"error":"ExpiredToken","message":"Token has expired"}`, Want: platforms.AuthExpired},
				{Status: 400, Body: `{"error":"InvalidRequest","message":"Invalid app.bsky.feed.post record"}`, Want: platforms.Permanent},
				{Status: 401, Body: `{"error":"AuthenticationRequired"}`, Want: platforms.AuthExpired},
				{Status: 429, Body: "<html>slow down</html>", Want: platforms.RateLimited, ResetIn: 5 * time.Minute},
				{Status: 502, Body: `{"error":"UpstreamFailure"}`, Want: platforms.Unknown},
			},
			Checks: []platformstest.Check{
				{Name: "upload", Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, err := a.Publish(ctx, fake, platforms.Post{Media: []platforms.Media{fileMedia("image/png", []byte("p"))}})
					return err
				}},
				{Name: "lookup", Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, _, err := a.Lookup(ctx, fake, platforms.Post{Text: "x"}, time.Now())
					return err
				}},
				{Name: "login", Want: []platforms.Kind{platforms.Transient}, Call: func(ctx context.Context, a platforms.Adapter) error {
					_, err := a.(*Adapter).Login(ctx, "a.b", appPassword)
					return err
				}},
			},
		},
		PostThenError: platformstest.Lookup{
			Others:  []platformstest.PostFunc{platformstest.Text("first"), platformstest.Text("second")},
			Post:    platformstest.Text("did this go out? ✨"),
			Missing: platformstest.Text("never posted"),
		},
		Refresh: platformstest.Refresh{
			Post:    platformstest.Text("after expiry"),
			Code:    "ExpiredToken",
			Rotates: true,
			// The rotated-out refresh token still works during its 2-hour grace.
			Old: platformstest.OldRefreshWorks,
		},
		Validate: platformstest.Validate{Cases: []platformstest.ValidateCase{
			{Name: "text", Post: platforms.Post{Text: "hi"}, OK: true},
			{Name: "300 graphemes", Post: platforms.Post{Text: strings.Repeat("é", 300)}, OK: true},
			{Name: "301 graphemes", Post: platforms.Post{Text: strings.Repeat("a", 301)}, Contains: "text is 301 graphemes; Bluesky allows 300"},
			{Name: "300 family emoji", Post: platforms.Post{Text: strings.Repeat("👩‍👩‍👧‍👦", 100)}, OK: true},
			{Name: "over 3000 bytes", Post: platforms.Post{Text: strings.Repeat("👩‍👩‍👧‍👦", 200)}},
			{Name: "empty", Post: platforms.Post{}},
			{Name: "four images", Post: platforms.Post{Media: []platforms.Media{img, img, img, img}}, OK: true},
			{Name: "five images", Post: platforms.Post{Media: []platforms.Media{img, img, img, img, img}}},
			{Name: "video", Post: platforms.Post{Media: []platforms.Media{vid}}, OK: true},
			{Name: "video and image", Post: platforms.Post{Media: []platforms.Media{vid, img}}},
			{Name: "image over 1000000", Post: platforms.Post{Media: []platforms.Media{big}}},
			{Name: "pdf", Post: platforms.Post{Text: "x", Media: []platforms.Media{fileMedia("application/pdf", nil)}}},
		}},
		Revoke: platformstest.Revoke{Post: platformstest.Text("after revoke")},
		RateLimit: platformstest.RateLimit{
			Post:  platformstest.Numbered("limited"),
			Code:  "RateLimitExceeded",
			Reset: platformstest.Within{Min: time.Minute - 5*time.Second, Max: time.Minute + 5*time.Second},
			// One create costs 3 of the hour's write points.
			Window:      "writes",
			Limit:       sim.Limit{Count: 3, Window: time.Hour},
			Exhausted:   platformstest.Within{Min: time.Hour - 5*time.Second, Max: time.Hour + 5*time.Second},
			ReportsRate: true,
		},
		ProcessingFails: platformstest.ProcessingFails{Post: func(t *testing.T) platforms.Post {
			return platforms.Post{Text: "bad clip", Media: []platforms.Media{fileMedia("video/mp4", platformstest.FailingVideo(t))}}
		}},
	})
}

func TestDetectFacets(t *testing.T) {
	t.Parallel()
	text := "héllo ✨ see https://example.com/a_(b) and (https://x.org/y). cc @bob.bsky.social, #golang #123 mail a@b.co"
	spans := detectFacets(text)
	got := map[string]string{}
	for _, s := range spans {
		got[s.kind+":"+text[s.start:s.end]] = s.value
	}
	require.Equal(t, map[string]string{
		"link:https://example.com/a_(b)": "https://example.com/a_(b)",
		"link:https://x.org/y":           "https://x.org/y",
		"mention:@bob.bsky.social":       "bob.bsky.social",
		"tag:#golang":                    "golang",
	}, got)
}

func TestLogin(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	require.True(t, strings.HasPrefix(b.creds.UserID, "did:plc:"), b.creds.UserID)
	require.Equal(t, "alice.bsky.social", b.creds.Handle)
	require.NotEmpty(t, b.creds.RefreshToken)
	require.Empty(t, b.creds.Extra["pds"], "the session's PDS is the base URL")
	require.WithinDuration(t, time.Now().Add(2*time.Hour), b.creds.ExpiresAt, time.Minute)

	_, err := b.a.Login(context.Background(), "alice.bsky.social", "my-real-password")
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Contains(t, err.Error(), "invalid handle or app password")
}

func TestPublishTextWithFacets(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	text := "héllo ✨ https://example.com/page @bob.bsky.social #herald"
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: text})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Publication.ID, "at://"+b.creds.UserID+"/app.bsky.feed.post/"))
	rkey := res.Publication.ID[strings.LastIndex(res.Publication.ID, "/")+1:]
	require.Equal(t, "https://bsky.app/profile/alice.bsky.social/post/"+rkey, res.Publication.URL)
	require.True(t, res.Rate.Known)
	require.Equal(t, 5000, res.Rate.Limit)
	require.Equal(t, 4997, res.Rate.Remaining)

	pubs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, text, pubs[0].Text)

	recs := records(t, b)
	require.Len(t, recs, 1)
	facets := recs[0]["facets"].([]any)
	require.Len(t, facets, 3)
	want := []string{"https://example.com/page", "@bob.bsky.social", "#herald"}
	for i, f := range facets {
		idx := f.(map[string]any)["index"].(map[string]any)
		start, end := int(idx["byteStart"].(float64)), int(idx["byteEnd"].(float64))
		require.Equal(t, want[i], text[start:end], "facet %d must be a UTF-8 byte range", i)
	}
	mention := facets[1].(map[string]any)["features"].([]any)[0].(map[string]any)
	require.Equal(t, "app.bsky.richtext.facet#mention", mention["$type"])
	require.True(t, strings.HasPrefix(mention["did"].(string), "did:plc:"))
}

func TestPublishImages(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	one, two := pngBytes(t, 64, 32), randomBytes(t, maxImageBytes)
	res, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "pics", Media: []platforms.Media{
		fileMedia("image/png", one), fileMedia("image/jpeg", two),
	}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, []string{sha(one), sha(two)}, pubs[0].MediaSHA256)

	embed := records(t, b)[0]["embed"].(map[string]any)
	require.Equal(t, "app.bsky.embed.images", embed["$type"])
	first := embed["images"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"width": 64.0, "height": 32.0}, first["aspectRatio"])
	require.Empty(t, first["alt"])
}

func TestPublishVideo(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{ProcessingDelay: 50 * time.Millisecond})
	ctx := context.Background()
	video := randomBytes(t, 3<<20)
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "clip", Media: []platforms.Media{fileMedia("video/mp4", video)}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, pubs, 1)
	require.Equal(t, res.Publication.ID, pubs[0].ID)
	require.Equal(t, []string{sha(video)}, pubs[0].MediaSHA256)
	require.Equal(t, "app.bsky.embed.video", records(t, b)[0]["embed"].(map[string]any)["$type"])

	// The same video again: the service answers already_exists with the earlier job's blob.
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "clip again", Media: []platforms.Media{fileMedia("video/mp4", video)}})
	require.NoError(t, err)
	pubs = b.sim.Publications(platforms.Bluesky)
	require.Len(t, pubs, 2)
	require.Equal(t, []string{sha(video)}, pubs[1].MediaSHA256)
}

func TestSimAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	c, err := b.sim.NewAccount(platforms.Bluesky, "carol.bsky.social")
	require.NoError(t, err)
	post := platforms.Post{Text: "from a sandbox account"}
	res, err := b.a.Publish(context.Background(), c, post)
	require.NoError(t, err)
	pub, found, err := b.a.Lookup(context.Background(), c, post, time.Now().Add(-time.Minute))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, res.Publication.ID, pub.ID)
}

func TestJWTExpiry(t *testing.T) {
	t.Parallel()
	def := time.Unix(100, 0)
	require.Equal(t, def.UTC(), jwtExpiry("opaque", def))
	tok := "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjE3OTk5OTk5OTl9.sig" // {"exp":1799999999}
	require.Equal(t, time.Unix(1799999999, 0).UTC(), jwtExpiry(tok, def))
}

// A post record carries its languages and self-labels, and each image its alt text.
func TestPublishWithOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	img := fileMedia("image/png", pngBytes(t, 16, 16))
	img.AltText = "A small square"
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "Olá", Media: []platforms.Media{img},
		Options: &platforms.BlueskyOptions{Langs: []string{"pt-BR", "en"}, Labels: []string{"graphic-media"}}})
	require.NoError(t, err)
	pubs := b.sim.Publications(platforms.Bluesky)
	require.Len(t, pubs, 1)
	require.Equal(t, map[string]any{"langs": []string{"pt-BR", "en"}, "labels": []string{"graphic-media"}}, pubs[0].Options)
	require.Equal(t, []string{"A small square"}, pubs[0].AltTexts)
	rec := records(t, b)[0]
	require.Equal(t, "com.atproto.label.defs#selfLabels", rec["labels"].(map[string]any)["$type"])
}

// A post buried under more of the account's posts than Lookup reads is neither found nor reported
// absent (platformstest.BuriedLookup).
func TestLookupThatDoesNotReachBackIsIncomplete(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{LimitScale: 1000})
	platformstest.BuriedLookup(t, b.a, b.creds, lookupPages*100)
}
