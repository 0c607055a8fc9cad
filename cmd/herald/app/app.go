// Package app wires Herald together: the store, the actor system and its directories, the
// authenticator and rate limiter, the dashboard's sessions, the Echo server with every route, the admin socket, and in
// sandbox mode the network simulator and the demo user. cmd/herald runs it; tests build it the
// same way on a temporary directory.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/publishing"
	"github.com/heraldhq/herald/actors/scheduler"
	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/http/mcpserver"
	"github.com/heraldhq/herald/http/oauth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/http/web"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/linkcard"
	"github.com/heraldhq/herald/platforms/registry"
	"github.com/heraldhq/herald/platforms/sim"
)

// Config is Herald's configuration, parsed only in cmd.
type Config struct {
	Addr    string // listen address, default 127.0.0.1:8080
	DataDir string // default ./data
	// Store is where the data is kept: "" or "bbolt" for the file herald.db in DataDir, or a
	// PostgreSQL URL (postgres://…; docs/operations.md, Running on PostgreSQL). The secret key
	// file, media and the admin socket stay in DataDir either way.
	Store   string
	Sandbox bool
	BaseURL string // public URL; default http:// + the listening address
	// CORSOrigins are the browser origins allowed to call /mcp besides the base URL's
	// (--cors-origins: scheme://host[:port], scheme://host:* or *); sandbox mode adds the
	// loopback origins (mcpserver.LoopbackOrigins). docs/mcp.md, Browsers.
	CORSOrigins []string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names the client's address
	// (the sign-in throttle and the OAuth registration budget count by it).
	TrustedProxies []netip.Prefix

	SimAddr string // sandbox simulator address, default 127.0.0.1:8081
	// CheckOnStart reads every page of the database file and runs bbolt's consistency check
	// and Herald's cross-checks before starting (--check-on-start; 2-3 s per GB); without
	// it start-up checks the file's structure up to each bucket's root page (docs/operations.md,
	// Damaged data).
	CheckOnStart bool
	// SimURL makes the sandbox use a simulator that runs elsewhere (herald sim) instead of its
	// own.
	SimURL string
	// SimLatency and SimLimitScale configure the sandbox's own simulator.
	SimLatency    time.Duration
	SimLimitScale float64
	// SimAskMember makes the sandbox simulator's consent pages ask which simulated member signs
	// in (a member with organisations, a user with several Pages: platforms/sim members.go),
	// so that a person can walk Herald's picker; off, they sign in the default member at once.
	SimAskMember bool
	Log          *slog.Logger
	// PostIdleTimeout passivates idle post and job actors (default 30s: a post is rarely touched
	// again soon after its last change, and reactivating one costs one bbolt read).
	PostIdleTimeout time.Duration
	// ShutdownGrace bounds the wait for in-flight requests at shutdown (default 10s).
	ShutdownGrace time.Duration
	// ShutdownDrain is how long a shutdown refuses new requests with 503 before it closes the
	// listener (drain.go; herald serve's default is 1s, 0 skips it).
	ShutdownDrain time.Duration
	// RateSnapshotEvery is how often the API quota windows are stored, so that a restart does
	// not refill them (default 10s; ratewindows.go).
	RateSnapshotEvery time.Duration
	// PlanLimits are the hourly request quotas per plan (default auth.Plans).
	PlanLimits map[string]int
	// SharedQuotas, when set (several nodes over one PostgreSQL store), counts the API's hourly
	// quotas and the networks' app-wide budgets (X's daily app limit, YouTube's units) in chunks
	// taken from PostgreSQL, so that the nodes together never exceed them (docs/cluster.md,
	// Shared quotas); nil counts them in this process.
	SharedQuotas *persistence.Quotas
	// SecretKey is the hex AES-256 key sealing account tokens (HERALD_SECRET_KEY); empty means
	// DIR/secret.key, generated on first start.
	SecretKey string
	// Networks configures the adapters (client ids and secrets, base URLs); in sandbox mode
	// every adapter points at the simulator instead.
	Networks map[platforms.Platform]platforms.Config
	// Budgets are the rate rules per network (default account.DefaultRules).
	Budgets map[platforms.Platform][]account.Rule
	// AccountConcurrency bounds each account's network calls in flight (default 1).
	AccountConcurrency int
	// Media configures media storage and limits (media.go).
	Media MediaConfig
	// RequestTimeout bounds reading and writing one ordinary request (default 30s; streams and
	// uploads excepted); HeaderTimeout bounds reading a request's headers (default 10s). Slow
	// clients are cut off by them.
	RequestTimeout, HeaderTimeout time.Duration
	// FreePostQuota is the free plan's posts per calendar month (default 10; negative: none).
	FreePostQuota int
	// NoAdminSocket skips the admin socket (tests that run several servers in one process).
	NoAdminSocket bool
	// WebhookAllowPrivate allows webhook targets on loopback and private addresses, http and any
	// port (--webhook-allow-private; on in sandbox mode).
	WebhookAllowPrivate bool
	// WebhookCAFile holds extra trusted CA certificates (PEM) for webhook receivers.
	WebhookCAFile string
	// WebhookAttemptTimeout bounds one delivery attempt (default 15s).
	WebhookAttemptTimeout time.Duration
	// WebhookSchedule replaces the retry waits (default webhook.DefaultSchedule; tests).
	WebhookSchedule []time.Duration
	// Live configures analytics and the inbox (live.go).
	Live LiveConfig
	// SessionIdle and SessionMaxAge end dashboard sessions unused for SessionIdle (default 24h)
	// or older than SessionMaxAge (default 30 days); docs/dashboard.md.
	SessionIdle, SessionMaxAge time.Duration
	// SessionSweepEvery is the period of the sweep of expired sessions (default 10 min).
	SessionSweepEvery time.Duration
	// KeyUseFlushEvery is how often the API keys' noted uses are written as their last_used_at
	// (default auth.DefaultUseFlushEvery, a minute; also at shutdown).
	KeyUseFlushEvery time.Duration
	// SessionClock replaces the sessions' clock (tests).
	SessionClock func() time.Time
	// OAuthClock replaces the clock of OAuth codes and tokens and of API-key expiry (tests).
	OAuthClock func() time.Time
	// OAuthSweepEvery is the period of the sweep of expired OAuth codes and tokens and of unused
	// clients (default 10 min).
	OAuthSweepEvery time.Duration
	// OAuthRegistrationsPerHour caps the new OAuth clients registered per client address per hour
	// (default 100; a registration answered with the client it made before is not counted).
	OAuthRegistrationsPerHour int
	// PasswordParams are argon2id's parameters for new password hashes (default
	// auth.DefaultPasswordParams; tests make them cheap).
	PasswordParams auth.PasswordParams
	// SignInThrottle bounds failed sign-ins (defaults in http/session/throttle.go).
	SignInThrottle session.ThrottleConfig
	// StoreFaults injects storage failures into the store's commits (tests; storehealth.go).
	StoreFaults *persistence.Faults
	// MetricsAddr is the metrics listener's address: /metrics (and /healthz, /readyz) apart from
	// the API; "" starts none (cmd's default is 127.0.0.1:9464). MetricsOptional makes an address
	// that cannot be bound a warning instead of a failed start (cmd sets it for its default, not
	// for an address the operator chose). MetricsPublic serves /metrics on the API listener too.
	MetricsAddr     string
	MetricsOptional bool
	MetricsPublic   bool
	// MaxConns caps the API listener's open connections (0: server.DefaultMaxConns(), derived
	// from the open-files limit); MaxIdlePerAddr caps one client address's idle connections (0:
	// server.DefaultMaxIdlePerAddr; negative: no cap). docs/operations.md, Connections and metrics.
	MaxConns, MaxIdlePerAddr int
	// MaxConnsPerAddr caps one client address's open connections (0:
	// server.DefaultMaxPerAddr; negative: no cap), but of the addresses in ConnsExempt (nil:
	// server.DefaultExempt(), loopback; empty: none).
	MaxConnsPerAddr int
	ConnsExempt     []netip.Prefix
	// Overload bounds the write requests served at once and their wait for a slot
	// (--max-inflight-writes, --admission-wait; server.Overload). MaxJobBacklog bounds the
	// publish jobs in hand: publish requests are refused with 503 while that many are
	// (--max-job-backlog; default DefaultMaxJobBacklog, negative: no limit). docs/operations.md,
	// Overload.
	Overload      server.Overload
	MaxJobBacklog int
	// MaxStreamsPerUser caps the job and campaign streams one user has open at once, both doors
	// together (--max-streams-per-user; 0: api.DefaultMaxStreamsPerUser, negative: no cap).
	// docs/operations.md, Connection limits.
	MaxStreamsPerUser int
	// MaxLiveActors caps the live actors of each kind (--max-live-actors; docs/operations.md,
	// Memory).
	MaxLiveActors ActorCaps
	// NodeAddr, when set (--node-addr HOST:PORT), runs Herald as one node of several over one
	// PostgreSQL store, reachable by the others at that address (nodes.go, remote.go;
	// docs/operations.md, Running several nodes); "" runs a single process. LeaseTTL is the
	// lifetime of the node's leases (default DefaultLeaseTTL). Placement says which node holds
	// each shard (nil: the node's membership, which follows the leases; tests give their own).
	// NodeAdvertise (--node-advertise HOST:PORT) is the address the other nodes reach this one at
	// when it is not NodeAddr (a listener on every interface, a proxy or NAT in front of the
	// node): what the lease table names and what every message's reply address carries.
	NodeAddr      string
	NodeAdvertise string
	LeaseTTL      time.Duration
	Placement     cluster.Placement
	// CallTimeout bounds one publishing call, uploads included (--call-timeout; 0: account's
	// default of 10 minutes). After a node took a shard over from one that went silent, the
	// attempts in doubt are looked up only once it has passed.
	CallTimeout time.Duration
	// MaxMappedFileMB gives the bbolt file's pages mapped by reads back to the kernel's page
	// cache once the process's file-backed resident memory passes it (--max-mapped-file-mb; 0:
	// DefaultMaxMappedFileMB; negative: never; persistence.Options.MaxMappedBytes).
	MaxMappedFileMB int
}

