package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/heraldhq/herald/actors/publishing"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/persistence"
)

// Several nodes (herald serve --node-addr; docs/cluster.md, docs/operations.md "Running several
// nodes"). With a node address, Herald is one node of several over one PostgreSQL store: it
// opens the store shared (no session advisory lock: ownership is per shard, by leases that every
// actor's write fences on, which a lock on the whole store could neither share out nor check),
// joins the membership, and runs the actors of the shards it holds. Without one, nothing of
// this exists and Herald runs as a single process, as before.

// nodeIdleInTransaction is how long a node's store session may stay idle inside a transaction
// (persistence.Options.IdleInTransaction): a lease lifetime, none on a single process.
func nodeIdleInTransaction(cfg Config) time.Duration {
	if cfg.NodeAddr == "" {
		return 0
	}
	return orDefault(cfg.LeaseTTL, DefaultLeaseTTL)
}

// DefaultLeaseTTL is the lifetime of a node's leases and heartbeat when Config.LeaseTTL is 0: a
// node renews four times within it, and a silent node's shards pass to the others after it.
const DefaultLeaseTTL = 10 * time.Second

// Shards is the number of account shards of a cluster; it never changes, since an id's shard
// must be the same on every node and across releases.
const Shards = 256

// leaseWork is what runs under one kind of lease: the member's callbacks for its leases.
type leaseWork interface {
	Acquired(persistence.Taken)
	Drain(persistence.Lease)
	Lost(persistence.Lease)
}

// node is this process's part in a cluster.
type node struct {
	leases *persistence.Leases
	member *cluster.Member
	fence  *cluster.Fence
	shards *publishing.Shards
	// singletons run the scheduler, the outbox dispatcher, the purges and the media janitor
	// under their leases (cluster.Singletons).
	singletons leaseWork
	// quotas are the shared quotas' connections, opened for the node (nil: given by Config).
	quotas   *persistence.Quotas
	ctx      context.Context
	stop     context.CancelFunc
	done     chan struct{}
	resumed  chan struct{}
	resuming bool // resumeNode ran (Start and Shutdown run one after the other)
}

// checkNodeConfig refuses a node address with a store several processes cannot share.
func checkNodeConfig(cfg Config) error {
	if cfg.NodeAddr == "" {
		if cfg.NodeAdvertise != "" {
			return errors.New("--node-advertise is the address of a node of several: set --node-addr too")
		}
		return nil
	}
	if !persistence.IsPostgresURL(cfg.Store) {
		return errors.New("--node-addr runs Herald as one node of several, which share a PostgreSQL store: set --store postgres://… (a bbolt file belongs to one process)")
	}
	host, port, err := net.SplitHostPort(cfg.NodeAddr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("--node-addr: %q is not HOST:PORT", cfg.NodeAddr)
	}
	if cfg.NodeAdvertise != "" {
		h, p, err := net.SplitHostPort(cfg.NodeAdvertise)
		if err != nil || h == "" || p == "" || p == "0" || unspecified(h) {
			return fmt.Errorf("--node-advertise: %q is not the HOST:PORT the other nodes reach this one at", cfg.NodeAdvertise)
		}
	} else if unspecified(host) {
		// The lease table would name an address that reaches whichever node dials it (0.0.0.0
		// dials the dialler's own host).
		return fmt.Errorf("--node-addr %s listens on every interface; set --node-advertise to the HOST:PORT the other nodes reach this one at", cfg.NodeAddr)
	}
	if cfg.SecretKey == "" {
		// Each node would otherwise generate a key of its own in its data directory, and open
		// neither the account tokens nor the messages the others sealed.
		return errors.New("--node-addr needs HERALD_SECRET_KEY: every node seals and opens the account tokens and the messages between nodes with the same key (64 hexadecimal characters)")
	}
	return nil
}

