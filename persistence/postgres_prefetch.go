package persistence

import (
	"iter"
)

// Reading ahead for a batch of writes on PostgreSQL.
//
// The group committer runs the writes of a batch one after another in one transaction, and each
// read of a row is a round trip to the server: with ten or more writes per commit, each reading
// a few rows, the committer spent most of a commit waiting for answers one at a time, and the
// server on PostgreSQL published at half bbolt's rate. Before the batch runs, its functions are
// run once more as probes: each in a coroutine of the committer's goroutine (never two at once),
// against the rows of the transaction's snapshot, with writes of its own that nobody sees. A
// probe that reads a row not yet read is suspended; once every probe is suspended or finished,
// the rows they wait for go to the server in one pipeline (the transaction's BEGIN with the
// first), and the probes go on. So a batch's reads take as many round trips as its longest chain
// of reads that depend on one another (a row found through an index), not one each.
//
// The probes only read ahead: what they wrote and returned is dropped, and the batch then runs
// for real in order, as before, each write seeing the ones before it; a row a probe did not
// read (a write changed the way a later one went) is read then. Running a function more than
// once is what Store.Update's contract allows (fn must only touch its transaction), and a
// probe's panic ends only that probe. Probes stop after pgProbeRounds round trips, so that a
// probe walking a long range does not read it all ahead.

// pgProbeRounds bounds the round trips of the read-ahead of one batch.
const pgProbeRounds = 8

// pgProbe is the suspension point of a probe.
type pgProbe struct {
	yield func(pgReq) bool
}

// pgProbeStopped unwinds a probe that its scheduler stopped.
type pgProbeStopped struct{}

// await suspends the probe until its scheduler has read req.
func (p *pgProbe) await(req pgReq) {
	if !p.yield(req) {
		panic(pgProbeStopped{})
	}
}

// prefetch reads ahead for a batch of writes when the transaction is PostgreSQL's and the batch
// has more than one write (a single write's reads depend on one another as they come).
func (t *Tx) prefetch(batch []*write) {
	pt, ok := t.kv.(*pgTx)
	if !ok || len(batch) < 2 || pt.probe != nil || pt.err != nil {
		return
	}
	pt.prefetch(batch)
}

func (t *pgTx) prefetch(batch []*write) {
	type running struct {
		next func() (pgReq, bool)
		stop func()
	}
	var live []running
	var want []pgReq
	seen := map[pgReq]bool{}
	add := func(r pgReq) {
		if !seen[r] {
			seen[r] = true
			want = append(want, r)
		}
	}
	for _, w := range batch {
		probe := &pgTx{p: t.p, ctx: t.ctx, writable: true, buckets: map[string]*pgBucket{}, reads: t.reads, probe: &pgProbe{}}
		fn := w.fn
		next, stop := iter.Pull(func(yield func(pgReq) bool) {
			defer func() { _ = recover() }()
			probe.probe.yield = yield
			_ = fn(&Tx{kv: probe})
		})
		if r, ok := next(); ok {
			live = append(live, running{next, stop})
			add(r)
		} else {
			stop()
		}
	}
	stopAll := func() {
		for _, r := range live {
			r.stop()
		}
	}
	for round := 0; len(live) > 0; round++ {
		if round == pgProbeRounds || !t.read(want) {
			stopAll()
			return
		}
		want = want[:0]
		clear(seen)
		still := live[:0]
		for _, r := range live {
			if req, ok := r.next(); ok {
				still = append(still, r)
				add(req)
			} else {
				r.stop()
			}
		}
		live = still
	}
}