// App is a built Herald.
type App struct {
	Cfg       Config
	Store     *persistence.Store
	Registry  *prometheus.Registry
	Actors    *actors.System
	Posts     *actors.Directory
	Accounts  *actors.Directory
	Adapters  registry.Adapters
	Budgets   *account.Budgets
	Box       *secret.Box
	Jobs      *actors.Directory
	Scheduler *scheduler.Scheduler
	// Campaigns is the campaign directory; CampaignHub wakes the campaigns' streams.
	Campaigns   *actors.Directory
	CampaignHub *campaign.Hub
	// MediaResolver turns media ids into what adapters upload (nil: no media storage).
	MediaResolver account.MediaResolver
	// Publishing is the publish hand-off between the post, account, job and campaign actors and
	// the scheduler (actors/publishing); Posts, Accounts, Jobs, Campaigns and Scheduler are its.
	Publishing *publishing.Publishing
	// Events wakes the outbox's consumers (the webhook dispatcher) after an event commits.
	Events   *actors.Notifier
	Webhooks *webhook.Service
	Auth     *auth.Authenticator
	// OAuth is the authorization server of the MCP connector and of scoped /v1 access.
	OAuth  *oauth.Service
	Server *server.Server
	// MCPTools are the connector's tools served at /mcp.
	MCPTools *mcpserver.Tools
	Sim      *sim.Server
	Log      *slog.Logger
	// Media is the media flow and its janitor.
	Media *Media
	// Singletons are the background loops of which one runs across all nodes (singletons.go).
	Singletons *cluster.Singletons
	// Connect connects accounts: the browser OAuth flow and herald accounts add.
	Connect *accountlink.Service
	// Live serves analytics and the inbox (live.go).
	Live *live.Service
	// Cards reads the pages of link cards (linkcards.go).
	Cards *linkcard.Reader

	admin   *admin.Server
	quotas  *quotas
	httpSrv *http.Server
	ln      net.Listener
	// Conns limits the API listener's connections (http/server/conns.go).
	Conns      *server.Conns
	metricsSrv *http.Server
	metricsLn  net.Listener
	// SandboxKey is the demo key written at first sandbox start ("" otherwise).
	SandboxKey string
	// SandboxPassword is the demo user's password, set at the first sandbox start that finds the
	// demo user without one ("" otherwise).
	SandboxPassword string
	// Sessions signs people in to the dashboard.
	Sessions  *session.Manager
	stopSweep context.CancelFunc
	sweepDone chan struct{}
	// stopKeyUse stops the flusher of the API keys' last use; keyUseDone closes after its last
	// flush.
	stopKeyUse context.CancelFunc
	keyUseDone chan struct{}

	// streams are the open job streams, which a shutdown ends (http/api/streams.go).
	streams *api.Streams
	// draining is set when a shutdown begins (drain.go).
	draining atomic.Bool

	// JobBacklog counts the publish jobs in hand against Cfg.MaxJobBacklog.
	JobBacklog *job.Backlog
	// node is this process's part in a cluster (nil: a single process; nodes.go).
	node *node
	// Remote carries the messages between nodes (nil on a single node; remote.go).
	Remote *cluster.Remote
	// sharedQuotas spends Cfg.SharedQuotas, or the node's own over its PostgreSQL store (nil:
	// a single process, whose counters are its own).
	sharedQuotas *cluster.Quotas
}

