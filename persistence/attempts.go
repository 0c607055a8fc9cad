package persistence

import (
	"bytes"
	"encoding/binary"
	"time"
)

// Attempt records that a publication was about to be sent to a network. It is written before the
// network call and removed once its outcome is known, so that after a crash an attempt whose
// outcome was never learned is resolved (looked up on the network) and never sent twice blindly.
//
// A target published in several steps (a thread's parts, a first comment: Target.Steps) keeps its
// progress here: Step is the call about to be made (0 the post, 1 to len(thread) a part, then the
// comment) and Done what the steps before it created (the post, then each part), so that after a
// crash the chain resumes at Step (looked up first) and never publishes a part twice. Between
// two calls, and for a retry that publishes only a published target's missing steps, the record
// is Pending: no call was started for Step, so nothing is looked up.
//
// The record lives in its target's waiting entry (jobs_waiting, waiting.go), after the post id:
// an attempt exists only while its target waits for its outcome, the account that takes the entry
// reads the attempt with it, and the transaction that stores the target's outcome removes the
// entry and the attempt with it. So an attempt costs one write before its call and nothing after.
type Attempt struct {
	JobID     string    `json:"job_id"`
	Target    int       `json:"target"`
	AccountID string    `json:"account_id"`
	StartedAt time.Time `json:"started_at"`
	Step      int       `json:"step,omitempty"`
	Done      []Step    `json:"done,omitempty"`
	Pending   bool      `json:"pending,omitempty"`
}

// Step is what one step of a target created on its network.
type Step struct {
	ID  string `json:"id"`
	URL string `json:"url,omitempty"`
	Ref string `json:"ref,omitempty"`
}

// attempts     job id | target (2 bytes) → Attempt (JSON)
//
// Where layouts 6 and earlier kept attempts; upgrade moves them into their waiting entries
// (moveAttempts) and the bucket stays empty.
var bAttempts = []byte("attempts")

func init() { registerBuckets(bAttempts) }

// PutAttempt records an attempt in its target's waiting entry (a.AccountID, a.JobID, a.Target),
// whose value names postID (zeros when "": appendID). It writes nothing when the target no longer waits (its outcome is
// stored, or its entry was dropped as stale): the record would make it wait again. The write does
// not read the entry (kvBucket.Replace), so that on PostgreSQL it costs no round trip before the
// commit; a target that no longer waits is one whose outcome is known, which no restart looks
// up, so a record that was not written is not missed.
func (t *Tx) PutAttempt(a *Attempt, postID string) error {
	raw, err := Encode(a)
	if err != nil {
		return err
	}
	v := appendID(make([]byte, 0, idLen+len(raw)), postID)
	return t.kv.Bucket(bJobsWaiting).Replace(waitingKey(a.AccountID, a.JobID, a.Target), append(v, raw...))
}

// AttemptOf returns the attempt recorded for a target, ErrNotFound when there is none.
func (t *Tx) AttemptOf(accountID, jobID string, target int) (*Attempt, error) {
	v := t.kv.Bucket(bJobsWaiting).Get(waitingKey(accountID, jobID, target))
	if len(v) <= idLen {
		return nil, ErrNotFound
	}
	var a Attempt
	if err := Decode(v[idLen:], &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// ClearAttempt forgets a target's attempt whose call created nothing; the target still waits,
// and its entry names postID again. Like PutAttempt, it writes nothing for a target that no
// longer waits, and reads nothing.
func (t *Tx) ClearAttempt(accountID, jobID string, target int, postID string) error {
	return t.kv.Bucket(bJobsWaiting).Replace(waitingKey(accountID, jobID, target), appendID(make([]byte, 0, idLen), postID))
}

// idLen is the length of an id's key form (appendID).
const idLen = 16

// moveAttempts moves the attempts of a store written before layout 7 into their waiting entries.
// An attempt whose target no longer waits is dropped: its outcome is stored.
func moveAttempts(tx kvTx) error {
	old := tx.Bucket(bAttempts)
	var keys [][]byte
	var recs []*Attempt
	if err := forEach(old, func(k, v []byte) error {
		keys = append(keys, bytes.Clone(k))
		var a Attempt
		if err := Decode(v, &a); err != nil || len(k) != idLen+2 || a.AccountID == "" {
			return nil // unreadable or of no account: nothing can resolve it, so it is dropped
		}
		a.JobID, a.Target = idString(k[:idLen]), int(binary.BigEndian.Uint16(k[idLen:]))
		recs = append(recs, &a)
		return nil
	}); err != nil {
		return err
	}
	waiting := tx.Bucket(bJobsWaiting)
	for _, a := range recs {
		key := waitingKey(a.AccountID, a.JobID, a.Target)
		v := waiting.Get(key)
		if v == nil && !waiting.Has(key) {
			continue
		}
		raw, err := Encode(a)
		if err != nil {
			return err
		}
		post := make([]byte, idLen, idLen+len(raw))
		if len(v) >= idLen {
			copy(post, v[:idLen])
		}
		if err := waiting.Put(key, append(post, raw...)); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := old.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
