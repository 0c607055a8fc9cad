// Package apptest starts a whole Herald for tests, as a user meets it: a real store (bbolt, or
// PostgreSQL under HERALD_TEST_STORE=postgres), a real HTTP listener on loopback, a user with a key,
// a dashboard password and connected accounts, and a client that checks every response against
// the served OpenAPI document (the route and status documented, the body matching its schema).
//
// Every package whose tests need Herald running uses it: the wiring's own tests
// (cmd/herald/app), the dashboard's browser tests (http/web), and the API's and live data's
// tests beside their packages.
package apptest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/http/web"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
)

// CheapPasswords make the tests' password hashes fast; the parameters are stored with each hash,
// so verification follows them (auth.DefaultPasswordParams are tested in http/auth).
var CheapPasswords = auth.PasswordParams{Time: 1, MemoryKiB: 1024, Threads: 1}

// PasswordOf is the dashboard password of a user made by NewUser.
func PasswordOf(email string) string { return "password of " + email }

// Options shape the Herald started.
type Options struct {
	// Config adjusts the configuration before the app is built.
	Config     func(*app.Config)
	Plan       string // the user's plan (default pro)
	PostIdle   time.Duration
	PlanLimits map[string]int
	// NoValidate turns the OpenAPI check of responses off (a test of what the document does not
	// describe).
	NoValidate  bool
	AdminSocket bool
	Media       app.MediaConfig
	// Sandbox starts the in-process network simulator on a free loopback port and points every
	// adapter at it (App.Sim).
	Sandbox bool
	// Demo makes the user, key and accounts the sandbox's demo user, key and its nine accounts
	// with simulator tokens (implies Sandbox).
	Demo       bool
	SimLatency time.Duration
	FreeQuota  int
	Budgets    map[platforms.Platform][]account.Rule
}

// Herald is one started Herald with its user.
type Herald struct {
	T   testing.TB
	App *app.App
	URL string
	// Key is the user's API key; Password its dashboard password.
	Key      string
	Password string
	User     *persistence.User
	Accounts []*persistence.Account
	Client   *http.Client
	// Header is sent with every request of Do and DoKey (WithHeader).
	Header   http.Header
	router   routers.Router
	Doc      *openapi3.T
	signedIn *signedIn
}

// WithHeader is the same Herald sending the header name: value with every request (a workspace
// with Herald-Workspace, for example).
func (h *Herald) WithHeader(name, value string) *Herald {
	c := *h
	c.Header = h.Header.Clone()
	if c.Header == nil {
		c.Header = http.Header{}
	}
	c.Header.Set(name, value)
	return &c
}

// In is the same Herald seen from another test (a subtest): its helpers fail that test. It shares
// the server, the user and the signed-in browser.
func (h *Herald) In(t testing.TB) *Herald {
	c := *h
	c.T = t
	return &c
}

// testMinFreeBytes is the media free-space floor of the servers tests start.
const testMinFreeBytes = 16 << 20

// Start builds and starts Herald on a temporary data directory; it shuts down when the test ends.
func Start(t testing.TB, o Options) *Herald {
	t.Helper()
	if o.Plan == "" {
		o.Plan = "pro"
	}
	cfg := app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Store: storetest.Store(t), Log: slog.New(slog.DiscardHandler),
		PostIdleTimeout: o.PostIdle, PasswordParams: CheapPasswords, PlanLimits: o.PlanLimits, NoAdminSocket: !o.AdminSocket,
		Media: o.Media, Sandbox: o.Sandbox || o.Demo, SimAddr: "127.0.0.1:0", SimLatency: o.SimLatency, FreePostQuota: o.FreeQuota,
		Budgets: o.Budgets, MetricsAddr: "127.0.0.1:0"}
	if cfg.Media.MinFreeBytes == 0 {
		// Tests upload kilobytes: a 16 MiB floor keeps the free-space check in the path without
		// refusing uploads on a build machine whose disk has less than the deployment's 1 GiB.
		cfg.Media.MinFreeBytes = testMinFreeBytes
	}
	if o.Config != nil {
		o.Config(&cfg)
	}
	a, err := app.New(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	t.Cleanup(func() { _ = a.Shutdown() })
	h := &Herald{T: t, App: a, URL: a.URL(), Client: &http.Client{Timeout: 30 * time.Second}, signedIn: &signedIn{}}
	if o.Demo {
		h.Key, h.Password = a.SandboxKey, a.SandboxPassword
		require.NoError(t, a.Store.View(func(tx *persistence.Tx) error {
			var err error
			if h.User, err = tx.SandboxUser(); err != nil {
				return err
			}
			h.Accounts, err = tx.AccountsIn(h.User.ID)
			return err
		}))
	} else {
		h.User, h.Key = h.NewUser("owner@example.com", o.Plan)
		h.Password = PasswordOf(h.User.Email)
		for _, p := range []string{"linkedin", "twitter_x", "bluesky"} {
			h.Accounts = append(h.Accounts, h.NewAccount(h.User.ID, p))
		}
	}
	if !o.NoValidate {
		doc, err := api.Spec()
		require.NoError(t, err)
		h.Doc = doc
		h.router, err = legacy.NewRouter(doc)
		require.NoError(t, err)
	}
	return h
}