// New builds Herald on cfg.DataDir. Nothing listens until Start.
func New(cfg Config) (*App, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "data"
	}
	if cfg.SimAddr == "" {
		cfg.SimAddr = "127.0.0.1:8081"
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := checkNodeConfig(cfg); err != nil {
		return nil, err
	}
	a := &App{Cfg: cfg, Log: cfg.Log, Registry: prometheus.NewRegistry()}
	if cfg.SharedQuotas != nil {
		a.sharedQuotas = cluster.NewQuotas(cfg.SharedQuotas)
	}
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	commitSeconds := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "herald_bbolt_commit_duration_seconds", Help: "Duration of one bbolt group commit (transaction and fsync).",
		Buckets: []float64{.0005, .001, .002, .004, .008, .016, .032, .064, .128, .256, 1},
	})
	commitBatch := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "herald_bbolt_commit_batch_size", Help: "Writes carried by one bbolt group commit.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
	})
	commitErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "herald_bbolt_commit_errors_total", Help: "bbolt group commits that failed (disk full, I/O error).",
	})
	a.Registry.MustRegister(commitSeconds, commitBatch, commitErrors)
	health := newStoreHealth(a.Registry, cfg.Log, cfg.DataDir)
	a.JobBacklog = job.NewBacklog(jobBacklogLimit(cfg.MaxJobBacklog))

	store, err := persistence.OpenStore(cfg.Store, cfg.DataDir, persistence.Options{
		LockTimeout:    2 * time.Second,
		Check:          cfg.CheckOnStart,
		Faults:         cfg.StoreFaults,
		MaxMappedBytes: mappedLimit(cfg.MaxMappedFileMB),
		// Several nodes on one PostgreSQL: no advisory lock, and every commit notifies the other
		// nodes of the jobs and campaigns it touched, so that streams and caches are one across
		// nodes (docs/cluster.md).
		Shared: cfg.NodeAddr != "",
		// A node paused in the middle of a commit must not hold its leases' rows for as long as
		// it is away: PostgreSQL ends its session once it has been idle a lease lifetime.
		IdleInTransaction: nodeIdleInTransaction(cfg),
		OnCommit: func(n int, d time.Duration, err error) {
			commitSeconds.Observe(d.Seconds())
			commitBatch.Observe(float64(n))
			if err != nil {
				commitErrors.Inc()
			}
			health.observe(err)
		},
		OnReadFailure: health.observeRead,
	})
	if errors.Is(err, persistence.ErrLocked) && persistence.IsPostgresURL(cfg.Store) {
		return nil, fmt.Errorf("the PostgreSQL store %s is in use by another herald process; stop it first, or use another database or schema", persistence.RedactURL(cfg.Store))
	}
	if errors.Is(err, persistence.ErrLocked) {
		return nil, fmt.Errorf("the database in %s is in use by another herald process; stop it first, or use another --data directory", cfg.DataDir)
	}
	if err != nil {
		return nil, DamagedStore(err, cfg.DataDir, "Herald will not start on it")
	}
	a.Store = store
	health.store = store
	a.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_bbolt_commit_queue_depth", Help: "Writes waiting for the group committer.",
	}, func() float64 { return float64(store.QueueDepth()) }))
	// bbolt file, running jobs and token expiry, read from the store on scrape (opsmetrics.go).
	a.Registry.MustRegister(newStoreCollector(store, nil))
	if cfg.NodeAddr != "" {
		if err := a.openNode(); err != nil {
			a.closeStore()
			return nil, err
		}
	}
	a.Actors = actors.NewSystem(a.Registry, cfg.Log)
	a.Events = actors.NewNotifier()
	if store.Shared() {
		// The outbox's dispatcher runs on one node; events appended on the others wake it too.
		store.Relay(persistence.OutboxTopic(), a.Events.Notify)
	}
	a.CampaignHub = campaign.NewHub()
	ad, err := a.accountDeps()
	if err == nil {
		err = a.startRemote() // on the box of accountDeps, before anything sends a message
	}
	if err != nil {
		a.closeStore()
		return nil, err
	}
	a.buildPublishing(ad)
	if err := a.buildConnect(); err != nil {
		a.closeStore()
		return nil, err
	}
	if a.Media, err = newMedia(a); err != nil {
		a.closeStore()
		return nil, err
	}
	a.MediaResolver = a.Media.Resolve
	if err := a.buildLive(); err != nil {
		a.closeStore()
		return nil, err
	}
	if err := a.buildWebhooks(); err != nil {
		a.closeStore()
		return nil, err
	}
	a.Auth = auth.NewAuthenticator(store, cfg.OAuthClock)

	spec, err := api.Spec()
	if err != nil {
		a.closeStore()
		return nil, err
	}
	deprecated, err := api.Deprecations(spec)
	if err != nil {
		a.closeStore()
		return nil, err
	}
	if a.quotas, err = newQuotas(store, orDefault(cfg.RateSnapshotEvery, 10*time.Second), a.sharedQuotas); err != nil {
		a.closeStore()
		return nil, err
	}
	if a.Sessions, err = session.New(session.Config{
		Store: store, Now: cfg.SessionClock, IdleTimeout: cfg.SessionIdle, MaxAge: cfg.SessionMaxAge, SweepEvery: cfg.SessionSweepEvery,
		PasswordParams: cfg.PasswordParams, Throttle: cfg.SignInThrottle, Registry: a.Registry, Log: cfg.Log,
	}); err != nil {
		a.closeStore()
		return nil, err
	}
	a.Server = server.New(server.Config{
		Log: cfg.Log, Registry: a.Registry, Auth: a.Auth, Limiter: a.quotas.quota, Deprecated: deprecated, PlanLimits: cfg.PlanLimits, RequestTimeout: cfg.RequestTimeout,
		Sessions: a.Sessions, BaseURL: func() string { return a.Cfg.BaseURL }, ConnectSources: a.Media.connectSources(), MetricsPublic: cfg.MetricsPublic, Overload: cfg.Overload,
		TrustedProxies: cfg.TrustedProxies, Requests: a.quotas.requests,
		LongRunning: map[string]bool{api.MediaUploadRoute: true, api.MediaFileRoute: true, api.JobStreamRoute: true, api.DashboardJobStreamRoute: true,
			api.CampaignStreamRoute: true, api.DashboardCampaignStreamRoute: true},
		BodyLimits: api.BodyLimits(),
		Ready:      a.readyCheck(health),
	})
	a.streams = api.NewStreams(cfg.MaxStreamsPerUser)
	a.Server.Echo.Use(server.RefuseWhile(a.draining.Load, spareWhileDraining))
	if err := api.Register(api.Deps{Server: a.Server, Registry: a.Registry, Store: store, Posts: a.Publishing.To.Posts, Accounts: a.Publishing.To.Accounts, Connect: a.Connect, Jobs: a.Publishing.To.Jobs, Auth: a.Auth, FreePostQuota: freeQuota(cfg.FreePostQuota), Log: cfg.Log, Webhooks: a.Webhooks, Media: a.Media.Service, Live: a.Live,
		Campaigns: a.Publishing.To.Campaigns, CampaignHub: a.CampaignHub, Adapters: a.Adapters, Streams: a.streams, JobBacklog: a.JobBacklog, Cards: a.Cards}); err != nil {
		a.closeStore()
		return nil, err
	}
	a.OAuth = oauth.New(oauth.Config{Server: a.Server, Store: store, Auth: a.Auth, BaseURL: func() string { return a.Cfg.BaseURL },
		Now: cfg.OAuthClock, RegistrationsPerHour: cfg.OAuthRegistrationsPerHour, SweepEvery: cfg.OAuthSweepEvery, Registry: a.Registry, Log: cfg.Log,
		Sealer: a.Box, Egress: a.Webhooks.Guard})
	a.OAuth.Register()
	if err := a.registerConnector(); err != nil {
		a.closeStore()
		return nil, err
	}
	if err := web.Register(web.Deps{Server: a.Server, Store: store, FreePostQuota: freeQuota(cfg.FreePostQuota), Live: a.Live, Connect: a.Connect, Log: cfg.Log,
		SimURL: a.sandboxSimURL}); err != nil {
		a.closeStore()
		return nil, err
	}
	a.Singletons = cluster.NewSingletons(a.Registry, cfg.Log)
	a.registerSingletons()
	if a.node != nil {
		// The singletons run under their leases, shared out among the nodes with the shards.
		a.node.singletons = a.Singletons
		a.node.member.AddSingletons(a.Singletons.Kinds()...)
	}
	return a, nil
}

