package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/webhook/webhooktest"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// lockedBuffer collects log output from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logLines parses the JSON log lines.
func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "every log line is JSON: %s", sc.Text())
		out = append(out, m)
	}
	return out
}

// run is one Herald that went through a representative set of flows, with what it logged and
// every secret it handled.
type run struct {
	b    *testBundle
	logs *lockedBuffer
	// secrets maps each piece of secret material the flows handled to what it is.
	secrets      map[string]string
	demoKey      string
	demoPassword string
	// meRequestID is the X-Request-Id of an authenticated GET /v1/me; publishedJob a job that
	// completed.
	meRequestID, publishedJob string
}

func (r *run) secret(what, value string) {
	value = strings.TrimSpace(value)
	if len(value) >= 8 {
		r.secrets[value] = what
	}
}

// keyFiles adds the data directory's key files (the token-sealing key, the media signing key) in
// the encodings a careless log line could use.
func (r *run) keyFiles(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.key"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(raw))
		r.secret(filepath.Base(f), s)
		if b, err := hex.DecodeString(s); err == nil {
			r.secret(filepath.Base(f)+" (base64)", base64.StdEncoding.EncodeToString(b))
			r.secret(filepath.Base(f)+" (base64url)", base64.RawURLEncoding.EncodeToString(b))
		}
	}
	r.secret("sandbox-api-key file", r.demoKey)
	r.secret("sandbox-password file", r.demoPassword)
}

// accountTokens opens every stored account's sealed credentials and records its tokens.
func (r *run) accountTokens(t *testing.T) {
	t.Helper()
	a := r.b.app
	var sealed [][]byte
	require.NoError(t, a.Store.View(func(tx *persistence.Tx) error {
		for _, u := range []string{r.b.user.ID} {
			list, err := tx.AccountsIn(u)
			if err != nil {
				return err
			}
			for _, acc := range list {
				sealed = append(sealed, acc.Secret)
			}
		}
		return nil
	}))
	for _, s := range sealed {
		plain, err := a.Box.Open(s)
		require.NoError(t, err)
		var c platforms.Credentials
		require.NoError(t, json.Unmarshal(plain, &c))
		r.secret("access token", c.AccessToken)
		r.secret("refresh token", c.RefreshToken)
		for k, v := range c.Extra {
			if strings.Contains(k, "secret") || strings.Contains(k, "token") || strings.Contains(k, "password") {
				r.secret("credential "+k, v)
			}
		}
	}
}

