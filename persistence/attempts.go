package persistence

import (
	"encoding/binary"
	"time"
)

// Attempt records that a publication was about to be sent to a network. It is written before the
// network call and removed once its outcome is known, so that after a crash an attempt whose
// outcome was never learned is resolved (looked up on the network) and never sent twice blindly.
type Attempt struct {
	JobID     string    `json:"job_id"`
	Target    int       `json:"target"`
	AccountID string    `json:"account_id"`
	StartedAt time.Time `json:"started_at"`
}

// attempts     job id | target (2 bytes) → Attempt (JSON)
var bAttempts = []byte("attempts")

func init() { registerBuckets(bAttempts) }

func attemptKey(jobID string, target int) []byte {
	k := make([]byte, 18)
	copy(k, mustID(jobID))
	binary.BigEndian.PutUint16(k[16:], uint16(target))
	return k
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
