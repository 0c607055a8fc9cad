package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/persistence"
)

// storeProbeEvery bounds how often the readiness check commits a probe write while the store
// cannot write.
const storeProbeEvery = time.Second

// errStoreCannotWrite is /readyz's answer while the store cannot write.
var errStoreCannotWrite = errors.New("the store cannot write: its last commit failed (disk full or I/O error; the server log says which); " +
	"writes are refused with 503 until a commit succeeds again")

// storeHealth follows whether the store can write, from the outcome of every commit
// (persistence.Options.OnCommit). After a failed commit, /readyz answers 503 until a commit
// succeeds again, herald_store_writable is 0, and one log line says so (and one more when writes
// succeed again). Every write still tries to commit, so traffic notices a store that works again;
// without traffic nothing would commit, so while the last commit failed the readiness check
// commits a tiny probe write (persistence.Store.Probe), at most once per storeProbeEvery.
type storeHealth struct {
	store    *persistence.Store // set once the store is open
	log      *slog.Logger
	dataDir  string
	writable prometheus.Gauge

	failing  atomic.Bool
	since    time.Time // the first failure of the streak (committer goroutine only)
	failures int       // failed commits in the streak (committer goroutine only)

	probeMu   sync.Mutex
	lastProbe time.Time
}

func newStoreHealth(reg prometheus.Registerer, log *slog.Logger, dataDir string) *storeHealth {
	h := &storeHealth{log: log, dataDir: dataDir, writable: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "herald_store_writable",
		Help: "1 while the store commits; 0 from a failed commit (disk full, I/O error) until a commit succeeds again.",
	})}
	h.writable.Set(1)
	reg.MustRegister(h.writable)
	return h
}

// observe takes one commit's outcome; the store's committer calls it, one commit at a time.
func (h *storeHealth) observe(err error) {
	if err == nil {
		if h.failing.Load() {
			h.failing.Store(false)
			h.writable.Set(1)
			h.log.Info("store: commits succeed again; writes are taken",
				"data_dir", h.dataDir, "failed_commits", h.failures, "refused_for", time.Since(h.since).Round(time.Millisecond).String())
		}
		return
	}
	if !h.failing.Load() {
		h.since, h.failures = time.Now(), 0
		h.failing.Store(true)
		h.writable.Set(0)
		h.log.Error("store: a commit failed; writes are refused with 503 and /readyz is not ready until the store can write again",
			"data_dir", h.dataDir, "disk_full", errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT), "error", err)
	}
	h.failures++
}

// ready is the readiness check: nil while the store writes. While its last commit failed it
// probes (rate-limited) and answers by the outcome.
func (h *storeHealth) ready(ctx context.Context) error {
	if !h.failing.Load() {
		return nil
	}
	h.probe(ctx)
	if h.failing.Load() {
		return errStoreCannotWrite
	}
	return nil
}

// probe commits the probe write unless one ran within storeProbeEvery or runs now; its outcome
// reaches observe like any commit's.
func (h *storeHealth) probe(ctx context.Context) {
	if h.store == nil || !h.probeMu.TryLock() {
		return
	}
	defer h.probeMu.Unlock()
	if time.Since(h.lastProbe) < storeProbeEvery {
		return
	}
	h.lastProbe = time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = h.store.Probe(ctx)
}