// representativeRun starts a sandbox Herald that logs JSON at debug level into a buffer and runs
// it through: sandbox start, key creation, a revoked and a regenerated key, publishing with a job
// stream, webhook creation, delivery with a retry and a secret rotation, the browser connect flow
// (also refused), herald accounts add (also with a wrong app password), failed network calls
// (server errors, an expired token refreshed, an unknown outcome looked up), a rate-budget wait,
// an account disconnected (its token revoked), the live analytics, dashboard sign-ins and password
// changes, and a backup.
func representativeRun(t *testing.T) *run {
	t.Helper()
	logs := &lockedBuffer{}
	ca := webhooktest.NewCA(t)
	rules := map[platforms.Platform][]account.Rule{}
	for p, rs := range account.DefaultRules {
		rules[p] = append([]account.Rule(nil), rs...)
	}
	// Facebook allows one publish an hour here, so that a second one waits for its budget.
	rules[platforms.Facebook] = []account.Rule{{Name: "calls", Limit: 1, Window: time.Hour, Cost: 1}}
	b := setup(t, bundleOpts{demo: true, adminSocket: true, budgets: rules, config: func(c *app.Config) {
		withReceivers(ca)(c)
		c.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}})
	r := &run{b: b, logs: logs, secrets: map[string]string{}, demoKey: b.key, demoPassword: b.password}
	a := b.app
	ctx := context.Background()
	r.secret("sandbox demo API key", b.key)
	r.secret("simulator OAuth client secret", sim.ClientSecret)
	r.accountTokens(t)

	// Keys: one created through the admin socket and used, one revoked, one regenerated.
	adm := admin.Dial(a.Cfg.DataDir)
	require.NotNil(t, adm)
	newKey := func(name string) auth.CreatedKey {
		var k auth.CreatedKey
		require.NoError(t, adm.Do("POST", "/keys", map[string]string{"email": app.SandboxEmail, "name": name}, &k))
		r.secret("API key "+name, k.Key)
		return k
	}
	used := newKey("used")
	hdr := http.Header{"X-Request-Id": {"obs-me-1"}}
	require.Equal(t, 200, b.doKey(used.Key, "GET", "/v1/me", nil, hdr).status)
	r.meRequestID = "obs-me-1"
	revoked := newKey("revoked")
	require.Equal(t, 200, b.doKey(revoked.Key, "GET", "/v1/me", nil, nil).status)
	require.NoError(t, adm.Do("POST", "/keys/"+revoked.ID+"/revoke", nil, &json.RawMessage{}))
	require.Equal(t, 401, b.doKey(revoked.Key, "GET", "/v1/me", nil, nil).status)
	regen := newKey("regenerated")
	var again auth.CreatedKey
	require.NoError(t, adm.Do("POST", "/keys/"+regen.ID+"/regenerate", nil, &again))
	r.secret("API key regenerated (new)", again.Key)
	require.Equal(t, 401, b.doKey(regen.Key, "GET", "/v1/me", nil, nil).status)
	require.Equal(t, 200, b.doKey(again.Key, "GET", "/v1/me", nil, nil).status)
	require.Equal(t, 401, b.doKey("sk_live_"+strings.Repeat("x", 40), "GET", "/v1/me", nil, nil).status)

	// Webhooks: the receiver fails the first attempt, so the delivery is retried; the secret is
	// rotated afterwards.
	rcv := webhooktest.NewReceiver(t, ca, func(n int, _ http.ResponseWriter, _ *http.Request) int {
		if n == 1 {
			return 500
		}
		return 200
	})
	hookID, hookSecret := b.createWebhook(rcv.URL)
	r.secret("webhook secret", hookSecret)

	// Publishing to every account whose network takes a text alone (the others refuse it at
	// submission), followed on the job stream.
	var all []string
	for _, acc := range b.accounts {
		switch platforms.Platform(acc.Platform) {
		case platforms.Instagram, platforms.TikTok, platforms.YouTube, platforms.Pinterest:
		default:
			all = append(all, acc.ID)
		}
	}
	resp := b.publishNew(map[string]any{"content": "Observability run", "platforms": all}, nil)
	require.Equal(t, 202, resp.status, string(resp.body))
	r.publishedJob = resp.json(t)["tracking_id"].(string)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	events, _ := b.stream(sctx, r.publishedJob)
	cancel()
	require.NotEmpty(t, events)
	require.Equal(t, "completed", b.waitJob(r.publishedJob)["status"])
	rcv.Next(t)
	delivered := rcv.Next(t)
	require.Equal(t, 200, delivered.Status, "delivered on the retry")
	rot := b.do("POST", "/v1/webhooks/"+hookID+"/rotate-secret", nil)
	require.Equal(t, 200, rot.status, string(rot.body))
	r.secret("rotated webhook secret", rot.json(t)["secret"].(string))

	// Connect: the browser flow, a refused consent, and herald accounts add.
	u := b.connectURL("linkedin")
	r.secret("connect state", mustQuery(t, u, "state"))
	page, chain := b.browse(u)
	require.Equal(t, 200, page.status, string(page.body))
	for _, v := range chain {
		if code := v.Query().Get("code"); code != "" {
			r.secret("authorization code", code)
		}
	}
	a.Sim.Deny(platforms.Facebook)
	u = b.connectURL("facebook")
	r.secret("connect state (refused)", mustQuery(t, u, "state"))
	page, _ = b.browse(u)
	require.Equal(t, 403, page.status, string(page.body))
	const appPassword = "abcd-efgh-ijkl-mnop"
	r.secret("Bluesky app password", appPassword)
	var out app.AccountOut
	require.NoError(t, adm.Do("POST", "/accounts", accountlink.Add{Email: app.SandboxEmail, Platform: "bluesky", Handle: "obs.bsky.social", AppPassword: appPassword}, &out))
	r.secret("wrong Bluesky app password", "wrong-app-password-1")
	require.Error(t, adm.Do("POST", "/accounts", accountlink.Add{Email: app.SandboxEmail, Platform: "bluesky", Handle: "nobody.bsky.social", AppPassword: "wrong-app-password-1"}, &out))
	xc, err := a.Sim.NewAccount(platforms.X, "obswriter")
	require.NoError(t, err)
	r.secret("X access token (accounts add)", xc.AccessToken)
	r.secret("X refresh token (accounts add)", xc.RefreshToken)
	require.NoError(t, adm.Do("POST", "/accounts", accountlink.Add{Email: app.SandboxEmail, Platform: "twitter_x", ClientID: sim.ClientID,
		AccessToken: xc.AccessToken, RefreshToken: xc.RefreshToken, ExpiresIn: 7200}, &out))
	require.Error(t, adm.Do("POST", "/accounts", accountlink.Add{Email: app.SandboxEmail, Platform: "twitter_x", ClientID: sim.ClientID, AccessToken: "refused-x-token-123"}, &out))
	r.secret("refused X token", "refused-x-token-123")
	r.accountTokens(t)
	// The dashboard's door: a key created and regenerated on /api/keys, X and Bluesky accounts
	// added with the credential forms.
	dbr := b.signedIn()
	kr := dbr.send("POST", "/api/keys", map[string]any{"name": "dashboard key"}, dbr.csrfHeader())
	require.Equal(t, 201, kr.status, string(kr.body))
	r.secret("API key created on /api/keys", kr.json(t)["key"].(string))
	kr = dbr.send("POST", "/api/keys/"+kr.json(t)["id"].(string)+"/regenerate", nil, dbr.csrfHeader())
	require.Equal(t, 200, kr.status, string(kr.body))
	r.secret("API key regenerated on /api/keys", kr.json(t)["key"].(string))
	const dashAppPassword = "qrst-uvwx-yz12-3456"
	r.secret("Bluesky app password (dashboard form)", dashAppPassword)
	kr = dbr.send("POST", "/api/accounts/bluesky", map[string]any{"handle": "obsdash.bsky.social", "app_password": dashAppPassword}, dbr.csrfHeader())
	require.Equal(t, 201, kr.status, string(kr.body))
	r.secret("wrong Bluesky app password (dashboard form)", "wrong-app-password-2")
	kr = dbr.send("POST", "/api/accounts/bluesky", map[string]any{"handle": "nobody.bsky.social", "app_password": "wrong-app-password-2"}, dbr.csrfHeader())
	require.Equal(t, 400, kr.status, string(kr.body))
	xd, err := a.Sim.NewAccount(platforms.X, "obsdash")
	require.NoError(t, err)
	r.secret("X access token (dashboard form)", xd.AccessToken)
	r.secret("X refresh token (dashboard form)", xd.RefreshToken)
	kr = dbr.send("POST", "/api/accounts/x", map[string]any{"client_id": sim.ClientID, "access_token": xd.AccessToken,
		"refresh_token": xd.RefreshToken, "expires_in": 7200}, dbr.csrfHeader())
	require.Equal(t, 201, kr.status, string(kr.body))
	r.accountTokens(t)

	// Failed network calls: X answers 5xx until the retries run out, LinkedIn's tokens expire
	// (refreshed, then the call succeeds), Threads posts but answers with an error (the unknown
	// outcome is looked up on the network).
	require.NoError(t, a.Sim.InjectFault(platforms.X, sim.FaultError5xx, 10))
	require.NoError(t, a.Sim.InjectFault(platforms.LinkedIn, sim.FaultExpireTokens, 1))
	require.NoError(t, a.Sim.InjectFault(platforms.Threads, sim.FaultPostThenError, 1))
	resp = b.publishNew(map[string]any{"content": "Faults ahead", "platforms": ids(b.account(platforms.X).ID, b.account(platforms.LinkedIn).ID, b.account(platforms.Threads).ID)}, nil)
	require.Equal(t, 202, resp.status, string(resp.body))
	j := b.waitJob(resp.json(t)["tracking_id"].(string))
	require.Equal(t, 1.0, j["failed"], "X failed: %v", j)
	r.accountTokens(t) // the refreshed LinkedIn tokens

	// Facebook's budget is spent by the first job: this publish waits for it. Bluesky refuses
	// with a rate limit: the account waits for the network's reset. Neither job is awaited.
	resp = b.publishNew(map[string]any{"content": "Waits for its budget", "platforms": ids(b.account(platforms.Facebook).ID)}, nil)
	require.Equal(t, 202, resp.status, string(resp.body))
	require.NoError(t, a.Sim.InjectFault(platforms.Bluesky, sim.FaultRateLimit, 1))
	resp = b.publishNew(map[string]any{"content": "Refused for now", "platforms": ids(b.account(platforms.Bluesky).ID)}, nil)
	require.Equal(t, 202, resp.status, string(resp.body))
	require.Eventually(t, func() bool {
		text := scrape(t, b.app.MetricsURL())
		return sample(text, `herald_rate_budget_waits_total{platform="facebook"}`) != "" &&
			sample(text, `herald_network_rate_limited_total{platform="bluesky"}`) != ""
	}, 30*time.Second, 10*time.Millisecond, "the budget wait and the refusal happen")

	// Disconnecting an account revokes its token on the network.
	require.Equal(t, 204, b.do("DELETE", "/v1/accounts/"+b.account(platforms.Instagram).ID, nil).status)

	// Live analytics, when this build serves them (not validated: only exercised for metrics).
	req, err := http.NewRequest("GET", b.url+"/v1/analytics/overview", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	if res, err := b.client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}

	// The dashboard: a sign-in (its session and CSRF tokens), a failed one, a password changed
	// through the API and one set through the admin socket.
	br := b.signedIn()
	base, err := url.Parse(b.url)
	require.NoError(t, err)
	for _, c := range br.client.Jar.Cookies(base) {
		r.secret("session token", c.Value)
	}
	r.secret("CSRF token", br.CSRF)
	r.secret("wrong dashboard password", "wrong-password-123")
	require.Equal(t, 401, b.newBrowser().signIn(app.SandboxEmail, "wrong-password-123").status)
	r.secret("changed dashboard password", "changed-password-456")
	require.Equal(t, 204, br.send("POST", "/api/profile/password",
		map[string]any{"current_password": b.password, "new_password": "changed-password-456"}, br.csrfHeader()).status)
	r.secret("dashboard password set through the admin socket", "admin-set-password-789")
	require.NoError(t, adm.Do("POST", "/users/password", map[string]string{"email": app.SandboxEmail, "password": "admin-set-password-789"}, &json.RawMessage{}))
	require.Equal(t, 401, br.send("GET", "/api/me", nil, nil).status, "the admin socket's password change ended the session")

	// A backup through the admin socket (on PostgreSQL it is refused: pg_dump's).
	if err := adm.Do("POST", "/backup", map[string]string{"out": filepath.Join(t.TempDir(), "backup.db")}, &json.RawMessage{}); !pgtest.Enabled() {
		require.NoError(t, err)
	} else {
		require.ErrorContains(t, err, "pg_dump")
	}
	r.keyFiles(a.Cfg.DataDir)
	return r
}