// NewUser creates a user with a key and a dashboard password (PasswordOf its e-mail).
func (h *Herald) NewUser(email, plan string) (*persistence.User, string) {
	h.T.Helper()
	ctx := context.Background()
	u, err := auth.CreateUser(ctx, h.App.Store, auth.NewUser{Email: email, Plan: plan, Password: PasswordOf(email), PasswordParams: CheapPasswords}, time.Now())
	require.NoError(h.T, err)
	k, err := auth.CreateKey(ctx, h.App.Store, email, "test", 0, time.Now())
	require.NoError(h.T, err)
	return u, k.Key
}

// NewAccount stores a connected account of userID on platform (no network behind it: for
// publishing against a network, use Demo's accounts).
func (h *Herald) NewAccount(userID, platform string) *persistence.Account {
	h.T.Helper()
	name := "acct-" + platform
	exp := time.Now().Add(30 * 24 * time.Hour).UTC()
	a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Platform: platform, Username: &name,
		IsActive: true, TokenExpiresAt: &exp, CreatedAt: time.Now().UTC()}
	require.NoError(h.T, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
	return a
}

// Account is the user's account on a platform.
func (h *Herald) Account(p platforms.Platform) *persistence.Account {
	h.T.Helper()
	for _, a := range h.Accounts {
		if a.Platform == string(p) {
			return a
		}
	}
	h.T.Fatalf("no %s account", p)
	return nil
}

// Response is an answer as the client read it.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object.
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// ErrorCode is the error's code, failing the test when the body is not the error shape.
func (r *Response) ErrorCode(t testing.TB) string {
	t.Helper()
	e, ok := r.JSON(t)["error"].(map[string]any)
	require.True(t, ok, "no error object in %s", r.Body)
	return e["code"].(string)
}

// ErrorMessage is the error's message.
func (r *Response) ErrorMessage(t testing.TB) string {
	t.Helper()
	return r.JSON(t)["error"].(map[string]any)["message"].(string)
}

// Do sends a request with the user's key and checks the response against the OpenAPI document.
// body is sent as it is when a string or bytes, else as JSON.
func (h *Herald) Do(method, path string, body any) *Response {
	h.T.Helper()
	return h.DoKey(h.Key, method, path, body, nil)
}

var validateMu sync.Mutex

