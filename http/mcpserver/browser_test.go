package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromium finds Debian's Chromium, or skips (fails under CI=true, where .ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: the browser tests need it under CI (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium to run the browser test)")
	return ""
}

// page serves an empty HTML page on its own loopback port: another origin than /mcp's.
func page(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprint(w, "<!doctype html><title>host</title><p>a web-based MCP host")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// mcpFetch is the script a web-based host runs: a tools/list POST to /mcp with a token (none
// when ""), reporting the status, the challenge and the body it could read, or the network
// error fetch() gave (what a page sees of an answer without CORS headers).
const mcpFetch = `(async (url, token) => {
  const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"};
  if (token) headers["Authorization"] = "Bearer " + token;
  try {
    const r = await fetch(url, {method: "POST", headers, body: JSON.stringify({jsonrpc: "2.0", id: 1, method: "tools/list", params: {}})});
    return JSON.stringify({status: r.status, challenge: r.headers.get("WWW-Authenticate") || "", body: await r.text()});
  } catch (e) {
    return JSON.stringify({error: String(e)});
  }
})`

// A browser page on another origin calls /mcp with a token and reads the tools; without a token
// it reads the 401's challenge (the start of OAuth discovery). A page on an origin that is not
// allowed is refused, and its script cannot read anything.
func TestMCPFromABrowserPage(t *testing.T) {
	t.Parallel()
	exe := chromium(t)
	allowed, other := page(t), page(t)
	b := setupDoor(t, allowed)

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true))
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "chromium starts") // on ctx: the browser lives as long as it
	run := func(pageURL, token string) string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Do(c, chromedp.Navigate(pageURL)))
		out, err := chromedp.Run(c, chromedp.Evaluate[string](fmt.Sprintf("%s(%q, %q)", mcpFetch, b.url+Path, token), chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		return out
	}

	got := run(allowed, b.readKey)
	require.Contains(t, got, `"status":200`)
	require.Contains(t, got, `list_accounts`, "the page read the tools")
	require.NotContains(t, got, `create_draft`, "of a read-only token")

	got = run(allowed, "")
	require.Contains(t, got, `"status":401`)
	require.Contains(t, got, `"challenge":"Bearer resource_metadata=\"`+b.url+`/.well-known/oauth-protected-resource/mcp\", scope=\"service:read service:write\""`, got)

	got = run(allowed, "sk_live_"+strings.Repeat("x", 40))
	require.Contains(t, got, `"status":401`)
	require.Contains(t, got, `error=\"invalid_token\"`, got)

	before := b.refusals("origin")
	got = run(other, b.key)
	require.Contains(t, got, `"error":"TypeError: Failed to fetch"`, "nothing readable from a refused origin")
	require.Equal(t, before+1, b.refusals("origin"), "refused at the door: the preflight")
}
