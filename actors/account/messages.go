package account

import (
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Publish asks the account to publish one target of a job. The outcome, and progress such as a
// wait for rate budget, are reported through Deps.Report, not as a reply, so that the job may
// passivate or restart meanwhile.
type Publish struct {
	JobID  string
	Target int
	Post   platforms.Post
	// Resume says that the job restarted after a crash: an attempt recorded for this target may
	// have reached the network, and is resolved (looked up) instead of sent again.
	Resume bool
}

// Report is what the account tells a job about one of its targets.
type Report struct {
	JobID  string
	Target int
	// Final is true for the outcome; false for progress (Message says what is happening).
	Final       bool
	Success     bool
	Message     string
	Publication platforms.Publication
	// Event names a step of the timeline other than the report's own phase:
	// persistence.EventWaiting, EventRetrying or EventResolved ("" for none).
	Event string
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
}

// Delete revokes the account's token at the network (best effort) and deletes it; publishes
// waiting in its queue fail. Reply: *Reply with the deleted account.
type Delete struct {
	UserID string
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
