package persistence

import "slices"

// Reading ahead for a batch of writes on PostgreSQL.
//
// The group committer runs the writes of a batch one after another in one transaction, and each
// read of a row is a round trip to the server: with ten or more writes per commit, each reading
// a few rows, the committer spent most of a commit waiting for answers one at a time, and the
// server on PostgreSQL published at half bbolt's rate. Before the batch runs, its functions are
// run as probes, against the rows the transaction has read so far and with writes of their own
// that nobody sees. A probe does not wait for a row it has no answer for: it notes it, takes it
// as missing (a cursor's page as empty) and goes on, so that one run notes every row the
// function reads whatever the answers (most of a write's reads: the record, its index entries,
// the counters, are known from its arguments alone). The rows all probes noted go to the server
// in one pipeline (with the transaction's BEGIN the first time), and the probes that noted any
// run again with the answers, to note the rows found through them, up to pgProbeRounds times;
// a read whose answer cannot take its function further (a quiet read, Tx.peek: a count, a check
// of existence) is read ahead without running its probe again.
// So a batch's reads take as many round trips as its longest chain of reads that depend on one
// another (a record found through an index), not one each.
//
// The probes only read ahead: what they wrote to the transaction and returned is dropped, and the
// batch then runs for real in order, as before, each write seeing the ones before it; a row no
// probe read (a write changed the way a later one went) is read then. A probe's panic (an answer
// taken as missing that could not be) ends only that probe.
//
// Only the writes that declare it safe are probed (Store.UpdateAhead, TryUpdateAhead), and the
// reads of Store.ViewAhead. Running a function more than once is what Store.Update's contract
// allows, but a probe runs it on answers the real run may not get: it takes the "not found"
// branches, and a function that sets a variable of its caller on such a branch only ("created =
// true") would leave the probe's value behind when the real run finds the row. The functions
// marked ahead assign what they set outside on every path, or nothing; the others run once per
// attempt, reading as they go.

// pgProbeRounds bounds the round trips of the read-ahead of one batch: a probe walking a long
// range reads a page more each round, and the rest of the walk is read when the batch runs.
const pgProbeRounds = 4

// pgProbe collects the reads a probe had no answer for.
type pgProbe struct {
	seen map[pgReq]bool
	want *[]pgReq
	// mine is what the running probe had no answer for, noted by another probe before or not,
	// but its quiet reads (Tx.peek): the answers that may take it further.
	mine []pgReq
	// quiet is set during a quiet read (Tx.peek).
	quiet bool
}

func (p *pgProbe) miss(req pgReq) {
	if !p.quiet {
		p.mine = append(p.mine, req)
	}
	if !p.seen[req] {
		p.seen[req] = true
		*p.want = append(*p.want, req)
	}
}

// prefetch reads ahead for a batch of writes when the transaction is PostgreSQL's: the writes
// that allow it (UpdateAhead) are probed. A write alone runs as it comes, and so does every write
// that did not allow it: its function runs once per attempt, as on bbolt, reading as it goes.
func (t *Tx) prefetch(batch []*write) {
	pt, ok := t.kv.(*pgTx)
	if !ok || len(batch) < 2 || pt.probe != nil || pt.err != nil {
		return
	}
	var fns []func(*Tx) error
	for _, w := range batch {
		if w.ahead {
			fns = append(fns, w.fn)
		}
	}
	if len(fns) > 0 {
		pt.prefetch(fns)
	}
}

// prefetchView reads ahead for a read transaction's function on PostgreSQL (Store.ViewAhead).
func (t *Tx) prefetchView(fn func(*Tx) error) {
	if pt, ok := t.kv.(*pgTx); ok && pt.probe == nil && pt.err == nil {
		pt.prefetch([]func(*Tx) error{fn})
	}
}

