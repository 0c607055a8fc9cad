package web_test

import (
	"context"
	"errors"
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

	"github.com/chromedp/cdproto/cdp"
	cdppage "github.com/chromedp/cdproto/page"
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

// shoot writes full-page screenshots of the current page, at a phone's width (390) and a wide
// screen's (1440) unless other widths are given, each once the page is laid out at that width.
func (tb *tab) shoot(dir, name string, widths ...int64) {
	tb.t.Helper()
	if len(widths) == 0 {
		widths = []int64{390, 1440}
	}
	for _, w := range widths {
		tb.do(chromedp.EmulateViewport(w, 844))
		require.Eventually(tb.t, func() bool { return eval[int64](tb, `window.innerWidth`) == w }, 10*time.Second, 20*time.Millisecond)
		png := tb.screenshot()
		require.NoError(tb.t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, w)), png, 0o644))
	}
	tb.do(chromedp.EmulateViewport(1280, 900))
}

// screenshot captures the whole page. Headless Chromium answers Page.captureScreenshot with the
// compositor's next frame, and a compositor that has gone idle (a page with nothing moving, on a
// machine busy with other browsers) can leave the call unanswered for as long as one waits. So
// the page is first asked for two animation frames (bounded: they need the compositor too), and
// a capture unanswered in 10 s is tried again, up to twice, after a short screencast, which
// makes the compositor draw.
func (tb *tab) screenshot() []byte {
	tb.t.Helper()
	get(tb, chromedp.Evaluate[bool](`new Promise(done => {
		setTimeout(() => done(false), 2000);
		requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
	})`, chromedp.EvalAwaitPromise))
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err == nil || attempt == 3 || !errors.Is(err, context.DeadlineExceeded) {
			require.NoError(tb.t, err, "screenshot, attempt %d", attempt)
			return png
		}
		tb.t.Logf("a screenshot was unanswered for 10 s (attempt %d); waking the compositor", attempt)
		ctx, cancel = context.WithTimeout(tb.ctx, 10*time.Second)
		_, err = chromedp.Call(ctx, cdppage.StartScreencast, cdppage.StartScreencastParams{Format: cdppage.StartScreencastFormatJpeg, MaxWidth: 64, MaxHeight: 64})
		if err == nil {
			time.Sleep(250 * time.Millisecond)
			_, err = chromedp.Call(ctx, cdppage.StopScreencast, cdp.Empty{})
		}
		cancel()
		require.NoError(tb.t, err, "screencast to wake the compositor")
	}
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