func (a *App) closeStore() {
	if a.Remote != nil {
		a.Remote.Stop()
	}
	if a.Actors != nil {
		a.Actors.Shutdown()
	}
	if a.node != nil {
		if a.node.quotas != nil {
			a.node.quotas.Close()
		}
		a.node.leases.Close()
	}
	_ = a.Store.Close()
}

// Start points the sandbox's adapters at its simulator, joins the node's cluster, opens the
// sandbox, the admin socket and the HTTP listener, then reports ready.
func (a *App) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.Cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.Cfg.Addr, err)
	}
	a.ln = ln
	if a.Cfg.BaseURL == "" {
		a.Cfg.BaseURL = "http://" + ln.Addr().String()
	}
	a.Cfg.BaseURL = strings.TrimRight(a.Cfg.BaseURL, "/")
	if a.Cfg.Sandbox {
		if err := a.sandboxNetworks(); err != nil {
			_ = ln.Close()
			return err
		}
	}
	if a.node != nil {
		// The node joins first: every actor write fences on its shard's lease, so the sandbox's
		// first start, which connects the demo accounts, needs the shards held.
		a.joinNode()
		if a.Cfg.Sandbox {
			a.awaitNode(30 * time.Second)
		}
	}
	if a.Cfg.Sandbox {
		if err := a.startSandbox(ctx); err != nil {
			_ = ln.Close()
			return err
		}
	}
	if !a.Cfg.NoAdminSocket {
		adm, err := admin.Listen(a.Cfg.DataDir, admin.Ops{Store: a.Store, Auth: a.Auth, Extra: a.accountAdminRoutes(),
			PasswordParams: a.Sessions.PasswordParams(), PasswordChanged: a.Sessions.PasswordChanged})
		if err != nil {
			_ = ln.Close()
			return err
		}
		a.admin = adm
	}
	if err := a.Webhooks.Resume(); err != nil {
		_ = ln.Close()
		return err
	}
	a.httpSrv = &http.Server{
		Handler:           a.Server.Echo,
		ReadHeaderTimeout: orDefault(a.Cfg.HeaderTimeout, 10*time.Second),
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	a.Conns = server.NewConns(server.ConnLimits{MaxConns: a.Cfg.MaxConns, MaxIdlePerAddr: a.Cfg.MaxIdlePerAddr,
		MaxPerAddr: a.Cfg.MaxConnsPerAddr, Exempt: a.Cfg.ConnsExempt, Registry: a.Registry})
	a.Conns.Configure(a.httpSrv, a.Log)
	go a.quotas.run(a.Log.Error)
	a.runLocal()
	useCtx, stopKeyUse := context.WithCancel(context.Background())
	a.stopKeyUse, a.keyUseDone = stopKeyUse, make(chan struct{})
	go func() {
		defer close(a.keyUseDone)
		a.Auth.RunUseFlusher(useCtx, a.Cfg.KeyUseFlushEvery, a.Log.Error)
	}()
	go func() {
		if err := a.httpSrv.Serve(a.Conns.Listener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Log.Error("http server stopped", "error", err)
		}
	}()
	limit, _ := server.FileLimit()
	a.Log.Info("connection limits", "max_conns", a.Conns.MaxConns(), "max_idle_per_addr", a.Conns.MaxIdlePerAddr(), "max_conns_per_addr", a.Conns.MaxPerAddr(), "open_files_limit", limit)
	if err := a.startMetrics(); err != nil {
		return err
	}
	if a.node != nil {
		// Each shard's work is resumed as the node takes it, and each singleton runs while the
		// node holds its lease; ready after the node's first step.
		a.resumeNode()
	} else {
		a.Publishing.Resume()
		a.Singletons.StartAll(context.Background())
		a.Server.SetReady(true)
	}
	a.Log.Info("listening on http://" + ln.Addr().String())
	return nil
}

