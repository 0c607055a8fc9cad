package cluster

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// Refresh reads the fake lease table again: the owner becomes fresh, when set.
func (p *placement) Refresh(context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refreshes++
	if p.fresh != "" {
		p.owner = p.fresh
	}
}

// reread sets what a's placement says now (owner) and what reading it again finds (fresh).
func (p *placement) reread(owner, fresh string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owner, p.fresh = owner, fresh
	return p.refreshes
}

func (p *placement) readings() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshes
}

// A request whose shard moved since the forwarding node last read its lease table is delivered
// nowhere on the first try (no owner known, or the old owner refuses it): the node reads the
// table again and sends it to the owner named now, once, instead of answering ErrUnavailable.
// Only a shard still moving after that reading is answered ErrUnavailable. A message without a
// reply that finds no owner is sent where the table read again names too.
func TestRemoteAMovedShardIsFoundByReadingThePlacementAgain(t *testing.T) {
	a, b, c := local(t), startPeer(t, "b"), startPeer(t, "c")
	t.Cleanup(func() { a.place.reread("", "") })
	b.own(t, "self")
	c.own(t, "self")
	resent := a.count(false, "test", "resent")
	deferred, returned := a.count(false, "test", "deferred"), a.count(false, "test", "returned")

	// No owner known (the shard was released, and taken since): read again, b.
	n := a.place.reread("", b.addr)
	r, err := ask[*echoed](t, a, "post-1", &echo{Text: "no owner known"})
	require.NoError(t, err)
	require.Equal(t, "b", r.Node)
	require.Equal(t, n+1, a.place.readings())
	require.InDelta(t, resent+1, a.count(false, "test", "resent"), 0)

	// So does a message without a reply.
	a.place.reread("", b.addr)
	a.router.Send("post-2", &note{Text: "no owner known"})
	select {
	case got := <-b.notes:
		require.Equal(t, "post-2 no owner known", got)
	case <-time.After(20 * time.Second):
		t.Fatal("the note never reached the owner found by reading the placement again")
	}
	require.Greater(t, a.count(false, "test", "deferred"), deferred, "held for another try")

	// A message without a reply sent to a node that died (the port is closed) reaches the owner
	// the table read again names.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	a.place.reread(dead, b.addr)
	a.router.Send("post-3", &note{Text: "its node died"})
	select {
	case got := <-b.notes:
		require.Equal(t, "post-3 its node died", got)
	case <-time.After(20 * time.Second):
		t.Fatal("the note sent to a dead node never reached the owner found by reading the placement again")
	}
	require.Greater(t, a.count(false, "test", "returned"), returned, "offered again once remote could not deliver it")

	// The table names b, which gave the shard up to c: b refuses, and c answers.
	b.own(t, c.addr)
	a.place.reread(b.addr, c.addr)
	r, err = ask[*echoed](t, a, "post-1", &echo{Text: "moved on"})
	require.NoError(t, err)
	require.Equal(t, "c", r.Node)
	require.InDelta(t, 1, b.count(t, true, "test", "refused"), 0)
	require.InDelta(t, 3, b.count(t, true, "test", "delivered"), 0, "the request and the notes before")
	require.InDelta(t, 1, c.count(t, true, "test", "delivered"), 0)
	require.InDelta(t, resent+2, a.count(false, "test", "resent"), 0)

	// The shard came here: delivered to this node's own actor.
	a.place.reread(b.addr, a.remote.Addr())
	r, err = ask[*echoed](t, a, "post-1", &echo{Text: "here now"})
	require.NoError(t, err)
	require.Equal(t, "a", r.Node)
	require.InDelta(t, 2, b.count(t, true, "test", "refused"), 0)

	// Sent again once only: c does not hold the shard either, and the request is answered
	// ErrUnavailable at once.
	c.own(t, b.addr)
	a.place.reread(b.addr, c.addr)
	start := time.Now()
	_, err = ask[*echoed](t, a, "post-1", &echo{Text: "still moving"})
	require.ErrorIs(t, err, ErrUnavailable)
	require.Less(t, time.Since(start), localTimeout, "answered by c's refusal, not by the time-out")
	require.InDelta(t, 1, c.count(t, true, "test", "refused"), 0)
	require.InDelta(t, 1, c.count(t, true, "test", "delivered"), 0)

	a.remote.mu.Lock()
	defer a.remote.mu.Unlock()
	require.Empty(t, a.remote.pending, "nothing is left waiting")
}

// A member's placement is read at each step; Refresh reads it again at once, even while the
// member's loop waits for its next step: a node whose view is older than a move finds the
// shard's new owner.
func TestRefreshReadsTheLeaseTableAgain(t *testing.T) {
	url := pgtest.URL(t)
	a := startAt(t, url, 16, "10.0.0.1:7000")
	b := startAt(t, url, 16, "10.0.0.2:7000")
	settled(t, a, b)
	addr := map[string]string{a.Node(): "10.0.0.1:7000", b.Node(): "10.0.0.2:7000"}
	require.Eventually(t, func() bool {
		for i := range 16 {
			if a.Where(i) != addr[Owner(ShardName(i), []string{a.Node(), b.Node()})] {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	var bs []int
	for i := range 16 {
		if a.Where(i) == "10.0.0.2:7000" {
			bs = append(bs, i)
		}
	}
	require.NotEmpty(t, bs)

	// a's loop parks before its next step; b leaves (its leases are released), and c, joining,
	// takes them (a's too, once they expired).
	a.pauseNow(t)
	t.Cleanup(a.resume)
	b.cancel()
	<-b.done
	startAt(t, url, 16, "10.0.0.3:7000")
	for _, i := range bs {
		require.Equal(t, "10.0.0.2:7000", a.Where(i), "a's view is older than b's leaving")
	}
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Refresh(ctx)
		for _, i := range bs {
			if a.Where(i) != "10.0.0.3:7000" {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "Refresh finds c holding b's shards")

	// Many callers at once share the readings.
	a.mu.Lock()
	before := a.whereSeq
	a.mu.Unlock()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.Refresh(context.Background())
		}()
	}
	wg.Wait()
	a.mu.Lock()
	readings := a.whereSeq - before
	a.mu.Unlock()
	require.Less(t, readings, uint64(25), "50 callers shared a few readings")
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return !a.refreshing
	}, 5*time.Second, 10*time.Millisecond, "the reader ends once nobody waits")
}
