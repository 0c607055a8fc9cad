package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
)

// A shutdown first drains: /readyz answers 503 and /healthz 200, every other request is refused
// with 503 internal_error, Retry-After and Connection: close (a new job stream too), and then the
// open job and campaign streams end after their last complete event with a retry: field, before
// Shutdown returns.
func TestShutdownDrainsThenEndsStreams(t *testing.T) {
	t.Parallel()
	a, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true,
		Sandbox: true, SimAddr: "127.0.0.1:0", SimLatency: 5 * time.Second, PasswordParams: cheapPasswords, ShutdownDrain: 2 * time.Second})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	shut := make(chan error, 1)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = a.Shutdown()
		}
	})
	call := func(method, path, body string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, a.URL()+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+a.SandboxKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	_, body := call("GET", "/v1/accounts", "")
	var accts struct {
		Data []struct{ ID, Platform string }
	}
	require.NoError(t, json.Unmarshal(body, &accts))
	resp, body := call("POST", "/v1/posts/publish", `{"content":"in flight at shutdown","platforms":["`+accts.Data[0].ID+`"]}`)
	require.Equal(t, 202, resp.StatusCode, string(body))
	var pub struct {
		TrackingID string `json:"tracking_id"`
	}
	require.NoError(t, json.Unmarshal(body, &pub))

	resp, body = call("POST", "/v1/campaigns", `{"publish":"now","posts":[{"content":"a campaign in flight at shutdown","platforms":["`+accts.Data[0].ID+`"]}]}`)
	require.Equal(t, 202, resp.StatusCode, string(body))
	var camp struct {
		CampaignID string `json:"campaign_id"`
	}
	require.NoError(t, json.Unmarshal(body, &camp))

	open := func(path, first string) *bufio.Scanner {
		req, err := http.NewRequest("GET", a.URL()+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+a.SandboxKey)
		stream, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { stream.Body.Close() })
		require.Equal(t, 200, stream.StatusCode)
		lines := bufio.NewScanner(stream.Body)
		require.True(t, lines.Scan())
		require.True(t, strings.HasPrefix(lines.Text(), first), "%s starts with %q: %q", path, first, lines.Text())
		return lines
	}
	streams := map[string]*bufio.Scanner{
		"job":      open("/v1/jobs/"+pub.TrackingID+"/stream", "event: progress"), // the job's state at once
		"campaign": open("/v1/campaigns/"+camp.CampaignID+"/stream", ": campaign"),
	}

	go func() { shut <- a.Shutdown() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := call("GET", "/readyz", "")
		if resp.StatusCode == 503 {
			break
		}
		require.True(t, time.Now().Before(deadline), "readiness did not turn 503")
		time.Sleep(5 * time.Millisecond)
	}
	resp, _ = call("GET", "/healthz", "")
	require.Equal(t, 200, resp.StatusCode, "alive while draining")
	for _, path := range []string{"/v1/me", "/v1/jobs/" + pub.TrackingID + "/stream"} {
		resp, body = call("GET", path, "")
		require.Equal(t, 503, resp.StatusCode, "%s: %s", path, body)
		require.Contains(t, string(body), `"code":"internal_error"`)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.True(t, resp.Close, "the connection closes after the refusal")
	}

	for name, lines := range streams {
		var tail []string
		for lines.Scan() {
			tail = append(tail, lines.Text())
		}
		require.NoError(t, lines.Err(), name)
		require.GreaterOrEqual(t, len(tail), 3, "%s: %q", name, tail)
		require.Equal(t, []string{"retry: 1000", ""}, tail[len(tail)-2:], "the %s stream ends with the farewell: %q", name, tail)
		require.True(t, strings.HasPrefix(tail[len(tail)-3], ": "), "a comment says why: %q", tail)
	}
	require.NoError(t, <-shut)
	stopped = true
}