// startMetrics opens the metrics listener (Cfg.MetricsAddr) and logs "metrics on http://HOST:PORT".
// It has a small connection cap of its own, apart from the API listener's: a scrape gets through
// while the API listener is at its cap.
func (a *App) startMetrics() error {
	if a.Cfg.MetricsAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.Cfg.MetricsAddr)
	if err != nil && a.Cfg.MetricsOptional {
		a.Log.Warn("no metrics listener: its default address is in use; set --metrics-addr (or off)", "addr", a.Cfg.MetricsAddr, "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("metrics listener on %s: %w", a.Cfg.MetricsAddr, err)
	}
	a.metricsLn = ln
	conns := server.NewConns(server.ConnLimits{MaxConns: 64, MaxIdlePerAddr: 8})
	a.metricsSrv = &http.Server{Handler: a.Server.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 16 << 10}
	conns.Configure(a.metricsSrv, a.Log)
	go func() {
		if err := a.metricsSrv.Serve(conns.Listener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Log.Error("metrics server stopped", "error", err)
		}
	}()
	a.Log.Info("metrics on " + a.MetricsURL())
	return nil
}

// MetricsURL is the metrics listener's base URL ("" when there is none).
func (a *App) MetricsURL() string {
	if a.metricsLn == nil {
		return ""
	}
	return "http://" + a.metricsLn.Addr().String()
}

