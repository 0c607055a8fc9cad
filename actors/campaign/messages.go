package campaign

import (
	"errors"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/persistence"
)

// ErrNotFound means there is no campaign with this id, or it is another user's: the API answers
// 404 for both, so that a campaign id tells a stranger nothing.
var ErrNotFound = errors.New("campaign not found")

// ErrExists means a Create reached a campaign id that is taken.
var ErrExists = errors.New("campaign already exists")

// Create commits a new campaign with all its posts, and for Publish "now" their jobs, for
// "schedule" their schedule entries and post.scheduled events, in one transaction; nothing is
// stored when any part is refused. Posts are validated drafts (post.Validate), each with its id;
// their status, campaign id and times are set here. The actor takes the records over. Reply:
// *CreateReply.
type Create struct {
	Campaign *persistence.Campaign
	Posts    []*persistence.Post
	// JobIDs are the posts' job tracking ids, in order (Publish "now" only).
	JobIDs []string
	// Idempotency, when set, is stored in the same transaction.
	Idempotency *post.Idempotency
	// Quota, when set, is the free plan's monthly post quota: a campaign that publishes or
	// schedules counts as its posts, all or none.
	Quota *post.Quota
	// Hold, when set, holds a campaign that publishes or schedules for approval: each post waits
	// in pending_approval with its request (publish now, or schedule at its time), with no job,
	// no schedule entry and no quota counted until it is approved (actors/post, approval.go).
	Hold *post.Hold
}

// CreateReply carries the campaign as committed.
type CreateReply struct {
	Campaign *persistence.Campaign
}

// Retry publishes again the failed targets of the campaign's failed and partial posts (those
// Only selects), one new job per post. Retries and cancels of one campaign run one at a time, in
// the order they arrive. Reply: *RetryReply.
type Retry struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
	Only  post.Only
	Quota *post.Quota
}

// Retried is a post published again.
type Retried struct {
	PostID     string
	TrackingID string
	// Targets is how many of its targets the new job publishes.
	Targets int
}

// Skipped is a post with selected failed targets that was not published again, and why (it was
// published again meanwhile, or did not answer in time).
type Skipped struct {
	PostID string
	Reason string
}

// RetryReply says what a retry started, in post id order.
type RetryReply struct {
	Retried []Retried
	Skipped []Skipped
}

// Cancel deletes the campaign's draft and scheduled posts (as DELETE /v1/posts/:id does, each
// with its post.deleted event) and keeps the others: a post that is publishing, or already
// final, stays and is reported. A campaign left without posts is removed; one that keeps posts
// is marked cancelled. Reply: *CancelReply.
type Cancel struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// Kept is a post a cancel left, with its status.
type Kept struct {
	PostID string
	Status string
}

// CancelReply says what a cancel did, in post id order.
type CancelReply struct {
	Cancelled []string
	Kept      []Kept
	// Removed says that no post was left and the campaign is gone.
	Removed bool
}
