package api

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms/registry"
)

// checkFixture is the one check of a post over a real store and the nine real adapters: a user
// with an X, an Instagram and a Bluesky account, another user's account, a confirmed JPEG of the
// user, an unconfirmed upload and another user's media.
type checkFixture struct {
	h                                  *handlers
	user                               string
	x, ig, bsky, foreign               string
	jpeg, pdf, unconfirmed, theirMedia string
}

func newCheckFixture(t testing.TB) *checkFixture {
	t.Helper()
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	f := &checkFixture{h: &handlers{Deps: Deps{Store: store, Adapters: registry.New(nil), Log: slog.New(slog.DiscardHandler)}}, user: uuid.NewString()}
	other := uuid.NewString()
	now := time.Now().UTC()
	account := func(user, platform string) string {
		a := &persistence.Account{ID: uuid.NewString(), UserID: user, Platform: platform, IsActive: true, CreatedAt: now}
		require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
		return a.ID
	}
	media := func(user, ct string, confirmed bool) string {
		id := uuid.NewString()
		m := &persistence.Media{ID: id, UserID: user, Key: "uploads/" + user + "/" + id, ContentType: ct, Size: 1000, OriginalFilename: "f"}
		if confirmed {
			m.ConfirmedAt = &now
		}
		require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutMedia(m) }))
		return m.ID
	}
	f.x, f.ig, f.bsky, f.foreign = account(f.user, "twitter_x"), account(f.user, "instagram"), account(f.user, "bluesky"), account(other, "linkedin")
	f.jpeg, f.pdf = media(f.user, "image/jpeg", true), media(f.user, "application/pdf", true)
	f.unconfirmed, f.theirMedia = media(f.user, "image/jpeg", false), media(other, "image/jpeg", true)
	return f
}

func (f *checkFixture) check(t *testing.T, s *submission) []string {
	t.Helper()
	c := echo.New().NewContext(httptest.NewRequest("POST", "/v1/posts", nil), httptest.NewRecorder())
	res, err := f.h.checkPost(c, f.user, s, mediaCache{})
	require.NoError(t, err)
	return res.errs
}

func str(s string) *string { return &s }

// Each rule of the one check, for a draft (no network rule) and for a post submitted for
// publication (every rule).
func TestCheckPostRules(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	long := strings.Repeat("a", 281)
	for _, tc := range []struct {
		name    string
		s       submission
		draft   []string // the refusals of the post as a draft; nil: accepted
		publish []string // the refusals of the post submitted for publication
	}{
		{"fine", submission{content: str("hello"), accounts: []string{f.x, f.bsky}}, nil, nil},
		{"control character", submission{content: str("a\x00b"), accounts: []string{f.x}},
			[]string{"content: contains control character U+0000 at position 1; of the control characters only tab, line feed and carriage return are allowed"}, nil},
		{"no account", submission{content: str("x"), accounts: []string{}},
			[]string{"platforms: must contain at least one connected account id"}, nil},
		{"foreign account", submission{content: str("x"), accounts: []string{f.foreign}},
			[]string{"platforms: connected account " + f.foreign + " does not exist or is not yours"}, nil},
		{"unknown account", submission{content: str("x"), accounts: []string{"0190a0a0-0000-7000-8000-000000000000"}},
			[]string{"platforms: connected account 0190a0a0-0000-7000-8000-000000000000 does not exist or is not yours"}, nil},
		{"unconfirmed media", submission{content: str("x"), accounts: []string{f.x}, media: []string{f.unconfirmed}},
			[]string{"media: " + f.unconfirmed + " is not a confirmed media of yours"}, nil},
		{"their media", submission{content: str("x"), accounts: []string{f.x}, media: []string{f.theirMedia}},
			[]string{"media: " + f.theirMedia + " is not a confirmed media of yours"}, nil},
		{"empty without media", submission{content: str(" "), accounts: []string{f.x}},
			[]string{"content: must not be empty when the post has no media"}, nil},
		{"over X's limit", submission{content: &long, accounts: []string{f.x, f.bsky}},
			nil, []string{"twitter_x: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)"}},
		{"instagram without media", submission{content: str("x"), accounts: []string{f.ig}},
			nil, []string{"instagram: an Instagram post needs a photo or a video"}},
		{"instagram with a photo", submission{content: str("x"), accounts: []string{f.ig}, media: []string{f.jpeg}}, nil, nil},
		{"a document instagram does not take", submission{content: str("x"), accounts: []string{f.ig}, media: []string{f.pdf}},
			nil, []string{`instagram: a PDF document (application/pdf) goes to LinkedIn only; Instagram takes no documents`}},
		{"every network refusing", submission{content: &long, accounts: []string{f.x, f.ig}},
			nil, []string{"twitter_x: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)",
				"instagram: an Instagram post needs a photo or a video"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			draft, publish := tc.s, tc.s
			draft.whole, publish.whole, publish.publish = true, true, true
			require.Equal(t, tc.draft, f.check(t, &draft), "a draft")
			want := tc.publish
			if tc.draft != nil {
				want = tc.draft // a post's own rules come first, and stop the networks'
			}
			require.Equal(t, want, f.check(t, &publish), "submitted for publication")
		})
	}
}