// Addr is the address the API listens on.
func (a *App) Addr() string { return a.ln.Addr().String() }

// URL is the API's base URL on the listener.
func (a *App) URL() string { return "http://" + a.Addr() }

// Shutdown stops Herald in order: readiness goes 503 and new requests are refused with 503 for
// the drain period (drain.go), job streams end, in-flight requests finish (within the grace
// period), actors drain and persist, the admin socket and simulator close, and bbolt closes last.
func (a *App) Shutdown() error {
	a.drain()
	ctx, cancel := context.WithTimeout(context.Background(), a.Cfg.ShutdownGrace)
	defer cancel()
	var errs []error
	// Job streams end first, each after its last complete event with a retry: field
	// (http/api/streams.go); the HTTP server's shutdown does not see them.
	if err := a.streams.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("job streams: %w", err))
	}
	if a.httpSrv != nil {
		if err := a.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
			_ = a.httpSrv.Close()
		}
	}
	if a.httpSrv != nil {
		if err := a.quotas.close(); err != nil {
			errs = append(errs, fmt.Errorf("API quota windows: %w", err))
		}
	}
	if a.stopKeyUse != nil { // its last flush writes the keys' uses of the last minute
		a.stopKeyUse()
		<-a.keyUseDone
	}
	a.Singletons.Stop()
	if a.stopSweep != nil {
		a.stopSweep()
		<-a.sweepDone
	}
	actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer acancel()
	if err := a.Webhooks.Stop(actx); err != nil {
		errs = append(errs, fmt.Errorf("webhooks: %w", err))
	}
	if a.node != nil {
		a.stopNode()
	}
	// Campaigns first (a retry or cancel under way asks posts), then accounts (their calls in
	// flight are resolved at the next start from their attempt records), then jobs, then posts.
	if err := a.Campaigns.Stop(actx); err != nil {
		errs = append(errs, fmt.Errorf("campaign actors: %w", err))
	}
	if err := a.Accounts.Stop(actx); err != nil {
		errs = append(errs, fmt.Errorf("account actors: %w", err))
	}
	if err := a.Jobs.Stop(actx); err != nil {
		errs = append(errs, fmt.Errorf("job actors: %w", err))
	}
	if err := a.Posts.Stop(actx); err != nil {
		errs = append(errs, fmt.Errorf("post actors: %w", err))
	}
	if a.Remote != nil {
		a.Remote.Stop()
	}
	a.Actors.Shutdown()
	if a.admin != nil {
		_ = a.admin.Close()
	}
	if a.Sim != nil {
		_ = a.Sim.Close()
	}
	if a.Live != nil {
		a.Live.Close()
	}
	if a.metricsSrv != nil { // last before the store, so that the drain can be watched
		_ = a.metricsSrv.Close()
	}
	if err := a.Store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("store: %w", err))
	}
	return errors.Join(errs...)
}

