package persistence

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The connections of read transactions on PostgreSQL.
//
// A read transaction (View) is BEGIN with its first read, its reads, and an end: ROLLBACK, a round
// trip of its own that the reader waited for before its connection could go back to the pool
// (which closes a connection handed back inside a transaction). Most reads of the publish path
// are one row (a job when its actor activates, a post for its outcome), so the end was half of
// their round trips. The store keeps a set of connections for its read transactions instead: a
// read transaction ends by handing its connection back to the set as it is, still inside its
// transaction, and the next read transaction on it sends ROLLBACK ahead of its BEGIN, in the same
// pipeline as its first read. A connection left inside a read transaction holds a snapshot (and
// the locks that keep the tables it read from being altered), so one unused for pgViewIdle is
// rolled back and given back to the pool (whose health checks see it again), and the set never
// holds one longer than about twice that once the reads stop.

// pgViewIdle is how long a connection of the set may wait unused inside a read transaction.
const pgViewIdle = time.Second

// pgView is a connection of the set, and when it was last handed back.
type pgView struct {
	c  *pgxpool.Conn
	at time.Time
}

// pgViews is the set: idle holds the connections not in use, slots one token per connection the
// set holds (in use or idle), so that it holds at most cap(slots).
type pgViews struct {
	idle  chan pgView
	slots chan struct{}
	// mu orders giveView against closeViews: once closed, a connection goes back to the pool.
	mu     sync.Mutex
	closed bool
}

func newPgViews(n int) *pgViews {
	return &pgViews{idle: make(chan pgView, n), slots: make(chan struct{}, n)}
}

// takeView returns a connection for a read transaction: an idle one of the set, or one taken from
// the pool while the set has room; else it waits for one to be handed back.
func (p *pgStore) takeView(ctx context.Context) (*pgxpool.Conn, error) {
	select {
	case v := <-p.views.idle:
		return v.c, nil
	default:
	}
	select {
	case v := <-p.views.idle:
		return v.c, nil
	case p.views.slots <- struct{}{}:
		c, err := p.pool.Acquire(ctx)
		if err != nil {
			<-p.views.slots
			return nil, err
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// giveView hands a read transaction's connection back to the set, still inside the transaction
// (the next one on it ends it). A connection that was lost goes back to the pool, which drops it.
func (p *pgStore) giveView(c *pgxpool.Conn) {
	p.views.mu.Lock()
	defer p.views.mu.Unlock()
	switch {
	case c.Conn().IsClosed():
		c.Release()
	case p.views.closed:
		p.release(c)
	default:
		p.views.idle <- pgView{c: c, at: time.Now()}
		return
	}
	<-p.views.slots
}

// closeViews gives every idle connection of the set back to the pool, and those in use as they
// are handed back: the pool's Close waits for them all.
func (p *pgStore) closeViews() {
	p.views.mu.Lock()
	defer p.views.mu.Unlock()
	p.views.closed = true
	for {
		select {
		case v := <-p.views.idle:
			p.release(v.c)
			<-p.views.slots
		default:
			return
		}
	}
}

// sweepViews gives the connections of the set unused for pgViewIdle back to the pool, rolled
// back, every pgViewIdle until the store closes.
func (p *pgStore) sweepViews() {
	defer p.wg.Done()
	tick := time.NewTicker(pgViewIdle)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case now := <-tick.C:
			for range len(p.views.idle) {
				var v pgView
				select {
				case v = <-p.views.idle:
				default:
				}
				if v.c == nil {
					break
				}
				if now.Sub(v.at) < pgViewIdle {
					p.views.idle <- v
					continue
				}
				p.release(v.c)
				<-p.views.slots
			}
		}
	}
}
