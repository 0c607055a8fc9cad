package web_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// axeScript is axe-core's script, from the npm registry (.ci/run fetches it and names it in
// HERALD_AXE); the test skips without it, except under CI=true, where it fails.
func axeScript(t *testing.T) string {
	t.Helper()
	path := os.Getenv("HERALD_AXE")
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("HERALD_AXE is not set: the accessibility test needs axe-core under CI (.ci/run fetches it)")
		}
		t.Skip("HERALD_AXE is not set: the accessibility test is skipped (npm pack axe-core@4, and name its axe.min.js)")
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err, "HERALD_AXE names axe-core's axe.min.js")
	return string(b)
}

// colorScheme emulates the system's prefers-color-scheme.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// axeViolation is one of axe-core's findings, as much of it as a person needs to fix it.
type axeViolation struct {
	ID, Impact, Help string
	Nodes            []string
}

// Every page, light and dark, has no serious or critical accessibility violation by axe-core's
// rules (WCAG 2.x A and AA, and its best practices), at a wide screen's width and a phone's.
func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	axe := axeScript(t)
	h := startHerald(t)
	publish(t, h, "Hello from the accessibility walk", 3)
	schedule(t, h, "A post for next week", time.Now().Add(72*time.Hour))
	draft(t, h, "A draft that waits")
	tb := newTab(t)
	dir := screenshots(t)
	tb.signIn(h.url, h.user.Email, h.password, "/posts")
	post := get(tb, chromedp.AttributeValue(chromedp.CSS(`#posts a.post-text`), "href")).Value
	pages := append(append([]string{}, pagePaths...), "/members", post)
	for _, scheme := range []string{"light", "dark"} {
		tb.do(colorScheme(scheme))
		for _, width := range []int64{1280, 390} {
			tb.do(chromedp.EmulateViewport(width, 900))
			for _, p := range pages {
				tb.do(chromedp.Navigate(h.url+p), chromedp.WaitVisible(chromedp.CSS(`main h1`)), chromedp.WaitNotPresent(chromedp.CSS(`#events[aria-busy]`)))
				dark := eval[bool](tb, `matchMedia('(prefers-color-scheme: dark)').matches`)
				require.Equal(t, scheme == "dark", dark, "the emulated scheme")
				tb.do(chromedp.Evaluate[chromedp.Void](axe))
				raw := get(tb, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(
					r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
						ID: v.id, Impact: v.impact, Help: v.help, Nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' ' + n.html.slice(0, 160))}))))`,
					chromedp.EvalAwaitPromise))
				var found []axeViolation
				require.NoError(t, json.Unmarshal([]byte(raw), &found))
				for _, v := range found {
					t.Errorf("%s %s at %d px: %s (%s): %s", p, scheme, width, v.ID, v.Impact, v.Help+"\n\t"+strings.Join(v.Nodes, "\n\t"))
				}
			}
		}
		if scheme == "dark" {
			for _, p := range []string{"/", "/compose", "/accounts", "/developer"} {
				tb.do(chromedp.Navigate(h.url+p), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
				tb.shoot(dir, "dark"+strings.ReplaceAll(p, "/", "-"))
			}
		}
	}
	tb.noErrors()
}