// DoKey is Do with another key ("" sends none) and extra headers.
func (h *Herald) DoKey(key, method, path string, body any, hdr http.Header) *Response {
	h.T.Helper()
	var raw []byte
	switch v := body.(type) {
	case nil:
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	default:
		var err error
		raw, err = json.Marshal(v)
		require.NoError(h.T, err)
	}
	req, err := http.NewRequest(method, h.URL+path, bytes.NewReader(raw))
	require.NoError(h.T, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if raw != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	r := h.send(req, hdr)
	require.NotEmpty(h.T, r.Header.Get("X-Request-Id"), "every response carries X-Request-Id")
	h.Validate(req, r)
	return r
}

// Validate checks a response against the served document: the route and status must be
// documented and the body must match its schema. An unknown route must answer 404 not_found (or
// 405 for a known path with another method) in the error shape.
func (h *Herald) Validate(req *http.Request, r *Response) {
	h.T.Helper()
	if h.router == nil {
		return
	}
	vreq := req.Clone(context.Background())
	vreq.URL.Host, vreq.URL.Scheme = "", ""
	route, params, err := h.router.FindRoute(vreq)
	if err != nil {
		require.Contains(h.T, []int{404, 405}, r.Status, "%s %s is not documented: %v", req.Method, req.URL.Path, err)
		require.Equal(h.T, "not_found", r.ErrorCode(h.T))
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: r.Status, Header: r.Header, Body: io.NopCloser(bytes.NewReader(r.Body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	validateMu.Lock()
	err = openapi3filter.ValidateResponse(context.Background(), in)
	validateMu.Unlock()
	require.NoError(h.T, err, "%s %s → %d %s", req.Method, req.URL.Path, r.Status, Truncate(string(r.Body), 500))
}

// Truncate shortens s to n bytes for a message.
func Truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// CreatePost creates a draft on accounts and returns its id.
func (h *Herald) CreatePost(content string, accounts ...*persistence.Account) string {
	h.T.Helper()
	ids := []string{}
	for _, a := range accounts {
		ids = append(ids, a.ID)
	}
	r := h.Do("POST", "/v1/posts", map[string]any{"content": content, "platforms": ids})
	require.Equal(h.T, 201, r.Status, string(r.Body))
	id := r.JSON(h.T)["id"].(string)
	require.Len(h.T, strings.Split(id, "-"), 5)
	return id
}

// CountPosts is how many posts the user has.
func (h *Herald) CountPosts() int {
	h.T.Helper()
	var total int
	require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) error {
		_, n, err := tx.ListPosts(persistence.PostFilter{Scope: h.User.ID, Limit: 1})
		total = n
		return err
	}))
	return total
}

// WaitJob polls GET /v1/jobs/:id until the job is completed or failed, and returns it.
func (h *Herald) WaitJob(id string) map[string]any {
	h.T.Helper()
	var j map[string]any
	require.Eventually(h.T, func() bool {
		r := h.Do("GET", "/v1/jobs/"+id, nil)
		require.Equal(h.T, 200, r.Status, string(r.Body))
		j = r.JSON(h.T)
		return j["status"] == "completed" || j["status"] == "failed"
	}, 30*time.Second, 10*time.Millisecond)
	return j
}

// PublishAndWait publishes a post through the API and returns it once published, with its
// targets (and so the networks' publication ids).
func (h *Herald) PublishAndWait(content string, media []string, accts ...*persistence.Account) *persistence.Post {
	h.T.Helper()
	body := map[string]any{"content": content, "platforms": []string{}}
	for _, a := range accts {
		body["platforms"] = append(body["platforms"].([]string), a.ID)
	}
	if media != nil {
		body["media"] = media
	}
	r := h.Do("POST", "/v1/posts/publish", body)
	require.Equal(h.T, 202, r.Status, string(r.Body))
	j := h.WaitJob(r.JSON(h.T)["tracking_id"].(string))
	require.Equal(h.T, "completed", j["status"], "%v", j)
	postID := r.JSON(h.T)["post_id"].(string)
	var p *persistence.Post
	require.Eventually(h.T, func() bool {
		require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) error {
			var err error
			p, err = tx.Post(postID)
			return err
		}))
		return p.Status == persistence.PostPublished
	}, 10*time.Second, 10*time.Millisecond)
	return p
}

// Target is the network's publication id of the post's target on platform.
func Target(p *persistence.Post, platform platforms.Platform) string {
	for _, t := range p.Targets {
		if t.Platform == string(platform) {
			return t.PublicationID
		}
	}
	return ""
}

// PublicationID is the publication_id of the post's target on platform.
func PublicationID(p *persistence.Post, platform platforms.Platform) string {
	for i, t := range p.Targets {
		if t.Platform == string(platform) {
			return persistence.PublicationUUID(p.ID, i)
		}
	}
	return ""
}

// TestFile is a test file: real magic bytes, then random bytes (so that a hash names one file).
func TestFile(magic string, size int) []byte {
	r := rand.New(rand.NewPCG(uint64(size), uint64(len(magic))))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, magic)
	return b
}

// Media files the networks take: a JPEG and a PNG image and an MP4 video.
var (
	JPEGFile = TestFile("\xFF\xD8\xFF\xE0\x00\x10JFIF\x00", 300<<10)
	PNGFile  = TestFile("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", 200<<10)
	MP4File  = TestFile("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom", 3<<20+123)
)

