package server

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// RequestCounts counts the /v1 requests each workspace makes, per month, for its usage
// (GET /v1/workspaces/:id/usage). Counting in memory keeps a store write off every request; the
// counts are added to the store by Flush, which the application calls every few seconds and at
// shutdown, so a crash loses at most the requests since the last flush.
type RequestCounts struct {
	mu sync.Mutex
	m  map[requestKey]int
}

// requestKey is a workspace and a month (year × 12 + month - 1: no formatting on each request).
type requestKey struct {
	scope string
	month int
}

func monthOf(t time.Time) int {
	t = t.UTC()
	return t.Year()*12 + int(t.Month()) - 1
}

// monthName is a requestKey's month as "2006-01".
func monthName(m int) string {
	return time.Date(m/12, time.Month(m%12+1), 1, 0, 0, 0, 0, time.UTC).Format("2006-01")
}

// NewRequestCounts returns an empty counter.
func NewRequestCounts() *RequestCounts { return &RequestCounts{m: map[requestKey]int{}} }

// note counts one request of the workspace (scope: persistence.Scope) at now.
func (r *RequestCounts) note(scope string, now time.Time) {
	if r == nil {
		return
	}
	k := requestKey{scope, monthOf(now)}
	r.mu.Lock()
	r.m[k]++
	r.mu.Unlock()
}

// Pending returns u with the workspace's requests of month not flushed yet added.
func (r *RequestCounts) Pending(scope, month string, u persistence.Usage) persistence.Usage {
	if r == nil {
		return u
	}
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return u
	}
	r.mu.Lock()
	n := r.m[requestKey{scope, monthOf(t)}]
	r.mu.Unlock()
	if n == 0 {
		return u
	}
	return u.Plus(persistence.UsageAPIRequests, "", n)
}

// Flush adds the counted requests to the store in one write; counts that could not be written
// are kept for the next flush.
func (r *RequestCounts) Flush(ctx context.Context, store *persistence.Store) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	taken := r.m
	r.m = map[requestKey]int{}
	r.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	err := store.Update(ctx, func(tx *persistence.Tx) error {
		for k, n := range taken {
			if err := tx.AddUsage(k.scope, monthName(k.month), persistence.UsageAPIRequests, "", n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		r.mu.Lock()
		for k, n := range taken {
			r.m[k] += n
		}
		r.mu.Unlock()
	}
	return err
}
