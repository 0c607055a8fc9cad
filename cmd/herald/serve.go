package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/mcpserver"
	"github.com/heraldhq/herald/platforms/sim"
)

func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

func cmdServe(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg app.Config
	fs.StringVar(&cfg.Addr, "addr", envOr("HERALD_ADDR", "127.0.0.1:8080"), "listen address")
	fs.StringVar(&cfg.DataDir, "data", envOr("HERALD_DATA_DIR", "./data"), "data directory")
	fs.StringVar(&cfg.Store, "store", envOr("HERALD_STORE", "bbolt"), "where the data is kept: bbolt (herald.db in --data) or a PostgreSQL URL postgres://USER:PASSWORD@HOST/DB (the secret key, media and admin socket stay in --data)")
	fs.StringVar(&cfg.NodeAddr, "node-addr", envOr("HERALD_NODE_ADDR", ""), "run as one node of several over the PostgreSQL --store, reachable by the other nodes at this HOST:PORT (docs/operations.md, Running several nodes); unset: a single process")
	fs.StringVar(&cfg.NodeAdvertise, "node-advertise", envOr("HERALD_NODE_ADVERTISE", ""), "with --node-addr: the HOST:PORT the other nodes reach this node at, when not --node-addr (a listener on 0.0.0.0, a proxy or NAT in front of the node); default: --node-addr")
	fs.DurationVar(&cfg.LeaseTTL, "lease-ttl", 0, "with --node-addr: the lifetime of the node's leases; a silent node's shards move after it (default 10s)")
	fs.DurationVar(&cfg.CallTimeout, "call-timeout", 0, "the longest one publishing call to a network may take, uploads included; with --node-addr, a node that takes a silent node's shards looks up the calls that node left in doubt only after it (default 10m)")
	checkOnStart, _ := strconv.ParseBool(envOr("HERALD_CHECK_ON_START", "0"))
	fs.BoolVar(&cfg.CheckOnStart, "check-on-start", checkOnStart, "check every page of the database file before starting (herald check's checks; 2-3 s per GB)")
	sandbox, _ := strconv.ParseBool(envOr("HERALD_SANDBOX", "0"))
	fs.BoolVar(&cfg.Sandbox, "sandbox", sandbox, "sandbox mode: simulator, demo user and key")
	fs.StringVar(&cfg.BaseURL, "base-url", envOr("HERALD_BASE_URL", ""), "public base URL")
	corsOrigins := fs.String("cors-origins", envOr("HERALD_CORS_ORIGINS", ""), "browser origins allowed to call /mcp besides the base URL's, comma-separated: scheme://host[:port], scheme://host:* (any port) or * (any origin); sandbox mode adds loopback origins")
	trustedProxies := fs.String("trusted-proxies", envOr("HERALD_TRUSTED_PROXIES", ""), "reverse proxies (addresses or CIDR prefixes, comma-separated) whose X-Forwarded-For names the client's address")
	fs.StringVar(&cfg.SimAddr, "sim-addr", envOr("HERALD_SIM_ADDR", "127.0.0.1:8081"), "sandbox simulator address")
	fs.StringVar(&cfg.SimURL, "sim-url", envOr("HERALD_SIM_URL", ""), "sandbox: use the simulator at this URL (herald sim) instead of starting one")
	fs.DurationVar(&cfg.SimLatency, "sim-latency", 0, "sandbox: latency the simulator adds to every network call")
	fs.Float64Var(&cfg.SimLimitScale, "sim-limit-scale", 1, "sandbox: multiplier of the simulator's rate limits")
	askMember, _ := strconv.ParseBool(envOr("HERALD_SIM_ASK_MEMBER", "1"))
	fs.BoolVar(&cfg.SimAskMember, "sim-ask-member", askMember, "sandbox: the simulator's consent pages ask a browser which simulated member signs in (one who administers LinkedIn organisations, one who manages several Facebook Pages); programs such as curl -L, and every client when false, get the default member at once")
	budgetScale := fs.Float64("budget-scale", 1, "multiplier of every network's rate budget (to match a scaled simulator)")
	budgetRules := fs.String("budget-rules", envOr("HERALD_BUDGET_RULES", ""), "override budget rules: platform:rule=LIMIT/WINDOW,... (e.g. twitter_x:tweets=50/5s)")
	accountConcurrency := fs.String("account-concurrency", envOr("HERALD_ACCOUNT_CONCURRENCY", "1"), "publishing calls each connected account may have in flight (1 keeps an account's posts in publishing order)")
	debugAddr := fs.String("debug-addr", envOr("HERALD_DEBUG_ADDR", ""), "serve Go's pprof profiles on this address (off by default)")
	logFormat := fs.String("log-format", envOr("HERALD_LOG_FORMAT", "text"), "text or json")
	logLevel := fs.String("log-level", envOr("HERALD_LOG_LEVEL", "info"), "debug (adds one access log line per request), info, warn or error")
	planLimits := fs.String("plan-limits", envOr("HERALD_PLAN_LIMITS", ""), "hourly request quotas per plan, e.g. pro=5000,max=10000")
	hooks := addWebhookFlags(fs)
	media := addMediaFlags(fs)
	conns := addConnFlags(fs)
	fs.IntVar(&cfg.Live.Calls, "live-calls", 0, "analytics and inbox: network calls one API request may make (default 200)")
	fs.DurationVar(&cfg.Live.Deadline, "live-deadline", 0, "analytics and inbox: time one API request may spend on the networks (default 2s)")
	fs.IntVar(&cfg.Live.SampleLimit, "live-sample-limit", 0, "analytics and inbox: latest publications one answer reads (default 200)")
	sessionIdle := fs.String("session-idle", envOr("HERALD_SESSION_IDLE", "24h"), "dashboard sessions end after this long unused")
	sessionMaxAge := fs.String("session-max-age", envOr("HERALD_SESSION_MAX_AGE", "720h"), "dashboard sessions end this long after sign-in")
	shutdownDrain := fs.String("shutdown-drain", envOr("HERALD_SHUTDOWN_DRAIN", "1s"), "at shutdown, refuse new requests with 503 this long before closing the listener (0 skips it)")
	fs.IntVar(&cfg.Overload.MaxInflightWrites, "max-inflight-writes", 0, "write requests served at once; more wait up to --admission-wait, then get 503 (default 64; -1: no limit)")
	fs.DurationVar(&cfg.Overload.AdmissionWait, "admission-wait", 0, "how long a write request waits for a slot before 503 (default 50ms)")
	fs.IntVar(&cfg.MaxMappedFileMB, "max-mapped-file-mb", 0, "on Linux, give the data file's pages mapped by reads back to the page cache once the process's file-backed resident memory passes this many MB (default 128; -1: never)")
	maxLive := fs.String("max-live-actors", envOr("HERALD_MAX_LIVE_ACTORS", ""), "live actors of each kind at most, idle ones passivated first: a figure for every kind and/or kind=figure pairs, e.g. 20000,job=5000 (default 10000; -1: no cap)")
	maxStreams := fs.String("max-streams-per-user", envOr("HERALD_MAX_STREAMS_PER_USER", "32"), "job and campaign streams one user may have open at once, on /v1 and /api together; more get 429 (-1: no cap)")
	fs.IntVar(&cfg.MaxJobBacklog, "max-job-backlog", 0, "publishes in hand (waiting for their account's turn or taken by it, not held back by a rate budget) beyond which publish requests get 503 (default 4096; -1: no limit)")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q", pos[0])
	}
	log, err := newLogger(*logFormat, *logLevel, stderr)
	if err != nil {
		return err
	}
	cfg.Log = log
	if _, err := mcpserver.ParseOrigins(*corsOrigins); err != nil {
		return fmt.Errorf("--cors-origins: %w", err)
	}
	for _, o := range strings.Split(*corsOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			cfg.CORSOrigins = append(cfg.CORSOrigins, o)
		}
	}
	if err := conns.apply(fs, &cfg); err != nil {
		return err
	}
	raiseFileLimit(log)
	cfg.WebhookAllowPrivate = hooks.allowPrivate.or(cfg.Sandbox)
	cfg.WebhookCAFile, cfg.WebhookAttemptTimeout = hooks.caFile, hooks.timeout
	if cfg.Media, err = media.config(); err != nil {
		return err
	}
	if cfg.SessionIdle, err = positiveDuration("--session-idle", *sessionIdle); err != nil {
		return err
	}
	if cfg.SessionMaxAge, err = positiveDuration("--session-max-age", *sessionMaxAge); err != nil {
		return err
	}
	if cfg.ShutdownDrain, err = time.ParseDuration(strings.TrimSpace(*shutdownDrain)); err != nil || cfg.ShutdownDrain < 0 || cfg.ShutdownDrain > time.Minute {
		return fmt.Errorf("--shutdown-drain: %q is not a duration from 0 to 1m", *shutdownDrain)
	}
	if cfg.SessionIdle > cfg.SessionMaxAge {
		return fmt.Errorf("--session-idle (%s) is longer than --session-max-age (%s)", cfg.SessionIdle, cfg.SessionMaxAge)
	}
	if cfg.TrustedProxies, err = parseTrustedProxies(*trustedProxies); err != nil {
		return err
	}
	cfg.SecretKey = envOr("HERALD_SECRET_KEY", "")
	cfg.Networks = networksFromEnv()
	if cfg.PlanLimits, err = parsePlanLimits(*planLimits); err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(*accountConcurrency))
	if err != nil || n < 1 || n > 10000 {
		return fmt.Errorf("--account-concurrency: %q is not a number from 1 to 10000", *accountConcurrency)
	}
	cfg.AccountConcurrency = n
	if n, err = strconv.Atoi(strings.TrimSpace(*maxStreams)); err != nil || n < -1 || n == 0 {
		return fmt.Errorf("--max-streams-per-user: %q is not a number of streams (-1: no cap)", *maxStreams)
	}
	cfg.MaxStreamsPerUser = n
	if *budgetScale <= 0 {
		return fmt.Errorf("--budget-scale must be positive")
	}
	cfg.Budgets = account.ScaleRules(account.DefaultRules, *budgetScale)
	if cfg.Budgets, err = account.OverrideRules(cfg.Budgets, *budgetRules); err != nil {
		return err
	}
	if cfg.MaxLiveActors, err = app.ParseActorCaps(*maxLive); err != nil {
		return err
	}
	sampleAllocations(*debugAddr != "")
	if *debugAddr != "" {
		go func() {
			if err := http.ListenAndServe(*debugAddr, nil); err != nil {
				log.Error("debug listener stopped", "error", err)
			}
		}()
	}
	// Herald's heap is mostly short-lived request garbage; collecting less often trades memory
	// for CPU. At 200 the publish path's CPU per job and the creates measure the same as at 400
	// (its allocations are few enough now), and the garbage standing between collections is
	// less: 10,000 SSE streams opening grow RSS by about 14.5 KB each against 19.8 at 400
	// (bench/RESULTS.md). A soft memory limit (DefaultMemoryLimit, 320 MiB) makes the collector
	// work harder before the heap grows past it. GOGC and GOMEMLIMIT set in the environment win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit())
	}
	// One scheduler slot (P) more than the CPUs Go would use. Every durable write waits on the
	// group committer, which spends most of a commit in fdatasync; back from it, the committer
	// needs a P, and with every P busy it queues behind request goroutines while all writers
	// wait. With a spare P it finds one at once: commits are shorter and creates about 10% faster
	// on two cores (bench/RESULTS.md). GOMAXPROCS set in the environment wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
	a, err := app.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := a.Start(ctx); err != nil {
		_ = a.Shutdown()
		return err
	}
	<-ctx.Done()
	log.Info("shutting down")
	if err := a.Shutdown(); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

