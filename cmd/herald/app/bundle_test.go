package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
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
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// testBundle is one Herald on a temporary data directory, listening on loopback, with a user, a
// key and connected accounts, and a client that validates every response against the served
// OpenAPI document.
type testBundle struct {
	t    *testing.T
	app  *app.App
	url  string
	key  string
	user *persistence.User
	// password is the user's dashboard password; browser is its signed-in browser, made on first
	// use (dashboard_test.go).
	password string
	browser  *lazyBrowser
	accounts []*persistence.Account
	client   *http.Client
	router   routers.Router
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
	if o.plan == "" {
		o.plan = "pro"
	}
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := app.Config{Addr: "127.0.0.1:0", DataDir: dir, Log: log, PostIdleTimeout: o.postIdle, PasswordParams: cheapPasswords,
		PlanLimits: o.planLimits, NoAdminSocket: !o.adminSocket, Media: o.media,
		Sandbox: o.sandbox || o.demo, SimAddr: "127.0.0.1:0", SimLatency: o.simLatency, FreePostQuota: o.freeQuota, Budgets: o.budgets,
		MetricsAddr: "127.0.0.1:0"}
	if o.config != nil {
		o.config(&cfg)
	}
	a, err := app.New(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	t.Cleanup(func() { _ = a.Shutdown() })
	b := &testBundle{t: t, app: a, url: a.URL(), client: &http.Client{Timeout: 30 * time.Second}, browser: &lazyBrowser{}}
	if o.demo {
		b.key, b.password = a.SandboxKey, a.SandboxPassword
		require.NoError(t, a.Store.View(func(tx *persistence.Tx) error {
			var err error
			if b.user, err = tx.SandboxUser(); err != nil {
				return err
			}
			b.accounts, err = tx.AccountsOfUser(b.user.ID)
			return err
		}))
	} else {
		b.user, b.key = b.newUser("owner@example.com", o.plan)
		b.password = passwordOf(b.user.Email)
		for _, p := range []string{"linkedin", "twitter_x", "bluesky"} {
			b.accounts = append(b.accounts, b.newAccount(b.user.ID, p))
		}
	}
	if !o.noValidate {
		doc, err := api.Spec()
		require.NoError(t, err)
		b.doc = doc
		b.router, err = legacy.NewRouter(doc)
		require.NoError(t, err)
	}
	return b
}

// newUser creates a user with a key and a dashboard password (passwordOf its e-mail).
func (b *testBundle) newUser(email, plan string) (*persistence.User, string) {
	b.t.Helper()
	ctx := context.Background()
	u, err := auth.CreateUser(ctx, b.app.Store, auth.NewUser{Email: email, Plan: plan, Password: passwordOf(email), PasswordParams: cheapPasswords}, time.Now())
	require.NoError(b.t, err)
	k, err := auth.CreateKey(ctx, b.app.Store, email, "test", 0, time.Now())
	require.NoError(b.t, err)
	return u, k.Key
}

func (b *testBundle) newAccount(userID, platform string) *persistence.Account {
	b.t.Helper()
	name := "acct-" + platform
	exp := time.Now().Add(30 * 24 * time.Hour).UTC()
	a := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Platform: platform, Username: &name,
		IsActive: true, TokenExpiresAt: &exp, CreatedAt: time.Now().UTC()}
	require.NoError(b.t, b.app.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(a) }))
	return a
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

func (r *response) errorCode(t *testing.T) string {
	t.Helper()
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "no error object in %s", r.body)
	return e["code"].(string)
}

func (r *response) errorMessage(t *testing.T) string {
	t.Helper()
	return r.json(t)["error"].(map[string]any)["message"].(string)
}

// do sends a request with the bundle's key (key "" sends none; use doKey for another) and
// validates the response against the OpenAPI document.
func (b *testBundle) do(method, path string, body any) *response {
	return b.doKey(b.key, method, path, body, nil)
}

var validateMu sync.Mutex

func (b *testBundle) doKey(key, method, path string, body any, hdr http.Header) *response {
	b.t.Helper()
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
		require.NoError(b.t, err)
	}
	req, err := http.NewRequest(method, b.url+path, bytes.NewReader(raw))
	require.NoError(b.t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if raw != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := b.client.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	r := &response{status: resp.StatusCode, header: resp.Header, body: out}
	require.NotEmpty(b.t, resp.Header.Get("X-Request-Id"), "every response carries X-Request-Id")
	b.validate(req, r)
	return r
}

// validate checks a response against the served document: the route and status must be
// documented and the body must match its schema.
func (b *testBundle) validate(req *http.Request, r *response) {
	b.t.Helper()
	if b.router == nil {
		return
	}
	vreq := req.Clone(context.Background())
	vreq.URL.Host, vreq.URL.Scheme = "", ""
	route, params, err := b.router.FindRoute(vreq)
	if err != nil {
		// Unknown routes must answer 404 not_found (or 405 for a known path with another
		// method) in the error shape.
		require.Contains(b.t, []int{404, 405}, r.status, "%s %s is not documented: %v", req.Method, req.URL.Path, err)
		require.Equal(b.t, "not_found", r.errorCode(b.t))
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: r.status, Header: r.header, Body: io.NopCloser(bytes.NewReader(r.body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	validateMu.Lock()
	err = openapi3filter.ValidateResponse(context.Background(), in)
	validateMu.Unlock()
	require.NoError(b.t, err, "%s %s → %d %s", req.Method, req.URL.Path, r.status, truncate(string(r.body), 500))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (b *testBundle) countPosts() int {
	b.t.Helper()
	var total int
	require.NoError(b.t, b.app.Store.View(func(tx *persistence.Tx) error {
		_, n, err := tx.ListPosts(persistence.PostFilter{UserID: b.user.ID, Limit: 1})
		total = n
		return err
	}))
	return total
}

func (b *testBundle) createPost(content string, accounts ...*persistence.Account) string {
	b.t.Helper()
	ids := []string{}
	for _, a := range accounts {
		ids = append(ids, a.ID)
	}
	r := b.do("POST", "/v1/posts", map[string]any{"content": content, "platforms": ids})
	require.Equal(b.t, 201, r.status, string(r.body))
	id := r.json(b.t)["id"].(string)
	require.Len(b.t, strings.Split(id, "-"), 5)
	return id
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
