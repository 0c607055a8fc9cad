package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/server"
)

// defaultMetricsAddr is the metrics listener's default address: loopback, so that the
// unauthenticated exposition is not on the network unless an operator puts it there; 9464 is the
// port OpenTelemetry's Prometheus exporters use.
const defaultMetricsAddr = "127.0.0.1:9464"

// connFlags are serve's options of the listeners: the metrics listener and the API listener's
// connection limits (docs/operations.md, Connections and metrics).
type connFlags struct {
	metricsAddr    string
	metricsPublic  optionalBool
	maxConns       string
	maxIdlePerAddr string
	maxPerAddr     string
	exempt         string
}

func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.StringVar(&c.metricsAddr, "metrics-addr", envOr("HERALD_METRICS_ADDR", defaultMetricsAddr), `address of the metrics listener serving /metrics ("off" or "": none)`)
	if v := envOr("HERALD_METRICS_PUBLIC", ""); v != "" {
		_ = c.metricsPublic.Set(v)
	}
	fs.Var(&c.metricsPublic, "metrics-public", "serve /metrics on the API listener too (unauthenticated: keep it off the internet)")
	fs.StringVar(&c.maxConns, "max-conns", envOr("HERALD_MAX_CONNS", "0"), "cap of the API listener's open connections (0: derived from the open-files limit)")
	fs.StringVar(&c.maxIdlePerAddr, "max-idle-per-addr", envOr("HERALD_MAX_IDLE_PER_ADDR", strconv.Itoa(server.DefaultMaxIdlePerAddr)),
		"idle connections one client address may hold; its oldest beyond are closed (0: no cap)")
	fs.StringVar(&c.maxPerAddr, "max-conns-per-addr", envOr("HERALD_MAX_CONNS_PER_ADDR", strconv.Itoa(server.DefaultMaxPerAddr)),
		"open connections one client address may hold; more are answered 503 and closed (0: no cap)")
	fs.StringVar(&c.exempt, "conns-per-addr-exempt", envOr("HERALD_CONNS_PER_ADDR_EXEMPT", "loopback"),
		`client addresses not held to --max-conns-per-addr: comma-separated IPs or CIDR prefixes, "loopback" (127.0.0.0/8 and ::1) or "none"`)
	return c
}

// apply sets cfg from the flags. fs tells whether --metrics-addr was given.
func (c *connFlags) apply(fs *flag.FlagSet, cfg *app.Config) error {
	addr := strings.TrimSpace(c.metricsAddr)
	if addr == "off" {
		addr = ""
	}
	given := os.Getenv("HERALD_METRICS_ADDR") != ""
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "metrics-addr" })
	cfg.MetricsAddr, cfg.MetricsOptional, cfg.MetricsPublic = addr, !given, c.metricsPublic.v
	n, err := strconv.Atoi(strings.TrimSpace(c.maxConns))
	if err != nil || n < 0 {
		return fmt.Errorf("--max-conns: %q is not a number of connections (0: derived from the open-files limit)", c.maxConns)
	}
	cfg.MaxConns = n
	n, err = strconv.Atoi(strings.TrimSpace(c.maxIdlePerAddr))
	if err != nil || n < 0 {
		return fmt.Errorf("--max-idle-per-addr: %q is not a number of connections (0: no cap)", c.maxIdlePerAddr)
	}
	cfg.MaxIdlePerAddr = n
	if n == 0 {
		cfg.MaxIdlePerAddr = -1
	}
	n, err = strconv.Atoi(strings.TrimSpace(c.maxPerAddr))
	if err != nil || n < 0 {
		return fmt.Errorf("--max-conns-per-addr: %q is not a number of connections (0: no cap)", c.maxPerAddr)
	}
	cfg.MaxConnsPerAddr = n
	if n == 0 {
		cfg.MaxConnsPerAddr = -1
	}
	exempt, err := parseExempt(c.exempt)
	if err != nil {
		return fmt.Errorf("--conns-per-addr-exempt: %w", err)
	}
	cfg.ConnsExempt = exempt
	return nil
}

// parseExempt reads --conns-per-addr-exempt: IPs and CIDR prefixes, "loopback" and "none".
func parseExempt(v string) ([]netip.Prefix, error) {
	out := []netip.Prefix{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "" || f == "none":
		case f == "loopback":
			out = append(out, server.DefaultExempt()...)
		case strings.Contains(f, "/"):
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP prefix such as 10.0.0.0/8", f)
			}
			out = append(out, p.Masked())
		default:
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP address, a prefix, loopback or none", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out, nil
}

// raiseFileLimit raises the open-files soft limit to the hard limit, from which the default
// connection cap is derived.
func raiseFileLimit(log *slog.Logger) {
	if _, err := server.RaiseFileLimit(); err != nil {
		log.Warn("could not raise the open-files limit to its hard limit", "error", err)
	}
}
