package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence"
)

// cheapPasswords and passwordOf are apptest's.
var cheapPasswords = apptest.CheapPasswords

func passwordOf(email string) string { return apptest.PasswordOf(email) }

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

// sessionClock is the sessions' injected clock.
type sessionClock = apptest.Clock

func withSessionClock(c *sessionClock) func(*app.Config) {
	return func(cfg *app.Config) { cfg.SessionClock = c.Now }
}

func requireSecurityHeaders(t *testing.T, r *response) {
	t.Helper()
	apptest.RequireSecurityHeaders(t, r.api())
}

// Sign in, read the session and the profile, change it, sign out: the session works end to end
// with a real cookie jar, and is stored by the hash of its token.
func TestSessionEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.newBrowser()
	r := br.signIn("Owner@Example.com", b.password)
	require.Equal(t, 200, r.status, string(r.body))
	requireSecurityHeaders(t, r)
	require.Empty(t, r.header.Get("Strict-Transport-Security"), "no HSTS on an http base URL")
	m := r.json(t)
	require.Equal(t, b.user.ID, m["user"].(map[string]any)["id"])
	require.Len(t, br.CSRF, 43)

	var ck *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == session.CookieName {
			ck = c
		}
	}
	require.NotNil(t, ck)
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
	require.Equal(t, "/", ck.Path)
	require.False(t, ck.Secure, "an http base URL")
	// Only the token's hash is stored.
	require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
		s, err := tx.Session(session.HashToken(ck.Value))
		require.NoError(t, err)
		require.Equal(t, b.user.ID, s.UserID)
		require.Equal(t, br.CSRF, s.CSRFToken)
		_, err = tx.Session([]byte(ck.Value))
		require.ErrorIs(t, err, persistence.ErrNotFound)
		return nil
	}))

	r = br.send("GET", "/api/session", nil, nil)
	require.Equal(t, 200, r.status)
	require.Equal(t, br.CSRF, r.json(t)["csrf_token"])
	r = br.send("GET", "/api/me", nil, nil)
	require.Equal(t, 200, r.status, string(r.body))
	me := r.json(t)
	require.Equal(t, "owner@example.com", me["email"])
	require.Nil(t, me["api_key"], "a session is not a key")
	requireSecurityHeaders(t, r)

	r = br.send("PATCH", "/api/profile", map[string]any{"name": "Owner", "timezone": "Europe/Paris"}, br.csrfHeader())
	require.Equal(t, 200, r.status, string(r.body))
	require.Equal(t, "Europe/Paris", r.json(t)["timezone"])
	v1 := b.do("GET", "/v1/me", nil)
	require.Equal(t, "Europe/Paris", v1.json(t)["timezone"], "the same user behind both doors, no stale cache")
	require.Equal(t, "Owner", v1.json(t)["name"])

	r = br.send("DELETE", "/api/session", nil, br.csrfHeader())
	require.Equal(t, 204, r.status)
	r = br.send("GET", "/api/session", nil, nil)
	require.Equal(t, 401, r.status)
	require.Equal(t, "unauthorized", r.errorCode(t))
	// The old cookie is dead server-side, not only forgotten by the browser.
	other := b.newBrowser()
	u, _ := url.Parse(b.url)
	other.client.Jar.SetCookies(u, []*http.Cookie{{Name: session.CookieName, Value: ck.Value}})
	r = other.send("GET", "/api/me", nil, nil)
	require.Equal(t, 401, r.status)
	require.Equal(t, "unauthorized", r.errorCode(t))

	text := scrape(t, b.app.MetricsURL())
	require.Contains(t, text, `herald_signins_total{outcome="success"} 1`)
	require.Contains(t, text, `herald_sessions_created_total 1`)
	require.Contains(t, text, `herald_sessions_ended_total{reason="signout"} 1`)
	require.Contains(t, text, `herald_sessions_active 0`)
}

