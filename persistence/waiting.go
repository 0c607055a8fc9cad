package persistence

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// jobs_waiting   connected account id | tracking id | target (2 bytes) → post id
//
// Every target of an active job whose outcome is not known has an entry, keyed by the account
// that publishes it: its account actor takes its work from there, in the order of the keys (job
// creation, as tracking ids are UUIDv7s, then target), a few at a time as its rate budget and
// its calls allow, so that a backlog waits here and not in memory. PutJobEncoded writes a new
// job's entries in the transaction that creates the job and removes a target's entry in the
// transaction that stores its outcome, so that an entry exists exactly while its target waits or
// is in hand; a target in flight also has an attempt record (attempts.go). The value names the
// job's post, so that an account reads the post it publishes without reading the job.
var bJobsWaiting = []byte("jobs_waiting")

func init() { registerBuckets(bJobsWaiting) }

// Waiting is one target waiting for its account.
type Waiting struct {
	AccountID string
	JobID     string
	Target    int
	// PostID is the job's post ("" when the entry does not name it).
	PostID string
}

// Key is the entry's key: its place in its account's order.
func (w Waiting) Key() string { return string(waitingKey(w.AccountID, w.JobID, w.Target)) }

func waitingKey(accountID, jobID string, target int) []byte {
	k := appendID(appendID(make([]byte, 0, 34), accountID), jobID)
	return binary.BigEndian.AppendUint16(k, uint16(target))
}

func waitingOf(k, v []byte) Waiting {
	w := Waiting{AccountID: idString(k[:16]), JobID: idString(k[16:32]), Target: int(binary.BigEndian.Uint16(k[32:34]))}
	if len(v) == 16 {
		w.PostID = idString(v)
	}
	return w
}

// keepWaiting keeps a job's entries true as it is stored: a new job's open targets start
// waiting, and a target whose outcome is known stops (deleting an entry that is not there
// changes nothing).
func (t *Tx) keepWaiting(j *Job, isNew bool) error {
	b := t.kv.Bucket(bJobsWaiting)
	var post []byte // every new entry's value, built once
	for _, jt := range j.Targets {
		if jt.AccountID == "" {
			continue
		}
		key := waitingKey(jt.AccountID, j.TrackingID, jt.Target)
		switch {
		case jt.Final() || j.PostSynced:
			if !isNew {
				if err := b.Delete(key); err != nil {
					return err
				}
			}
		case isNew:
			if post == nil {
				post = mustID(j.PostID)
			}
			if err := b.Put(key, post); err != nil {
				return err
			}
		}
	}
	return nil
}

// WaitingFor lists up to limit entries of an account in order, skipping those for which skip
// returns true (they are in the account's hands already; skip sees every key the walk passes, in
// order), and reports whether it stopped at the limit (more may follow). past is about how many
// entries skip passes over (those in the account's hands): on PostgreSQL the walk's first read
// asks for them and limit more at once, one round trip where pages growing from a few rows took
// three or four, each a round trip of the read-ahead's rounds.
func (t *Tx) WaitingFor(accountID string, limit, past int, skip func(key string) bool) (out []Waiting, more bool) {
	prefix := mustID(accountID)
	c := t.kv.Bucket(bJobsWaiting).Cursor()
	if p, ok := c.(kvPager); ok && past > 0 {
		p.wantPage(past + limit + 1)
	}
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != 34 || (skip != nil && skip(string(k))) {
			continue
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, waitingOf(k, v))
	}
	return out, false
}

// IsWaiting reports whether the target still waits (its outcome is not stored).
func (t *Tx) IsWaiting(w Waiting) bool {
	return has(t.kv.Bucket(bJobsWaiting), waitingKey(w.AccountID, w.JobID, w.Target))
}

// StopWaiting removes a target's entry: for an outcome its job cannot store (the job is gone or
// its target already final), so that the account does not take it again.
func (t *Tx) StopWaiting(w Waiting) error {
	return t.kv.Bucket(bJobsWaiting).Delete(waitingKey(w.AccountID, w.JobID, w.Target))
}

// WaitingCounts counts the waiting entries of each account (a walk of every entry: a start-up
// counts the job backlog's part in the store once).
func (t *Tx) WaitingCounts() map[string]int {
	out := map[string]int{}
	var last []byte
	var lastID string
	c := t.kv.Bucket(bJobsWaiting).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) < 16 {
			continue
		}
		if !bytes.Equal(k[:16], last) {
			last = append(last[:0], k[:16]...)
			lastID = idString(last)
		}
		out[lastID]++
	}
	return out
}

// indexWaitingJobs builds jobs_waiting, the finished flags of jobs_active and their count from the
// active jobs of a store written before layout 5.
func indexWaitingJobs(tx kvTx) error {
	active := tx.Bucket(bJobsActive)
	jobs := tx.Bucket(bJobs)
	var ids [][]byte
	if err := forEach(active, func(k, _ []byte) error {
		ids = append(ids, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return err
	}
	if err := tx.Bucket(bMeta).Put(activeJobsKey, u64(uint64(len(ids)))); err != nil {
		return err
	}
	t := &Tx{kv: tx}
	for _, id := range ids {
		v := jobs.Get(id)
		if v == nil {
			continue
		}
		var j Job
		if err := Decode(v, &j); err != nil {
			return fmt.Errorf("persistence: index the waiting targets of job %s: %w", idString(id), err)
		}
		if j.finished() {
			if err := active.Put(id, []byte{activeFinished}); err != nil {
				return err
			}
			continue
		}
		if err := t.keepWaiting(&j, true); err != nil {
			return err
		}
	}
	return nil
}