// UploadMedia runs the whole media flow for the user (presign, PUT of the bytes, confirm) and
// returns the media id.
func (h *Herald) UploadMedia(filename, ctype string, data []byte) string {
	h.T.Helper()
	return h.UploadMediaKey(h.Key, filename, ctype, data)
}

// UploadMediaKey is UploadMedia with another user's key.
func (h *Herald) UploadMediaKey(key, filename, ctype string, data []byte) string {
	h.T.Helper()
	r := h.DoKey(key, "POST", "/v1/media/presign", map[string]any{"filename": filename, "content_type": ctype, "size_bytes": len(data)}, nil)
	require.Equal(h.T, 200, r.Status, string(r.Body))
	p := r.JSON(h.T)
	req, err := http.NewRequest(http.MethodPut, p["upload_url"].(string), bytes.NewReader(data))
	require.NoError(h.T, err)
	req.Header.Set("Content-Type", ctype)
	resp, err := h.Client.Do(req)
	require.NoError(h.T, err)
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(h.T, err)
	require.Equal(h.T, 200, resp.StatusCode, string(out))
	if strings.HasPrefix(req.URL.String(), h.URL) {
		h.Validate(req, &Response{Status: resp.StatusCode, Header: resp.Header, Body: out})
	}
	r = h.DoKey(key, "POST", "/v1/media/confirm", map[string]any{"key": p["key"], "storage_filename": p["storage_filename"],
		"original_filename": "my " + p["storage_filename"].(string), "content_type": ctype, "size_bytes": len(data)}, nil)
	require.Equal(h.T, 201, r.Status, string(r.Body))
	return r.JSON(h.T)["id"].(string)
}

// Browser is a person's browser: a real cookie jar, redirects not followed, and the CSRF token of
// its session once signed in.
type Browser struct {
	H      *Herald
	Client *http.Client
	CSRF   string
}