// Errors a door found itself are reported around the fields' and stop the checks of the whole
// post, as a campaign row's unreadable field or bad time does.
func TestCheckPostPriorAndLaterErrors(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	errs := f.check(t, &submission{content: str(""), accounts: []string{f.foreign}, whole: true, publish: true,
		prior: []string{"content: Required"}, later: []string{"scheduledAt: Required"}})
	require.Equal(t, []string{"content: Required", "platforms: connected account " + f.foreign + " does not exist or is not yours", "scheduledAt: Required"}, errs)
	errs = f.check(t, &submission{content: str(""), accounts: []string{f.ig}, whole: true, publish: true, prior: []string{"content: Required"}})
	require.Equal(t, []string{"content: Required"}, errs, "neither post.Validate nor the networks add to a field that could not be read")
}

// The refusal of a connected account or media the caller may not use is written once, in
// http/apierr, whatever the door (posts, campaigns, retries, filters, inbox replies).
func TestNotYoursIsOneString(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed to search the sources")
	}
	out, err := exec.Command("git", "-C", "../..", "grep", "-n", "-e", "does not exist or is not yours", "-e", "is not a confirmed media of yours",
		"--", "*.go", ":!*_test.go").CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 2, "one definition of each message:\n%s", out)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "http/apierr/apierr.go:"), l)
	}
	// And every use goes through it: no handler formats the message itself.
	src, err := os.ReadFile("check.go")
	require.NoError(t, err)
	require.Regexp(t, `apierr\.AccountNotYours\("platforms"`, string(src))
}

// A stored post submitted again (POST /v1/posts/:id/publish and /schedule, a scheduled post's
// PATCH) is held to the networks of the targets that will be published: a published target's
// network is not asked again, and another user's post is left to the post's actor (404).
func TestCheckStoredPost(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	c := echo.New().NewContext(httptest.NewRequest("POST", "/v1/posts/x/publish", nil), httptest.NewRecorder())
	target := func(id, platform, status string) persistence.Target {
		return persistence.Target{AccountID: id, Platform: platform, Status: status}
	}
	long := strings.Repeat("a", 281)
	for _, tc := range []struct {
		name string
		post persistence.Post
		want string // the refusal; "" when none
	}{
		{"a draft over X's limit", persistence.Post{UserID: f.user, Content: long,
			Targets: []persistence.Target{target(f.x, "twitter_x", persistence.TargetPending)}},
			"twitter_x: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)"},
		{"X already published, Instagram failed without media", persistence.Post{UserID: f.user, Content: long,
			Targets: []persistence.Target{target(f.x, "twitter_x", persistence.TargetPublished), target(f.ig, "instagram", persistence.TargetFailed)}},
			"instagram: an Instagram post needs a photo or a video"},
		{"only the published network refuses", persistence.Post{UserID: f.user, Content: long,
			Targets: []persistence.Target{target(f.x, "twitter_x", persistence.TargetPublished), target(f.bsky, "bluesky", persistence.TargetFailed)}}, ""},
		{"instagram with its photo", persistence.Post{UserID: f.user, Content: "x", MediaIDs: []string{f.jpeg},
			Targets: []persistence.Target{target(f.ig, "instagram", persistence.TargetPending)}}, ""},
		{"another user's post", persistence.Post{UserID: uuid.NewString(), Content: long,
			Targets: []persistence.Target{target(f.x, "twitter_x", persistence.TargetPending)}}, ""},
	} {
		err := f.h.checkStored(c, f.user, &tc.post)
		if tc.want == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		var ae *apierr.Error
		require.ErrorAs(t, err, &ae, tc.name)
		require.Equal(t, 400, ae.Status, tc.name)
		require.Equal(t, apierr.CodeValidation, ae.Code, tc.name)
		require.Equal(t, tc.want, ae.Message, tc.name)
	}
}

// The cost the check adds to a publish: three targets (X, Instagram, Bluesky) and one photo,
// every rule including the networks'.
func BenchmarkCheckPost(b *testing.B) {
	f := newCheckFixture(b)
	c := echo.New().NewContext(httptest.NewRequest("POST", "/v1/posts/publish", nil), httptest.NewRecorder())
	content := strings.Repeat("The autumn collection is out today. #launch ", 5)
	s := &submission{content: &content, accounts: []string{f.x, f.ig, f.bsky}, media: []string{f.jpeg}, whole: true, publish: true}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := f.h.checkPost(c, f.user, s, mediaCache{}); err != nil || len(res.errs) > 0 {
			b.Fatal(err, res.errs)
		}
	}
}

// The same post with each target's own text and options: the cost of targets in the check.
func BenchmarkCheckPostTargets(b *testing.B) {
	f := newCheckFixture(b)
	c := echo.New().NewContext(httptest.NewRequest("POST", "/v1/posts/publish", nil), httptest.NewRecorder())
	content := strings.Repeat("The autumn collection is out today. #launch ", 5)
	xText, bskyText := "Out today on X. #launch", "Out today on Bluesky."
	s := &submission{content: &content, accounts: []string{f.x, f.ig, f.bsky}, media: []string{f.jpeg}, whole: true, publish: true,
		specs: []targetSpec{
			{AccountID: f.x, Content: &xText, Options: []byte(`{"reply_settings":"following"}`)},
			{AccountID: f.bsky, Content: &bskyText, Options: []byte(`{"langs":["en"],"labels":[]}`)},
			{AccountID: f.ig, Options: []byte(`{"type":"feed"}`)},
		}}
	b.ReportAllocs()
	for b.Loop() {
		if res, err := f.h.checkPost(c, f.user, s, mediaCache{}); err != nil || len(res.errs) > 0 {
			b.Fatal(err, res.errs)
		}
	}
}
