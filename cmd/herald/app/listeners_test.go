package app_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
)

// seriesCount is the number of series in the app's registry, and the exposition's size.
func seriesCount(t *testing.T, b *testBundle) (series, bytes int) {
	t.Helper()
	families, err := b.app.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		series += len(f.GetMetric())
	}
	return series, len(scrape(t, b.app.MetricsURL()))
}

// A client that sends made-up methods and made-up paths, with and without a key, adds a handful
// of series at most: the HTTP metrics' labels are route templates (or "unmatched"), methods
// Herald serves (or "other") and status codes, never what the client sent.
func TestMetricLabelSetsStayBoundedUnderMadeUpRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{noValidate: true})
	before, sizeBefore := seriesCount(t, b)
	send := func(method, path, key string) int {
		req, err := http.NewRequest(method, b.url+path, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	statuses := map[int]int{}
	for i := range 2000 {
		made := fmt.Sprintf("M%dX", i)
		var status int
		switch i % 5 {
		case 0: // a made-up method on a made-up path, no key
			status = send(made, fmt.Sprintf("/probe/%d/%x", i, i*7919), "")
		case 1: // a made-up method on a real route, with the key
			status = send(made, "/v1/posts", b.key)
		case 2: // a made-up path under /v1, with the key
			status = send(http.MethodGet, fmt.Sprintf("/v1/probe-%d", i), b.key)
		case 3: // a real route template with made-up ids, with the key
			status = send(http.MethodGet, "/v1/posts/"+uuid.NewString(), b.key)
		case 4: // a made-up method on a made-up dashboard path with a made-up key
			status = send(made, fmt.Sprintf("/api/probe/%d", i), fmt.Sprintf("sk_live_%040d", i))
		}
		statuses[status]++
	}
	after, sizeAfter := seriesCount(t, b)
	t.Logf("answers %v; series %d → %d; exposition %d → %d bytes", statuses, before, after, sizeBefore, sizeAfter)
	require.LessOrEqual(t, after-before, 40, "2,000 made-up requests added no more than a few series")
	text := scrape(t, b.app.MetricsURL())
	require.Contains(t, text, `herald_http_requests_total{method="other",route="unmatched",status="404"} 800`)
	require.Contains(t, text, `herald_http_requests_total{method="other",route="/v1/posts",status="405"} 400`)
	require.Contains(t, text, `herald_http_requests_total{method="GET",route="unmatched",status="404"} 400`)
	require.Contains(t, text, `herald_http_requests_total{method="GET",route="/v1/posts/:id",status="404"} 400`)
	require.NotContains(t, text, "M1X")
	require.NotContains(t, text, "probe")
}

// /metrics is served on the metrics listener, not on the API listener, unless MetricsPublic.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	b := setup(t, bundleOpts{})
	require.NotEmpty(t, b.app.MetricsURL())
	require.NotEqual(t, b.url, b.app.MetricsURL())
	r := b.doKey("", "GET", "/metrics", nil, nil)
	require.Equal(t, 404, r.status, "not on the API listener")
	require.Equal(t, "not_found", r.errorCode(t))
	status, body := get(b.app.MetricsURL() + "/metrics")
	require.Equal(t, 200, status)
	require.Contains(t, body, `herald_http_requests_total{method="GET",route="unmatched",status="404"} 1`)
	require.Contains(t, body, "herald_http_connections_open ")
	for _, path := range []string{"/healthz", "/readyz"} {
		status, _ = get(b.app.MetricsURL() + path)
		require.Equal(t, 200, status, "%s on the metrics listener", path)
		require.Equal(t, 200, b.doKey("", "GET", path, nil, nil).status, "%s on the API listener", path)
	}
	status, _ = get(b.app.MetricsURL() + "/v1/me")
	require.Equal(t, 404, status, "the metrics listener serves nothing of the API")

	pub := setup(t, bundleOpts{noValidate: true, config: func(c *app.Config) { c.MetricsPublic, c.MetricsAddr = true, "" }})
	require.Empty(t, pub.app.MetricsURL(), "no metrics listener")
	status, _ = get(pub.url + "/healthz")
	require.Equal(t, 200, status)
	status, body = get(pub.url + "/metrics")
	require.Equal(t, 200, status, "--metrics-public")
	require.Contains(t, body, `herald_http_requests_total{method="GET",route="/healthz",status="200"} 1`)
}

// The metrics listener's address must be free unless it is the default (MetricsOptional).
func TestMetricsAddressInUse(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	cfg := app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true, PasswordParams: cheapPasswords,
		MetricsAddr: taken.Addr().String()}
	a, err := app.New(cfg)
	require.NoError(t, err)
	err = a.Start(t.Context())
	require.ErrorContains(t, err, "metrics listener on "+taken.Addr().String())
	require.NoError(t, a.Shutdown())

	cfg.DataDir, cfg.MetricsOptional = t.TempDir(), true
	a, err = app.New(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Start(t.Context()), "the default address in use is a warning")
	require.Empty(t, a.MetricsURL())
	require.NoError(t, a.Shutdown())
}

// The API listener's connection limits are wired: one address's idle connections beyond the cap
// are closed, oldest first, and the open connections are a gauge.
func TestAPIListenerConnectionLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{config: func(c *app.Config) { c.MaxIdlePerAddr, c.MaxConns = 3, 50 }})
	require.Equal(t, 50, b.app.Conns.MaxConns())
	var conns []net.Conn
	for i := range 4 {
		c, err := net.Dial("tcp", b.app.Addr())
		require.NoError(t, err)
		defer c.Close()
		conns = append(conns, c)
		// Each connection is accepted before the next one is opened, so that they turn idle in
		// order.
		require.Eventually(t, func() bool { return b.app.Conns.Open() >= min(i+1, 3) }, 10*time.Second, 5*time.Millisecond)
	}
	// The fourth idle connection of the address closes the first, once that one has been idle
	// for a second.
	require.NoError(t, conns[0].SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err := conns[0].Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the oldest idle connection was closed: %v", err)
	require.Eventually(t, func() bool { return b.app.Conns.Open() == 3 }, 10*time.Second, 5*time.Millisecond)
	text := scrape(t, b.app.MetricsURL())
	require.Contains(t, text, "herald_http_connections_max 50")
	require.Contains(t, text, `herald_http_connections_reclaimed_total{reason="per_address"} 1`)
}
