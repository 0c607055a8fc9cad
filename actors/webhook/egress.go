package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// MaxURLLength caps a subscription's URL.
const MaxURLLength = 2048

// Resolver resolves host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// EgressOptions configure the outbound side of webhooks.
type EgressOptions struct {
	// AllowPrivate allows loopback and private targets, http and any port (local development;
	// sandbox mode turns it on).
	AllowPrivate bool
	// RootCAs are the trusted CA certificates: the system's plus those of the CA file.
	RootCAs *x509.CertPool
	// Resolver resolves names at registration and at dial time (default net.DefaultResolver).
	Resolver Resolver
	// AttemptTimeout bounds one delivery attempt, connection and response included (default 15s).
	AttemptTimeout time.Duration
	// MaxConnsPerHost bounds the connections to one receiver host (default 32).
	MaxConnsPerHost int
}

// Guard applies the URL rules of subscriptions: at registration (CheckURL) and at dial time (the
// Client's dialer checks every address it connects to, after resolution, so a name that resolves
// to a public address at registration and to a private one later is still refused).
type Guard struct {
	opts     EgressOptions
	guardian *ssrf.Guardian
	// client is built once: its transport's connection pool and limits (MaxConnsPerHost) hold
	// across every delivery and media fetch, which a transport per call would not.
	client *http.Client
}

// ErrBlocked means a target address is not allowed (private, loopback, link-local, CGNAT,
// multicast, metadata, or a port other than 443).
var ErrBlocked = errors.New("webhook: target address not allowed")

// errBlockedPort is ErrBlocked for a port other than 443; errNoAddress is a name that resolved to
// no address at all.
var (
	errBlockedPort = fmt.Errorf("%w: only port 443 is allowed", ErrBlocked)
	errNoAddress   = errors.New("webhook: the name has no address")
)

// URLError is a refused subscription URL; its message is safe to show to the caller.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return "url: " + e.Reason }

// NewGuard makes the guard.
func NewGuard(o EgressOptions) *Guard {
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 15 * time.Second
	}
	if o.MaxConnsPerHost <= 0 {
		o.MaxConnsPerHost = 32
	}
	g := &Guard{opts: o, guardian: ssrf.New(ssrf.WithPorts(443))}
	g.client = g.newClient()
	return g
}

