package persistence

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// A store opened with Options.Shared is one of several processes on one PostgreSQL database (the
// nodes of docs/cluster.md). What one writes, the others must hear of, without polling:
//
//   - A transaction that touches a topic (a job, a campaign: signals.go) queues
//     pg_notify('herald_changes:<schema>', kind+id) with its writes. PostgreSQL delivers a
//     transaction's notifications when it commits and only if it commits, folds duplicates, and
//     delivers them in commit order.
//   - Broadcast sends a Signal (a key revoked, sessions ended) on the same channel, after the
//     write that made it committed.
//   - Each process keeps one connection of its own (not the pool's: a pooled connection would
//     lose its LISTEN when returned, and a transaction-mode pooler cannot LISTEN at all; the
//     store's URL must reach PostgreSQL directly or through a session-mode pooler) that LISTENs
//     on that channel and on the account deletions' (postgres.go), and wakes the process's
//     followers and signal handlers. Every follower and handler of the process shares it.
//   - Notifications sent while the connection is down are lost. So when it comes back (connected
//     again with a backoff of 100 ms doubling to 2 s), every follower is woken and every handler
//     called: each reads again from the last event it saw, and the caches start over. While it is
//     down the account cache is bypassed, as a single process's is while its lock is lost.

// pgNotify is a shared store's listening connection and the channel it notifies on.
type pgNotify struct {
	p       *pgStore
	channel string
	sig     *signals
	// connected is closed the first time the connection listens (tests wait on it).
	connected chan struct{}
	// pid is the backend process id of the listening connection (tests end it).
	pid atomic.Uint32
}

func newPgNotify(p *pgStore, schema string, sig *signals) *pgNotify {
	return &pgNotify{p: p, channel: "herald_changes:" + schema, sig: sig, connected: make(chan struct{})}
}

// queue adds the notifications of the topics a transaction touched to its batch (nil n: the store
// is not shared and notifies nothing).
func (n *pgNotify) queue(batch *pgx.Batch, topics []Topic) {
	if n == nil {
		return
	}
	for _, t := range topics {
		batch.Queue("SELECT pg_notify($1, $2)", n.channel, topicPayload(t))
	}
}

// topicPayload is a topic as a NOTIFY payload: its kind's byte and its id in hex.
func topicPayload(t Topic) string {
	var b [33]byte
	b[0] = t.kind
	hex.Encode(b[1:], t.id[:])
	return string(b[:])
}

// broadcast sends a signal to every process, this one included.
func (n *pgNotify) broadcast(sig Signal) {
	ctx, cancel := context.WithTimeout(n.p.ctx, 5*time.Second)
	defer cancel()
	if _, err := n.p.pool.Exec(ctx, "SELECT pg_notify($1, $2)", n.channel, string(sig)); err != nil && n.p.ctx.Err() == nil {
		slog.Warn("telling the other Herald processes of a change failed; their caches forget it within their time to live",
			"signal", string(sig), "error", err)
	}
}

// run keeps the listening connection until the store closes.
func (n *pgNotify) run() {
	defer n.p.wg.Done()
	backoff := 100 * time.Millisecond
	first := true
	for n.p.ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(n.p.ctx, n.p.cfg)
		if err == nil {
			var listened bool
			listened, err = n.listen(conn, &first)
			_ = conn.Close(context.Background())
			if listened {
				backoff = 100 * time.Millisecond
			}
		}
		n.p.cache.forgetAll(true)
		if n.p.ctx.Err() != nil {
			return
		}
		slog.Warn("the store's listening connection to PostgreSQL is down; connecting again (changes made on other nodes are read once it is back)",
			"retry_in", backoff, "error", err)
		select {
		case <-n.p.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// listen LISTENs on conn and serves its notifications until it fails or the store closes;
// listened says whether it got as far as listening.
func (n *pgNotify) listen(conn *pgx.Conn, first *bool) (listened bool, err error) {
	for _, ch := range []string{n.channel, n.p.channel} {
		if _, err := conn.Exec(n.p.ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return false, err
		}
	}
	n.pid.Store(conn.PgConn().PID())
	// Whatever was notified while nobody listened is unknown: the account cache starts over,
	// every follower reads again and every cache is cleared.
	n.p.cache.forgetAll(false)
	n.sig.wakeAll()
	n.sig.callAll()
	if *first {
		*first = false
		close(n.connected)
	}
	for {
		msg, err := conn.WaitForNotification(n.p.ctx)
		if err != nil {
			return true, err
		}
		n.dispatch(msg.Channel, msg.Payload)
	}
}

// dispatch serves one notification.
func (n *pgNotify) dispatch(channel, payload string) {
	if channel == n.p.channel {
		if k, err := hex.DecodeString(payload); err == nil && len(k) == 32 {
			n.p.cache.forget([32]byte(k))
		}
		return
	}
	if len(payload) == 33 && (payload[0] == topicJob || payload[0] == topicCampaign || payload[0] == topicOutbox) {
		t := Topic{kind: payload[0]}
		if _, err := hex.Decode(t.id[:], []byte(payload[1:])); err == nil {
			n.sig.wake([]Topic{t})
		}
		return
	}
	n.sig.call(Signal(payload))
}

// ListenerPID is the PostgreSQL backend process id of a shared store's listening connection (0
// when the store is not shared or has not listened yet): what pg_stat_activity shows of it, for
// an operator who looks for it, and for the tests that end it.
func (s *Store) ListenerPID() uint32 {
	if s.pg == nil || s.pg.notify == nil {
		return 0
	}
	return s.pg.notify.pid.Load()
}
