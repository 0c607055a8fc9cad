package cluster

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Fence is a member's leases as the actors use them (actors.Fence): an actor id's writes fence
// on the lease of ShardOf(id), and it may call out while that lease is trusted.
type Fence struct {
	m       *Member
	metrics *Metrics
	// notBefore is, per shard, the Unix nanoseconds before which an attempt that the shard's
	// previous owner may have left in flight is not looked up (Delay).
	notBefore []atomic.Int64
}

// NewFence makes the fence of m's shards; metrics may be nil.
func NewFence(m *Member, metrics *Metrics) *Fence {
	return &Fence{m: m, metrics: metrics, notBefore: make([]atomic.Int64, m.cfg.Shards)}
}

// Shard is the shard of an actor id.
func (f *Fence) Shard(id string) int { return ShardOf(id, len(f.notBefore)) }

// Lease is the lease of id's shard if this node holds it, trusted or not.
func (f *Fence) Lease(id string) (persistence.Lease, bool) {
	return f.m.Lease(ShardName(f.Shard(id)))
}

// Trusted reports whether this node may act for id now (Member.Here of its shard).
func (f *Fence) Trusted(id string) bool { return f.m.Here(f.Shard(id)) }

// Finishing reports whether this node may still finish what it started for id: it holds id's
// shard, recently renewed, even while handing it off (Member.Finishing).
func (f *Fence) Finishing(id string) bool { return f.m.Finishing(ShardName(f.Shard(id))) }

// NotBefore is when an attempt in doubt of id's shard may be looked up (zero: at once).
func (f *Fence) NotBefore(id string) time.Time {
	if ns := f.notBefore[f.Shard(id)].Load(); ns != 0 {
		if t := time.Unix(0, ns); time.Now().Before(t) {
			return t
		}
	}
	return time.Time{}
}

// Delay holds the lookups of shard i's attempts in doubt until at (a takeover: the previous
// owner's calls may run until its lease's expiry plus the call time-out).
func (f *Fence) Delay(i int, at time.Time) { f.notBefore[i].Store(at.UnixNano()) }

// Fenced counts a write the store refused.
func (f *Fence) Fenced() { f.metrics.FencedWrite() }

// ShardIndex is the shard a lease name ("shard/i") names, ok false for any other lease.
func ShardIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "shard/")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}

// A member is the placement of the node it runs on.
var _ Placement = (*Member)(nil)
