package cluster

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster/clustertest"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(nodeEnv) != "" {
		runNode() // a node process of the remote tests (remote_test.go)
		return
	}
	os.Exit(pgtest.Main(m))
}

const ttl = 600 * time.Millisecond

// events records what one member was told, in order.
type events struct {
	mu       sync.Mutex
	acquired []persistence.Taken
	drained  []persistence.Lease
	lost     []persistence.Lease
	// onAcquire runs inside Acquired (tests look at the other members at that moment).
	onAcquire func(persistence.Taken)
}

func (e *events) snapshot() (acq []persistence.Taken, drained, lost []persistence.Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]persistence.Taken(nil), e.acquired...), append([]persistence.Lease(nil), e.drained...), append([]persistence.Lease(nil), e.lost...)
}

type node struct {
	*Member
	ev     *events
	cancel context.CancelFunc
	done   chan struct{}
}

func start(t *testing.T, url string, shards int) *node {
	t.Helper()
	return startAt(t, url, shards, "127.0.0.1:0")
}

func startAt(t *testing.T, url string, shards int, addr string) *node {
	t.Helper()
	l, err := persistence.OpenLeases(context.Background(), url, ttl)
	require.NoError(t, err)
	t.Cleanup(l.Close)
	ev := &events{}
	m := New(Config{Leases: l, Addr: addr, Shards: shards, Singletons: []string{"scheduler"},
		Acquired: func(tk persistence.Taken) {
			ev.mu.Lock()
			ev.acquired = append(ev.acquired, tk)
			f := ev.onAcquire
			ev.mu.Unlock()
			if f != nil {
				f(tk)
			}
		},
		Drain: func(le persistence.Lease) { ev.mu.Lock(); ev.drained = append(ev.drained, le); ev.mu.Unlock() },
		Lost:  func(le persistence.Lease) { ev.mu.Lock(); ev.lost = append(ev.lost, le); ev.mu.Unlock() },
	})
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{Member: m, ev: ev, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(n.done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-n.done })
	return n
}

// owners reads every lease's owner and epoch from the database.
func owners(t *testing.T, url string) map[string]persistence.Lease {
	t.Helper()
	l, err := persistence.OpenLeases(context.Background(), url, ttl)
	require.NoError(t, err)
	defer l.Close()
	out := map[string]persistence.Lease{}
	for _, le := range leaseRows(t, l) {
		out[le.Name] = le
	}
	return out
}

