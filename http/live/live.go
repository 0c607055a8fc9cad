// Package live serves Herald's live data: the analytics overview and per-post analytics
// (overview.go, post.go), the comments inbox (inbox.go) and the direct message conversations
// (dms.go), read from the networks at request time and never stored; the replies, likes and
// hides of comments and the direct messages (replies.go, engage.go); and which accounts each of
// these reads live (accounts.go, no network call). docs/live-data.md describes the behaviour for
// API users; this comment, the rules.
//
// Every network call goes through the connected account's actor (account.Read), which spends
// the account's rate budget, uses and refreshes its token, and answers at once when the budget
// is spent. On top of that, each API request has its own live budget: at most Calls network
// calls and Deadline of time. A fill:
//
//  1. lists the user's publications in the window from bbolt (persistence.Tx.Publications),
//     newest first, and keeps the latest SampleLimit (sampled=true when there were more);
//  2. fans out the reads, in parallel, at most PerAccount at a time per account, until the calls
//     or the deadline run out: metrics in batches where the network has a batch lookup (one call
//     for up to account.MetricsPerCall publications), comments one publication per call;
//  3. answers with what it read: partial=true when any kept publication could not be read
//     (request budget, deadline, an account's spent rate budget, a network failure). A
//     publication of an account whose token is expired or refused is not read and not counted
//     as partial: the account is listed in accounts_needing_reconnect instead.
//
// Answers are cached (package cache) per user and normalised query as JSON bodies, so that a
// cached answer costs no encoding: the 90-second floor, fresh=true, singleflight coalescing.
// Replies, likes, hides and direct messages are never cached and never coalesced; each one
// invalidates the user's cached inbox pages (comments and DMs). The DM listing and one
// conversation are cached like the comments inbox (dms.go).
//
// Every read acts in one workspace: the scope its functions take is the workspace's index key
// (persistence.Scope), so that a workspace reads only its own accounts and publications, and its
// cached answers are its own ("per user" above is per workspace).
package live

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/cache"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Defaults of Config.
const (
	DefaultCalls       = 200
	DefaultDeadline    = 2 * time.Second
	DefaultSampleLimit = 200
	DefaultPerAccount  = 8
	DefaultMaxAge      = 10 * time.Minute
	DefaultWriteWait   = 15 * time.Second
	// TopPosts is how many publications top_posts lists.
	TopPosts = 10
	// MaxWindow is the longest window a request may name.
	MaxWindow = 365 * 24 * time.Hour
)

// AnalyticsPlatforms are the networks whose metrics Herald reads live, in the spec's order.
var AnalyticsPlatforms = []platforms.Platform{platforms.YouTube, platforms.Pinterest, platforms.TikTok, platforms.X, platforms.Bluesky}

// CommentsPlatforms are the networks with a live comments inbox.
var CommentsPlatforms = []platforms.Platform{platforms.YouTube, platforms.X, platforms.Bluesky}

// MessagePlatforms are the networks with live direct messages.
var MessagePlatforms = []platforms.Platform{platforms.X, platforms.Bluesky}

// AttachmentPlatforms are the networks whose comment replies take an attachment.
var AttachmentPlatforms = []platforms.Platform{platforms.X, platforms.Bluesky}

// MessageMediaPlatforms are the networks whose direct messages take media.
var MessageMediaPlatforms = []platforms.Platform{platforms.X}

// MediaResolver turns a user's media ids into what adapters upload.
type MediaResolver func(ctx context.Context, scope string, ids []string) ([]platforms.Media, error)

// Config configures the service.
type Config struct {
	Store    *persistence.Store
	Accounts actors.Router
	// Adapters are the networks' adapters, for what each offers (capabilities.go).
	Adapters map[platforms.Platform]platforms.Adapter
	// Media resolves media_id of replies (nil: replies take no media).
	Media MediaResolver
	// Secret is the data directory's secret; the inbox cursor key is derived from it.
	Secret []byte
	// Calls is the live budget of network calls per API request (default 200).
	Calls int
	// Deadline is the live budget of time per API request (default 2s).
	Deadline time.Duration
	// SampleLimit is how many of the latest publications an answer reads at most (default 200).
	SampleLimit int
	// PerAccount bounds one request's reads in flight per account (default 8).
	PerAccount int
	// MaxAge is how long a cached answer is kept (default 10m); the 90-second floor is fixed.
	MaxAge time.Duration
	// CacheBytes bounds the cached answers' size (default 64 MiB per cache).
	CacheBytes int64
	// WriteWait bounds a reply or a direct message, its verification included (default 15s).
	WriteWait time.Duration
	Now       func() time.Time
	Log       *slog.Logger
	// Registry registers the metrics (nil: unregistered).
	Registry prometheus.Registerer
}

