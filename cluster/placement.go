package cluster

// Placement says where the shard of an actor id lives now.
type Placement interface {
	// Here reports whether this node holds the lease of shard i and may act under it.
	Here(i int) bool
	// Where is the remote address (--node-addr) of the node holding shard i's lease as this
	// node last read the lease table, "" when none is known (expired or unowned).
	Where(i int) string
}

// Local is the placement of a single node: every shard is here.
type Local struct{}

func (Local) Here(int) bool    { return true }
func (Local) Where(int) string { return "" }
