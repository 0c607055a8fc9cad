package job

import (
	"sync"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
)

// Start is sent at start-up to each job whose outcome is final but was not yet taken by its post
// (persistence.Tx.FinishedActiveJobs): the job hands it to the post again. A job's targets never
// wait on the job: they wait for their accounts in the store (jobs_waiting), and the job is
// activated by its first report.
type Start struct{}

// Flush stores the reports the job has received, and Reports with them, and answers *Flushed
// once they are stored (see Flushed): a node handing an account's shard off makes sure the outcomes its calls
// reported are stored while it still holds the leases they are written under. Reports are the
// account's final outcomes for this job that the job may not have received yet (a report
// without a reply can be held back while the job's own shard moves): the job takes one it
// already has as it takes any repeated report, as a no-op. Without them, the next owner of the
// account would find those attempts in doubt and look them up on the network.
type Flush struct {
	Reports []*account.Report `json:"reports,omitempty"`
}

// Flushed answers Flush once the job's reports are stored. A job that could not store them
// answers the store's error instead: persistence.ErrFenced when its shard moved to another node
// (the flush is for the new owner), else the failed commit's.
type Flushed struct{}

// Get reads the job on behalf of a user. Reply: *Reply.
type Get struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// Reply carries a snapshot of the job.
type Reply struct{ Job *persistence.Job }

// Subscribe registers a stream subscriber. Reply: *SubscribeReply. A subscriber of a finished
// job is not registered: it gets the snapshot and Done=true.
type Subscribe struct {
	Scope string // the workspace the request acts in (persistence.Scope); the job must be in it
	Sub   *Subscriber
}

// SubscribeReply is the job as the subscriber first sees it.
type SubscribeReply struct {
	Job  *persistence.Job
	Done bool
}

// Unsubscribe removes a subscriber (its client went away).
type Unsubscribe struct{ Sub *Subscriber }

// PostSynced tells the job that its post has taken the outcome. Stored says that the post's
// commit settled the job too (it is no longer among the jobs to resume), so the job writes
// nothing.
type PostSynced struct{ Stored bool }

// Event is one message of a job's stream. It is shared by every subscriber: immutable once
// sent, with its wire form rendered once.
type Event struct {
	// Name is "progress" or "done".
	Name string
	// ID is the job's change sequence number.
	ID  uint64
	Job *persistence.Job
	// Target is the index of the target whose phase changed (progress only; -1 for none).
	Target int

	once     sync.Once
	rendered []byte
	err      error
}

// Render returns the event's wire form, built by fn on the first call.
func (e *Event) Render(fn func() ([]byte, error)) ([]byte, error) {
	e.once.Do(func() { e.rendered, e.err = fn() })
	return e.rendered, e.err
}

// Subscriber receives a job's events. Its channel is buffered; a subscriber that falls behind by
// a full buffer is dropped (its channel closed), never waited for.
type Subscriber struct {
	C chan *Event
}

// NewSubscriber makes a subscriber with room for buffer events.
func NewSubscriber(buffer int) *Subscriber { return &Subscriber{C: make(chan *Event, buffer)} }
