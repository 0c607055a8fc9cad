package main

import (
	"flag"
	"strconv"
	"time"
)

// optionalBool is a boolean flag that remembers whether it was given, so that its default can
// depend on another flag (--webhook-allow-private defaults to --sandbox).
type optionalBool struct {
	set, v bool
}

func (b *optionalBool) String() string   { return strconv.FormatBool(b.v) }
func (b *optionalBool) IsBoolFlag() bool { return true }
func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.v = true, v
	return nil
}

// or returns the flag's value when given, else def.
func (b *optionalBool) or(def bool) bool {
	if b.set {
		return b.v
	}
	return def
}

// webhookFlags are serve's webhook options.
type webhookFlags struct {
	allowPrivate optionalBool
	caFile       string
	timeout      time.Duration
}

func addWebhookFlags(fs *flag.FlagSet) *webhookFlags {
	w := &webhookFlags{}
	if v := envOr("HERALD_WEBHOOK_ALLOW_PRIVATE", ""); v != "" {
		_ = w.allowPrivate.Set(v)
	}
	fs.Var(&w.allowPrivate, "webhook-allow-private", "allow webhook URLs on loopback and private addresses, http and any port (default: on with --sandbox, off otherwise)")
	fs.StringVar(&w.caFile, "webhook-ca-file", envOr("HERALD_WEBHOOK_CA_FILE", ""), "PEM file of extra CA certificates trusted for webhook receivers")
	timeout, _ := time.ParseDuration(envOr("HERALD_WEBHOOK_TIMEOUT", "15s"))
	fs.DurationVar(&w.timeout, "webhook-timeout", timeout, "time limit of one webhook delivery attempt")
	return w
}
