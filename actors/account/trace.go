package account

// trace writes one debug line of a target's way through the account: its attempt recorded, its
// call's outcome, a lookup and what it found, an attempt forgotten or undone, its outcome
// reported. With the account, job, target and the epoch of the shard's lease the incarnation
// works under, the lines of every node name the path a target took, which a run of several nodes
// that published something twice needs. Nothing is built unless the log takes debug lines.
func (a *Actor) trace(msg string, r *request, args ...any) {
	if !a.debug {
		return
	}
	attrs := make([]any, 0, 10+len(args))
	attrs = append(attrs, "account_id", a.id, "job_id", r.JobID, "target", r.Target, "step", r.step)
	if a.deps.Fence != nil {
		le, held := a.deps.Fence.Lease(a.id)
		if held {
			attrs = append(attrs, "epoch", le.Epoch)
		} else {
			attrs = append(attrs, "epoch", "none")
		}
	}
	a.deps.Log.Debug("account: "+msg, append(attrs, args...)...)
}
