package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/internal/testkit"
	"github.com/heraldhq/herald/persistence"
)

// The sessions as a browser meets them, through a whole Herald (apptest): a real cookie jar, the
// store the sessions are kept in, the metrics the manager exports.

// Sign in, read the session and the profile, change it, sign out: the session works end to end
// with a real cookie jar, and is stored by the hash of its token.
func TestSessionEndToEnd(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.NewBrowser()
	r := br.SignIn("Owner@Example.com", h.Password)
	require.Equal(t, 200, r.Status, string(r.Body))
	apptest.RequireSecurityHeaders(t, r)
	require.Empty(t, r.Header.Get("Strict-Transport-Security"), "no HSTS on an http base URL")
	m := r.JSON(t)
	require.Equal(t, h.User.ID, m["user"].(map[string]any)["id"])
	require.Len(t, br.CSRF, 43)

	var ck *http.Cookie
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
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
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		s, err := tx.Session(session.HashToken(ck.Value))
		require.NoError(t, err)
		require.Equal(t, h.User.ID, s.UserID)
		require.Equal(t, br.CSRF, s.CSRFToken)
		_, err = tx.Session([]byte(ck.Value))
		require.ErrorIs(t, err, persistence.ErrNotFound)
		return nil
	}))

	r = br.Send("GET", "/api/session", nil, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, br.CSRF, r.JSON(t)["csrf_token"])
	r = br.Send("GET", "/api/me", nil, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	me := r.JSON(t)
	require.Equal(t, "owner@example.com", me["email"])
	require.Nil(t, me["api_key"], "a session is not a key")
	apptest.RequireSecurityHeaders(t, r)

	r = br.Send("PATCH", "/api/profile", map[string]any{"name": "Owner", "timezone": "Europe/Paris"}, br.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "Europe/Paris", r.JSON(t)["timezone"])
	v1 := h.Do("GET", "/v1/me", nil)
	require.Equal(t, "Europe/Paris", v1.JSON(t)["timezone"], "the same user behind both doors, no stale cache")
	require.Equal(t, "Owner", v1.JSON(t)["name"])

	r = br.Send("DELETE", "/api/session", nil, br.CSRFHeader())
	require.Equal(t, 204, r.Status)
	r = br.Send("GET", "/api/session", nil, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "unauthorized", r.ErrorCode(t))
	// The old cookie is dead server-side, not only forgotten by the browser.
	other := h.NewBrowser()
	other.SetSessionCookie(ck.Value)
	r = other.Send("GET", "/api/me", nil, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "unauthorized", r.ErrorCode(t))

	text := apptest.Scrape(t, h.App.MetricsURL())
	require.Contains(t, text, `herald_signins_total{outcome="success"} 1`)
	require.Contains(t, text, `herald_sessions_created_total 1`)
	require.Contains(t, text, `herald_sessions_ended_total{reason="signout"} 1`)
	require.Contains(t, text, `herald_sessions_active 0`)
}

// The same answer whether the e-mail exists or not; malformed bodies are validation errors.
func TestSignInRefusals(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.NewBrowser()
	wrong := br.SignIn(h.User.Email, "not the password")
	unknown := br.SignIn("nobody@example.com", "not the password")
	for _, r := range []*apptest.Response{wrong, unknown} {
		require.Equal(t, 401, r.Status)
		require.Equal(t, "unauthorized", r.ErrorCode(t))
		require.Equal(t, "invalid e-mail or password", r.ErrorMessage(t))
		require.Empty(t, r.Header.Values("Set-Cookie"))
	}
	require.Equal(t, wrong.JSON(t)["error"], unknown.JSON(t)["error"])
	r := br.Send("POST", "/api/session", map[string]any{"email": h.User.Email}, nil)
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	r = br.Send("GET", "/api/me", nil, nil)
	require.Equal(t, 401, r.Status, "never signed in")
	require.Equal(t, "unauthorized", r.ErrorCode(t))
	require.Contains(t, apptest.Scrape(t, h.App.MetricsURL()), `herald_signins_total{outcome="failure"} 2`)
}