// The same answer whether the e-mail exists or not; malformed bodies are validation errors.
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.newBrowser()
	wrong := br.signIn(b.user.Email, "not the password")
	unknown := br.signIn("nobody@example.com", "not the password")
	for _, r := range []*response{wrong, unknown} {
		require.Equal(t, 401, r.status)
		require.Equal(t, "unauthorized", r.errorCode(t))
		require.Equal(t, "invalid e-mail or password", r.errorMessage(t))
		require.Empty(t, r.header.Values("Set-Cookie"))
	}
	require.Equal(t, wrong.json(t)["error"], unknown.json(t)["error"])
	r := br.send("POST", "/api/session", map[string]any{"email": b.user.Email}, nil)
	require.Equal(t, 400, r.status)
	require.Equal(t, "validation_error", r.errorCode(t))
	r = br.send("GET", "/api/me", nil, nil)
	require.Equal(t, 401, r.status, "never signed in")
	require.Equal(t, "unauthorized", r.errorCode(t))
	require.Contains(t, scrape(t, b.app.MetricsURL()), `herald_signins_total{outcome="failure"} 2`)
}

// After the documented 10 failures in a row an e-mail is refused with 429 and Retry-After, even
// with the right password, until the window passes; a success resets the count.
func TestSignInThrottle(t *testing.T) {
	t.Parallel()
	clock := apptest.NewClock(time.Now())
	b := setup(t, bundleOpts{config: withSessionClock(clock)})
	br := b.newBrowser()
	for i := range 9 {
		require.Equal(t, 401, br.signIn(b.user.Email, "wrong password").status, "failure %d", i+1)
	}
	require.Equal(t, 200, br.signIn(b.user.Email, b.password).status, "9 failures, then the right password")
	for i := range 10 {
		require.Equal(t, 401, br.signIn(b.user.Email, "wrong password").status, "the success reset the count: failure %d", i+1)
	}
	r := br.signIn(b.user.Email, b.password)
	require.Equal(t, 429, r.status, "the 11th attempt is refused, right password or not")
	require.Equal(t, "rate_limit_exceeded", r.errorCode(t))
	require.Equal(t, "60", r.header.Get("Retry-After"))

	// Another e-mail from the same address is not locked yet (the address allows 20).
	require.Equal(t, 401, br.signIn("nobody@example.com", "wrong password").status)

	clock.Add(61 * time.Second)
	r = br.signIn(b.user.Email, "wrong password")
	require.Equal(t, 401, r.status, "the window passed: one more try")
	r = br.signIn(b.user.Email, b.password)
	require.Equal(t, 429, r.status)
	require.Equal(t, "120", r.header.Get("Retry-After"), "each further failure doubles the window")
	clock.Add(121 * time.Second)
	require.Equal(t, 200, br.signIn(b.user.Email, b.password).status)
	require.Contains(t, scrape(t, b.app.MetricsURL()), `herald_signins_total{outcome="throttled"} 2`)
}

// The client address is throttled too: 20 failures across e-mails lock it.
func TestSignInThrottlePerAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.newBrowser()
	for i := range 20 {
		require.Equal(t, 401, br.signIn("user"+itoa(int64(i))+"@example.com", "wrong password").status)
	}
	r := br.signIn(b.user.Email, b.password)
	require.Equal(t, 429, r.status)
	require.NotEmpty(t, r.header.Get("Retry-After"))
}

