package bluesky

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
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
	srv, err := sim.Start("127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg := srv.AdapterConfig(platforms.Bluesky)
	cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	a := New(cfg)
	creds, err := a.Login(context.Background(), "alice.bsky.social", appPassword)
	require.NoError(t, err)
	return &testBundle{sim: srv, a: a, creds: creds}
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

func TestValidate(t *testing.T) {
	t.Parallel()
	a := New(platforms.Config{})
	img := fileMedia("image/png", []byte("x"))
	vid := fileMedia("video/mp4", []byte("x"))
	big := img
	big.Size = maxImageBytes + 1
	for name, tc := range map[string]struct {
		post platforms.Post
		ok   bool
	}{
		"text":               {platforms.Post{Text: "hi"}, true},
		"300 graphemes":      {platforms.Post{Text: strings.Repeat("é", 300)}, true},
		"301 graphemes":      {platforms.Post{Text: strings.Repeat("a", 301)}, false},
		"300 family emoji":   {platforms.Post{Text: strings.Repeat("👩‍👩‍👧‍👦", 100)}, true},
		"over 3000 bytes":    {platforms.Post{Text: strings.Repeat("👩‍👩‍👧‍👦", 200)}, false},
		"empty":              {platforms.Post{}, false},
		"four images":        {platforms.Post{Media: []platforms.Media{img, img, img, img}}, true},
		"five images":        {platforms.Post{Media: []platforms.Media{img, img, img, img, img}}, false},
		"video":              {platforms.Post{Media: []platforms.Media{vid}}, true},
		"video and image":    {platforms.Post{Media: []platforms.Media{vid, img}}, false},
		"image over 1000000": {platforms.Post{Media: []platforms.Media{big}}, false},
		"pdf":                {platforms.Post{Text: "x", Media: []platforms.Media{fileMedia("application/pdf", nil)}}, false},
	} {
		err := a.Validate(tc.post)
		if tc.ok {
			require.NoError(t, err, name)
			continue
		}
		require.Equal(t, platforms.Invalid, kindOf(t, err), name)
	}
	require.Contains(t, a.Validate(platforms.Post{Text: strings.Repeat("a", 301)}).Error(), "text is 301 graphemes; Bluesky allows 300")
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
	require.Equal(t, "", first["alt"])
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

func TestPublishVideoProcessingFails(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	video := append([]byte(sim.ProcessingFailureMarker), randomBytes(t, 100)...)
	_, err := b.a.Publish(context.Background(), b.creds, platforms.Post{Text: "bad clip", Media: []platforms.Media{fileMedia("video/mp4", video)}})
	require.Equal(t, platforms.Permanent, kindOf(t, err))
	require.Empty(t, b.sim.Publications(platforms.Bluesky))
}

func TestRefreshAndRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultExpireTokens, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "after expiry"})
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	var e *platforms.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, "ExpiredToken", e.Code)

	fresh, err := b.a.Refresh(ctx, b.creds)
	require.NoError(t, err)
	require.NotEqual(t, b.creds.AccessToken, fresh.AccessToken)
	require.NotEqual(t, b.creds.RefreshToken, fresh.RefreshToken, "refreshSession rotates the refresh token")
	require.Equal(t, b.creds.UserID, fresh.UserID)
	require.Equal(t, b.creds.Handle, fresh.Handle)

	_, err = b.a.Publish(ctx, fresh, platforms.Post{Text: "after expiry"})
	require.NoError(t, err)
	require.Len(t, b.sim.Publications(platforms.Bluesky), 1)

	// The rotated-out refresh token still works during its 2-hour grace.
	_, err = b.a.Refresh(ctx, b.creds)
	require.NoError(t, err)
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultRateLimit, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "limited"})
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	var e *platforms.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, "RateLimitExceeded", e.Code)
	require.WithinDuration(t, time.Now().Add(time.Minute), e.ResetAt, 5*time.Second)

	// One create costs 3 of the hour's write points.
	b.sim.SetLimit(platforms.Bluesky, "writes", sim.Limit{Count: 3, Window: time.Hour})
	res, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "one"})
	require.NoError(t, err)
	require.Equal(t, 0, res.Rate.Remaining)
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "two"})
	require.Equal(t, platforms.RateLimited, kindOf(t, err))
	require.True(t, errors.As(err, &e))
	require.WithinDuration(t, time.Now().Add(time.Hour), e.ResetAt, 5*time.Second)
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultError5xx, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "text only"})
	require.Equal(t, platforms.Unknown, kindOf(t, err), "a 5xx answer to createRecord leaves the outcome unknown")

	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultError5xx, 1))
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "with image", Media: []platforms.Media{fileMedia("image/png", pngBytes(t, 2, 2))}})
	require.Equal(t, platforms.Transient, kindOf(t, err), "a 5xx answer to uploadBlob is transient")
	require.Empty(t, b.sim.Publications(platforms.Bluesky))
}

func TestPostThenErrorThenLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now()
	for _, text := range []string{"first", "second"} {
		_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: text})
		require.NoError(t, err)
	}
	post := platforms.Post{Text: "did this go out? ✨"}
	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultPostThenError, 1))
	_, err := b.a.Publish(ctx, b.creds, post)
	require.Equal(t, platforms.Unknown, kindOf(t, err))

	pub, found, err := b.a.Lookup(ctx, b.creds, post, since)
	require.NoError(t, err)
	require.True(t, found)
	var matches int
	for _, r := range b.sim.Publications(platforms.Bluesky) {
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
	require.False(t, found, "posts created before since do not count")
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{TimeoutHold: 2 * time.Second})
	b.a.hc = &http.Client{Timeout: 200 * time.Millisecond}
	ctx := context.Background()
	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultTimeout, 1))
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "slow"})
	require.Equal(t, platforms.Unknown, kindOf(t, err))

	require.NoError(t, b.sim.InjectFault(platforms.Bluesky, sim.FaultTimeout, 1))
	_, err = b.a.Publish(ctx, b.creds, platforms.Post{Text: "slow upload", Media: []platforms.Media{fileMedia("image/png", pngBytes(t, 2, 2))}})
	require.Equal(t, platforms.Transient, kindOf(t, err))
}

func TestGarbageAnswers(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		status int
		header map[string]string
		body   string
		want   platforms.Kind
	}{
		"garbage 200":        {200, nil, "<html>oops</html>", platforms.Unknown},
		"200 without uri":    {200, nil, `{"cid":"x"}`, platforms.Unknown},
		"200 with an error":  {200, nil, `{"error":"InvalidRequest","message":"nope"}`, platforms.Permanent},
		"400 ExpiredToken":   {400, nil, `{"error":"ExpiredToken","message":"Token has expired"}`, platforms.AuthExpired},
		"400 InvalidRequest": {400, nil, `{"error":"InvalidRequest","message":"Invalid app.bsky.feed.post record"}`, platforms.Permanent},
		"401":                {401, nil, `{"error":"AuthenticationRequired"}`, platforms.AuthExpired},
		"html 429":           {429, nil, "<html>slow down</html>", platforms.RateLimited},
		"502":                {502, nil, `{"error":"UpstreamFailure"}`, platforms.Unknown},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		a := New(platforms.Config{BaseURL: srv.URL})
		_, err := a.Publish(context.Background(), platforms.Credentials{AccessToken: "t", UserID: "did:plc:x"}, platforms.Post{Text: "x"})
		require.Equal(t, tc.want, kindOf(t, err), name)
		if tc.want == platforms.RateLimited {
			var e *platforms.Error
			require.True(t, errors.As(err, &e))
			require.WithinDuration(t, time.Now().Add(5*time.Minute), e.ResetAt, 5*time.Second)
		}
		srv.Close()
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("not json"))
	}))
	defer srv.Close()
	a := New(platforms.Config{BaseURL: srv.URL})
	_, err := a.Publish(context.Background(), platforms.Credentials{AccessToken: "t", UserID: "did:plc:x"}, platforms.Post{Media: []platforms.Media{fileMedia("image/png", []byte("p"))}})
	require.Equal(t, platforms.Transient, kindOf(t, err))
	_, _, err = a.Lookup(context.Background(), platforms.Credentials{AccessToken: "t", UserID: "did:plc:x"}, platforms.Post{Text: "x"}, time.Now())
	require.Equal(t, platforms.Transient, kindOf(t, err))
	_, err = a.Login(context.Background(), "a.b", appPassword)
	require.Equal(t, platforms.Transient, kindOf(t, err))
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t, sim.Options{})
	ctx := context.Background()
	require.NoError(t, b.a.Revoke(ctx, b.creds))
	revs := b.sim.Revocations()
	require.Len(t, revs, 1)
	require.Equal(t, string(platforms.Bluesky), revs[0].Platform)
	require.Equal(t, b.creds.UserID, revs[0].Account)
	_, err := b.a.Publish(ctx, b.creds, platforms.Post{Text: "after revoke"})
	require.Equal(t, platforms.AuthExpired, kindOf(t, err))
	_, err = b.a.Refresh(ctx, b.creds)
	require.Equal(t, platforms.Permanent, kindOf(t, err))
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