// After the documented 10 failures in a row an e-mail is refused with 429 and Retry-After, even
// with the right password, until the window passes; a success resets the count.
func TestSignInThrottle(t *testing.T) {
	t.Parallel()
	clock := apptest.NewClock(time.Now())
	h := apptest.Start(t, apptest.Options{Config: apptest.WithSessionClock(clock)})
	br := h.NewBrowser()
	for i := range 9 {
		require.Equal(t, 401, br.SignIn(h.User.Email, "wrong password").Status, "failure %d", i+1)
	}
	require.Equal(t, 200, br.SignIn(h.User.Email, h.Password).Status, "9 failures, then the right password")
	for i := range 10 {
		require.Equal(t, 401, br.SignIn(h.User.Email, "wrong password").Status, "the success reset the count: failure %d", i+1)
	}
	r := br.SignIn(h.User.Email, h.Password)
	require.Equal(t, 429, r.Status, "the 11th attempt is refused, right password or not")
	require.Equal(t, "rate_limit_exceeded", r.ErrorCode(t))
	require.Equal(t, "60", r.Header.Get("Retry-After"))

	// Another e-mail from the same address is not locked yet (the address allows 20).
	require.Equal(t, 401, br.SignIn("nobody@example.com", "wrong password").Status)

	clock.Add(61 * time.Second)
	r = br.SignIn(h.User.Email, "wrong password")
	require.Equal(t, 401, r.Status, "the window passed: one more try")
	r = br.SignIn(h.User.Email, h.Password)
	require.Equal(t, 429, r.Status)
	require.Equal(t, "120", r.Header.Get("Retry-After"), "each further failure doubles the window")
	clock.Add(121 * time.Second)
	require.Equal(t, 200, br.SignIn(h.User.Email, h.Password).Status)
	require.Contains(t, apptest.Scrape(t, h.App.MetricsURL()), `herald_signins_total{outcome="throttled"} 2`)
}

// The client address is throttled too: 20 failures across e-mails lock it.
func TestSignInThrottlePerAddress(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.NewBrowser()
	for i := range 20 {
		require.Equal(t, 401, br.SignIn("user"+strconv.Itoa(i)+"@example.com", "wrong password").Status)
	}
	r := br.SignIn(h.User.Email, h.Password)
	require.Equal(t, 429, r.Status)
	require.NotEmpty(t, r.Header.Get("Retry-After"))
}

// A burst of concurrent wrong sign-ins from one address is counted attempt by attempt before any
// password is hashed: at most the address's 20 reach the hasher, the rest are 429
// rate_limit_exceeded with Retry-After, none is a 500; a person signing in from another address
// meanwhile gets in.
func TestSignInBurstFromOneAddress(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	const burst = 100
	statuses := make(chan int, burst)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			br := h.NewBrowser()
			raw, _ := json.Marshal(map[string]string{"email": "guess" + strconv.Itoa(i) + "@example.com", "password": "wrong password"})
			resp, err := br.Client.Post(h.URL+"/api/session", "application/json", bytes.NewReader(raw))
			if err != nil {
				t.Logf("attempt %d got no answer: %v", i, err)
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
	person := h.NewBrowser()
	person.Client.Transport = &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}
	close(start)
	r := person.SignIn(h.User.Email, h.Password)
	wg.Wait()
	close(statuses)
	require.Equal(t, 200, r.Status, string(r.Body))
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	t.Logf("statuses of the burst: %v", count)
	require.Equal(t, burst, count[401]+count[429], "every attempt is a wrong password or throttled: %v", count)
	require.LessOrEqual(t, count[401], 20)
	require.GreaterOrEqual(t, count[429], burst-20)
	checked := testkit.Gathered(t, h.App.Registry, "herald_signins_total", "outcome", "failure") +
		testkit.Gathered(t, h.App.Registry, "herald_signins_total", "outcome", "success")
	require.LessOrEqual(t, checked, 21.0, "the hasher ran for at most the address's allowance and the person")
}

