package webhook

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every spelling of an address reads as that address, as inet_aton(3), the WHATWG URL parser
// and net/http's IDNA mapping read it.
func TestParseHost(t *testing.T) {
	t.Parallel()
	addrs := []struct{ in, want string }{
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0X7F.0X1", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0177.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"0x7f.0.0.1.", "127.0.0.1"},
		{"１２７.０.０.１", "127.0.0.1"},  // full-width digits and ASCII dots
		{"１２７．０．０．１", "127.0.0.1"},  // full-width full stops (U+FF0E)
		{"127。0。0。1", "127.0.0.1"},  // ideographic full stops (U+3002)
		{"127｡0｡0｡1", "127.0.0.1"},  // half-width ideographic full stops (U+FF61)
		{"０ｘ７ｆ.１", "127.0.0.1"},     // full-width hex
		{"１２７.０.０.１．", "127.0.0.1"}, // and a full-width trailing dot
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"0x.0x.0x.0x", "0.0.0.0"},
		{"10.1", "10.0.0.1"},
		{"169.254.43518", "169.254.169.254"},
		{"0xa9fea9fe", "169.254.169.254"},
		{"192.168.257", "192.168.1.1"},
		{"3232235777", "192.168.1.1"},
		{"93.184.216.34", "93.184.216.34"},
		{"1572395042", "93.184.216.34"},
		{"255.255.255.255", "255.255.255.255"},
		{"4294967295", "255.255.255.255"},
		{"::1", "::1"},
		{"0:0:0:0:0:0:0:1", "::1"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"::ffff:7f00:1", "::ffff:127.0.0.1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
	}
	for _, tc := range addrs {
		h, err := ParseHost(tc.in)
		require.NoError(t, err, tc.in)
		require.True(t, h.IsAddr(), tc.in)
		require.Equal(t, netip.MustParseAddr(tc.want), h.Addr, tc.in)
		require.Equal(t, tc.want, h.String(), tc.in)
	}

	names := []struct{ in, want string }{
		{"hooks.example.com", "hooks.example.com"},
		{"HOOKS.Example.COM", "hooks.example.com"},
		{"example.com.", "example.com"},
		{"ｅｘａｍｐｌｅ。ｃｏｍ", "example.com"},
		{"bücher.de", "xn--bcher-kva.de"},
		{"localhost", "localhost"},
		{"localhost.", "localhost"},
		{"ＬＯＣＡＬＨＯＳＴ", "localhost"},
		{"api.localhost", "api.localhost"},
		{"r3---sn-abc.googlevideo.com", "r3---sn-abc.googlevideo.com"},
		{"1.2.3.4.example.com", "1.2.3.4.example.com"},
		{"0x7f.example", "0x7f.example"},
		{"123abc", "123abc"},
		{"a.0xg1", "a.0xg1"},
	}
	for _, tc := range names {
		h, err := ParseHost(tc.in)
		require.NoError(t, err, tc.in)
		require.False(t, h.IsAddr(), tc.in)
		require.Equal(t, tc.want, h.Name, tc.in)
	}

	// A host that ends in a number but is no IPv4 address is refused, not looked up as a name.
	for _, bad := range []string{
		"", ".", "..", "a..b", ".example.com", "example.com..",
		"1.2.3.4.5", "256.0.0.1", "1.256.0.1", "1.2.65536", "1.16777216", "4294967296",
		"0x100000000", "08.0.0.1", "0128.1", "1.2.3.09", "example.123", "localhost.0x7f", "1..1",
		"::1::", "[::1]", "xn--bad.example.com\u00e9", "\u2488.com",
	} {
		_, err := ParseHost(bad)
		require.ErrorIs(t, err, ErrHost, "%q", bad)
	}
}

// countingResolver counts look-ups.
type countingResolver struct {
	Resolver
	mu    sync.Mutex
	names []string
}

func (r *countingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.names = append(r.names, host)
	r.mu.Unlock()
	return r.Resolver.LookupNetIP(ctx, network, host)
}

