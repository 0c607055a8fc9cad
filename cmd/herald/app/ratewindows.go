package app

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/http/ratelimit"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// quotas keeps the API's hourly quota windows across restarts. The limiter counts in memory;
// every RateSnapshotEvery the windows that counted a request since are stored (one record per
// user, overwritten), and all open windows at shutdown; the next start counts them again and
// forgets the records of windows that have closed. A crash forgets at most the requests of the
// last interval; a restart never refills a quota. Over several nodes the quotas are counted in
// PostgreSQL instead (shared; docs/cluster.md, Shared quotas), and only the usage is stored here.
type quotas struct {
	limiter *ratelimit.Limiter
	// quota counts the requests: limiter, or shared when the nodes share the quotas.
	quota  ratelimit.Quota
	shared *ratelimit.Shared
	// requests are the workspaces' /v1 requests for their usage, stored with each snapshot.
	requests *server.RequestCounts
	store    *persistence.Store
	every    time.Duration
	stop     chan struct{}
	done     chan struct{}
	// failed makes the next snapshot store every open window: the windows of a failed one were
	// no longer marked as changed.
	failed bool
}

func newQuotas(store *persistence.Store, every time.Duration, shared *cluster.Quotas) (*quotas, error) {
	q := &quotas{limiter: ratelimit.New(nil), requests: server.NewRequestCounts(), store: store, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	q.quota = q.limiter
	if shared != nil {
		q.shared = ratelimit.NewShared(shared)
		q.quota = q.shared
		return q, nil
	}
	var stored []persistence.RateWindow
	if err := store.View(func(tx *persistence.Tx) error {
		stored = tx.RateWindows()
		return nil
	}); err != nil {
		return nil, err
	}
	entries := make([]ratelimit.Entry, len(stored))
	var closed []string
	now := time.Now()
	for i, w := range stored {
		entries[i] = ratelimit.Entry{User: w.UserID, Start: w.Start, Used: w.Used}
		if !now.Before(w.Start.Add(ratelimit.Window)) {
			closed = append(closed, w.UserID)
		}
	}
	q.limiter.Restore(entries)
	if len(closed) > 0 {
		if err := store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.DeleteRateWindows(closed) }); err != nil {
			return nil, err
		}
	}
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
			if err := q.save(q.failed); err != nil {
				log("storing the API quota windows failed", "error", err)
			}
		}
	}
}

// close stops the periodic snapshots and stores every open window; call it once no request is
// served.
func (q *quotas) close() error {
	select {
	case <-q.stop:
	default:
		close(q.stop)
	}
	<-q.done
	if q.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return errors.Join(q.save(true), q.shared.Close(ctx))
	}
	return q.save(true)
}

func (q *quotas) save(all bool) error {
	if err := q.requests.Flush(context.Background(), q.store); err != nil {
		return err
	}
	if q.shared != nil {
		return nil
	}
	entries := q.limiter.Snapshot(all)
	if len(entries) == 0 {
		return nil
	}
	ws := make([]persistence.RateWindow, len(entries))
	for i, e := range entries {
		ws[i] = persistence.RateWindow{UserID: e.User, Start: e.Start, Used: e.Used}
	}
	err := q.store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutRateWindows(ws) })
	q.failed = err != nil
	return err
}
