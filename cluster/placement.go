package cluster

import "context"

// Placement says where the shard of an actor id lives now.
type Placement interface {
	// Here reports whether this node holds the lease of shard i and may act under it.
	Here(i int) bool
	// Where is the remote address (--node-addr) of the node holding shard i's lease as this
	// node last read the lease table, "" when none is known (expired or unowned).
	Where(i int) string
}

// Refresher is a Placement that can read where the shards are again on demand (Member: the
// lease table), for a request that found no owner for its shard, or whose owner refused it:
// the shard may have moved since the placement was last read.
type Refresher interface {
	// Refresh returns once Where answers from a reading that began after the call, or ctx
	// ended.
	Refresh(ctx context.Context)
}

// Local is the placement of a single node: every shard is here.
type Local struct{}

// Here reports true: a single node holds every shard.
func (Local) Here(int) bool { return true }

// Where reports "": a single node has no remote peer to name.
func (Local) Where(int) string { return "" }
