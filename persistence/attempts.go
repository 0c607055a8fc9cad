package persistence

import (
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
var bAttempts = []byte("attempts")

func init() { registerBuckets(bAttempts) }

func attemptKey(jobID string, target int) []byte {
	return binary.BigEndian.AppendUint16(appendID(make([]byte, 0, 18), jobID), uint16(target))
}

// PutAttempt records an attempt.
func (t *Tx) PutAttempt(a *Attempt) error {
	return t.put(bAttempts, attemptKey(a.JobID, a.Target), a)
}

// Attempt returns the recorded attempt of a job's target.
func (t *Tx) Attempt(jobID string, target int) (*Attempt, error) {
	var a Attempt
	if err := t.get(bAttempts, attemptKey(jobID, target), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// DeleteAttempt forgets an attempt whose outcome is known.
func (t *Tx) DeleteAttempt(jobID string, target int) error {
	return t.kv.Bucket(bAttempts).Delete(attemptKey(jobID, target))
}