// A burst of concurrent wrong sign-ins from one address is counted attempt by attempt before any
// password is hashed: at most the address's 20 reach the hasher, the rest are 429
// rate_limit_exceeded with Retry-After, none is a 500; a person signing in from another address
// meanwhile gets in.
func TestSignInBurstFromOneAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	const burst = 100
	statuses := make(chan int, burst)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			br := b.newBrowser()
			raw, _ := json.Marshal(map[string]string{"email": "guess" + itoa(int64(i)) + "@example.com", "password": "wrong password"})
			resp, err := br.client.Post(b.url+"/api/session", "application/json", bytes.NewReader(raw))
			if err != nil {
				statuses <- 0
				return
			}
			defer resp.Body.Close()
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode == 429 && (body.Error.Code != "rate_limit_exceeded" || resp.Header.Get("Retry-After") == "") {
				t.Errorf("a 429 without its code or Retry-After: %q %q", body.Error.Code, resp.Header.Get("Retry-After"))
			}
			statuses <- resp.StatusCode
		}()
	}
	// The person signs in from 127.0.0.2, another address of the loopback network.
	person := b.newBrowser()
	person.client.Transport = &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}
	close(start)
	r := person.signIn(b.user.Email, b.password)
	wg.Wait()
	close(statuses)
	require.Equal(t, 200, r.status, string(r.body))
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	t.Logf("statuses of the burst: %v", count)
	require.Equal(t, burst, count[401]+count[429], "every attempt is a wrong password or throttled: %v", count)
	require.LessOrEqual(t, count[401], 20)
	require.GreaterOrEqual(t, count[429], burst-20)
	checked := testkit.Gathered(t, b.app.Registry, "herald_signins_total", "outcome", "failure") +
		testkit.Gathered(t, b.app.Registry, "herald_signins_total", "outcome", "success")
	require.LessOrEqual(t, checked, 21.0, "the hasher ran for at most the address's allowance and the person")
}

// The throttle's memory is bounded: the least recently failed entries are forgotten.
func TestThrottleIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Now()
	th := session.NewThrottle(session.ThrottleConfig{Capacity: 100}, func() time.Time { return now })
	for i := range 1000 {
		th.Fail("user"+itoa(int64(i))+"@example.com", "addr"+itoa(int64(i)))
	}
	require.Equal(t, 200, th.Len())
	now = now.Add(2 * time.Hour)
	th.Sweep()
	require.Equal(t, 0, th.Len())
}

// Every state-changing /api request needs the session's CSRF token, in the header or, for a
// form, in the csrf_token field.
func TestCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.signedIn()
	for name, hdr := range map[string]http.Header{
		"missing": nil,
		"wrong":   {"X-Csrf-Token": {strings.Repeat("A", 43)}},
		"empty":   {"X-Csrf-Token": {""}},
	} {
		r := br.send("PATCH", "/api/profile", map[string]any{"name": "Mallory"}, hdr)
		require.Equal(t, 403, r.status, name)
		require.Equal(t, "forbidden", r.errorCode(t), name)
		r = br.send("DELETE", "/api/session", nil, hdr)
		require.Equal(t, 403, r.status, name)
	}
	r := br.send("POST", "/signout", url.Values{"csrf_token": {"wrong"}}, nil)
	require.Equal(t, 403, r.status)
	require.Equal(t, 200, br.send("GET", "/api/me", nil, nil).status, "still signed in, nothing changed")
	r = b.do("GET", "/v1/me", nil)
	require.Nil(t, r.json(t)["name"])

	// The form field works where the header is not sent.
	r = br.send("POST", "/signout", url.Values{"csrf_token": {br.CSRF}}, nil)
	require.Equal(t, 303, r.status, string(r.body))
	require.Equal(t, "/signin", r.header.Get("Location"))
	require.Equal(t, 401, br.send("GET", "/api/me", nil, nil).status)
}

