package persistence

import (
	"bytes"
	"encoding/binary"
	"time"
)

// Job events: the durable timeline of a job's targets, what GET /v1/posts/:id/events lists.
//
//	job_events  tracking id (16) | seq (8, big-endian) → []JobEvent (JSON)
//
// The job actor stores a change's events in the transaction that stores the change (the job
// record with its new seq), so a timeline costs no commit of its own: one more key in a
// transaction the job writes anyway. A job's queued events are not stored: they are the job's
// creation (its created_at and targets).
var bJobEvents = []byte("job_events")

func init() { registerBuckets(bJobEvents) }

// Event phases of the timeline. The job's own phases (PhaseUploading, PhaseSuccess,
// PhaseFailed) are among them.
const (
	// EventQueued: the job was created with the target (derived, never stored).
	EventQueued = "queued"
	// EventWaiting: the target waits for the account's rate budget.
	EventWaiting = "platform_waiting"
	// EventRetrying: the network failed transiently; the call is tried again after a backoff.
	EventRetrying = "platform_retrying"
	// EventResolved: a call whose outcome was unknown was resolved by looking the post up on
	// the network (found: a platform_success follows; not found: the post is sent again).
	EventResolved = "platform_resolved"
	// EventPart: a thread part was published (the message names it: "part 2 of 5").
	EventPart = "platform_part"
	// EventComment: the first comment's step ended (published, or failed: the post stands).
	EventComment = "platform_comment"
)

// JobEvent is one step of one target of a job.
type JobEvent struct {
	// Target is the index of the target in the post's targets.
	Target  int       `json:"target"`
	Phase   string    `json:"phase"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// JobEventSeq is one change of a job's timeline: its seq and its events.
type JobEventSeq struct {
	Seq    uint64
	Events []JobEvent
}

func jobEventKey(trackingID string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(appendID(make([]byte, 0, 24), trackingID), seq)
}

// PutJobEvents stores the events of the job's change seq, encoded by the caller with Encode
// (outside the transaction that many writers share); nil stores nothing.
func (t *Tx) PutJobEvents(trackingID string, seq uint64, raw []byte) error {
	if raw == nil {
		return nil
	}
	return t.kv.Bucket(bJobEvents).Put(jobEventKey(trackingID, seq), raw)
}

// JobEvents returns a job's stored events, oldest first.
func (t *Tx) JobEvents(trackingID string) ([]JobEventSeq, error) {
	prefix := mustID(trackingID)
	var out []JobEventSeq
	c := t.kv.Bucket(bJobEvents).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var evs []JobEvent
		if err := Decode(v, &evs); err != nil {
			return nil, err
		}
		out = append(out, JobEventSeq{Seq: binary.BigEndian.Uint64(k[16:]), Events: evs})
	}
	return out, nil
}

// JobEventsAfter returns a job's stored events of the changes numbered after seq, oldest first:
// what a stream that has seen the job at seq has yet to send.
func (t *Tx) JobEventsAfter(trackingID string, seq uint64) ([]JobEventSeq, error) {
	prefix := mustID(trackingID)
	var out []JobEventSeq
	c := t.kv.Bucket(bJobEvents).Cursor()
	for k, v := c.Seek(jobEventKey(trackingID, seq+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var evs []JobEvent
		if err := Decode(v, &evs); err != nil {
			return nil, err
		}
		out = append(out, JobEventSeq{Seq: binary.BigEndian.Uint64(k[16:]), Events: evs})
	}
	return out, nil
}

// JobsOfPost returns the post's jobs, oldest first.
func (t *Tx) JobsOfPost(postID string) ([]*Job, error) {
	prefix := mustID(postID)
	var out []*Job
	c := t.kv.Bucket(bJobsPost).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		j, err := t.Job(idString(k[16:]))
		if err == ErrNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}
