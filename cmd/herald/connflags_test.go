package main

import (
	"flag"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
)

func parseConnFlags(t *testing.T, args ...string) (app.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addConnFlags(fs)
	_, err := parseFlags(fs, args)
	require.NoError(t, err)
	var cfg app.Config
	return cfg, f.apply(fs, &cfg)
}

func TestConnFlags(t *testing.T) {
	cfg, err := parseConnFlags(t)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9464", cfg.MetricsAddr)
	require.True(t, cfg.MetricsOptional, "the default address may be in use")
	require.False(t, cfg.MetricsPublic)
	require.Equal(t, 0, cfg.MaxConns, "derived from the open-files limit")
	require.Equal(t, 32, cfg.MaxIdlePerAddr)
	require.Equal(t, 128, cfg.MaxConnsPerAddr)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, cfg.ConnsExempt)

	cfg, err = parseConnFlags(t, "--max-conns-per-addr", "0", "--conns-per-addr-exempt", "none")
	require.NoError(t, err)
	require.Equal(t, -1, cfg.MaxConnsPerAddr, "0: no cap")
	require.NotNil(t, cfg.ConnsExempt)
	require.Empty(t, cfg.ConnsExempt, "none exempt")
	cfg, err = parseConnFlags(t, "--max-conns-per-addr", "16", "--conns-per-addr-exempt", "loopback, 10.1.2.3 ,192.168.0.0/16,fd00::/8")
	require.NoError(t, err)
	require.Equal(t, 16, cfg.MaxConnsPerAddr)
	require.Len(t, cfg.ConnsExempt, 5)
	require.Equal(t, netip.MustParsePrefix("10.1.2.3/32"), cfg.ConnsExempt[2])

	cfg, err = parseConnFlags(t, "--metrics-addr", "0.0.0.0:9100", "--metrics-public", "--max-conns", "5000", "--max-idle-per-addr", "0")
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:9100", cfg.MetricsAddr)
	require.False(t, cfg.MetricsOptional, "an address the operator chose must be bound")
	require.True(t, cfg.MetricsPublic)
	require.Equal(t, 5000, cfg.MaxConns)
	require.Equal(t, -1, cfg.MaxIdlePerAddr, "0: no per-address cap")

	for _, off := range []string{"off", ""} {
		cfg, err = parseConnFlags(t, "--metrics-addr", off)
		require.NoError(t, err)
		require.Empty(t, cfg.MetricsAddr)
	}
	for _, args := range [][]string{{"--max-conns", "-1"}, {"--max-conns", "lots"}, {"--max-idle-per-addr", "-2"},
		{"--max-conns-per-addr", "-1"}, {"--conns-per-addr-exempt", "10.0.0.0/33"}, {"--conns-per-addr-exempt", "proxy"}} {
		_, err = parseConnFlags(t, args...)
		require.ErrorContains(t, err, args[0])
	}
}