// Registration refuses every spelling of a non-public address at once, without asking DNS, and
// names the address it read.
func TestCheckURLRefusesEverySpellingOfLoopback(t *testing.T) {
	t.Parallel()
	r := &countingResolver{Resolver: testResolver()}
	g := NewGuard(EgressOptions{Resolver: r})
	cases := []struct{ url, msg string }{
		{"https://127.1/h", "127.1 (127.0.0.1) is loopback"},
		{"https://0x7f.1/h", "0x7f.1 (127.0.0.1) is loopback"},
		{"https://0177.0.0.1/h", "0177.0.0.1 (127.0.0.1) is loopback"},
		{"https://2130706433/h", "2130706433 (127.0.0.1) is loopback"},
		{"https://0x7f000001/h", "(127.0.0.1) is loopback"},
		{"https://１２７.０.０.１/h", "(127.0.0.1) is loopback"},
		{"https://127。0。0。1/h", "(127.0.0.1) is loopback"},
		{"https://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/h", "(127.0.0.1) is loopback"},
		{"https://127.0.0.1./h", "127.0.0.1. (127.0.0.1) is loopback"},
		{"https://localhost./h", "localhost names a local host"},
		{"https://LOCALHOST/h", "localhost names a local host"},
		{"https://ｌｏｃａｌｈｏｓｔ/h", "localhost names a local host"},
		{"https://api.localhost./h", "api.localhost names a local or internal host"},
		{"https://a.b.localhost/h", "a.b.localhost names a local or internal host"},
		{"https://[::1]/h", "::1 is loopback"},
		{"https://[0:0:0:0:0:0:0:1]/h", "(::1) is loopback"},
		{"https://[::ffff:127.0.0.1]/h", "::ffff:127.0.0.1 is loopback"},
		{"https://[::ffff:7f00:1]/h", "(::ffff:127.0.0.1) is loopback"},
		{"https://[::ffff:93.184.216.34]/h", "is loopback, private"}, // a mapped address is refused even when public
		{"https://[::127.0.0.1]/h", "is loopback, private"},
		{"https://[64:ff9b::7f00:1]/h", "is loopback, private"},
		{"https://[2002:7f00:1::]/h", "is loopback, private"},
		{"https://[fe80::1%25eth0]/h", "is loopback, private"},
		{"https://0/h", "0 (0.0.0.0) is loopback"},
		{"https://10.1/h", "10.1 (10.0.0.1) is loopback"},
		{"https://169.254.43518/latest/meta-data", "(169.254.169.254) is loopback"},
		{"https://0xa9fea9fe/latest/meta-data", "(169.254.169.254) is loopback"},
		{"https://3232235777/h", "(192.168.1.1) is loopback"},
		{"https://1.2.3.4.5/h", "invalid host \"1.2.3.4.5\""},
		{"https://08.0.0.1/h", "invalid host"},
		{"https://example.123/h", "invalid host"},
		{"https://256.1.1.1/h", "invalid host"},
		{"https://a..example.com/h", "invalid host"},
	}
	for _, tc := range cases {
		_, err := g.CheckURL(context.Background(), tc.url)
		var ue *URLError
		require.ErrorAs(t, err, &ue, tc.url)
		require.Contains(t, ue.Error(), tc.msg, tc.url)
	}
	require.Empty(t, r.names, "no spelling of an address or local name was looked up")

	// Public hosts pass, in their canonical form. A trailing dot marks a name as absolute and
	// names the same host: https://example.com./ is example.com, looked up once.
	for in, want := range map[string]string{
		"https://hooks.example.com./h":                   "https://hooks.example.com/h",
		"https://HOOKS.example.com/h?x=1":                "https://hooks.example.com/h?x=1",
		"https://ｈｏｏｋｓ。ｅｘａｍｐｌｅ。ｃｏｍ/h":                    "https://hooks.example.com/h",
		"https://1572395042/h":                           "https://93.184.216.34/h",
		"https://93.184.216.34./h":                       "https://93.184.216.34/h",
		"https://0x5d.0xb8.0xd8.0x22/h":                  "https://93.184.216.34/h",
		"https://93.184.216.34:443/h":                    "https://93.184.216.34:443/h",
		"https://[2606:2800:220:1:248:1893:25c8:1946]/h": "https://[2606:2800:220:1:248:1893:25c8:1946]/h",
		"https://does-not-resolve.example.org./h":        "https://does-not-resolve.example.org/h",
	} {
		got, err := g.CheckURL(context.Background(), in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}

	// With private targets allowed, the host is normalised the same way and accepted.
	open := NewGuard(EgressOptions{AllowPrivate: true, Resolver: r})
	got, err := open.CheckURL(context.Background(), "http://127.1:8080/h")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8080/h", got)
	got, err = open.CheckURL(context.Background(), "https://localhost./h")
	require.NoError(t, err)
	require.Equal(t, "https://localhost/h", got)
	_, err = open.CheckURL(context.Background(), "https://1.2.3.4.5/h")
	require.Error(t, err, "an invalid host stays invalid")
}

// Delivery reads hosts with the same parser: a URL stored before registration refused other
// spellings is dialled as the address it names, and refused, without a look-up.
func TestDialReadsEverySpellingOfAnAddress(t *testing.T) {
	t.Parallel()
	r := &countingResolver{Resolver: testResolver()}
	client := NewGuard(EgressOptions{Resolver: r}).Client()
	for _, u := range []string{"https://127.1/h", "https://0x7f.1/h", "https://0177.0.0.1/h", "https://2130706433/h",
		"https://127.0.0.1./h", "https://localhost./h", "https://api.localhost/h", "https://[0:0:0:0:0:0:0:1]/h",
		"https://１２７.０.０.１/h", "https://169.254.43518/h"} {
		_, err := client.Post(u, "application/json", strings.NewReader("{}"))
		require.ErrorIs(t, err, ErrBlocked, u)
	}
	require.Empty(t, r.names)
}
