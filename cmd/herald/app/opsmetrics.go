package app

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// storeCollector exposes what is read from bbolt when /metrics is scraped: the data file's size
// and free space, the jobs still running and the age of the oldest, and connected accounts whose
// platform token is expiring or expired. A scrape reads at most once per refresh interval; the
// account scan decodes only the platform and expiry of each account.
type storeCollector struct {
	store   *persistence.Store
	now     func() time.Time
	refresh time.Duration

	size, free, pending, readers *prometheus.Desc
	jobsActive, jobsOldest       *prometheus.Desc
	tokens                       *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	cached storeReadout
}

type storeReadout struct {
	db         persistence.DBStats
	jobs       int
	oldestJob  time.Time
	tokens     map[tokenKey]int
	tokensRead bool
}

type tokenKey struct{ platform, state string }

// tokenStates are the token_status values the gauge counts (the API's own derivation, see
// account.TokenStatus); "ok" is left out.
var tokenStates = []string{"expiring_soon", "expired"}

func newStoreCollector(store *persistence.Store, now func() time.Time) *storeCollector {
	if now == nil {
		now = time.Now
	}
	return &storeCollector{
		store: store, now: now, refresh: 10 * time.Second,
		size: prometheus.NewDesc("herald_bbolt_size_bytes",
			"Size of the bbolt data file (it never shrinks; see bbolt compact).", nil, nil),
		free: prometheus.NewDesc("herald_bbolt_free_bytes",
			"Bytes in free pages of the bbolt file, reused by later writes.", nil, nil),
		pending: prometheus.NewDesc("herald_bbolt_pending_pages",
			"bbolt pages freed by writes but still held by an open read transaction.", nil, nil),
		readers: prometheus.NewDesc("herald_bbolt_read_transactions_open",
			"bbolt read transactions open at scrape time.", nil, nil),
		jobsActive: prometheus.NewDesc("herald_jobs_active",
			"Publish jobs not yet final on their post (queued, processing, or finishing).", nil, nil),
		jobsOldest: prometheus.NewDesc("herald_jobs_oldest_active_age_seconds",
			"Age of the oldest publish job not yet final on its post (0 when none).", nil, nil),
		tokens: prometheus.NewDesc("herald_accounts_token_expiring",
			"Connected accounts whose platform token is expiring_soon (within 7 days) or expired, by platform.",
			[]string{"platform", "state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.size, c.free, c.pending, c.readers, c.jobsActive, c.jobsOldest, c.tokens} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	r := c.read(now)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.size, float64(r.db.SizeBytes))
	gauge(c.free, float64(r.db.FreeBytes))
	gauge(c.pending, float64(r.db.PendingPages))
	gauge(c.readers, float64(r.db.OpenReadTx))
	gauge(c.jobsActive, float64(r.jobs))
	age := 0.0
	if r.jobs > 0 && !r.oldestJob.IsZero() {
		age = max(0, now.Sub(r.oldestJob).Seconds())
	}
	gauge(c.jobsOldest, age)
	if !r.tokensRead {
		return
	}
	for _, p := range platforms.All {
		for _, st := range tokenStates {
			gauge(c.tokens, float64(r.tokens[tokenKey{string(p), st}]), string(p), st)
		}
	}
}

func (c *storeCollector) read(now time.Time) storeReadout {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) < c.refresh && now.After(c.at) {
		return c.cached
	}
	r := storeReadout{db: c.store.Stats(), tokens: map[tokenKey]int{}}
	err := c.store.View(func(tx *persistence.Tx) error {
		r.jobs, r.oldestJob = tx.ActiveJobStats()
		return tx.EachAccountExpiry(func(a persistence.AccountExpiry) {
			if st := account.TokenStatus(a.Account(), now); st != account.TokenOK {
				r.tokens[tokenKey{a.Platform, st}]++
			}
		})
	})
	// A record that cannot be decoded leaves the token gauge out rather than report zeros.
	r.tokensRead = err == nil
	c.at, c.cached = now, r
	return r
}