// unspecified reports whether host is the address of every interface (0.0.0.0, ::), which no
// other node can reach this one at.
func unspecified(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// advertised is the address the other nodes reach this one at: NodeAdvertise, or NodeAddr.
func (cfg Config) advertised() string {
	if cfg.NodeAdvertise != "" {
		return cfg.NodeAdvertise
	}
	return cfg.NodeAddr
}

// openNode opens the leases and builds the member; nothing runs until startNode.
func (a *App) openNode() error {
	ttl := orDefault(a.Cfg.LeaseTTL, DefaultLeaseTTL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases, err := persistence.OpenLeases(ctx, a.Cfg.Store, ttl)
	if err != nil {
		return err
	}
	n := &node{leases: leases}
	if a.sharedQuotas == nil {
		// The API's hourly quotas and the networks' app-wide budgets are spent from chunks
		// taken in the database, so that their sum over the nodes never passes a limit.
		q, err := persistence.OpenQuotas(ctx, a.Cfg.Store, ttl)
		if err != nil {
			leases.Close()
			return err
		}
		n.quotas, a.sharedQuotas = q, cluster.NewQuotas(q)
	}
	metrics := cluster.NewMetrics(a.Registry)
	n.member = cluster.New(cluster.Config{
		Leases: leases, Addr: a.Cfg.advertised(), Shards: Shards, Log: a.Log, Metrics: metrics,
		Acquired: func(t persistence.Taken) {
			if w := n.work(t.Name); w != nil {
				w.Acquired(t)
			}
		},
		Drain: func(l persistence.Lease) {
			if w := n.work(l.Name); w != nil {
				w.Drain(l)
			}
		},
		Lost: func(l persistence.Lease) {
			if w := n.work(l.Name); w != nil {
				w.Lost(l)
			}
		},
	})
	n.fence = cluster.NewFence(n.member, metrics)
	a.node = n
	return nil
}

// work is what runs under the lease name, by its prefix.
func (n *node) work(name string) leaseWork {
	switch {
	case strings.HasPrefix(name, "shard/"):
		if n.shards != nil {
			return n.shards
		}
	case strings.HasPrefix(name, "singleton/"):
		return n.singletons
	}
	return nil
}

// joinNode joins the cluster and keeps the membership until stopNode, joining again after a
// failure to (a database not reachable yet). The shards it takes meanwhile are resumed only once
// resumeNode runs, at the end of Start, when the adapters are what the actors must use.
func (a *App) joinNode() {
	n := a.node
	ctx, cancel := context.WithCancel(context.Background())
	n.ctx, n.stop, n.done = ctx, cancel, make(chan struct{})
	n.resumed = make(chan struct{})
	go func() {
		defer close(n.done)
		for {
			err := n.member.Run(ctx)
			if ctx.Err() != nil {
				break
			}
			a.Log.Warn("cluster: joining failed; trying again", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		<-n.resumed
	}()
}

// awaitNode waits until the member ran its first step (its shards are held), at most within.
func (a *App) awaitNode(within time.Duration) {
	select {
	case <-a.node.member.Ready():
	case <-time.After(within):
		a.Log.Warn("cluster: this node has not joined its cluster yet; going on")
	}
}

// resumeNode resumes the shards the node holds and takes, and turns readiness on once the member
// ran its first step.
func (a *App) resumeNode() {
	n := a.node
	n.resuming = true
	go func() { defer close(n.resumed); n.shards.Run(n.ctx) }()
	go func() {
		select {
		case <-n.member.Ready():
			if !a.draining.Load() {
				a.Server.SetReady(true)
			}
		case <-n.ctx.Done():
		}
	}()
}

// stopNode drains and releases every lease this node holds and leaves the cluster: the shards'
// accounts finish their calls in flight first, so the next owners find no attempt in doubt.
func (a *App) stopNode() {
	n := a.node
	if n.stop != nil {
		n.stop()
		if !n.resuming {
			close(n.resumed) // Start failed before resumeNode
		}
		<-n.done
	}
	if n.quotas != nil {
		// The units in hand go back to the other nodes.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.sharedQuotas.Close(ctx); err != nil {
			a.Log.Warn("giving the shared quotas' units in hand back failed; they are lost until their windows end", "error", err)
		}
		cancel()
		n.quotas.Close()
	}
	n.leases.Close()
}

// nodeReady is readiness's part of the cluster: the node joined, ran its first step, and its
// last renewal is recent (a node cut off from the database or paused is not ready).
func (n *node) ready() error {
	select {
	case <-n.member.Ready():
	default:
		return errors.New("this node has not joined its cluster yet")
	}
	if !n.member.Current() {
		return errors.New("this node's cluster membership is not current: its last lease renewal is too old")
	}
	return nil
}

// readyCheck is /readyz's check: the store takes writes and, on a node of several, the node's
// membership is current.
func (a *App) readyCheck(health *storeHealth) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := health.ready(ctx); err != nil {
			return err
		}
		if a.node != nil {
			return a.node.ready()
		}
		return nil
	}
}