// LoadCAFile returns the system's trusted certificates plus those of a PEM file ("" for none).
func LoadCAFile(path string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if path == "" {
		return pool, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhook CA file: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("webhook CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// AllowPrivate reports whether private targets are allowed.
func (g *Guard) AllowPrivate() bool { return g.opts.AllowPrivate }

// blockedSuffixes are name suffixes of local or internal hosts.
var blockedSuffixes = []string{".localhost", ".local", ".internal", ".localdomain", ".home.arpa", ".intranet", ".corp", ".lan"}

// CheckURL validates a subscription URL and returns it normalised. Without AllowPrivate: https
// only, port 443, no userinfo, no fragment, at most MaxURLLength characters, a host that is
// neither a local name (localhost and names under it, single-label names, .local, .internal ...)
// nor a forbidden IP address in any spelling (ParseHost: 127.1, 0x7f.1, 0177.0.0.1, 2130706433,
// full-width digits, a trailing dot, IPv6 forms), and a name that, when it resolves, resolves only
// to public addresses. A name that does not resolve now is accepted: every delivery checks the
// addresses it dials.
//
// The URL returned carries the host in its canonical form (ParseHost: ASCII, lower case, no
// trailing dot, an address in its usual notation), so that what is stored is what was checked;
// with AllowPrivate the host is normalised the same way and not checked.
func (g *Guard) CheckURL(ctx context.Context, raw string) (string, error) {
	if len(raw) > MaxURLLength {
		return "", &URLError{fmt.Sprintf("must be at most %d characters", MaxURLLength)}
	}
	if strings.TrimSpace(raw) != raw || raw == "" {
		return "", &URLError{"must be an absolute https URL without surrounding spaces"}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "", &URLError{"must be an absolute https URL"}
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme == "https":
	case scheme == "http" && g.opts.AllowPrivate:
	case scheme == "http":
		return "", &URLError{"must use https"}
	default:
		return "", &URLError{"must use https"}
	}
	if u.User != nil {
		return "", &URLError{"must not contain a user name or password"}
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "", &URLError{"must not contain a fragment"}
	}
	written := u.Hostname()
	if written == "" {
		return "", &URLError{"must have a host"}
	}
	host, err := ParseHost(written)
	if err != nil {
		return "", &URLError{fmt.Sprintf("has an invalid host %q: it is neither an IP address nor a host name", written)}
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", &URLError{"has an invalid port"}
		}
		if n != 443 && !g.opts.AllowPrivate {
			return "", &URLError{"must use port 443"}
		}
	}
	u.Scheme = scheme
	u.Host = host.String()
	if host.IsAddr() && host.Addr.Is6() {
		u.Host = "[" + u.Host + "]"
	}
	if port != "" {
		u.Host += ":" + port
	}
	if g.opts.AllowPrivate {
		return u.String(), nil
	}
	if host.IsAddr() {
		ip := host.Addr
		if err := g.guardian.SafeAddr(ip.Unmap()); err != nil || ip.Is4In6() || ip.Zone() != "" {
			return "", &URLError{"must be a public address: " + spelled(written, ip) + " is loopback, private, link-local, shared (CGNAT), multicast or reserved"}
		}
		return u.String(), nil
	}
	name := host.Name
	if !strings.Contains(name, ".") {
		return "", &URLError{"must be a public host name: " + name + " names a local host"}
	}
	for _, s := range blockedSuffixes {
		if strings.HasSuffix(name, s) {
			return "", &URLError{"must be a public host name: " + name + " names a local or internal host"}
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, err := g.opts.Resolver.LookupNetIP(rctx, "ip", name)
	if err == nil {
		for _, a := range addrs {
			if err := g.guardian.SafeAddr(a.Unmap()); err != nil {
				return "", &URLError{"must be a public address: " + name + " resolves to " + a.Unmap().String() + ", which is not public"}
			}
		}
	}
	return u.String(), nil
}

// spelled names a refused address as the caller wrote it and as it reads: "127.1 (127.0.0.1)".
func spelled(written string, ip netip.Addr) string {
	if written == ip.String() {
		return written
	}
	return written + " (" + ip.String() + ")"
}

// dial connects to addr (host:port) after resolving the host with the guard's resolver and
// checking every address: the address checked is the address dialled.
func (g *Guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, err
	}
	if !g.opts.AllowPrivate && port != 443 {
		return nil, fmt.Errorf("%w (port %d)", errBlockedPort, port)
	}
	// The host as ParseHost reads it: an address in any spelling is that address (a URL stored
	// before registration refused such spellings is dialled as what it names, and checked).
	h, err := ParseHost(host)
	if err != nil {
		return nil, fmt.Errorf("%w: invalid host", ErrBlocked)
	}
	var addrs []netip.Addr
	if h.IsAddr() {
		addrs = []netip.Addr{h.Addr}
	} else {
		if !g.opts.AllowPrivate && h.IsLocalName() {
			return nil, fmt.Errorf("%w: %s", ErrBlocked, h.Name)
		}
		addrs, err = g.opts.Resolver.LookupNetIP(ctx, "ip", h.Name)
		if err != nil {
			return nil, err
		}
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !g.opts.AllowPrivate {
		// Checked again just before connect(2), on the very socket address.
		d.Control = g.guardian.Safe
	}
	var firstErr error
	for _, a := range addrs {
		a = a.Unmap()
		if !g.opts.AllowPrivate {
			if err := g.guardian.SafeAddr(a); err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%w: %s is not a public address", ErrBlocked, a)
				}
				continue
			}
		}
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedPort) || errors.Is(err, ssrf.ErrProhibitedNetwork) {
			err = fmt.Errorf("%w: %v", ErrBlocked, err)
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("%w: %s", errNoAddress, host)
	}
	return nil, firstErr
}

// Client returns the HTTP client deliveries and media fetches use: no proxy, no redirects
// followed (a 3xx is a failed attempt), every dial checked, TLS verified against RootCAs, bounded
// time. Every call returns the same client, with one transport and its connection pool.
func (g *Guard) Client() *http.Client { return g.client }

func (g *Guard) newClient() *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.dial,
		TLSClientConfig:        &tls.Config{RootCAs: g.opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    5 * time.Second,
		ResponseHeaderTimeout:  g.opts.AttemptTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    g.opts.MaxConnsPerHost,
		MaxConnsPerHost:        g.opts.MaxConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   g.opts.AttemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// DescribeError says why a request to host failed, in a fixed vocabulary that is safe to show to
// the user who chose host (a delivery's last_error, an MCP fetch's error): it names host and
// nothing else. The raw errors name the resolver Herald asked ("lookup x on 10.0.0.2:53"), the
// addresses a name resolved to and the local socket, which say things about Herald's network
// that are not the user's to know; those go only to the logs.
func DescribeError(err error, host string) string {
	var (
		dnsErr    *net.DNSError
		ne        net.Error
		unknownCA x509.UnknownAuthorityError
		badName   x509.HostnameError
		badCert   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
	)
	switch {
	case errors.Is(err, errBlockedPort):
		return "address not allowed: only port 443 may be used"
	case errors.Is(err, ErrBlocked):
		return "address not allowed: " + host + " is, or resolves to, a loopback, private or reserved address"
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout:
		return "timed out resolving host " + host
	case errors.As(err, &dnsErr), errors.Is(err, errNoAddress):
		return "could not resolve host " + host
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out: no complete answer from " + host + " in time"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused by " + host
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset by " + host
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host " + host + " is unreachable"
	case errors.As(err, &unknownCA):
		return "TLS: the certificate of " + host + " is not signed by a trusted authority"
	case errors.As(err, &badName):
		return "TLS: the certificate is not valid for " + host
	case errors.As(err, &badCert), errors.As(err, &verify):
		return "TLS: the certificate of " + host + " is invalid or expired"
	case errors.As(err, &record), errors.As(err, &alert):
		return "TLS: the handshake with " + host + " failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by " + host + " before a complete answer"
	}
	return "could not connect to " + host
}
