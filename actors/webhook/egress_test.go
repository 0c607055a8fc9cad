package webhook

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook/webhooktest"
)

// The names tests resolve. No test dials a public or private address: blocked addresses are
// refused before connect(2), and public ones are only resolved at registration.
func testResolver() *fakeResolver {
	return newResolver(
		"hooks.example.com", "93.184.216.34",
		"v6.example.com", "2606:2800:220:1:248:1893:25c8:1946",
		"private.example.com", "10.1.2.3",
		"mixed.example.com", "93.184.216.34",
		"metadata.example.com", "169.254.169.254",
	)
}

func TestCheckURLRefusesUnsafeTargets(t *testing.T) {
	t.Parallel()
	r := testResolver()
	r.set("mixed.example.com", "93.184.216.34", "192.168.1.10")
	g := NewGuard(EgressOptions{Resolver: r})
	cases := []struct{ name, url, msg string }{
		{"http", "http://hooks.example.com/h", "must use https"},
		{"ftp", "ftp://hooks.example.com/h", "must use https"},
		{"localhost", "https://localhost/h", "names a local host"},
		{"localhost with dot", "https://localhost./h", "names a local host"},
		{"sub.localhost", "https://api.localhost/h", "local or internal host"},
		{"127.0.0.1", "https://127.0.0.1/h", "127.0.0.1 is loopback, private"},
		{"127.x", "https://127.1.2.3/h", "is loopback, private"},
		{"[::1]", "https://[::1]/h", "::1 is loopback"},
		{"mapped v4 in v6", "https://[::ffff:127.0.0.1]/h", "is loopback, private"},
		{"10.x", "https://10.0.0.8/h", "10.0.0.8"},
		{"172.16.x", "https://172.16.5.4/h", "172.16.5.4"},
		{"172.31.x", "https://172.31.255.1/h", "172.31.255.1"},
		{"192.168.x", "https://192.168.1.1/h", "192.168.1.1"},
		{"cloud metadata", "https://169.254.169.254/latest/meta-data", "169.254.169.254"},
		{"link-local v6", "https://[fe80::1]/h", "fe80::1"},
		{"unique local v6", "https://[fd00:ec2::254]/h", "fd00:ec2::254"},
		{"CGNAT", "https://100.64.1.1/h", "100.64.1.1"},
		{"multicast", "https://224.0.0.251/h", "224.0.0.251"},
		{"unspecified", "https://0.0.0.0/h", "0.0.0.0"},
		{"name resolving to private", "https://private.example.com/h", "resolves to 10.1.2.3"},
		{"name resolving to metadata", "https://metadata.example.com/h", "resolves to 169.254.169.254"},
		{"one of the addresses private", "https://mixed.example.com/h", "resolves to 192.168.1.10"},
		{"single-label name", "https://intranet/h", "names a local host"},
		{".internal", "https://metadata.google.internal/computeMetadata", "local or internal host"},
		{".local", "https://printer.local/h", "local or internal host"},
		{"userinfo", "https://user:pass@hooks.example.com/h", "must not contain a user name or password"},
		{"user only", "https://user@hooks.example.com/h", "must not contain a user name"},
		{"port 8443", "https://hooks.example.com:8443/h", "must use port 443"},
		{"port 80", "https://hooks.example.com:80/h", "must use port 443"},
		{"bad port", "https://hooks.example.com:99999/h", "invalid port"},
		{"fragment", "https://hooks.example.com/h#x", "must not contain a fragment"},
		{"over-long", "https://hooks.example.com/" + strings.Repeat("a", MaxURLLength), "at most 2048 characters"},
		{"relative", "/hooks", "absolute https URL"},
		{"empty", "", "absolute https URL"},
		{"spaces", " https://hooks.example.com/h", "surrounding spaces"},
		{"no host", "https:///h", "must have a host"},
		{"opaque", "https:hooks.example.com", "absolute https URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := g.CheckURL(context.Background(), tc.url)
			var ue *URLError
			require.ErrorAs(t, err, &ue, tc.url)
			require.Contains(t, ue.Error(), tc.msg)
			require.True(t, strings.HasPrefix(ue.Error(), "url: "))
		})
	}

	for _, ok := range []string{
		"https://hooks.example.com/h",
		"https://hooks.example.com:443/h?token=abc",
		"https://v6.example.com/h",
		"https://HOOKS.example.com/h",
		"https://93.184.216.34/h",
		"https://does-not-resolve.example.org/h", // checked again at every dial
	} {
		u, err := g.CheckURL(context.Background(), ok)
		require.NoError(t, err, ok)
		require.True(t, strings.HasPrefix(u, "https://"))
	}
}

