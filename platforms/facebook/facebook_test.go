package facebook_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/facebook"
	"github.com/heraldhq/herald/platforms/sim"
)

var (
	jpeg = append([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, bytes.Repeat([]byte("jpegdata"), 64)...)
	png  = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("pngdata"), 64)...)
	mp4  = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), bytes.Repeat([]byte("videodata"), 512)...)
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func media(ctype string, data []byte) platforms.Media {
	return platforms.Media{
		ContentType: ctype, Size: int64(len(data)), Filename: "f",
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

type env struct {
	srv   *sim.Server
	a     *facebook.Adapter
	creds platforms.Credentials
}

func setup(t *testing.T, opts sim.Options) *env {
	t.Helper()
	if opts.ProcessingDelay == 0 {
		opts.ProcessingDelay = 5 * time.Millisecond
	}
	srv, err := sim.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := srv.AdapterConfig(platforms.Facebook)
	cfg.HTTPClient = &http.Client{Timeout: 3 * time.Second}
	creds, err := srv.NewAccount(platforms.Facebook, "acme")
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, a: facebook.New(cfg), creds: creds}
}

func kind(t *testing.T, err error, want platforms.Kind) *platforms.Error {
	t.Helper()
	var e *platforms.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *platforms.Error", err)
	}
	if e.Kind != want {
		t.Fatalf("kind = %s, want %s (%v)", e.Kind, want, err)
	}
	return e
}

func TestTextPost(t *testing.T) {
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "hello pages"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Publication.ID, e.creds.UserID+"_") || !strings.Contains(res.Publication.URL, "/posts/") {
		t.Fatalf("publication = %+v", res.Publication)
	}
	if !res.Rate.Known || res.Rate.Limit != 100 || res.Rate.Remaining <= 0 || res.Rate.Remaining > 100 {
		t.Fatalf("rate = %+v", res.Rate)
	}
	pubs := e.srv.Publications(platforms.Facebook)
	if len(pubs) != 1 || pubs[0].Text != "hello pages" || pubs[0].ID != res.Publication.ID || pubs[0].Account != e.creds.UserID {
		t.Fatalf("publications = %+v", pubs)
	}
}

func TestPhotoPosts(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	res, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "one photo", Media: []platforms.Media{media("image/jpeg", jpeg)}})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "two photos", Media: []platforms.Media{media("image/png", png), media("image/jpeg", jpeg)}})
	if err != nil {
		t.Fatal(err)
	}
	pubs := e.srv.Publications(platforms.Facebook)
	if len(pubs) != 2 {
		t.Fatalf("publications = %+v", pubs)
	}
	if pubs[0].ID != res.Publication.ID || len(pubs[0].MediaSHA256) != 1 || pubs[0].MediaSHA256[0] != sum(jpeg) || pubs[0].Text != "one photo" {
		t.Fatalf("photo post = %+v", pubs[0])
	}
	if pubs[1].ID != res2.Publication.ID || len(pubs[1].MediaSHA256) != 2 || pubs[1].MediaSHA256[0] != sum(png) || pubs[1].MediaSHA256[1] != sum(jpeg) {
		t.Fatalf("multi-photo post = %+v", pubs[1])
	}
}

func TestVideoPost(t *testing.T) {
	e := setup(t, sim.Options{})
	res, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "a video", Media: []platforms.Media{media("video/mp4", mp4)}})
	if err != nil {
		t.Fatal(err)
	}
	pubs := e.srv.Publications(platforms.Facebook)
	if len(pubs) != 1 || pubs[0].ID != res.Publication.ID || pubs[0].MediaSHA256[0] != sum(mp4) || pubs[0].Text != "a video" {
		t.Fatalf("publications = %+v, result %+v", pubs, res)
	}
	if !strings.Contains(res.Publication.URL, "/videos/") {
		t.Fatalf("url = %s", res.Publication.URL)
	}
}