// prefetch probes fns and reads what they read, round after round, until no probe could go
// further with the answers.
func (t *pgTx) prefetch(fns []func(*Tx) error) {
	var want []pgReq
	probe := &pgProbe{seen: map[pgReq]bool{}, want: &want}
	type open struct {
		fn     func(*Tx) error
		missed []pgReq
	}
	var still []open
	for _, fn := range fns {
		still = append(still, open{fn: fn})
	}
	// One transaction for every probe of the batch: its buckets, and the maps that hold their
	// writes, are made once and emptied before each probe (a probe's writes are its own).
	pt := &pgTx{p: t.p, ctx: t.ctx, writable: t.writable, buckets: map[string]*pgBucket{}, reads: t.reads, probe: probe}
	for range pgProbeRounds {
		want = want[:0]
		clear(probe.seen)
		next := still[:0]
		for _, o := range still {
			if o.missed != nil && !t.surprised(o.missed) {
				// Every answer it waited for is what it took it for: a run with them goes the
				// same way and notes nothing new.
				continue
			}
			probe.mine = probe.mine[:0]
			pt.runProbe(o.fn)
			if len(probe.mine) > 0 {
				next = append(next, open{fn: o.fn, missed: slices.Clone(probe.mine)})
			}
		}
		still = next
		if len(want) == 0 || !t.read(want) {
			return
		}
	}
}

// peek is b.Get for a quiet read: one whose answer leads its function to read nothing it would
// not read had the row been missing (a counter's value, a record compared with the bytes it
// should hold, an existence check that ends the function or only decides a write). A probe takes
// a row it has no answer for as missing, so it notes every read that follows a quiet one whatever
// the answer: the answer is read ahead with the others, and is no reason to run the probe again.
// Most of a write's rows are found, and every probe ran twice for them, the second run noting
// nothing new; a read that is not quiet, and found, still makes the probe run again.
func (t *Tx) peek(b kvBucket, key []byte) []byte {
	defer t.hush().unhush()
	return b.Get(key)
}

// peekHas is b.Has for a quiet read (peek).
func (t *Tx) peekHas(b kvBucket, key []byte) bool {
	defer t.hush().unhush()
	return b.Has(key)
}

// hush marks the reads that follow quiet when tx is a probe reading ahead, until its probe's
// unhush; nil when tx is not a probe.
func (t *Tx) hush() *pgProbe {
	if pt, ok := t.kv.(*pgTx); ok && pt.probe != nil {
		pt.probe.quiet = true
		return pt.probe
	}
	return nil
}

// unhush ends a quiet read (hush); nothing on nil.
func (p *pgProbe) unhush() {
	if p != nil {
		p.quiet = false
	}
}

// surprised reports whether a read a probe took as missing (a page as empty) found something.
func (t *pgTx) surprised(missed []pgReq) bool {
	for _, r := range missed {
		if r.page {
			if len(t.reads.pages[r]) > 0 {
				return true
			}
		} else if t.reads.rows[pgRowKey{r.tbl, r.key}].found {
			return true
		}
	}
	return false
}

// guessing reports whether tx is a probe reading ahead that has no answer yet for the row under
// key in bucket: it took the row as missing, which the row may not be. A function whose reads
// depend on a missing row (a walk from the first key when a cursor row is missing) stops there in
// a probe instead of noting reads that the real run, finding the row, does not make.
func (t *Tx) guessing(bucket, key []byte) bool {
	pt, ok := t.kv.(*pgTx)
	if !ok || pt.probe == nil {
		return false
	}
	b, ok := pt.Bucket(bucket).(*pgBucket)
	if !ok {
		return false
	}
	_, read := pt.reads.rows[pgRowKey{b.tbl, string(key)}]
	return !read
}

// runProbe runs fn once as a probe on t, a probe's transaction, with none of the writes of the
// probes before it.
func (t *pgTx) runProbe(fn func(*Tx) error) {
	defer func() { _ = recover() }()
	for _, b := range t.buckets {
		clear(b.pend)
		clear(b.keys) // the keys' strings go with their writes
		b.keys = b.keys[:0]
	}
	_ = fn(&Tx{kv: t})
}