func TestCheckURLAllowPrivate(t *testing.T) {
	t.Parallel()
	g := NewGuard(EgressOptions{AllowPrivate: true, Resolver: testResolver()})
	for _, ok := range []string{"http://127.0.0.1:8080/h", "https://localhost:9443/h", "https://10.0.0.8/h", "http://private.example.com/h"} {
		_, err := g.CheckURL(context.Background(), ok)
		require.NoError(t, err, ok)
	}
	// Userinfo, fragments and other schemes stay refused.
	for _, bad := range []string{"https://u:p@127.0.0.1/h", "ftp://127.0.0.1/h", "https://127.0.0.1/h#f"} {
		_, err := g.CheckURL(context.Background(), bad)
		require.Error(t, err, bad)
	}
}

// Every forbidden address is refused when Herald dials, whatever the name resolved to at
// registration; the dial never reaches connect(2).
func TestDialRefusesForbiddenAddresses(t *testing.T) {
	t.Parallel()
	r := testResolver()
	g := NewGuard(EgressOptions{Resolver: r})
	client := g.Client()
	targets := map[string]string{
		"loopback.example.com": "127.0.0.1", "loopback6.example.com": "::1", "ten.example.com": "10.0.0.1",
		"oneseventwo.example.com": "172.16.0.1", "oneninetwo.example.com": "192.168.0.1",
		"metadata.example.com": "169.254.169.254", "cgnat.example.com": "100.64.0.1", "mapped.example.com": "::ffff:10.0.0.1",
	}
	for name, addr := range targets {
		r.set(name, addr)
		_, err := client.Post("https://"+name+"/h", "application/json", strings.NewReader("{}"))
		require.ErrorIs(t, err, ErrBlocked, name)
		o := classifyError(err, name)
		require.Equal(t, outcomeBlocked, o.outcome)
		require.Equal(t, "address not allowed: "+name+" is, or resolves to, a loopback, private or reserved address", *o.errMsg)
		require.NotContains(t, *o.errMsg, addr, "the error names no address the host resolved to")
	}
	for _, u := range []string{"https://127.0.0.1/h", "https://[::1]/h", "https://10.0.0.1/h", "https://169.254.169.254/h", "https://localhost/h"} {
		_, err := client.Post(u, "application/json", strings.NewReader("{}"))
		require.ErrorIs(t, err, ErrBlocked, u)
	}
	// Any port but 443 is refused before resolution.
	_, err := client.Post("https://hooks.example.com:8443/h", "application/json", strings.NewReader("{}"))
	require.ErrorIs(t, err, ErrBlocked)
	// So is plain http to port 80.
	_, err = client.Post("http://hooks.example.com/h", "application/json", strings.NewReader("{}"))
	require.ErrorIs(t, err, ErrBlocked)
}

// DNS rebinding: a name that was public at registration and resolves to loopback later is refused
// at dial time.
func TestDNSRebindingIsRefusedAtDial(t *testing.T) {
	t.Parallel()
	r := testResolver()
	r.set("rebind.example.com", "93.184.216.34")
	g := NewGuard(EgressOptions{Resolver: r})
	_, err := g.CheckURL(context.Background(), "https://rebind.example.com/h")
	require.NoError(t, err)
	r.set("rebind.example.com", "127.0.0.1")
	_, err = g.Client().Post("https://rebind.example.com/h", "application/json", strings.NewReader("{}"))
	require.ErrorIs(t, err, ErrBlocked)
}

// The guard's dialer also refuses at the socket level (Dialer.Control), the last check before
// connect(2).
func TestDialControlRefusesLoopback(t *testing.T) {
	t.Parallel()
	g := NewGuard(EgressOptions{})
	err := g.guardian.Safe("tcp4", "127.0.0.1:443", nil)
	require.Error(t, err)
	require.NoError(t, g.guardian.Safe("tcp4", "93.184.216.34:443", nil))
	require.Error(t, g.guardian.Safe("tcp4", "93.184.216.34:8443", nil))
}