// A session ends after 24 hours unused and 30 days after sign-in, whatever its use; last-seen
// writes are coalesced to one a minute; the sweep deletes expired sessions.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	clock := apptest.NewClock(time.Now())
	b := setup(t, bundleOpts{config: withSessionClock(clock)})
	lastSeen := func(br *browser) time.Time {
		var ts time.Time
		require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
			u, _ := url.Parse(b.url)
			for _, c := range br.client.Jar.Cookies(u) {
				if c.Name == session.CookieName {
					s, err := tx.Session(session.HashToken(c.Value))
					if err != nil {
						return err
					}
					ts = s.LastSeenAt
				}
			}
			return nil
		}))
		return ts
	}

	idle := b.newBrowser()
	require.Equal(t, 200, idle.signIn(b.user.Email, b.password).status)
	active := b.newBrowser()
	require.Equal(t, 200, active.signIn(b.user.Email, b.password).status)
	signedInAt := lastSeen(active)

	clock.Add(30 * time.Second)
	require.Equal(t, 200, active.send("GET", "/api/me", nil, nil).status)
	require.Equal(t, signedInAt, lastSeen(active), "no write within a minute of the last one")
	clock.Add(31 * time.Second)
	require.Equal(t, 200, active.send("GET", "/api/me", nil, nil).status)
	require.True(t, lastSeen(active).After(signedInAt), "written once a minute has passed")

	// Used every 12 hours, the active session outlives the idle one.
	for range 3 {
		clock.Add(12 * time.Hour)
		require.Equal(t, 200, active.send("GET", "/api/me", nil, nil).status)
	}
	r := idle.send("GET", "/api/me", nil, nil)
	require.Equal(t, 401, r.status, "idle for more than 24 hours")
	require.Contains(t, r.errorMessage(t), "expired")

	// The absolute limit: used every 12 hours, still ended 30 days after sign-in.
	for clock.Now().Sub(signedInAt) < 30*24*time.Hour-13*time.Hour {
		clock.Add(12 * time.Hour)
		require.Equal(t, 200, active.send("GET", "/api/me", nil, nil).status)
	}
	clock.Add(13 * time.Hour)
	require.Equal(t, 401, active.send("GET", "/api/me", nil, nil).status, "30 days after sign-in")

	// The sweep deletes sessions nobody presents again.
	left := b.newBrowser()
	require.Equal(t, 200, left.signIn(b.user.Email, b.password).status)
	clock.Add(25 * time.Hour)
	n, err := b.app.Sessions.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	text := scrape(t, b.app.MetricsURL())
	require.Contains(t, text, `herald_sessions_ended_total{reason="expired"} 3`)
	require.Contains(t, text, `herald_sessions_active 0`)
}

// The two doors: an API key never opens /api/*, a session cookie never opens /v1/*.
func TestTwoDoors(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.signedIn()
	r := br.send("GET", "/v1/me", nil, nil)
	require.Equal(t, 401, r.status, "a cookie alone on /v1")
	require.Equal(t, "invalid_api_key", r.errorCode(t))

	bearer := http.Header{"Authorization": {"Bearer " + b.key}}
	r = b.newBrowser().send("GET", "/api/me", nil, bearer)
	require.Equal(t, 401, r.status, "a key on /api")
	require.Equal(t, "unauthorized", r.errorCode(t))
	r = br.send("GET", "/api/me", nil, bearer)
	require.Equal(t, 401, r.status, "a key next to a valid cookie is refused too")
	r = b.newBrowser().send("GET", "/api/session", nil, bearer)
	require.Equal(t, 401, r.status)
	require.Equal(t, 200, b.do("GET", "/v1/me", nil).status, "the key still opens /v1")
}

// PATCH /api/profile validates the time zone and the name; POST /api/profile/password checks
// the current password and ends the user's other sessions.
func TestProfileAndPasswordChange(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.signedIn()
	for _, body := range []map[string]any{
		{"timezone": "Mars/Olympus"}, {"timezone": "Local"}, {"timezone": ""}, {"timezone": 3}, {"name": ""}, {},
	} {
		r := br.send("PATCH", "/api/profile", body, br.csrfHeader())
		require.Equal(t, 400, r.status, "%v", body)
		require.Equal(t, "validation_error", r.errorCode(t))
	}
	other := b.newBrowser()
	require.Equal(t, 200, other.signIn(b.user.Email, b.password).status)

	r := br.send("POST", "/api/profile/password", map[string]any{"current_password": "wrong password", "new_password": "a new password"}, br.csrfHeader())
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "current_password")
	r = br.send("POST", "/api/profile/password", map[string]any{"current_password": b.password, "new_password": "short"}, br.csrfHeader())
	require.Equal(t, 400, r.status)
	require.Contains(t, r.errorMessage(t), "at least 10")
	r = br.send("POST", "/api/profile/password", map[string]any{"current_password": b.password, "new_password": "a new password"}, br.csrfHeader())
	require.Equal(t, 204, r.status, string(r.body))

	require.Equal(t, 200, br.send("GET", "/api/me", nil, nil).status, "the session that changed it stays")
	require.Equal(t, 401, other.send("GET", "/api/me", nil, nil).status, "every other session ended")
	require.Equal(t, 401, b.newBrowser().signIn(b.user.Email, b.password).status, "the old password no longer works")
	require.Equal(t, 200, b.newBrowser().signIn(b.user.Email, "a new password").status)
	require.Contains(t, scrape(t, b.app.MetricsURL()), `herald_sessions_ended_total{reason="password_change"} 1`)
}

