package app_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// testBundle is the wiring tests' view of one Herald started by apptest (a temporary data
// directory, loopback, a user with a key, a password and connected accounts, responses checked
// against the served OpenAPI document), with a dashboard browser (browser).
type testBundle struct {
	t    *testing.T
	h    *apptest.Herald
	app  *app.App
	url  string
	key  string
	user *persistence.User
	// password is the user's dashboard password.
	password string
	accounts []*persistence.Account
	client   *http.Client
	doc      *openapi3.T
}

type bundleOpts struct {
	// config adjusts the configuration before the app is built (webhooks_test.go).
	config      func(*app.Config)
	plan        string
	postIdle    time.Duration
	planLimits  map[string]int
	noValidate  bool
	adminSocket bool
	// media configures media storage (media_test.go).
	media app.MediaConfig
	// sandbox starts the in-process network simulator on a free loopback port and points every
	// adapter at it (b.app.Sim).
	sandbox bool
	// demo makes the bundle's user, key and accounts the sandbox's demo user, key and its nine
	// accounts with simulator tokens (implies sandbox).
	demo       bool
	simLatency time.Duration
	freeQuota  int
	budgets    map[platforms.Platform][]account.Rule
}

func setup(t *testing.T, o bundleOpts) *testBundle {
	t.Helper()
	return bundleOf(t, apptest.Start(t, apptest.Options{Config: o.config, Plan: o.plan, PostIdle: o.postIdle, PlanLimits: o.planLimits,
		NoValidate: o.noValidate, AdminSocket: o.adminSocket, Media: o.media, Sandbox: o.sandbox, Demo: o.demo,
		SimLatency: o.simLatency, FreeQuota: o.freeQuota, Budgets: o.budgets}))
}

// bundleOf is the wiring tests' view of a started Herald.
func bundleOf(t *testing.T, h *apptest.Herald) *testBundle {
	return &testBundle{t: t, h: h, app: h.App, url: h.URL, key: h.Key, user: h.User, password: h.Password,
		accounts: h.Accounts, client: h.Client, doc: h.Doc}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) api() *apptest.Response {
	return &apptest.Response{Status: r.status, Header: r.header, Body: r.body}
}

func (r *response) json(t *testing.T) map[string]any { t.Helper(); return r.api().JSON(t) }

func (r *response) errorCode(t *testing.T) string { t.Helper(); return r.api().ErrorCode(t) }

func (r *response) errorMessage(t *testing.T) string { t.Helper(); return r.api().ErrorMessage(t) }

// do sends a request with the bundle's key (key "" sends none; use doKey for another) and
// validates the response against the OpenAPI document.
func (b *testBundle) do(method, path string, body any) *response {
	return b.doKey(b.key, method, path, body, nil)
}

// herald is the bundle's Herald as this bundle sees it: its test, client and URL (a test may copy
// a bundle and give the copy another client, with another cookie jar).
func (b *testBundle) herald() *apptest.Herald {
	h := *b.h
	h.T, h.Client, h.URL = b.t, b.client, b.url
	return &h
}

// doKey is apptest's DoKey through the bundle's client.
func (b *testBundle) doKey(key, method, path string, body any, hdr http.Header) *response {
	b.t.Helper()
	r := b.herald().DoKey(key, method, path, body, hdr)
	return &response{status: r.Status, header: r.Header, body: r.Body}
}

// validate checks a response against the served document (apptest.Herald.Validate).
func (b *testBundle) validate(req *http.Request, r *response) {
	b.t.Helper()
	b.herald().Validate(req, r.api())
}

func (b *testBundle) countPosts() int {
	b.t.Helper()
	return b.h.CountPosts()
}

func (b *testBundle) createPost(content string, accounts ...*persistence.Account) string {
	b.t.Helper()
	return b.h.CreatePost(content, accounts...)
}

// account returns the bundle's account on a platform.
func (b *testBundle) account(p platforms.Platform) *persistence.Account {
	b.t.Helper()
	for _, a := range b.accounts {
		if a.Platform == string(p) {
			return a
		}
	}
	b.t.Fatalf("no %s account", p)
	return nil
}

// withReceivers allows loopback webhook targets (apptest.WithReceivers).
func withReceivers(ca *webhooktest.CA) func(*app.Config) { return apptest.WithReceivers(ca) }

func (b *testBundle) createWebhook(url string, events ...string) (id, secret string) {
	b.t.Helper()
	return b.h.CreateWebhook(url, events...)
}

func (b *testBundle) webhookCount() int {
	b.t.Helper()
	return b.h.WebhookCount()
}

// waitJob polls a job until it is completed or failed.
func (b *testBundle) waitJob(id string) map[string]any {
	b.t.Helper()
	return b.herald().WaitJob(id)
}

func (b *testBundle) publishNew(body map[string]any, hdr http.Header) *response {
	return b.doKey(b.key, "POST", "/v1/posts/publish", body, hdr)
}

func ids(accts ...string) []string { return accts }

// sseEvent is one event of a stream (apptest.SSEEvent).
type sseEvent = apptest.SSEEvent

// stream follows a job's stream with the bundle's key (apptest.Herald.JobStream).
func (b *testBundle) stream(ctx context.Context, jobID string) ([]sseEvent, error) {
	return b.h.JobStream(ctx, jobID)
}

// connectURL starts a connection and returns the authorization_url (apptest.Herald.ConnectURL).
func (b *testBundle) connectURL(platform string) string {
	b.t.Helper()
	return b.herald().ConnectURL(platform)
}

// browse follows u with the user's dashboard cookies (apptest.Herald.Browse).
func (b *testBundle) browse(u string) (*response, []*url.URL) {
	b.t.Helper()
	r, chain := b.herald().Browse(u)
	return asResponse(r), chain
}

// cheapPasswords is apptest's.
var cheapPasswords = apptest.CheapPasswords

// browser is a person's browser (apptest.Browser), its requests answered as the wiring's tests
// read them.
type browser struct {
	*apptest.Browser
	b      *testBundle
	client *http.Client
}

func (b *testBundle) wrap(br *apptest.Browser) *browser {
	return &browser{Browser: br, b: b, client: br.Client}
}

func (b *testBundle) newBrowser() *browser {
	b.t.Helper()
	return b.wrap(b.h.NewBrowser())
}

// signedIn is the browser of the bundle's user, signed in on first use.
func (b *testBundle) signedIn() *browser {
	b.t.Helper()
	return b.wrap(b.h.SignedIn())
}

func asResponse(r *apptest.Response) *response {
	return &response{status: r.Status, header: r.Header, body: r.Body}
}

// send sends one request from the browser. body is JSON (any), a url.Values form, or raw bytes.
func (br *browser) send(method, path string, body any, hdr http.Header) *response {
	br.b.t.Helper()
	return asResponse(br.Send(method, path, body, hdr))
}

// csrfHeader carries the session's CSRF token.
func (br *browser) csrfHeader() http.Header { return br.CSRFHeader() }

// signIn posts the JSON sign-in and keeps the CSRF token of a success.
func (br *browser) signIn(email, password string) *response {
	br.b.t.Helper()
	return asResponse(br.SignIn(email, password))
}