func TestValidate(t *testing.T) {
	a := facebook.New(platforms.Config{})
	img, vid := media("image/jpeg", jpeg), media("video/mp4", mp4)
	many := make([]platforms.Media, 11)
	for i := range many {
		many[i] = img
	}
	bad := []platforms.Post{
		{},
		{Text: strings.Repeat("a", facebook.MaxTextRunes+1)},
		{Text: "x", Media: []platforms.Media{img, vid}},
		{Text: "x", Media: []platforms.Media{vid, vid}},
		{Text: "x", Media: many},
		{Text: "x", Media: []platforms.Media{media("application/pdf", jpeg)}},
	}
	for i, p := range bad {
		err := a.Validate(p)
		if err == nil {
			t.Fatalf("post %d: no error", i)
		}
		kind(t, err, platforms.Invalid)
		if _, err := a.Publish(context.Background(), platforms.Credentials{}, p); platforms.KindOf(err) != platforms.Invalid {
			t.Fatalf("post %d: Publish error %v", i, err)
		}
	}
	good := []platforms.Post{
		{Text: strings.Repeat("é", facebook.MaxTextRunes)},
		{Media: []platforms.Media{vid}},
		{Text: "x", Media: many[:10]},
	}
	for i, p := range good {
		if err := a.Validate(p); err != nil {
			t.Fatalf("good post %d: %v", i, err)
		}
	}
}