// SandboxKeyFile is where sandbox mode writes the demo key.
func SandboxKeyFile(dir string) string { return filepath.Join(dir, "sandbox-api-key") }

// SandboxPasswordFile is where sandbox mode writes the demo user's dashboard password.
func SandboxPasswordFile(dir string) string { return filepath.Join(dir, "sandbox-password") }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// registerConnector serves the MCP connector at /mcp (http/mcpserver): its tools call the /v1
// routes in-process with the caller's principal; API keys and OAuth access tokens for /mcp are its
// tokens; browsers may call it from the base URL's origin, the configured ones and, in sandbox
// mode, loopback pages.
func (a *App) registerConnector() error {
	baseURL := func() string { return a.Cfg.BaseURL }
	entries := a.Cfg.CORSOrigins
	if a.Cfg.Sandbox {
		entries = append(append([]string(nil), entries...), mcpserver.LoopbackOrigins...)
	}
	origins, err := mcpserver.NewOrigins(entries)
	if err != nil {
		return fmt.Errorf("--cors-origins: %w", err)
	}
	a.MCPTools = mcpserver.NewTools(mcpserver.ToolsConfig{
		API:       &mcpserver.InProcess{Handler: a.Server.Echo, BaseURL: baseURL},
		Egress:    a.Webhooks.Guard,
		Registry:  a.Registry,
		Log:       a.Log,
		Workspace: a.Auth.Workspace,
	})
	a.Server.Mount(mcpserver.Path, mcpserver.Handler(mcpserver.HandlerConfig{Tools: a.MCPTools,
		Verifier: mcpserver.APIKeys{Auth: a.Auth, Resource: a.OAuth.MCPResource}, BaseURL: baseURL,
		Origins: origins, Registry: a.Registry, Log: a.Log}),
		http.MethodOptions, http.MethodPost, http.MethodGet, http.MethodDelete)
	return nil
}
