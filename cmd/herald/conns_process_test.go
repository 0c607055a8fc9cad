package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serveWithFileLimit starts `herald serve` under an open-files limit of 256 (soft and hard, so
// that Herald cannot raise it), with extra flags.
func serveWithFileLimit(t *testing.T, extra ...string) *proc {
	t.Helper()
	args := append([]string{"-c", `ulimit -n 256 && exec "$0" "$@"`, heraldBin}, serveArgs(t.TempDir(), extra...)...)
	return startCommand(t, exec.Command("sh", args...))
}

// flood opens n connections to p's API listener that never send a request.
func flood(t *testing.T, p *proc, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
	}
}

// logLines are p's JSON log lines.
func (p *proc) logLines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.logText()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Under an open-files limit of 256, Herald caps the API listener at 128 connections (the limit
// less its headroom): a client opening 400 connections that never send a request neither locks
// a real request out nor makes accepts fail with "too many open files". With a cap above what the
// limit allows, accepts do fail, and net/http's error reaches the structured log.
func TestConnectionCapKeepsAcceptsWithinTheOpenFilesLimit(t *testing.T) {
	t.Parallel()
	p := serveWithFileLimit(t, "--max-idle-per-addr", "0")
	var limits map[string]any
	for _, m := range p.logLines(t) {
		if m["msg"] == "connection limits" {
			limits = m
		}
	}
	require.NotNil(t, limits, p.logText())
	require.Equal(t, 128.0, limits["max_conns"])
	require.Equal(t, 256.0, limits["open_files_limit"])

	flood(t, p, 400)
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Get(p.url + "/readyz")
	require.NoError(t, err, "a real request gets through the flood")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	resp, err = client.Get(p.metricsURL + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(metrics), "herald_http_connections_max 128")
	require.NotContains(t, string(metrics), `herald_http_connections_reclaimed_total{reason="at_capacity"} 0`, "idle connections made room")
	require.NotContains(t, p.logText(), "too many open files")

	// The same flood against a cap the limit cannot hold: accepts fail, and say so in the log.
	over := serveWithFileLimit(t, "--max-idle-per-addr", "0", "--max-conns", "10000")
	flood(t, over, 400)
	require.Eventually(t, func() bool {
		for _, m := range over.logLines(t) {
			if msg, _ := m["msg"].(string); strings.Contains(msg, "too many open files") {
				return m["level"] == "WARN" && m["component"] == "http_server"
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the accept error is a structured warning: %s", over.logText())
}