func TestSimRefusesOverlongText(t *testing.T) {
	e := setup(t, sim.Options{})
	req, _ := http.NewRequest(http.MethodPost, e.srv.BaseURL()+"/facebook/v25.0/"+e.creds.UserID+"/feed",
		strings.NewReader(url.Values{"message": {strings.Repeat("a", facebook.MaxTextRunes+1)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+e.creds.AccessToken)
	resp, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"code":100`) {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

func TestDuplicateIsPermanent(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	if _, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "same"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "same"})
	if pe := kind(t, err, platforms.Permanent); pe.Code != "506" {
		t.Fatalf("code = %s", pe.Code)
	}
}

func TestExpiredTokenAndReconnect(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	if err := e.srv.InjectFault(platforms.Facebook, sim.FaultExpireTokens, 1); err != nil {
		t.Fatal(err)
	}
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "after expiry"})
	if pe := kind(t, err, platforms.AuthExpired); pe.Code != "190" {
		t.Fatalf("code = %s", pe.Code)
	}
	_, err = e.a.Refresh(ctx, e.creds)
	kind(t, err, platforms.Permanent)
	creds := connect(t, e, "acme")
	if creds.UserID != e.creds.UserID {
		t.Fatalf("reconnected page %s, want %s", creds.UserID, e.creds.UserID)
	}
	if _, err := e.a.Publish(ctx, creds, platforms.Post{Text: "after expiry"}); err != nil {
		t.Fatal(err)
	}
}

func TestRateLimitFault(t *testing.T) {
	e := setup(t, sim.Options{})
	if err := e.srv.InjectFault(platforms.Facebook, sim.FaultRateLimit, 1); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	_, err := e.a.Publish(context.Background(), e.creds, platforms.Post{Text: "throttled"})
	pe := kind(t, err, platforms.RateLimited)
	if pe.Code != "80001" || pe.ResetAt.Before(before.Add(30*time.Second)) || pe.ResetAt.After(before.Add(3*time.Minute)) {
		t.Fatalf("error = %+v", pe)
	}
	if n := len(e.srv.Publications(platforms.Facebook)); n != 0 {
		t.Fatalf("%d publications", n)
	}
}

func TestBudgetExhausted(t *testing.T) {
	e := setup(t, sim.Options{})
	e.srv.SetLimit(platforms.Facebook, "calls", sim.Limit{Count: 1, Window: time.Hour})
	ctx := context.Background()
	if _, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "second"})
	pe := kind(t, err, platforms.RateLimited)
	if d := time.Until(pe.ResetAt); d < 50*time.Minute || d > 61*time.Minute {
		t.Fatalf("reset in %s", d)
	}
}

func TestError5xx(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	// The feed post is the creating call: a 5xx may hide a created post.
	_ = e.srv.InjectFault(platforms.Facebook, sim.FaultError5xx, 1)
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "outage"})
	kind(t, err, platforms.Unknown)
	// The first photo upload of a multi-photo post creates nothing: Transient.
	_ = e.srv.InjectFault(platforms.Facebook, sim.FaultError5xx, 1)
	_, err = e.a.Publish(ctx, e.creds, platforms.Post{Text: "photos", Media: []platforms.Media{media("image/jpeg", jpeg), media("image/jpeg", jpeg)}})
	kind(t, err, platforms.Transient)
	// Reads are Transient.
	_ = e.srv.InjectFault(platforms.Facebook, sim.FaultError5xx, 1)
	_, _, err = e.a.Lookup(ctx, e.creds, platforms.Post{Text: "x"}, time.Now())
	kind(t, err, platforms.Transient)
}

func TestPostThenErrorAndLookup(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	since := time.Now().Add(-time.Second)
	if _, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "an older post"}); err != nil {
		t.Fatal(err)
	}
	_ = e.srv.InjectFault(platforms.Facebook, sim.FaultPostThenError, 1)
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "did it post?"})
	kind(t, err, platforms.Unknown)
	pub, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "did it post?"}, since)
	if err != nil || !found {
		t.Fatalf("lookup: found=%v err=%v", found, err)
	}
	var matches []sim.Record
	for _, r := range e.srv.Publications(platforms.Facebook) {
		if r.Text == "did it post?" {
			matches = append(matches, r)
		}
	}
	if len(matches) != 1 || matches[0].ID != pub.ID {
		t.Fatalf("records %+v, lookup %+v", matches, pub)
	}
	if _, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "never posted"}, since); err != nil || found {
		t.Fatalf("lookup of a missing post: found=%v err=%v", found, err)
	}
	if _, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "an older post"}, time.Now().Add(time.Hour)); err != nil || found {
		t.Fatalf("lookup before since: found=%v err=%v", found, err)
	}
}

func TestLookupPages(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	for i := 0; i < 120; i++ {
		if _, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "post " + strings.Repeat("x", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The oldest post is on the second page of 100.
	pub, found, err := e.a.Lookup(ctx, e.creds, platforms.Post{Text: "post "}, time.Now().Add(-time.Minute))
	if err != nil || !found || pub.ID != e.srv.Publications(platforms.Facebook)[0].ID {
		t.Fatalf("found=%v err=%v pub=%+v", found, err, pub)
	}
}

func TestTimeout(t *testing.T) {
	e := setup(t, sim.Options{TimeoutHold: 100 * time.Millisecond})
	ctx := context.Background()
	_ = e.srv.InjectFault(platforms.Facebook, sim.FaultTimeout, 1)
	_, err := e.a.Publish(ctx, e.creds, platforms.Post{Text: "lost"})
	kind(t, err, platforms.Unknown)
	_ = e.srv.InjectFault(platforms.Facebook, sim.FaultTimeout, 1)
	_, _, err = e.a.Lookup(ctx, e.creds, platforms.Post{Text: "lost"}, time.Now())
	kind(t, err, platforms.Transient)
}

func TestConnectionRefused(t *testing.T) {
	ln := httptest.NewServer(http.NotFoundHandler())
	base := ln.URL
	ln.Close()
	a := facebook.New(platforms.Config{BaseURL: base, UploadURL: base})
	_, err := a.Publish(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Text: "x"})
	kind(t, err, platforms.Transient)
}

func TestGarbageAnswers(t *testing.T) {
	cases := []struct {
		body string
		want platforms.Kind
	}{
		{`<html>proxy error</html>`, platforms.Unknown},
		{`{"error":{"message":"(#100) Invalid parameter","type":"OAuthException","code":100,"fbtrace_id":"x"}}`, platforms.Permanent},
		{`{"id":""}`, platforms.Unknown},
		{`{"error":{"message":"Please retry","code":2,"is_transient":true}}`, platforms.Unknown},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, c.body)
		}))
		a := facebook.New(platforms.Config{BaseURL: srv.URL, UploadURL: srv.URL})
		res, err := a.Publish(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Text: "x"})
		if err == nil {
			t.Fatalf("body %s: success %+v", c.body, res)
		}
		kind(t, err, c.want)
		_, _, err = a.Lookup(context.Background(), platforms.Credentials{UserID: "1", AccessToken: "t"}, platforms.Post{Text: "x"}, time.Now())
		if err == nil && c.body[0] == '<' {
			t.Fatalf("lookup accepted %s", c.body)
		}
		srv.Close()
	}
}

// connect runs the consent flow for handle and exchanges the code.
func connect(t *testing.T, e *env, handle string) platforms.Credentials {
	t.Helper()
	redirect := "https://herald.example/callback"
	loc := authorize(t, e, handle, redirect)
	if loc.Query().Get("state") != "st4te" || loc.Query().Get("code") == "" {
		t.Fatalf("redirect = %s", loc)
	}
	creds, err := e.a.Exchange(context.Background(), loc.Query().Get("code"), redirect, "")
	if err != nil {
		t.Fatal(err)
	}
	return creds
}

func authorize(t *testing.T, e *env, handle, redirect string) *url.URL {
	t.Helper()
	u := e.a.AuthorizeURL("st4te", redirect, "")
	if !strings.Contains(u, "/v25.0/dialog/oauth?") || !strings.Contains(u, "pages_manage_posts") {
		t.Fatalf("authorize url = %s", u)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(u + "&login_hint=" + url.QueryEscape(handle))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("consent status %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), redirect) {
		t.Fatalf("location %q", resp.Header.Get("Location"))
	}
	return loc
}

func TestConnectPublishRevoke(t *testing.T) {
	e := setup(t, sim.Options{})
	ctx := context.Background()
	if e.a.UsesPKCE() {
		t.Fatal("facebook does not take PKCE")
	}
	creds := connect(t, e, "bistro")
	if creds.Handle != "bistro" || creds.UserID == "" || creds.AccessToken == "" || !creds.ExpiresAt.IsZero() || creds.Extra["user_token"] == "" {
		t.Fatalf("credentials = %+v", creds)
	}
	if _, err := e.a.Publish(ctx, creds, platforms.Post{Text: "from the connected page"}); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Revoke(ctx, creds); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range e.srv.Revocations() {
		if r.Platform == string(platforms.Facebook) && r.Account == creds.UserID {
			found = true
		}
	}
	if !found {
		t.Fatalf("revocations = %+v", e.srv.Revocations())
	}
	_, err := e.a.Publish(ctx, creds, platforms.Post{Text: "after revoke"})
	kind(t, err, platforms.AuthExpired)
	// Credentials without a user token have nothing to revoke.
	if err := e.a.Revoke(ctx, e.creds); err != nil {
		t.Fatal(err)
	}
}

func TestConnectDeniedAndCodeReuse(t *testing.T) {
	e := setup(t, sim.Options{})
	redirect := "https://herald.example/callback"
	e.srv.Deny(platforms.Facebook)
	loc := authorize(t, e, "acme", redirect)
	if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
		t.Fatalf("denied redirect = %s", loc)
	}
	loc = authorize(t, e, "acme", redirect)
	code := loc.Query().Get("code")
	if _, err := e.a.Exchange(context.Background(), code, "https://elsewhere.example/cb", ""); err == nil {
		t.Fatal("exchange with another redirect_uri succeeded")
	}
	loc = authorize(t, e, "acme", redirect)
	code = loc.Query().Get("code")
	if _, err := e.a.Exchange(context.Background(), code, redirect, ""); err != nil {
		t.Fatal(err)
	}
	_, err := e.a.Exchange(context.Background(), code, redirect, "")
	kind(t, err, platforms.Permanent)
}