// settled waits until every lease is held by exactly the node Owner names among nodes, and
// each node's own view agrees.
func settled(t *testing.T, nodes ...*node) {
	t.Helper()
	require.Eventually(t, func() bool {
		var ids []string
		for _, n := range nodes {
			ids = append(ids, n.Node())
		}
		for _, n := range nodes {
			for _, name := range n.names {
				_, held := n.Trusted(name)
				if held != (Owner(name, ids) == n.Node()) {
					return false
				}
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond)
}

// Three nodes share the shards and the singleton: each lease is held by exactly one node, the
// one rendezvous hashing names, and every node holds some.
func TestLeasesAreSharedOutAmongTheLiveNodes(t *testing.T) {
	url := pgtest.URL(t)
	a, b, c := start(t, url, 16), start(t, url, 16), start(t, url, 16)
	settled(t, a, b, c)
	rows := owners(t, url)
	require.Len(t, rows, 17)
	per := map[string]int{}
	for name, le := range rows {
		per[le.Owner]++
		require.Equal(t, Owner(name, []string{a.Node(), b.Node(), c.Node()}), le.Owner, name)
	}
	for _, n := range []*node{a, b, c} {
		require.Positive(t, per[n.Node()], "every node holds some of the 17 leases: %v", per)
	}
}

// A node killed (it stops without releasing anything) loses its leases to the others once they
// expire by the database's clock: each is taken with the next epoch as a takeover, after the dead
// node's own trust in it had ended, and a write the dead node makes under its old epoch is fenced.
func TestAKilledNodesLeasesAreTakenOverAndItsWritesFenced(t *testing.T) {
	url := pgtest.URL(t)
	store, err := persistence.OpenPostgres(context.Background(), url, persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	a := start(t, url, 8)
	b := start(t, url, 8)
	settled(t, a, b)
	heldByA := a.Held()
	require.NotEmpty(t, heldByA)
	victim := heldByA[0]
	// a's own writes under its epoch pass the fence.
	require.NoError(t, store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.Fence(victim) }))

	// b records whether a still trusted a lease at the moment b took it over.
	var mu sync.Mutex
	var overlaps []string
	b.ev.mu.Lock()
	b.ev.onAcquire = func(tk persistence.Taken) {
		if _, ok := a.Trusted(tk.Name); ok {
			mu.Lock()
			overlaps = append(overlaps, tk.Name)
			mu.Unlock()
		}
	}
	b.ev.mu.Unlock()
	// Kill a: its loop stops with no release and no leave (as a SIGKILL would leave it).
	a.pauseNow(t)
	before, _, _ := b.ev.snapshot()

	require.Eventually(t, func() bool {
		rows := owners(t, url)
		for _, le := range heldByA {
			if rows[le.Name].Owner != b.Node() {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond)
	acq, _, _ := b.ev.snapshot()
	takeovers := 0
	for _, tk := range acq[len(before):] {
		for _, le := range heldByA {
			if tk.Name == le.Name {
				takeovers++
				require.False(t, tk.Released, "%s was taken over, not handed off: %+v", tk.Name, tk)
				require.Equal(t, le.Epoch+1, tk.Epoch, "%s: the next epoch", tk.Name)
				require.False(t, tk.PrevExpiry.IsZero())
			}
		}
	}
	require.Equal(t, len(heldByA), takeovers)
	mu.Lock()
	require.Empty(t, overlaps, "b took leases a still trusted")
	mu.Unlock()
	_, trusted := a.Trusted(victim.Name)
	require.False(t, trusted)
	err = store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.Fence(victim) })
	require.ErrorIs(t, err, persistence.ErrFenced)
}

// pauseNow stops the member's loop before its next renewal, as SIGSTOP or a kill would, and
// waits until it is parked.
func (n *node) pauseNow(t *testing.T) {
	t.Helper()
	parked := make(chan struct{})
	n.mu.Lock()
	n.pauseReq, n.parked = make(chan struct{}), parked
	n.mu.Unlock()
	select {
	case <-parked:
	case <-time.After(20 * time.Second):
		t.Fatal("the member's loop did not park")
	}
}

// resume lets a paused member's loop go on.
func (n *node) resume() {
	n.mu.Lock()
	close(n.pauseReq)
	n.mu.Unlock()
}

func leaseRows(t *testing.T, l *persistence.Leases) []persistence.Lease {
	t.Helper()
	rows, err := l.All(context.Background())
	require.NoError(t, err)
	return rows
}

// A node paused past its lease (SIGSTOP) finds on waking that its membership expired: it tells
// that every lease is lost, steps down and joins again under a new id, and the leases are shared
// out again.
func TestAPausedNodeStepsDownAndRejoinsUnderANewID(t *testing.T) {
	url := pgtest.URL(t)
	a, b := start(t, url, 8), start(t, url, 8)
	settled(t, a, b)
	held := a.Held()
	oldID := a.Node()
	a.pauseNow(t)
	require.Eventually(t, func() bool {
		rows := owners(t, url)
		for _, le := range held {
			if rows[le.Name].Owner != b.Node() {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond)
	a.resume()
	require.Eventually(t, func() bool { return a.Node() != oldID && a.Node() != "" }, 20*time.Second, 10*time.Millisecond)
	_, _, lost := a.ev.snapshot()
	require.Len(t, lost, len(held), "every lease it held is reported lost")
	settled(t, a, b)
}

// A node cut off from the database gives its leases up within a lifetime of its last renewal,
// without waiting to reach the database again: it reports them all lost and holds none, and the
// other node takes them over (never handed off: the cut-off node released nothing). Once the link
// is mended it joins under a new id, never renewing the old one, and is handed its share again.
func TestANodeCutOffFromTheDatabaseStepsDown(t *testing.T) {
	url := pgtest.URL(t)
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	proxy := clustertest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	a, b := start(t, u.String(), 8), start(t, url, 8)
	settled(t, a, b)
	held := a.Held()
	require.NotEmpty(t, held)
	oldID := a.Node()
	proxy.Cut()
	cut := time.Now()
	require.Eventually(t, func() bool { return len(a.Held()) == 0 }, 2*ttl+ttl/4, 5*time.Millisecond, "a holds nothing")
	t.Logf("a stepped down %v after the cut", time.Since(cut))
	require.False(t, a.Current())
	_, _, lost := a.ev.snapshot()
	require.Len(t, lost, len(held), "every lease it held is reported lost")
	require.Eventually(t, func() bool {
		rows := owners(t, url)
		for _, le := range held {
			if rows[le.Name].Owner != b.Node() {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "b holds a's leases")
	acq, _, _ := b.ev.snapshot()
	for _, le := range held {
		for _, tk := range acq {
			if tk.Name == le.Name && tk.Epoch > le.Epoch {
				require.False(t, tk.Released, "%s was taken over, not handed off", le.Name)
			}
		}
	}

	proxy.Mend()
	require.Eventually(t, func() bool { return a.Node() != oldID && a.Node() != "" }, 20*time.Second, 10*time.Millisecond)
	settled(t, a, b)
	for name, le := range owners(t, url) {
		require.NotEqual(t, oldID, le.Owner, "%s is never renewed under the old id", name)
	}
}

// A node paused in the middle of a write fenced on one of its leases holds that lease's row FOR
// SHARE for as long as it is paused. The node taking its leases over waits a moment for that row
// and goes on: it keeps renewing its own leases (it never steps down), takes every other lease of
// the paused node, and takes the locked one once the write ends.
func TestATakeoverDoesNotWaitForeverOnALeaseAPausedWriteHolds(t *testing.T) {
	url := pgtest.URL(t)
	a, b := start(t, url, 8), start(t, url, 8)
	settled(t, a, b)
	held := a.Held()
	require.NotEmpty(t, held)
	bID := b.Node()
	locked := held[0].Name
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	tx, err := conn.Begin(context.Background())
	require.NoError(t, err)
	_, err = tx.Exec(context.Background(), "SELECT 1 FROM cluster_leases WHERE name = $1 FOR SHARE", locked)
	require.NoError(t, err)
	a.pauseNow(t)

	require.Eventually(t, func() bool {
		rows := owners(t, url)
		for _, le := range held[1:] {
			if rows[le.Name].Owner != bID {
				return false
			}
		}
		return true
	}, 20*time.Second, 10*time.Millisecond, "b takes every lease of a that is not locked")
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		require.True(t, b.Current(), "b keeps renewing while a take waits")
	}
	require.Equal(t, bID, b.Node(), "b never stepped down")
	require.NoError(t, tx.Rollback(context.Background()))
	require.Eventually(t, func() bool { return owners(t, url)[locked].Owner == bID }, 20*time.Second, 10*time.Millisecond,
		"b takes the lease once the write ends")
	a.resume()
}

// A node that stops gracefully drains and releases its leases: the others take them at once
// (not as takeovers); a node that joins gets its share handed off the same way.
func TestGracefulHandOff(t *testing.T) {
	url := pgtest.URL(t)
	a := start(t, url, 8)
	settled(t, a)
	require.Len(t, a.Held(), 9, "alone, a node holds everything")
	b := start(t, url, 8)
	settled(t, a, b)
	_, drained, lost := a.ev.snapshot()
	require.NotEmpty(t, drained, "a drained what b joined to own")
	require.Empty(t, lost)
	acq, _, _ := b.ev.snapshot()
	for _, tk := range acq {
		require.True(t, tk.Released, "%s handed off, not taken over", tk.Name)
	}
	bHeld := len(b.Held())
	b.cancel()
	<-b.done
	_, drainedB, _ := b.ev.snapshot()
	require.Len(t, drainedB, bHeld, "b drained all it held before leaving")
	settled(t, a)
	acqA, _, _ := a.ev.snapshot()
	handed := 0
	for _, tk := range acqA[9:] {
		require.True(t, tk.Released, "%s came back released", tk.Name)
		handed++
	}
	require.Equal(t, bHeld, handed)
}

// A lease being handed off is no longer trusted (nothing new starts under it) but still
// finishing: the calls and look-ups under way when the hand-off began may send their next
// requests, so that they end and the next owner finds no attempt in doubt.
func TestALeaseBeingHandedOffIsFinishingButNotTrusted(t *testing.T) {
	// 32 shards: b, joining, is named the owner of none with a chance of 2^-32 (with 4, one run in
	// 16 handed nothing off).
	const shards = 32
	url := pgtest.URL(t)
	l, err := persistence.OpenLeases(context.Background(), url, ttl)
	require.NoError(t, err)
	t.Cleanup(l.Close)
	type seen struct{ trusted, finishing bool }
	got := make(chan seen, 64)
	var m *Member
	m = New(Config{Leases: l, Addr: "127.0.0.1:0", Shards: shards,
		Acquired: func(persistence.Taken) {},
		Drain: func(le persistence.Lease) {
			_, trusted := m.Trusted(le.Name)
			got <- seen{trusted, m.Finishing(le.Name)}
		},
		Lost: func(persistence.Lease) {},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return len(m.Held()) == shards }, 20*time.Second, 10*time.Millisecond)
	require.True(t, m.Finishing(ShardName(0)))

	b := start(t, url, shards) // joins: a hands b its share
	select {
	case s := <-got:
		require.False(t, s.trusted, "nothing new starts under a lease being handed off")
		require.True(t, s.finishing, "what was under way may finish")
	case <-time.After(20 * time.Second):
		t.Fatal("no lease was handed off")
	}
	require.Eventually(t, func() bool {
		held := b.Held()
		for _, le := range held {
			if m.Finishing(le.Name) {
				return false
			}
		}
		return len(held) > 0
	}, 20*time.Second, 10*time.Millisecond, "a lease released is no longer finishing here")
}

// The shard of an account and the owner of a lease are stable and spread.
func TestShardsAndOwnersAreStable(t *testing.T) {
	// Pinned: a changed hash would move every account to another shard between releases.
	require.Equal(t, 31, ShardOf("01a21c5c-5adf-779b-b25a-5747ba17d032", 256))
	counts := make([]int, 16)
	for i := range 16000 {
		counts[ShardOf(fmt.Sprintf("account-%d", i), 16)]++
	}
	for i, n := range counts {
		require.InDelta(t, 1000, n, 200, "shard %d", i)
	}
	nodes := []string{"a", "b", "c"}
	per := map[string]int{}
	moved := 0
	for i := range 3000 {
		name := ShardName(i)
		o := Owner(name, nodes)
		per[o]++
		if o2 := Owner(name, append(nodes, "d")); o2 != o && o2 != "d" {
			moved++
		}
	}
	for _, n := range nodes {
		require.InDelta(t, 1000, per[n], 150, "node %s", n)
	}
	require.Zero(t, moved, "a joining node only takes leases; none move between the others")
}
