package platforms

import "context"

type gateKey struct{}

// WithGate returns ctx carrying gate, which every HTTP request an adapter makes under ctx asks
// first: when gate answers an error the request is not sent, and the adapter sees it as a
// request that could not be sent (Transient, as for a refused connection). A node of several
// passes whether it still trusts the lease of the account's shard, so that a call of several
// requests (an upload, then the post; the post, then its first comment) stops at its next
// request once the node's trust ended in the middle of it (a pause, a lost database), as the
// check before the call alone could not.
func WithGate(ctx context.Context, gate func() error) context.Context {
	return context.WithValue(ctx, gateKey{}, gate)
}

// Gate is the error of ctx's gate (WithGate) now, nil when ctx carries none or it lets the
// request through. Adapters that send their requests other than through Send check it first.
func Gate(ctx context.Context) error {
	if g, ok := ctx.Value(gateKey{}).(func() error); ok {
		return g()
	}
	return nil
}
