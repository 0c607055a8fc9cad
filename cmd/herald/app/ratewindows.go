package app

import (
	"context"
	"time"

	"github.com/heraldhq/herald/http/ratelimit"
	"github.com/heraldhq/herald/persistence"
)

// quotas keeps the API's hourly quota windows across restarts: the limiter counts in memory, a
// snapshot of its open windows is stored every RateSnapshotEvery (when a request was counted
// since the last one) and at shutdown, and the next start counts them again. A crash forgets at
// most the requests of the last interval; a restart never refills a quota.
type quotas struct {
	limiter *ratelimit.Limiter
	store   *persistence.Store
	every   time.Duration
	stop    chan struct{}
	done    chan struct{}
}

func newQuotas(store *persistence.Store, every time.Duration) (*quotas, error) {
	q := &quotas{limiter: ratelimit.New(nil), store: store, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	var stored []persistence.RateWindow
	if err := store.View(func(tx *persistence.Tx) error {
		stored = tx.RateWindows()
		return nil
	}); err != nil {
		return nil, err
	}
	entries := make([]ratelimit.Entry, len(stored))
	for i, w := range stored {
		entries[i] = ratelimit.Entry{User: w.UserID, Start: w.Start, Used: w.Used}
	}
	q.limiter.Restore(entries)
	return q, nil
}

// run stores a snapshot every interval until close.
func (q *quotas) run(log func(msg string, args ...any)) {
	defer close(q.done)
	t := time.NewTicker(q.every)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
			if err := q.save(false); err != nil {
				log("storing the API quota windows failed", "error", err)
			}
		}
	}
}

// close stops the periodic snapshots and stores the last one; call it once no request is served.
func (q *quotas) close() error {
	select {
	case <-q.stop:
	default:
		close(q.stop)
	}
	<-q.done
	return q.save(true)
}

func (q *quotas) save(always bool) error {
	entries, changed := q.limiter.Snapshot()
	if !changed && !always {
		return nil
	}
	ws := make([]persistence.RateWindow, len(entries))
	for i, e := range entries {
		ws[i] = persistence.RateWindow{UserID: e.User, Start: e.Start, Used: e.Used}
	}
	return q.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.ReplaceRateWindows(ws) })
}