// The HTML sign-in form: a plain form, no script, posted as a form; next must be a path on this
// server; a cross-site post is refused; a huge form is refused in the error shape.
func TestSignInForm(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.newBrowser()
	r := br.send("GET", "/signin?next="+url.QueryEscape("/v1/accounts/connect/authorize?state=x"), nil, nil)
	require.Equal(t, 200, r.status)
	requireSecurityHeaders(t, r)
	page := string(r.body)
	require.Contains(t, page, `<form method="post" action="/signin">`)
	require.Contains(t, page, `value="/v1/accounts/connect/authorize?state=x"`)
	require.NotContains(t, page, "<script")

	form := url.Values{"email": {b.user.Email}, "password": {"wrong password"}, "next": {"/api/me"}}
	r = br.send("POST", "/signin", form, nil)
	require.Equal(t, 401, r.status)
	require.Contains(t, string(r.body), "invalid e-mail or password")

	for _, next := range []string{"//evil.example", "https://evil.example", "/\\evil.example", "http:/evil.example", "evil.example"} {
		form = url.Values{"email": {b.user.Email}, "password": {b.password}, "next": {next}}
		r = b.newBrowser().send("POST", "/signin", form, nil)
		require.Equal(t, 303, r.status, next)
		require.Equal(t, "/", r.header.Get("Location"), "the open redirect %q is refused: the overview instead", next)
		page := string(b.newBrowser().send("GET", "/signin?next="+url.QueryEscape(next), nil, nil).body)
		require.NotContains(t, page, "evil.example", next)
	}
	form = url.Values{"email": {b.user.Email}, "password": {b.password}, "next": {"/api/me"}}
	r = br.send("POST", "/signin", form, nil)
	require.Equal(t, 303, r.status)
	require.Equal(t, "/api/me", r.header.Get("Location"))
	require.Equal(t, 200, br.send("GET", "/api/me", nil, nil).status, "the cookie was set")
	r = br.send("GET", "/signin", nil, nil)
	require.Contains(t, string(r.body), "signed in to Herald as owner@example.com")

	// Cross-site sign-in posts are refused, as a form and as JSON.
	for _, hdr := range []http.Header{{"Origin": {"https://evil.example"}}, {"Sec-Fetch-Site": {"cross-site"}}, {"Origin": {"null"}}} {
		r = b.newBrowser().send("POST", "/signin", form, hdr)
		require.Equal(t, 403, r.status, "%v", hdr)
		r = b.newBrowser().send("POST", "/api/session", map[string]any{"email": b.user.Email, "password": b.password}, hdr)
		require.Equal(t, 403, r.status, "%v", hdr)
		require.Equal(t, "forbidden", r.errorCode(t))
		require.Empty(t, r.header.Values("Set-Cookie"))
	}
	r = b.newBrowser().send("POST", "/api/session", map[string]any{"email": b.user.Email, "password": b.password},
		http.Header{"Origin": {b.url}, "Sec-Fetch-Site": {"same-origin"}})
	require.Equal(t, 200, r.status, "Herald's own origin")

	// A 2 MiB form.
	big := url.Values{"email": {b.user.Email}, "password": {strings.Repeat("x", 2<<20)}}
	r = b.newBrowser().send("POST", "/signin", big, nil)
	require.Equal(t, 413, r.status)
	require.Equal(t, "validation_error", r.errorCode(t))
	r = b.newBrowser().send("POST", "/api/session", map[string]any{"email": b.user.Email, "password": strings.Repeat("x", 2<<20)}, nil)
	require.Equal(t, 413, r.status)
	require.Equal(t, "validation_error", r.errorCode(t))
}

