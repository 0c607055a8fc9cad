package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// The browser tests drive Debian's Chromium (headless, through chromedp) against a real Herald
// on loopback. Without Chromium they skip, except under CI=true, where they fail: CI installs
// chromium (.ci/run). Screenshots go to $HERALD_SCREENSHOTS, else a temporary directory; they
// are never part of the repository.

// herald is a sandbox Herald (simulator, demo user, key and nine accounts) on loopback, started
// by the one full-app harness (cmd/herald/app/apptest).
type herald struct {
	app      *app.App
	url      string
	key      string
	password string
	user     *persistence.User
}

func startHerald(t *testing.T) *herald {
	t.Helper()
	a := apptest.Start(t, apptest.Options{Demo: true})
	return &herald{app: a.App, url: a.URL, key: a.Key, password: a.Password, user: a.User}
}

// chromiumPath finds Chromium, or skips (fails under CI=true).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: the browser tests need it under CI (apt-get install chromium)")
	}
	t.Skip("chromium is not installed: the browser tests are skipped (apt-get install chromium to run them)")
	return ""
}

// tab is one Chromium tab, with the script errors and console errors it saw.
type tab struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

// newTab starts a headless Chromium with a fresh profile (the flags of the machine notes: no
// background networking, which a closed network refuses) and opens a tab.
func newTab(t *testing.T) *tab {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	tb := &tab{t: t, ctx: ctx}
	require.NoError(t, chromedp.Do(ctx), "chromium starts")
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				tb.mu.Lock()
				tb.errors = append(tb.errors, string(m.Type)+": "+m.Text+" ("+m.URL+")")
				tb.mu.Unlock()
			}
		}
	}()
	return tb
}

// do runs steps within a deadline.
func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	require.NoError(tb.t, chromedp.Do(ctx, steps...))
}

// get runs an action that returns a value, within a deadline.
func get[T any](tb *tab, a chromedp.Action[T]) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(tb.t, err)
	return v
}

// eval evaluates a script expression.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	return get(tb, chromedp.Evaluate[T](expr))
}

// noErrors checks that no script failed and nothing was refused (a CSP violation is reported
// as a console error) so far.
func (tb *tab) noErrors() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	require.Empty(tb.t, tb.errors, "script or console errors")
}

// noErrorsBut is noErrors, but for the refusals a test caused on purpose: console lines that
// contain one of expected (e.g. "status of 400 (Bad Request) (http://…/api/profile)") are let
// through.
func (tb *tab) noErrorsBut(expected ...string) {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var left []string
	for _, e := range tb.errors {
		ok := false
		for _, x := range expected {
			ok = ok || strings.Contains(e, x)
		}
		if !ok {
			left = append(left, e)
		}
	}
	require.Empty(tb.t, left, "script or console errors")
}

// signIn signs in through the sign-in page, which goes on to next.
func (tb *tab) signIn(base, email, password, next string) {
	tb.t.Helper()
	tb.do(
		chromedp.Navigate(base+next),
		chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`header.top nav`)),
	)
}

// screenshots is where the tests write their screenshots.
func screenshots(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HERALD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, t.Name())
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("screenshots in %s", dir)
	return dir
}

// shoot writes a full-page screenshot of the current page at a phone's width (390) and a wide
// screen's (1440).
func (tb *tab) shoot(dir, name string) {
	tb.t.Helper()
	for _, w := range []int64{390, 1440} {
		tb.do(chromedp.EmulateViewport(w, 844), chromedp.Sleep(50*time.Millisecond))
		png := get(tb, chromedp.FullScreenshot(100))
		require.NoError(tb.t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, w)), png, 0o644))
	}
	tb.do(chromedp.EmulateViewport(1280, 900))
}

// apiCall calls /v1 with a key.
func apiCall(t *testing.T, method, url, key string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}
