package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/mcpserver"
	"github.com/heraldhq/herald/internal/testkit"
)

// syncBuffer collects output written from another goroutine.
type syncBuffer = testkit.SyncBuffer

// mcpStdio starts `herald mcp` with env through the official SDK client's CommandTransport and
// returns the session and the process's stderr.
func mcpStdio(t *testing.T, env ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(heraldBin, "mcp")
	cmd.Env = append(os.Environ(), env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "herald-stdio-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())
	t.Cleanup(func() { _ = s.Close() })
	return s, stderr
}

func stdioCall(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	return res
}

func stdioText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func stdioJSON(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, stdioText(res))
	var m map[string]any
	last := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	require.NoError(t, json.Unmarshal([]byte(last), &m), last)
	return m
}

func writePNG(t *testing.T, path string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for x := 0; x < 64; x++ {
		for y := 0; y < 48; y++ {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 128, 255})
		}
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, img))
	require.NoError(t, f.Close())
}

// `herald mcp` serves the connector's tools over stdio against a running server: the official
// SDK client starts it as a local host would, and publishes a post with media from a local file.
func TestMCPStdio(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	key := sandboxKey(t, dir)
	s, stderr := mcpStdio(t, "HERALD_API_URL="+p.url, "HERALD_API_KEY="+key)

	list, err := s.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	require.Len(t, names, len(mcpserver.NewTools(mcpserver.ToolsConfig{}).Scopes()), "every tool of the connector")
	for _, name := range []string{"upload_media", "validate_post", "get_account_capabilities", "set_account_defaults"} {
		require.Contains(t, names, name)
	}

	me := stdioJSON(t, stdioCall(t, s, "whoami", nil))
	require.NotEmpty(t, me["email"])
	accts := stdioJSON(t, stdioCall(t, s, "list_accounts", map[string]any{"platform": "bluesky"}))["accounts"].([]any)
	require.Len(t, accts, 1)
	bsky := accts[0].(map[string]any)["account_id"].(string)

	draft := stdioJSON(t, stdioCall(t, s, "create_draft", map[string]any{"content": "a draft over stdio", "accounts": []string{"bluesky"}}))
	require.NotEmpty(t, draft["post_id"], "%v", draft)
	got := stdioJSON(t, stdioCall(t, s, "get_post", map[string]any{"post_id": draft["post_id"]}))
	require.Equal(t, "draft", got["status"], "%v", got)
	require.Contains(t, stdioText(stdioCall(t, s, "get_post", map[string]any{"post_id": draft["post_id"]})), bsky, "the platform name stands for the one account")

	file := filepath.Join(t.TempDir(), "chart.png")
	writePNG(t, file)
	media := stdioJSON(t, stdioCall(t, s, "upload_media", map[string]any{"path": file}))
	require.Equal(t, "image/png", media["content_type"], "%v", media)
	require.NotEmpty(t, media["media_id"])

	pub := stdioJSON(t, stdioCall(t, s, "publish_post", map[string]any{"content": "Hello from herald mcp", "accounts": []string{"bluesky"},
		"media_ids": []string{media["media_id"].(string)}}))
	require.NotEmpty(t, pub["tracking_id"], "%v", pub)
	deadline := time.Now().Add(60 * time.Second)
	var job map[string]any
	for {
		job = stdioJSON(t, stdioCall(t, s, "get_publish_status", map[string]any{"tracking_id": pub["tracking_id"], "wait_seconds": 10}))
		if job["status"] != "publishing" || time.Now().After(deadline) {
			break
		}
	}
	require.Equal(t, "published", job["status"], "%v", job)

	// Fetching a URL goes through the SSRF-safe egress: the server's own loopback address is
	// refused without --allow-private.
	res := stdioCall(t, s, "upload_media", map[string]any{"url": p.url + "/healthz"})
	require.True(t, res.IsError, stdioText(res))
	require.Contains(t, stdioText(res), "url refused")

	start := time.Now()
	require.NoError(t, s.Close(), "herald mcp exits with status 0 when stdin closes")
	require.Less(t, time.Since(start), 4*time.Second, "without waiting for a signal")
	require.Contains(t, stderr.String(), "stdin closed")
	require.NotContains(t, stderr.String(), key, "the key is never logged")
}

// Without HERALD_API_KEY the command says so and exits with status 2, before any MCP traffic.
func TestMCPStdioNeedsAKey(t *testing.T) {
	cmd := exec.Command(heraldBin, "mcp")
	cmd.Env = append(os.Environ(), "HERALD_API_KEY=", "HERALD_API_URL=http://127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	require.Error(t, err)
	require.Equal(t, 2, cmd.ProcessState.ExitCode())
	require.Contains(t, stderr.String(), "HERALD_API_KEY is not set")
	require.Empty(t, stdout.String(), "stdout carries MCP messages only")
}

// A wrong key is no startup failure (the server may start later): every tool call answers the
// API's 401 as a tool error.
func TestMCPStdioWrongKey(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	wrong := "sk_live_" + strings.Repeat("0", 40)
	s, stderr := mcpStdio(t, "HERALD_API_URL="+p.url, "HERALD_API_KEY="+wrong)

	status, body := p.request(wrong, "GET", "/v1/me", "")
	require.Equal(t, 401, status)
	var apiErr struct {
		Error struct{ Message string }
	}
	require.NoError(t, json.Unmarshal(body, &apiErr))
	require.NotEmpty(t, apiErr.Error.Message)

	for _, tool := range []string{"whoami", "list_accounts"} {
		res := stdioCall(t, s, tool, nil)
		require.True(t, res.IsError, stdioText(res))
		require.Contains(t, stdioText(res), apiErr.Error.Message, tool)
		require.Contains(t, stdioText(res), "HTTP 401", tool)
	}
	require.NoError(t, s.Close())
	require.NotContains(t, stderr.String(), wrong)
}

// --workspace (HERALD_WORKSPACE) names the workspace every request acts in: main acts as without
// it, and a workspace the user does not have answers /v1's 404 as a tool error.
func TestMCPStdioWorkspace(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	key := sandboxKey(t, dir)
	s, _ := mcpStdio(t, "HERALD_API_URL="+p.url, "HERALD_API_KEY="+key, "HERALD_WORKSPACE=main")
	require.Len(t, stdioJSON(t, stdioCall(t, s, "list_accounts", nil))["accounts"], 9)

	missing := "01900000-0000-7000-8000-000000000000"
	s, _ = mcpStdio(t, "HERALD_API_URL="+p.url, "HERALD_API_KEY="+key, "HERALD_WORKSPACE="+missing)
	res := stdioCall(t, s, "list_accounts", nil)
	require.True(t, res.IsError, stdioText(res))
	require.Contains(t, stdioText(res), missing)
	require.Contains(t, stdioText(res), "(not_found, HTTP 404)")
}