func cmdSim(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	latency := fs.Duration("latency", 0, "latency added to every network call")
	scale := fs.Float64("limit-scale", 1, "multiplier of every rate limit")
	faultRate := fs.Float64("fault-rate", 0, "share of API calls (OAuth spared) that fail with a random fault, from 0 to 1")
	faultKinds := fs.String("faults", "", "the faults drawn: error_5xx,timeout,rate_limit,post_then_error (default all)")
	faultSpare := fs.String("fault-spare", "", "network:fault pairs never drawn, e.g. youtube:rate_limit (YouTube's quota lasts until midnight Pacific)")
	faultSeed := fs.Uint64("fault-seed", 0, "seed of the random faults (0: random)")
	timeoutHold := fs.Duration("timeout-hold", 30*time.Second, "how long a timeout fault holds a call before dropping the connection")
	faultReset := fs.Duration("fault-reset", time.Minute, "when a limit refused by a rate_limit fault resets")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *faultRate < 0 || *faultRate > 1 {
		return fmt.Errorf("--fault-rate must be from 0 to 1")
	}
	kinds, err := sim.ParseFaultKinds(*faultKinds)
	if err != nil {
		return err
	}
	spare, err := sim.ParseFaultSpare(*faultSpare)
	if err != nil {
		return err
	}
	s, err := sim.Start(*addr, sim.Options{Latency: *latency, LimitScale: *scale, FaultRate: *faultRate, FaultKinds: kinds, FaultSpare: spare,
		FaultSeed: *faultSeed, TimeoutHold: *timeoutHold, FaultReset: *faultReset})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "simulator listening on http://%s\n", s.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return s.Close()
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	return runBench(args, stdout, stderr)
}

