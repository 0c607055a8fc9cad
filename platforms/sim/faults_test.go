package sim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// Random faults: every API call draws one with Options.FaultRate, of a kind among FaultKinds;
// OAuth endpoints are spared, GET /_sim/faults counts what was drawn, and a queued fault goes
// first.
func TestRandomFaults(t *testing.T) {
	s, base := faultSim(t, sim.Options{FaultRate: 0.5, FaultKinds: []string{sim.FaultError5xx}, FaultSeed: 7, LimitScale: 100})
	creds, err := s.NewAccount(platforms.X, "chaos")
	require.NoError(t, err)
	hc := &http.Client{Timeout: 5 * time.Second}
	me := func() int { return call(t, base, "/x/2/users/me", creds) }
	counts := map[int]int{}
	for range 200 {
		counts[me()]++
	}
	require.Len(t, counts, 2, "only successes and simulated outages: %v", counts)
	require.InDelta(t, 100, counts[503], 40, "about half the calls fail: %v", counts)

	resp, err := hc.Get(base + "/_sim/faults")
	require.NoError(t, err)
	var out struct {
		Rate     float64
		Kinds    []string
		Injected map[string]int
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	require.Equal(t, 0.5, out.Rate)
	require.Equal(t, []string{sim.FaultError5xx}, out.Kinds)
	require.Equal(t, counts[503], out.Injected[sim.FaultError5xx])

	// The same seed draws the same faults for the same sequence of calls.
	again, base2 := faultSim(t, sim.Options{FaultRate: 0.5, FaultKinds: []string{sim.FaultError5xx}, FaultSeed: 7, LimitScale: 100})
	creds2, err := again.NewAccount(platforms.X, "chaos")
	require.NoError(t, err)
	n := 0
	for range 200 {
		if call(t, base2, "/x/2/users/me", creds2) == 503 {
			n++
		}
	}
	require.Equal(t, counts[503], n)
}

func TestParseFaultKinds(t *testing.T) {
	kinds, err := sim.ParseFaultKinds("")
	require.NoError(t, err)
	require.Equal(t, sim.RandomFaultKinds, kinds)
	kinds, err = sim.ParseFaultKinds("error_5xx, post_then_error")
	require.NoError(t, err)
	require.Equal(t, []string{sim.FaultError5xx, sim.FaultPostThenError}, kinds)
	_, err = sim.ParseFaultKinds("error_5xx,expire_tokens")
	require.ErrorContains(t, err, "not a per-call fault")
	spare, err := sim.ParseFaultSpare("youtube:rate_limit, tiktok:timeout")
	require.NoError(t, err)
	require.Equal(t, []string{"youtube:rate_limit", "tiktok:timeout"}, spare)
	_, err = sim.ParseFaultSpare("youtube")
	require.ErrorContains(t, err, "not network:fault")
	_, err = sim.ParseFaultSpare("myspace:rate_limit")
	require.ErrorContains(t, err, "not network:fault")
}

// A spared network:fault pair is never drawn; the other networks draw it.
func TestRandomFaultsSpare(t *testing.T) {
	s, base := faultSim(t, sim.Options{FaultRate: 1, FaultKinds: []string{sim.FaultError5xx}, FaultSpare: []string{"twitter_x:error_5xx"}, LimitScale: 100})
	for _, c := range []struct {
		p    platforms.Platform
		path string
		want int
	}{{platforms.X, "/x/2/users/me", 200}, {platforms.Bluesky, "/bluesky/xrpc/com.atproto.server.getSession", 503}} {
		creds, err := s.NewAccount(c.p, "spare")
		require.NoError(t, err)
		for range 5 {
			require.Equal(t, c.want, call(t, base, c.path, creds), c.p)
		}
	}
}

// PUT /_sim/faults changes the rate: 0 stops the random faults.
func TestSetFaultRate(t *testing.T) {
	s, base := faultSim(t, sim.Options{FaultRate: 1, FaultKinds: []string{sim.FaultError5xx}, LimitScale: 100})
	creds, err := s.NewAccount(platforms.X, "rate")
	require.NoError(t, err)
	hc := &http.Client{Timeout: 5 * time.Second}
	me := func() int { return call(t, base, "/x/2/users/me", creds) }
	require.Equal(t, 503, me())
	req, _ := http.NewRequest("PUT", base+"/_sim/faults", strings.NewReader(`{"rate":0}`))
	resp, err := hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	for range 20 {
		require.Equal(t, 200, me())
	}
	req, _ = http.NewRequest("PUT", base+"/_sim/faults", strings.NewReader(`{"rate":2}`))
	resp, err = hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 400, resp.StatusCode)
}

// faultSim serves a simulator with these options on loopback.
func faultSim(t *testing.T, o sim.Options) (*sim.Sim, string) {
	t.Helper()
	s := sim.New(o)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetBaseURL(srv.URL)
	return s, srv.URL
}

// call sends GET path with the account's bearer token and returns the status.
func call(t *testing.T, base, path string, creds platforms.Credentials) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+creds.AccessToken)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