// NewBrowser is a browser with no session.
func (h *Herald) NewBrowser() *Browser {
	h.T.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(h.T, err)
	return &Browser{H: h, Client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signedIn is the user's browser, made on first use.
type signedIn struct {
	once sync.Once
	br   *Browser
}

// SignedIn is the browser of the user, signed in on first use.
func (h *Herald) SignedIn() *Browser {
	h.T.Helper()
	h.signedIn.once.Do(func() {
		br := h.NewBrowser()
		r := br.SignIn(h.User.Email, h.Password)
		require.Equal(h.T, 200, r.Status, string(r.Body))
		h.signedIn.br = br
	})
	require.NotNil(h.T, h.signedIn.br, "the user signs in")
	return h.signedIn.br
}

// Send sends one request from the browser. body is JSON (any), a url.Values form, or raw bytes.
func (br *Browser) Send(method, path string, body any, hdr http.Header) *Response {
	t := br.H.T
	t.Helper()
	var rd io.Reader
	ct := ""
	switch v := body.(type) {
	case nil:
	case url.Values:
		rd, ct = strings.NewReader(v.Encode()), "application/x-www-form-urlencoded"
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		rd, ct = bytes.NewReader(raw), "application/json"
	}
	req, err := http.NewRequest(method, br.H.URL+path, rd)
	require.NoError(t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := br.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

// CSRFHeader carries the session's CSRF token.
func (br *Browser) CSRFHeader() http.Header { return http.Header{"X-Csrf-Token": {br.CSRF}} }

// SignIn posts the JSON sign-in and keeps the CSRF token of a success.
func (br *Browser) SignIn(email, password string) *Response {
	t := br.H.T
	t.Helper()
	r := br.Send("POST", "/api/session", map[string]any{"email": email, "password": password}, nil)
	if r.Status == 200 {
		br.CSRF = r.JSON(t)["csrf_token"].(string)
		require.NotEmpty(t, br.CSRF)
	}
	return r
}

// SessionCookie is the value of the browser's session cookie for Herald ("" when it has none):
// the token whose hash the store keeps (session.HashToken).
func (br *Browser) SessionCookie() string {
	u, err := url.Parse(br.H.URL)
	require.NoError(br.H.T, err)
	for _, c := range br.Client.Jar.Cookies(u) {
		if c.Name == session.CookieName {
			return c.Value
		}
	}
	return ""
}

// SetSessionCookie puts a session cookie in the browser's jar, as a browser that copied it from
// another would send it.
func (br *Browser) SetSessionCookie(token string) {
	u, err := url.Parse(br.H.URL)
	require.NoError(br.H.T, err)
	br.Client.Jar.SetCookies(u, []*http.Cookie{{Name: session.CookieName, Value: token}})
}

// WithSessionClock makes the dashboard's sessions and sign-in throttle read c (expiry, the
// throttle's windows) instead of the wall clock.
func WithSessionClock(c *Clock) func(*app.Config) {
	return func(cfg *app.Config) { cfg.SessionClock = c.Now }
}

// Clock is a clock the test moves, injected where the configuration takes one: the adapters'
// test clock (platformstest.Clock).
type Clock = platformstest.Clock

// NewClock is a clock at now.
func NewClock(now time.Time) *Clock { return platformstest.NewClock(now) }

// OAuth is a Herald with an injected OAuth clock and a registered public client.
type OAuth struct {
	*Herald
	Clock    *Clock
	ClientID string
	Redirect string
}

// StartOAuth starts Herald with an OAuth clock and registers a public client, Claude, returning
// to a loopback redirect. o.Config, if set, adjusts the configuration after the clock is set.
func StartOAuth(t testing.TB, o Options) *OAuth {
	t.Helper()
	ob := StartOAuthNoClient(t, o)
	ob.ClientID = ob.Register("Claude")
	require.NotEmpty(t, ob.ClientID)
	return ob
}

// StartOAuthNoClient is StartOAuth without the registered client.
func StartOAuthNoClient(t testing.TB, o Options) *OAuth {
	t.Helper()
	clock := NewClock(time.Now())
	adjust := o.Config
	o.Config = func(cfg *app.Config) {
		cfg.OAuthClock = clock.Now
		if adjust != nil {
			adjust(cfg)
		}
	}
	return &OAuth{Herald: Start(t, o), Clock: clock, Redirect: "http://127.0.0.1:7777/callback"}
}

// Register registers a public client returning to the redirect and returns its id.
func (o *OAuth) Register(name string) string {
	o.T.Helper()
	r := o.Post("/oauth/register", "application/json", `{"client_name":"`+name+`","redirect_uris":["`+o.Redirect+`"]}`)
	require.Equal(o.T, 201, r.Status, string(r.Body))
	return r.JSON(o.T)["client_id"].(string)
}

// Post sends a body with no credentials.
func (o *OAuth) Post(path, ct, body string) *Response {
	o.T.Helper()
	resp, err := o.Client.Post(o.URL+path, ct, strings.NewReader(body))
	require.NoError(o.T, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(o.T, err)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

// Bearer sends a request with a token, unvalidated (the scope and audience refusals).
func (o *OAuth) Bearer(token, method, path string) *Response {
	o.T.Helper()
	req, err := http.NewRequest(method, o.URL+path, nil)
	require.NoError(o.T, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := o.Client.Do(req)
	require.NoError(o.T, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(o.T, err)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

// Token posts a form to the token endpoint.
func (o *OAuth) Token(form url.Values) *Response {
	return o.Post("/oauth/token", "application/x-www-form-urlencoded", form.Encode())
}

// PKCEPair is a PKCE verifier made of seed and its S256 challenge.
func PKCEPair(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 64)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// AuthRequest is an authorization request's parameters.
func (o *OAuth) AuthRequest(challenge, resource, scope string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {o.ClientID}, "redirect_uri": {o.Redirect},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"st-123"},
		"resource": {resource}, "scope": {scope}}
}

// HiddenField finds the hidden fields of the consent page's form.
var HiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// HTMLUnescape undoes the escaping of html/template in an attribute.
func HTMLUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&#43;", "+").Replace(s)
}

// Consent loads the consent page as the browser and posts its form with decision; it returns
// the redirect's query.
func (o *OAuth) Consent(br *Browser, q url.Values, decision string) url.Values {
	o.T.Helper()
	page := br.Send("GET", "/oauth/authorize?"+q.Encode(), nil, nil)
	require.Equal(o.T, 200, page.Status, string(page.Body))
	require.Contains(o.T, string(page.Body), "Connect Claude?")
	require.Contains(o.T, string(page.Body), "127.0.0.1:7777")
	form := url.Values{}
	for _, m := range HiddenField.FindAllStringSubmatch(string(page.Body), -1) {
		form.Add(m[1], HTMLUnescape(m[2]))
	}
	require.NotEmpty(o.T, form.Get("csrf_token"))
	form.Set("decision", decision)
	r := br.Send("POST", "/oauth/authorize", form, nil)
	require.Equal(o.T, 303, r.Status, string(r.Body))
	loc, err := url.Parse(r.Header.Get("Location"))
	require.NoError(o.T, err)
	require.Equal(o.T, "127.0.0.1:7777", loc.Host)
	require.Equal(o.T, "st-123", loc.Query().Get("state"))
	require.Equal(o.T, o.URL, loc.Query().Get("iss"), "RFC 9207 iss")
	return loc.Query()
}

// Grant runs the whole flow for the user and returns the token answer.
func (o *OAuth) Grant(resource, scope string) map[string]any {
	o.T.Helper()
	verifier, challenge := PKCEPair("v")
	q := o.Consent(o.SignedIn(), o.AuthRequest(challenge, resource, scope), "approve")
	r := o.Token(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {o.Redirect}, "client_id": {o.ClientID}, "resource": {resource}})
	require.Equal(o.T, 200, r.Status, string(r.Body))
	return r.JSON(o.T)
}

// AccountsByID lists GET /v1/accounts by id.
func (h *Herald) AccountsByID() map[string]map[string]any {
	h.T.Helper()
	r := h.Do("GET", "/v1/accounts", nil)
	require.Equal(h.T, 200, r.Status, string(r.Body))
	out := map[string]map[string]any{}
	for _, a := range r.JSON(h.T)["data"].([]any) {
		m := a.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}

// TimeField is an RFC 3339 time field of an object, failing the test when it is not one.
func TimeField(t testing.TB, m map[string]any, field string) time.Time {
	t.Helper()
	s, ok := m[field].(string)
	require.True(t, ok, "%s is %v", field, m[field])
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

// WithReceivers allows loopback targets and trusts the test CA, with fast retries.
func WithReceivers(ca *webhooktest.CA) func(*app.Config) {
	return func(c *app.Config) {
		c.WebhookAllowPrivate = true
		c.WebhookCAFile = ca.File
		c.WebhookSchedule = []time.Duration{time.Millisecond}
	}
}

// CreateWebhook subscribes the user to events (every event when none is given) at url and
// returns the subscription's id and signing secret.
func (h *Herald) CreateWebhook(url string, events ...string) (id, secret string) {
	h.T.Helper()
	if len(events) == 0 {
		events = persistence.WebhookEvents
	}
	r := h.Do("POST", "/v1/webhooks", map[string]any{"url": url, "events": events})
	require.Equal(h.T, 201, r.Status, string(r.Body))
	m := r.JSON(h.T)
	return m["id"].(string), m["secret"].(string)
}

// WebhookCount is how many webhooks the user has.
func (h *Herald) WebhookCount() int {
	h.T.Helper()
	n := 0
	require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) error { n = tx.CountWebhooks(h.User.ID); return nil }))
	return n
}

// Scrape reads the Prometheus exposition served at base.
func Scrape(t testing.TB, base string) string {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(raw)
}

// DashboardPath reports whether a path is the dashboard's (not in the OpenAPI document): the
// OAuth consent page and the invitation page (/join/) are a browser's pages too.
func DashboardPath(p string) bool {
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/join/") || p == "/signin" || p == "/signout" || p == "/oauth/authorize" || slices.Contains(web.Paths, p)
}

// RequireSecurityHeaders checks the headers every dashboard answer carries: a strict content
// security policy, no framing, no sniffing, no referrer outside the origin.
func RequireSecurityHeaders(t testing.TB, r *Response) {
	t.Helper()
	csp := r.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'self'")
	require.Contains(t, csp, "script-src 'self'")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe-inline")
	require.Equal(t, "DENY", r.Header.Get("X-Frame-Options"))
	require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
	require.Equal(t, "same-origin", r.Header.Get("Referrer-Policy"))
}
