package main

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := parseTrustedProxies(" 10.0.0.0/8, 192.0.2.7 ,::1,2001:db8::/32,10.1.2.3/8,")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("10.0.0.0/8"),
	}, got)
	none, err := parseTrustedProxies("")
	require.NoError(t, err)
	require.Empty(t, none)
	for _, bad := range []string{"proxy.example", "10.0.0.0/33", "fe80::1%eth0", "*"} {
		_, err := parseTrustedProxies(bad)
		require.Error(t, err, bad)
	}
}