// parsePlanLimits reads "plan=N,plan=N" over the default quotas.
func parsePlanLimits(s string) (map[string]int, error) {
	out := map[string]int{}
	for k, v := range auth.Plans {
		out[k] = v
	}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if _, known := auth.Plans[k]; !ok || err != nil || n <= 0 || !known {
			return nil, fmt.Errorf("--plan-limits: %q is not plan=positive-number (plans: free, starter, growth, pro, max)", part)
		}
		out[k] = n
	}
	return out, nil
}

// sampleAllocations keeps Go's sampling of allocations (runtime.MemProfileRate: a stack walk
// about every 512 KiB allocated, for the heap and allocs profiles) only when they can be fetched,
// on --debug-addr's pprof. Without a debug listener nothing reads them, and the walks cost the
// publish path 0.7–1.7 % of the server's CPU samples (runtime.mProf_Malloc in the profiles of
// `herald bench --profile`, bench/RESULTS.md). Set before the server starts its work: the samples
// taken until then are kept, none is taken after.
func sampleAllocations(wanted bool) {
	if !wanted {
		runtime.MemProfileRate = 0
	}
}

// DefaultMemoryLimit is Go's soft memory limit unless GOMEMLIMIT is set: 320 MiB, or a quarter of
// the machine's memory when that is less. With the bbolt file's mapped pages held to
// --max-mapped-file-mb (128 MB), it keeps the whole process near 512 MB whatever the backlog
// (docs/operations.md, Memory): what is live does not grow with the backlog, and the limit only
// makes the collector run more often once the garbage would take the heap past it.
const DefaultMemoryLimit = 320 << 20

func defaultMemoryLimit() int64 {
	limit := int64(DefaultMemoryLimit)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil && kb*1024/4 < limit {
			limit = kb * 1024 / 4
		}
	}
	return limit
}

func positiveDuration(flag, v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive duration (e.g. 24h, 30m)", flag, v)
	}
	return d, nil
}

// parseTrustedProxies reads --trusted-proxies: addresses or CIDR prefixes, comma-separated.
func parseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("--trusted-proxies: %q is neither an IP address nor a CIDR prefix", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
