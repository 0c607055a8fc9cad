package platformstest

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

// Start starts a simulator with opts for the test's duration and returns it with platform p's
// adapter configuration, whose HTTP client gives up after 5 seconds.
func Start(t *testing.T, p platforms.Platform, opts sim.Options) (*sim.Server, platforms.Config) {
	t.Helper()
	srv, err := sim.Start("127.0.0.1:0", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg := srv.AdapterConfig(p)
	cfg.HTTPClient = adapterClient(5 * time.Second)
	return srv, cfg
}

// adapterClient is an adapter's HTTP client in a test, giving up after timeout. Its transport is
// its own: httptest.Server.Close closes http.DefaultTransport's idle connections, and a parallel
// test's close could break a request taking one of them.
func adapterClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// Requests reads the simulator's log of platform p's requests through its admin API.
func Requests(t *testing.T, srv *sim.Server, p platforms.Platform) []sim.RequestLog {
	t.Helper()
	var out struct {
		Data []sim.RequestLog `json:"data"`
	}
	require.Equal(t, http.StatusOK, Admin(t, srv, http.MethodGet, "/_sim/requests?platform="+url.QueryEscape(string(p)), nil, &out))
	return out.Data
}

// Consent opens a consent page once, as the browser would, and returns where the simulator
// redirects: a 302 to the redirect URI given to AuthorizeURL.
func Consent(t *testing.T, authURL, redirect string) *url.URL {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	want, err := url.Parse(redirect)
	require.NoError(t, err)
	require.Equal(t, want.Host, loc.Host, "location %s", loc)
	require.Equal(t, want.Path, loc.Path, "location %s", loc)
	return loc
}

// PKCE makes a random code verifier and its S256 challenge.
func PKCE(t *testing.T) (verifier, challenge string) {
	t.Helper()
	verifier = base64.RawURLEncoding.EncodeToString(RandomBytes(t, 32))
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// Clock is a clock a test moves by hand (sim.Options.Now).
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// RoundTripFunc is an http.RoundTripper made of a function, to sabotage chosen calls.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// LoseAnswers is a transport that sends every request and, for those lost says, drops the answer
// the server gave: the request arrived, its answer never did.
func LoseAnswers(lost func(*http.Request) bool) http.RoundTripper {
	return RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && lost(r) {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return nil, errors.New("connection reset by peer")
		}
		return resp, err
	})
}
