package persistence

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// sentSQL is a tracer that records the statements its connections send.
type sentSQL struct {
	mu   sync.Mutex
	sqls []string
}

func (c *sentSQL) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	c.sqls = append(c.sqls, d.SQL)
	c.mu.Unlock()
	return ctx
}

func (c *sentSQL) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *sentSQL) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *sentSQL) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.mu.Lock()
	c.sqls = append(c.sqls, d.SQL)
	c.mu.Unlock()
}

func (c *sentSQL) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *sentSQL) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sqls
	c.sqls = nil
	return out
}

// On PostgreSQL a count of the outbox's pending events and of the pending deliveries (the
// webhook metrics, read at every scrape) is one statement that reads no row's value: the walk it
// replaces brought each event over the connection.
func TestPostgresCountsWithoutReadingValues(t *testing.T) {
	t.Parallel()
	tracer := &sentSQL{}
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