// HSTS and Secure cookies behind an https base URL.
func TestHTTPSBaseURL(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{config: func(c *app.Config) { c.BaseURL = "https://herald.example" }})
	r := b.newBrowser().signIn(b.user.Email, b.password)
	require.Equal(t, 200, r.status)
	require.Contains(t, r.header.Get("Strict-Transport-Security"), "max-age=")
	require.Contains(t, r.header.Get("Set-Cookie"), "Secure")
}

// The connect link is bound to the browser's session: a link made by A opened with B's session
// connects nothing to either; opened signed out it ends at the sign-in page; opened with A's
// session it connects to A.
func TestConnectLinkForwardingFails(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{sandbox: true})
	mallory, _ := b.newUser("mallory@example.com", "pro")
	victim := b.newBrowser()
	require.Equal(t, 200, victim.signIn(mallory.Email, passwordOf(mallory.Email)).status)
	countOf := func(userID string) int {
		var n int
		require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
			l, err := tx.AccountsOfUser(userID)
			n = len(l)
			return err
		}))
		return n
	}
	ownerBefore, malloryBefore := countOf(b.user.ID), countOf(mallory.ID)

	// A's link opened in B's browser.
	link := b.connectURL("linkedin")
	r, chain := b.browseWith(victim.client.Jar, link)
	requirePage(t, r, 403, "belongs to another Herald user")
	require.Len(t, chain, 1, "never sent to the network's consent page")
	// Even the consent page's URL, taken from A's own browser and forwarded, connects nothing.
	consent := b.get(link).header.Get("Location")
	require.Contains(t, consent, b.app.Sim.BaseURL())
	r, chain = b.browseWith(victim.client.Jar, consent)
	requirePage(t, r, 403, "belongs to another Herald user")
	require.Contains(t, chain[len(chain)-1].Path, "/callback")
	require.Equal(t, ownerBefore, countOf(b.user.ID))
	require.Equal(t, malloryBefore, countOf(mallory.ID))

	// Signed out: the sign-in page, which comes back to the link.
	r, chain = b.browseWith(nil, link)
	require.Equal(t, 200, r.status)
	last := chain[len(chain)-1]
	require.Equal(t, "/signin", last.Path)
	require.Equal(t, strings.TrimPrefix(link, b.url), last.Query().Get("next"))
	require.Contains(t, string(r.body), `action="/signin"`)
	require.Equal(t, ownerBefore, countOf(b.user.ID))

	// A signs in through that form and lands on the link, which connects to A.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.PostForm(b.url+"/signin", url.Values{"email": {b.user.Email}, "password": {b.password}, "next": {last.Query().Get("next")}})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(body))
	require.Contains(t, string(body), "LinkedIn is connected")
	require.Equal(t, ownerBefore+1, countOf(b.user.ID))
	require.Equal(t, malloryBefore, countOf(mallory.ID))
}

// Answers that leave before the /api group's middleware (the body limit's 413, an unknown
// path's 404, a method the route does not take) carry the security headers too; /v1's do not.
func TestSecurityHeadersOnEarlyRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{})
	br := b.signedIn()
	big := make([]byte, 3<<20)
	for name, c := range map[string]struct {
		method, path string
		body         any
		status       int
	}{
		"declared body over the cap": {"POST", "/api/posts", big, 413},
		"unknown /api path":          {"GET", "/api/nothing-here", nil, 404},
		"unknown page":               {"GET", "/nothing-here", nil, 404},
		"method not taken":           {"PUT", "/api/session", nil, 405},
	} {
		r := br.send(c.method, c.path, c.body, br.csrfHeader())
		require.Equal(t, c.status, r.status, "%s: %s", name, r.body)
		requireSecurityHeaders(t, r)
		require.Equal(t, "no-store", r.header.Get("Cache-Control"), name)
	}
	r := b.do("GET", "/v1/nothing-here", nil)
	require.Equal(t, 404, r.status)
	require.Empty(t, r.header.Get("Content-Security-Policy"), "/v1 answers are not the dashboard's")
}