// Service is the live-data service.
type Service struct {
	cfg       Config
	overviews *cache.Cache[[]byte]
	inboxes   *cache.Cache[[]byte]
	// choiceCache holds the accounts' live choices (capabilities.go).
	choiceCache *cache.Cache[platforms.Choices]
	cursorKey   []byte
	metrics     *metrics
	// generations counts each user's writes (replies): it is part of the inbox cache key, so
	// that a reply makes the user's cached pages unreachable.
	generations sync.Map // user id → *atomic.Uint64
}

// New builds the service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Accounts == nil {
		return nil, errors.New("live: Store and Accounts are required")
	}
	if cfg.Calls <= 0 {
		cfg.Calls = DefaultCalls
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.SampleLimit <= 0 {
		cfg.SampleLimit = DefaultSampleLimit
	}
	if cfg.PerAccount <= 0 {
		cfg.PerAccount = DefaultPerAccount
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.WriteWait <= 0 {
		cfg.WriteWait = DefaultWriteWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	key, err := hkdf.Key(sha256.New, cfg.Secret, nil, cursorKeyInfo, 32)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, cursorKey: key, metrics: newMetrics(cfg.Registry)}
	cm := cache.NewMetrics(cfg.Registry)
	size := func(b []byte) int64 { return int64(len(b)) }
	if s.overviews, err = cache.New(cache.Options[[]byte]{Name: "analytics", MaxCost: cfg.CacheBytes, Cost: size, MaxAge: cfg.MaxAge, Now: cfg.Now, Metrics: cm}); err != nil {
		return nil, err
	}
	if s.inboxes, err = cache.New(cache.Options[[]byte]{Name: "inbox", MaxCost: cfg.CacheBytes, Cost: size, MaxAge: cfg.MaxAge, Now: cfg.Now, Metrics: cm}); err != nil {
		s.overviews.Close()
		return nil, err
	}
	// Choices are small (a few kilobytes: boards, playlists); counted as entries.
	if s.choiceCache, err = cache.New(cache.Options[platforms.Choices]{Name: "choices", MaxCost: 100_000, MaxAge: cfg.MaxAge, Now: cfg.Now, Metrics: cm}); err != nil {
		s.overviews.Close()
		s.inboxes.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the caches.
func (s *Service) Close() {
	s.overviews.Close()
	s.inboxes.Close()
	s.choiceCache.Close()
}

// Config returns the service's configuration with its defaults.
func (s *Service) Config() Config { return s.cfg }

func (s *Service) generation(scope string) uint64 {
	v, ok := s.generations.Load(scope)
	if !ok {
		return 0
	}
	return v.(*atomic.Uint64).Load()
}

func (s *Service) bumpGeneration(scope string) {
	v, _ := s.generations.LoadOrStore(scope, new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
}

// metrics are the live data's own metrics (the cache's are in package cache); labels carry no
// ids.
type metrics struct {
	fanoutSize     *prometheus.HistogramVec
	fanoutSeconds  *prometheus.HistogramVec
	partial        *prometheus.CounterVec
	sampled        *prometheus.CounterVec
	unread         *prometheus.CounterVec
	reconnect      *prometheus.CounterVec
	writes         *prometheus.CounterVec
	requestBudgets *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		fanoutSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_live_fanout_publications", Help: "Publications one live fan-out set out to read, by kind (analytics, inbox).",
			Buckets: []float64{0, 1, 5, 10, 25, 50, 100, 200, 500},
		}, []string{"kind"}),
		fanoutSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_live_fanout_duration_seconds", Help: "Duration of one live fan-out, by kind.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 5, 10},
		}, []string{"kind"}),
		partial: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_live_partial_responses_total", Help: "Live answers that could not read every publication they kept (partial=true), by kind.",
		}, []string{"kind"}),
		sampled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_live_sampled_responses_total", Help: "Live answers that kept only the latest sample_limit publications (sampled=true), by kind.",
		}, []string{"kind"}),
		unread: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_live_unread_publications_total", Help: "Publications a fan-out did not read, by platform and reason (request_budget, deadline, rate_budget, network).",
		}, []string{"platform", "reason"}),
		reconnect: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_live_accounts_needing_reconnect_total", Help: "Accounts a fan-out found with an expired or refused token, by platform.",
		}, []string{"platform"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_live_writes_total", Help: "Comment replies, likes and hides and direct messages, by kind (comment_reply, comment_like, comment_hide, dm_reply) and outcome (sent, refused, failed).",
		}, []string{"kind", "outcome"}),
		requestBudgets: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_live_fanout_calls", Help: "Network calls one live fan-out made, by kind.",
			Buckets: []float64{0, 1, 5, 10, 25, 50, 100, 200, 500},
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.fanoutSize, m.fanoutSeconds, m.partial, m.sampled, m.unread, m.reconnect, m.writes, m.requestBudgets)
	}
	// The series exist from the start, at zero, so that rates and alerts see them.
	for _, kind := range []string{"analytics", "inbox"} {
		m.partial.WithLabelValues(kind)
		m.sampled.WithLabelValues(kind)
	}
	return m
}
