package account

import (
	"encoding/json"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Take tells the account that targets wait for it in the store (persistence jobs_waiting): a job
// was created, or Herald started with a backlog. The account takes them, in order, as its budget
// and its calls allow, and reports each one's progress and outcome through Deps.Report, so that
// the job may passivate or restart meanwhile.
//
// Resume says the take comes from a periodic resume of the account's shard when several nodes
// run (publishing.Shards): the account also reports again each outcome it reported a while ago
// that its job has not stored yet (its entry still waits in the store), since a report sent to
// a node that died with it, or to a job's incarnation that died before storing it, is lost. A
// job takes a repeated outcome as it takes any report of a target already final: it changes
// nothing.
type Take struct {
	Resume bool `json:"resume,omitempty"`
}

// Report is what the account tells a job about one of its targets.
type Report struct {
	JobID  string
	Target int
	// AccountID is the account that reports: the target's jobs_waiting entry is its.
	AccountID string
	// Final is true for the outcome; false for progress (Message says what is happening).
	Final       bool
	Success     bool
	Message     string
	Publication platforms.Publication
	// Event names a step of the timeline other than the report's own phase:
	// persistence.EventWaiting, EventRetrying, EventResolved, EventPart or EventComment ("" for
	// none).
	Event string
	// Parts are the thread parts published so far and Comment the first comment's outcome, for a
	// target published in several steps (nil otherwise).
	Parts   []persistence.Step
	Comment *persistence.FirstComment
}

// Create stores a new account with its credentials. Reply: *Reply.
type Create struct {
	Account *persistence.Account
	Creds   platforms.Credentials
}

// SetCredentials replaces the tokens of an existing account (the same network user connected
// again). Reply: *Reply.
type SetCredentials struct {
	Creds    platforms.Credentials
	Username *string
	// Kind and DisplayName, when set, replace the account's (the network may have renamed the
	// organisation or Page; an account stored before kinds gets its kind).
	Kind        string
	DisplayName *string
}

// SetDefaults replaces the account's default options (compact JSON of its network's options type,
// already checked; nil clears them). Reply: *Reply. Errors: ErrNotFound, ErrForbidden.
type SetDefaults struct {
	Scope   string // the workspace the request acts in (persistence.Scope); the object must be in it
	Options json.RawMessage
}

// Delete revokes the account's token at the network (best effort) and deletes it; publishes
// waiting in its queue fail. Reply: *Reply with the deleted account.
type Delete struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// Get reads the account, without a network call. Reply: *Reply.
type Get struct{}

// Reply carries the account as committed.
type Reply struct {
	Account *persistence.Account
	// Reconnect, in a reply to Get, says why the account must be connected again before Herald
	// can call its network ("" when it need not): the reason a live read would answer with
	// *ReconnectError now.
	Reconnect string
}

// Drain stops the account from starting anything new (its shard is handed to another node):
// calls not yet started go back to the store's order (their budget returned, their attempts
// forgotten), and the reply, *Drained, comes once the calls and lookups in flight have come back
// and their outcomes are reported. The account is then passivated; the new owner takes what
// waits from the store.
type Drain struct{}

// Drained answers Drain. Jobs are the jobs the account reported to since the Drain, or whose
// outcomes it reported may not be stored yet: their actors are asked to store what they were
// told (job.Flush) before the shard is released. Reports are those outcomes, for the jobs that
// may not have received them.
type Drained struct {
	Jobs    []string
	Reports []*Report
}
