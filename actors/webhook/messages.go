package webhook

import (
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Create creates the subscription; the actor must not exist yet. The actor generates the signing
// secret. Reply: *Reply with Secret.
type Create struct {
	UserID      string
	WorkspaceID string // "" for the user's main workspace
	URL         string
	Events      []string
}

// Update changes a subscription; nil fields stay as they are. Turning a subscription off cancels
// its pending deliveries. Reply: *Reply.
type Update struct {
	Scope  string // the workspace the request acts in (persistence.Scope); the object must be in it
	URL    *string
	Events []string // nil: unchanged
	Active *bool
}

// Delete deletes the subscription, its pending deliveries and its delivery log. Reply: *Reply
// with the deleted subscription.
type Delete struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// RotateSecret replaces the signing secret; the previous one keeps signing deliveries (as a second
// v1 signature) for RotationOverlap. Reply: *Reply with Secret.
type RotateSecret struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// Reply carries the subscription as committed and, after Create or RotateSecret, the new secret.
type Reply struct {
	Webhook *persistence.Webhook
	Secret  string
}

// Enqueue hands new pending deliveries to the subscription's actor (from the dispatcher, which
// may run on another node than the subscription's).
type Enqueue struct {
	Items []persistence.PendingDelivery
}

// Wake activates the actor so that it loads its pending deliveries (after a restart).
type Wake struct{}

// tick is the actor's own timer: a retry is due, or a keep-alive while work is pending.
type tick struct{ gen uint64 }

// attemptDone is a worker's report of one attempt, sent after its outcome is durable.
type attemptDone struct {
	gen uint64
	id  string
	res attemptResult
}

type attemptResult struct {
	// skipped: the delivery was no longer pending (cancelled, deleted); nothing was sent.
	skipped bool
	// aborted: the attempt was cancelled by Herald (shutdown, deletion); nothing was recorded.
	aborted bool
	// final: the delivery succeeded or failed for good.
	final bool
	// gone: the receiver answered 410; the subscription must be turned off.
	gone bool
	// next is when to try again (when neither final, skipped nor aborted).
	next time.Time
}

// TestEventType is the type of the event SendTest delivers: no change caused it, so a receiver
// can tell it from the others and answer it without acting.
const TestEventType = "webhook.test"

// SendTest delivers a test event to the subscription at once, signed like any other, through
// its delivery log (with its retries). Reply: *DeliveryReply.
type SendTest struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// Redeliver sends one of the subscription's past deliveries again, as a new delivery of the same
// event: the body's data, type and created_at are the first delivery's, its id the new
// delivery's. Reply: *DeliveryReply.
type Redeliver struct {
	Scope      string // the workspace the request acts in (persistence.Scope); the object must be in it
	DeliveryID string
}

// DeliveryReply carries the delivery as committed (pending).
type DeliveryReply struct {
	Delivery *persistence.Delivery
}
