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

const (
	// storeProbeEvery bounds how often the readiness check commits a probe write while the last
	// commit failed.
	storeProbeEvery = time.Second
	// storeFailureHold is how long after its last failed commit the store still counts as unable
	// to write, whatever succeeded since. A full disk refuses new data but still takes small
	// writes into pages freed by earlier ones (bbolt reuses its free pages): without the hold,
	// readiness would flip at every commit.
	storeFailureHold = 5 * time.Second
)

// errStoreCannotWrite is /readyz's answer while the store cannot write.
var errStoreCannotWrite = errors.New("the store cannot write: its commits fail (disk full or I/O error; the server log says which); " +
	"writes are refused with 503 until they succeed again")

// storeHealth follows whether the store can write, from the outcome of every commit
// (persistence.Options.OnCommit) and every read its database could not answer
// (persistence.Options.OnReadFailure). From a failed commit until a commit succeeds and none has failed
// for storeFailureHold, /readyz answers 503, herald_store_writable is 0, and the log has one error
// line when it starts and one info line when it ends. Every write still tries to commit, so
// traffic notices a store that works again; without traffic nothing would commit, so while the
// last commit failed the readiness check commits a tiny probe write (persistence.Store.Probe), at
// most once per storeProbeEvery.
type storeHealth struct {
	store   *persistence.Store // set once the store is open
	log     *slog.Logger
	dataDir string
	// hold and probeEvery are storeFailureHold and storeProbeEvery (shorter in tests).
	hold, probeEvery time.Duration

	// failing: the last commit failed. lastFailure: when a commit last failed (Unix ns).
	failing     atomic.Bool
	lastFailure atomic.Int64
	// down: within an episode the log announced; it began at downSince (Unix ns) and counts
	// failures failed commits and reads.
	down      atomic.Bool
	downSince atomic.Int64
	failures  atomic.Int64

	probeMu   sync.Mutex
	lastProbe time.Time
}

func newStoreHealth(reg prometheus.Registerer, log *slog.Logger, dataDir string) *storeHealth {
	h := &storeHealth{log: log, dataDir: dataDir, hold: storeFailureHold, probeEvery: storeProbeEvery}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_store_writable",
		Help: "1 while the store commits; 0 from a failed commit (disk full, I/O error) until commits succeed again (as /readyz).",
	}, func() float64 {
		if h.healthy() {
			return 1
		}
		return 0
	}))
	return h
}

// observe takes one commit's outcome; the store's committer calls it, one commit at a time.
func (h *storeHealth) observe(err error) {
	if err == nil {
		h.failing.Store(false)
		h.healthy()
		return
	}
	h.fail("store: a commit failed; writes are refused with 503 and /readyz is not ready until the store can write again", err)
}

// observeRead takes a read the store's database could not answer (PostgreSQL down or
// unreachable): the store counts as failing as after a failed commit, so /readyz answers 503
// from the first request refused for it, and the next successful commit (the readiness probe's,
// once the database answers) ends the episode. A database that cannot be read is one that
// cannot be written to either, whether or not a commit has tried yet.
func (h *storeHealth) observeRead(err error) {
	h.fail("store: its database cannot be reached; requests are refused with 503 and /readyz is not ready until the store can write again", err)
}

// fail marks the store failing, and logs msg when an episode starts.
func (h *storeHealth) fail(msg string, err error) {
	now := time.Now()
	h.lastFailure.Store(now.UnixNano())
	h.failing.Store(true)
	h.failures.Add(1)
	if h.down.CompareAndSwap(false, true) {
		h.downSince.Store(now.UnixNano())
		h.log.Error(msg, "data_dir", h.dataDir, "disk_full", errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT), "error", err)
	}
}

// healthy reports whether the store counts as able to write, and logs the end of an episode.
func (h *storeHealth) healthy() bool {
	if h.failing.Load() || time.Since(time.Unix(0, h.lastFailure.Load())) < h.hold {
		return false
	}
	if h.down.CompareAndSwap(true, false) {
		n := h.failures.Swap(0)
		h.log.Info("store: commits succeed again; writes are taken", "data_dir", h.dataDir, "failures", n,
			"refused_for", time.Since(time.Unix(0, h.downSince.Load())).Round(time.Millisecond).String())
	}
	return true
}

// ready is the readiness check: nil while the store writes. While its last commit failed it
// probes (rate-limited) first.
func (h *storeHealth) ready(ctx context.Context) error {
	if h.failing.Load() {
		h.probe(ctx)
	}
	if !h.healthy() {
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
	if time.Since(h.lastProbe) < h.probeEvery {
		return
	}
	h.lastProbe = time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_ = h.store.Probe(ctx)
}