func mustQuery(t *testing.T, raw, key string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Query().Get(key)
}

// One representative run, three checks: no secret in any log line (but the sandbox's own demo
// key, once), request and job logs carry their ids, and the dashboard and alert rules only name
// metrics that Herald exposes.
func TestObservabilityOfARepresentativeRun(t *testing.T) { //nolint:tparallel // the checks read the logs and metrics of one run, after it
	t.Parallel()
	r := representativeRun(t)
	metricsText := scrape(t, r.b.app.MetricsURL())

	t.Run("no secret in the logs", func(t *testing.T) {
		kinds := map[string]int{}
		for _, what := range r.secrets {
			kinds[strings.Fields(what)[0]]++
		}
		t.Logf("secret material handled by the run, by kind: %v", kinds)
		require.GreaterOrEqual(t, len(r.secrets), 25, "the flows handled the secrets listed: %v", r.secrets)
		lines := strings.Split(strings.TrimSpace(r.logs.String()), "\n")
		require.Greater(t, len(lines), 50)
		demoLines := 0
		for i, line := range lines {
			if strings.Contains(line, r.demoKey) || strings.Contains(line, r.demoPassword) {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(line), &m))
				require.True(t, strings.HasPrefix(m["msg"].(string), "sandbox: created demo@herald.local"),
					"the demo key and password appear only in the sandbox's first-start line: %s", line)
				demoLines++
				continue
			}
			for s, what := range r.secrets {
				require.NotContains(t, line, s, "log line %d carries the %s", i+1, what)
			}
			require.NotRegexp(t, `sk_live_[A-Za-z0-9]{12,}|whsec_[A-Za-z0-9_-]{12,}`, line, "log line %d", i+1)
			require.NotRegexp(t, `(?i)bearer [A-Za-z0-9._~+/-]{12,}`, line, "log line %d", i+1)
		}
		require.Equal(t, 1, demoLines, "the sandbox prints its demo key and password exactly once, in one line")
	})

	t.Run("request and job logs carry their ids", func(t *testing.T) {
		var access, job map[string]any
		requests := 0
		for _, m := range r.logs.lines(t) {
			switch m["msg"] {
			case "request":
				requests++
				require.NotEmpty(t, m["request_id"], "%v", m)
				if m["request_id"] == r.meRequestID {
					access = m
				}
			case "publish job finished":
				if m["job_id"] == r.publishedJob {
					job = m
				}
			}
		}
		require.Greater(t, requests, 20, "one access log line per request at debug level")
		require.NotNil(t, access, "the access log line of GET /v1/me")
		require.Equal(t, r.b.user.ID, access["user_id"])
		require.Equal(t, "/v1/me", access["route"])
		require.Equal(t, 200.0, access["status"])
		require.NotNil(t, job, "the finished job's log line")
		require.Equal(t, r.b.user.ID, job["user_id"])
		require.NotEmpty(t, job["post_id"])
		require.Equal(t, "completed", job["status"])
	})

	t.Run("dashboard and alert rules name exposed metrics", func(t *testing.T) {
		exposed := exposedFamilies(metricsText)
		code := metricNamesInCode(t)
		dash := loadDashboard(t)
		rules := loadAlertRules(t)
		var exprs []string
		exprs = append(exprs, dash.exprs...)
		for _, rule := range rules {
			exprs = append(exprs, rule.Expr)
		}
		seen := map[string]bool{}
		var live, codeOnly []string
		for _, expr := range exprs {
			refs := metricRef.FindAllString(expr, -1)
			require.NotEmpty(t, refs, "query names no Herald metric: %s", expr)
			for _, name := range refs {
				if seen[name] {
					continue
				}
				seen[name] = true
				switch {
				case exposed[name]:
					live = append(live, name)
				case code[baseMetric(name)]:
					codeOnly = append(codeOnly, name)
				default:
					t.Errorf("%s is neither exposed by /metrics nor defined in the code (in %s)", name, expr)
				}
			}
		}
		sort.Strings(live)
		sort.Strings(codeOnly)
		t.Logf("metrics named by the dashboard and alerts and exposed by this run: %s", strings.Join(live, " "))
		t.Logf("named but not exposed by this run (defined in the code): %s", strings.Join(codeOnly, " "))
		require.Greater(t, len(live), 40)
	})

	t.Run("operations.md documents every exposed metric", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
		require.NoError(t, err)
		for name := range exposedFamilies(metricsText) {
			if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || name != baseMetric(name) {
				continue
			}
			require.Contains(t, string(doc), "`"+name+"`", "docs/operations.md documents %s", name)
		}
		for _, prefix := range []string{"`go_", "`process_"} {
			require.Contains(t, string(doc), prefix)
		}
	})
}