// A session ends after 24 hours unused and 30 days after sign-in, whatever its use; last-seen
// writes are coalesced to one a minute; the sweep deletes expired sessions.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	clock := apptest.NewClock(time.Now())
	h := apptest.Start(t, apptest.Options{Config: apptest.WithSessionClock(clock)})
	lastSeen := func(br *apptest.Browser) time.Time {
		var ts time.Time
		require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
			s, err := tx.Session(session.HashToken(br.SessionCookie()))
			if err != nil {
				return err
			}
			ts = s.LastSeenAt
			return nil
		}))
		return ts
	}

	idle := h.NewBrowser()
	require.Equal(t, 200, idle.SignIn(h.User.Email, h.Password).Status)
	active := h.NewBrowser()
	require.Equal(t, 200, active.SignIn(h.User.Email, h.Password).Status)
	signedInAt := lastSeen(active)

	clock.Add(30 * time.Second)
	require.Equal(t, 200, active.Send("GET", "/api/me", nil, nil).Status)
	require.Equal(t, signedInAt, lastSeen(active), "no write within a minute of the last one")
	clock.Add(31 * time.Second)
	require.Equal(t, 200, active.Send("GET", "/api/me", nil, nil).Status)
	require.True(t, lastSeen(active).After(signedInAt), "written once a minute has passed")

	// Used every 12 hours, the active session outlives the idle one.
	for range 3 {
		clock.Add(12 * time.Hour)
		require.Equal(t, 200, active.Send("GET", "/api/me", nil, nil).Status)
	}
	r := idle.Send("GET", "/api/me", nil, nil)
	require.Equal(t, 401, r.Status, "idle for more than 24 hours")
	require.Contains(t, r.ErrorMessage(t), "expired")

	// The absolute limit: used every 12 hours, still ended 30 days after sign-in.
	for clock.Now().Sub(signedInAt) < 30*24*time.Hour-13*time.Hour {
		clock.Add(12 * time.Hour)
		require.Equal(t, 200, active.Send("GET", "/api/me", nil, nil).Status)
	}
	clock.Add(13 * time.Hour)
	require.Equal(t, 401, active.Send("GET", "/api/me", nil, nil).Status, "30 days after sign-in")

	// The sweep deletes sessions nobody presents again.
	left := h.NewBrowser()
	require.Equal(t, 200, left.SignIn(h.User.Email, h.Password).Status)
	clock.Add(25 * time.Hour)
	n, err := h.App.Sessions.Sweep(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	text := apptest.Scrape(t, h.App.MetricsURL())
	require.Contains(t, text, `herald_sessions_ended_total{reason="expired"} 3`)
	require.Contains(t, text, `herald_sessions_active 0`)
}

// POST /api/profile/password checks the current password and ends the user's other sessions.
func TestPasswordChange(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	other := h.NewBrowser()
	require.Equal(t, 200, other.SignIn(h.User.Email, h.Password).Status)

	r := br.Send("POST", "/api/profile/password", map[string]any{"current_password": "wrong password", "new_password": "a new password"}, br.CSRFHeader())
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "current_password")
	r = br.Send("POST", "/api/profile/password", map[string]any{"current_password": h.Password, "new_password": "short"}, br.CSRFHeader())
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.ErrorMessage(t), "at least 10")
	r = br.Send("POST", "/api/profile/password", map[string]any{"current_password": h.Password, "new_password": "a new password"}, br.CSRFHeader())
	require.Equal(t, 204, r.Status, string(r.Body))

	require.Equal(t, 200, br.Send("GET", "/api/me", nil, nil).Status, "the session that changed it stays")
	require.Equal(t, 401, other.Send("GET", "/api/me", nil, nil).Status, "every other session ended")
	require.Equal(t, 401, h.NewBrowser().SignIn(h.User.Email, h.Password).Status, "the old password no longer works")
	require.Equal(t, 200, h.NewBrowser().SignIn(h.User.Email, "a new password").Status)
	require.Contains(t, apptest.Scrape(t, h.App.MetricsURL()), `herald_sessions_ended_total{reason="password_change"} 1`)
}
