package main

import (
	"flag"
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
	for _, args := range [][]string{{"--max-conns", "-1"}, {"--max-conns", "lots"}, {"--max-idle-per-addr", "-2"}} {
		_, err = parseConnFlags(t, args...)
		require.ErrorContains(t, err, args[0])
	}
}