// scrape reads /metrics.
func scrape(t *testing.T, base string) string { t.Helper(); return apptest.Scrape(t, base) }

// exposedFamilies lists the metric names of an exposition, with the _bucket, _sum and _count
// series of histograms and summaries.
func exposedFamilies(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		out[f[2]] = true
		switch f[3] {
		case "histogram":
			out[f[2]+"_bucket"], out[f[2]+"_sum"], out[f[2]+"_count"] = true, true, true
		case "summary":
			out[f[2]+"_sum"], out[f[2]+"_count"] = true, true
		}
	}
	return out
}

// metricRef finds metric names in PromQL: Herald's own and the Go and process collectors'.
var metricRef = regexp.MustCompile(`\b(?:herald|go|process|promhttp)_[a-zA-Z0-9_]+`)

func baseMetric(name string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if strings.HasSuffix(name, s) {
			return strings.TrimSuffix(name, s)
		}
	}
	return name
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	return root
}

// metricNamesInCode lists the metric names written as string literals in Herald's Go code (tests
// excluded): metrics of features whose routes a run may not reach.
func metricNamesInCode(t *testing.T) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"((?:herald|promhttp)_[a-z0-9_]+)"`)
	out := map[string]bool{}
	root := repoRoot(t)
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "data" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = true
		}
		return nil
	}))
	return out
}