// A redirect is never followed: the 302 is the attempt's answer, and the Location (here a private
// address and, to prove it, the receiver itself) is never requested.
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	rcv := webhooktest.NewReceiver(t, ca, func(n int, w http.ResponseWriter, r *http.Request) int {
		if n == 1 {
			w.Header().Set("Location", "https://169.254.169.254/latest/meta-data")
		} else {
			w.Header().Set("Location", "/elsewhere")
		}
		return http.StatusFound
	})
	g := NewGuard(EgressOptions{AllowPrivate: true, RootCAs: ca.Pool})
	for i := 0; i < 2; i++ {
		resp, err := g.Client().Post(rcv.URL, "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusFound, resp.StatusCode)
	}
	for _, r := range rcv.Requests() {
		require.Equal(t, "/hook", r.Path)
	}
	require.Equal(t, 2, rcv.Count())
}

// Without the test CA, the receiver's certificate is refused.
func TestUnknownCertificateAuthorityIsRefused(t *testing.T) {
	t.Parallel()
	ca := webhooktest.NewCA(t)
	rcv := webhooktest.NewReceiver(t, ca, webhooktest.Always(200))
	roots, err := LoadCAFile("")
	require.NoError(t, err)
	g := NewGuard(EgressOptions{AllowPrivate: true, RootCAs: roots})
	_, err = g.Client().Post(rcv.URL, "application/json", strings.NewReader("{}"))
	require.Error(t, err)
	o := classifyError(err, "127.0.0.1")
	require.Equal(t, outcomeConnection, o.outcome)
	require.Equal(t, "TLS: the certificate of 127.0.0.1 is not signed by a trusted authority", *o.errMsg)
	require.Zero(t, rcv.Count())

	roots, err = LoadCAFile(ca.File)
	require.NoError(t, err)
	g = NewGuard(EgressOptions{AllowPrivate: true, RootCAs: roots})
	resp, err := g.Client().Post(rcv.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	_, err = LoadCAFile(t.TempDir() + "/missing.pem")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrBlocked)
}

// The guard builds its client once: every delivery and media fetch shares one transport, its
// connection pool and its per-host cap.
func TestClientIsBuiltOnce(t *testing.T) {
	t.Parallel()
	g := NewGuard(EgressOptions{})
	first, second := g.Client(), g.Client()
	require.Same(t, first, second)
	require.Same(t, first.Transport, second.Transport)
}

// Errors shown to users name their host in a fixed vocabulary, never the resolver Herald asked
// nor an address: here a real resolver (Go's) whose DNS server, on loopback, refuses, as an
// internal resolver that is down would; and a refused connection.
func TestDescribeErrorNamesNoResolver(t *testing.T) {
	t.Parallel()
	// A UDP port with nothing behind it: the resolver's queries are refused.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	dnsAddr := pc.LocalAddr().String()
	require.NoError(t, pc.Close())
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", dnsAddr)
	}}
	g := NewGuard(EgressOptions{Resolver: res, AttemptTimeout: 5 * time.Second})
	_, err = g.Client().Get("https://media.example.com/a.png")
	require.Error(t, err)
	require.Contains(t, err.Error(), "127.0.0.1", "the raw error names the resolver")
	msg := DescribeError(err, "media.example.com")
	require.Equal(t, "could not resolve host media.example.com", msg)

	// The resolver's own wording, as an internal one would answer.
	err = &net.DNSError{Err: "no such host", Name: "x.example.com", Server: "10.0.0.2:53", IsNotFound: true}
	require.Equal(t, "could not resolve host x.example.com", DescribeError(err, "x.example.com"))
	err = &net.DNSError{Err: "i/o timeout", Name: "x.example.com", Server: "127.0.0.53:53", IsTimeout: true}
	require.Equal(t, "timed out resolving host x.example.com", DescribeError(err, "x.example.com"))

	// A refused connection, with private targets allowed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	open := NewGuard(EgressOptions{AllowPrivate: true})
	_, err = open.Client().Get("http://" + closed + "/a.png")
	require.Error(t, err)
	require.Equal(t, "connection refused by 127.0.0.1", DescribeError(err, "127.0.0.1"))

	// A port other than 443 without private targets.
	_, err = g.Client().Get("https://media.example.com:8443/a.png")
	require.Equal(t, "address not allowed: only port 443 may be used", DescribeError(err, "media.example.com"))
}
