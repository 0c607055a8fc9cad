package persistence

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// On PostgreSQL a count of the outbox's pending events and of the pending deliveries (the
// webhook metrics, read at every scrape) is one statement that reads no row's value: the walk it
// replaces brought each event over the connection.
func TestPostgresCountsWithoutReadingValues(t *testing.T) {
	t.Parallel()
	tracer := &pgStatements{}
	s := openPostgresTracing(t, tracer)
	ctx := context.Background()
	var ids []string
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		ids = ids[:0]
		for range 30 {
			ev := &Event{Type: PostEventDeleted, Data: []byte(`{"pad":"` + strings.Repeat("x", 500) + `"}`)}
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
			ids = append(ids, ev.ID)
		}
		return tx.AdvanceEvents("c", ids[9])
	}))
	tracer.take()
	require.NoError(t, s.View(func(tx *Tx) error {
		require.Equal(t, 20, tx.EventsPending("c", 1_000_000))
		require.Equal(t, 30, tx.EventsPending("new", 1_000_000))
		require.Equal(t, 4, tx.EventsPending("c", 4))
		require.Zero(t, tx.CountPendingDeliveries(1_000_000))
		return nil
	}))
	var selects []string
	for _, sql := range tracer.take() {
		if strings.HasPrefix(sql, "SELECT") {
			selects = append(selects, sql)
		}
	}
	require.NotEmpty(t, selects)
	for _, sql := range selects {
		if strings.Contains(sql, "kv_events") || strings.Contains(sql, "kv_deliveries_pending") {
			require.Contains(t, sql, "count(*)", "counted, not walked: %s", sql)
		}
	}
}
