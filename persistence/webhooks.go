package persistence

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"time"
)

// Post lifecycle event types: the four webhook event names of the spec.
const (
	PostEventPublished = "post.published"
	PostEventFailed    = "post.failed"
	PostEventScheduled = "post.scheduled"
	PostEventDeleted   = "post.deleted"
)

// The approval events of Herald's own: a post held for approval, approved, rejected.
const (
	PostEventApprovalRequested = "post.approval_requested"
	PostEventApproved          = "post.approved"
	PostEventRejected          = "post.rejected"
)

// CampaignEventCompleted is sent when the last open post of a campaign (scheduled or publishing)
// takes its outcome: an event of Herald's own, beside the spec's four.
const CampaignEventCompleted = "campaign.completed"

// WebhookEvents lists the event names a subscription can ask for, in their bit order (the flags
// of webhooks_user: the first byte holds the first seven and the active bit, a second byte the
// next eight). A new event is appended.
var WebhookEvents = []string{PostEventPublished, PostEventFailed, PostEventScheduled, PostEventDeleted, CampaignEventCompleted,
	PostEventApprovalRequested, PostEventApproved, PostEventRejected}

// Webhook is a webhook subscription.
type Webhook struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace it belongs to ("" for its user's main workspace; Scope).
	WorkspaceID string    `json:"workspace_id,omitempty"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Active      bool      `json:"active"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Secret is the signing secret (whsec_…), sealed by the caller when a sealer is configured.
	Secret []byte `json:"secret"`
	// PreviousSecret is the secret replaced by the last rotation; deliveries are signed with it
	// too until PreviousSecretUntil.
	PreviousSecret      []byte     `json:"previous_secret,omitempty"`
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
	// DeactivatedReason says why Herald turned the subscription off (a 410 Gone answer); empty
	// when active or turned off by its owner.
	DeactivatedReason string `json:"deactivated_reason,omitempty"`
	// Version counts the subscription's committed changes.
	Version uint64 `json:"version"`
}

// Clone returns a copy, for building the next state before it is written.
func (w *Webhook) Clone() *Webhook {
	c := *w
	c.Events = append([]string(nil), w.Events...)
	c.Secret = append([]byte(nil), w.Secret...)
	c.PreviousSecret = append([]byte(nil), w.PreviousSecret...)
	return &c
}

// Wants reports whether the subscription asks for events of type typ.
func (w *Webhook) Wants(typ string) bool {
	for _, e := range w.Events {
		if e == typ {
			return true
		}
	}
	return false
}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
	DeliveryCancelled = "cancelled"
)

// KeptResponseBody is how much of a receiver's answer a delivery keeps (Delivery.LastResponseBody).
const KeptResponseBody = 4 << 10

// Delivery is one event sent to one subscription: its body (signed anew on every attempt) and its
// attempts so far. Its id is the X-Service-Delivery-Id and the body's id, the same on every
// attempt.
type Delivery struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	EventID   string `json:"event_id"`
	Type      string `json:"type"`
	// EventCreatedAt is when the change that caused the event was committed.
	EventCreatedAt time.Time `json:"event_created_at"`
	CreatedAt      time.Time `json:"created_at"`
	// Body is the exact JSON body sent: {id, type, created_at, data}.
	Body           json.RawMessage `json:"body"`
	Status         string          `json:"status"`
	Attempts       int             `json:"attempts"`
	LastStatusCode *int            `json:"last_status_code,omitempty"`
	LastError      *string         `json:"last_error,omitempty"`
	// LastResponseBody is the first KeptResponseBody bytes of the last answer's body as received
	// (nil: no answer, or an empty one) and LastResponseSize how many bytes that body had, as far
	// as the sender read it. Only the receiver's answer is kept, never the request's headers (its
	// signature among them); a signing secret a receiver echoes is blanked before it is kept.
	LastResponseBody []byte     `json:"last_response_body,omitempty"`
	LastResponseSize int64      `json:"last_response_size,omitempty"`
	LastAttemptAt    *time.Time `json:"last_attempt_at,omitempty"`
	NextAttemptAt    *time.Time `json:"next_attempt_at,omitempty"`
	CompletedAt      *time.Time `json:"completed_at,omitempty"`
}

// The webhook buckets:
//
//	webhooks            webhook id → Webhook (JSON)
//	webhooks_user       user id | webhook id → flags (1 or 2 bytes): bit i of the first =
//	                    WebhookEvents[i] for i < 7, 0x80 = active; bit i-7 of the second =
//	                    WebhookEvents[i] for i >= 7 (absent in records written before there were
//	                    more than seven events)
//	deliveries          webhook id | delivery id → Delivery (JSON)
//	deliveries_pending  webhook id | delivery id → next attempt (8 bytes, Unix nanoseconds)
//
// The fan-out reads only webhooks_user to find who wants an event; a subscription's actor reads
// its pending deliveries from deliveries_pending when it starts.
var (
	bWebhooks          = []byte("webhooks")
	bWebhooksUser      = []byte("webhooks_user")
	bDeliveries        = []byte("deliveries")
	bDeliveriesPending = []byte("deliveries_pending")
)

func init() { registerBuckets(bWebhooks, bWebhooksUser, bDeliveries, bDeliveriesPending) }

const webhookActive = 0x80

func webhookFlags(w *Webhook) []byte {
	f := make([]byte, 2)
	for i, name := range WebhookEvents {
		if w.Wants(name) {
			f[i/7] |= 1 << (i % 7)
		}
	}
	if w.Active {
		f[0] |= webhookActive
	}
	return f
}

// eventBit is the byte of the flags (0 or 1) and the bit in it of an event type; bit 0 for an
// event no subscription can ask for.
func eventBit(typ string) (int, byte) {
	for i, name := range WebhookEvents {
		if name == typ {
			return i / 7, 1 << (i % 7)
		}
	}
	return 0, 0
}

// PutWebhook stores a subscription and its index entry.
func (t *Tx) PutWebhook(w *Webhook) error {
	id := mustID(w.ID)
	if err := t.kv.Bucket(bWebhooksUser).Put(join(mustID(w.Scope()), id), webhookFlags(w)); err != nil {
		return err
	}
	return t.put(bWebhooks, id, w)
}

// Webhook returns a subscription by id.
func (t *Tx) Webhook(id string) (*Webhook, error) {
	var w Webhook
	if err := t.get(bWebhooks, mustID(id), &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// CountWebhooks counts a workspace's subscriptions (scope: Scope).
func (t *Tx) CountWebhooks(scope string) int {
	prefix := mustID(scope)
	n := 0
	c := t.kv.Bucket(bWebhooksUser).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// WebhooksIn lists a workspace's subscriptions (scope: Scope), oldest first.
func (t *Tx) WebhooksIn(scope string) ([]*Webhook, error) {
	prefix := mustID(scope)
	var out []*Webhook
	c := t.kv.Bucket(bWebhooksUser).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var w Webhook
		if err := t.get(bWebhooks, k[16:], &w); err != nil {
			return nil, err
		}
		out = append(out, &w)
	}
	return out, nil
}

// SubscribersOf returns the ids of the workspace's active subscriptions that want events of type typ,
// from the index alone.
func (t *Tx) SubscribersOf(scope, typ string) []string {
	at, bit := eventBit(typ)
	if bit == 0 {
		return nil
	}
	prefix := mustID(scope)
	var out []string
	c := t.kv.Bucket(bWebhooksUser).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(v) >= 1 && len(v) > at && v[0]&webhookActive != 0 && v[at]&bit != 0 {
			out = append(out, idString(k[16:]))
		}
	}
	return out
}

// ReadSubscriptionsAhead reads the subscription index of each scope as SubscribersOf does, and
// answers nothing: a write read ahead with its batch on PostgreSQL (Store.UpdateAhead) that will
// ask SubscribersOf of scopes it can only learn from other rows (the outbox's events) names the
// likely ones first, so that their index is read with its first reads instead of after them.
func (t *Tx) ReadSubscriptionsAhead(scopes []string) {
	for _, scope := range scopes {
		t.kv.Bucket(bWebhooksUser).Cursor().Seek(mustID(scope))
	}
}

// DeleteWebhook removes a subscription with every delivery record of it.
func (t *Tx) DeleteWebhook(w *Webhook) error {
	id := mustID(w.ID)
	if err := t.kv.Bucket(bWebhooksUser).Delete(join(mustID(w.Scope()), id)); err != nil {
		return err
	}
	if err := t.kv.Bucket(bWebhooks).Delete(id); err != nil {
		return err
	}
	for _, name := range [][]byte{bDeliveries, bDeliveriesPending} {
		if err := deletePrefix(t.kv.Bucket(name).Cursor(), id); err != nil {
			return err
		}
	}
	return nil
}

type deleter interface {
	Seek([]byte) ([]byte, []byte)
	Next() ([]byte, []byte)
	Delete() error
}

func deletePrefix(c deleter, prefix []byte) error {
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func deliveryKey(webhookID, deliveryID string) []byte {
	return appendID(appendID(make([]byte, 0, 32), webhookID), deliveryID)
}

func nanos(t time.Time) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(t.UnixNano()))
	return b
}

// PutDelivery stores a delivery record and keeps the pending index true: a pending delivery is
// indexed with its next attempt time, any other is not.
func (t *Tx) PutDelivery(d *Delivery) error {
	key := deliveryKey(d.WebhookID, d.ID)
	pending := t.kv.Bucket(bDeliveriesPending)
	if d.Status == DeliveryPending {
		next := d.CreatedAt
		if d.NextAttemptAt != nil {
			next = *d.NextAttemptAt
		}
		if err := pending.Put(key, nanos(next)); err != nil {
			return err
		}
	} else if err := pending.Delete(key); err != nil {
		return err
	}
	return t.put(bDeliveries, key, d)
}

// Delivery returns a delivery record.
func (t *Tx) Delivery(webhookID, deliveryID string) (*Delivery, error) {
	var d Delivery
	if err := t.get(bDeliveries, deliveryKey(webhookID, deliveryID), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// PendingDelivery is a pending delivery's place in its subscription's queue.
type PendingDelivery struct {
	ID   string
	Next time.Time
}

// PendingDeliveries lists a subscription's pending deliveries, oldest first, from the index.
func (t *Tx) PendingDeliveries(webhookID string) []PendingDelivery {
	prefix := mustID(webhookID)
	var out []PendingDelivery
	c := t.kv.Bucket(bDeliveriesPending).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != 32 || len(v) != 8 {
			continue
		}
		out = append(out, PendingDelivery{ID: idString(k[16:]), Next: time.Unix(0, int64(binary.BigEndian.Uint64(v)))})
	}
	return out
}

// WebhooksWithPending lists the subscriptions that have pending deliveries (each once).
func (t *Tx) WebhooksWithPending() []string {
	var out []string
	c := t.kv.Bucket(bDeliveriesPending).Cursor()
	for k, _ := c.First(); k != nil; {
		if len(k) < 16 {
			k, _ = c.Next()
			continue
		}
		out = append(out, idString(k[:16]))
		next := append(append([]byte(nil), k[:16]...), bytes.Repeat([]byte{0xff}, 16)...)
		k, _ = c.Seek(next)
		if k != nil && bytes.Equal(k, next) {
			k, _ = c.Next()
		}
	}
	return out
}

// CountPendingDeliveries counts pending deliveries of every subscription, up to max.
func (t *Tx) CountPendingDeliveries(max int) int {
	return countAfter(t.kv.Bucket(bDeliveriesPending), nil, max)
}

// ListDeliveries returns one page of a subscription's deliveries, newest first, and their total.
func (t *Tx) ListDeliveries(webhookID string, offset, limit int) ([]*Delivery, int, error) {
	prefix := mustID(webhookID)
	var out []*Delivery
	total := 0
	c := t.kv.Bucket(bDeliveries).Cursor()
	end := append(append([]byte(nil), prefix...), bytes.Repeat([]byte{0xff}, 16)...)
	k, v := c.Seek(end)
	if k == nil {
		k, v = c.Last()
	} else if !bytes.Equal(k, end) {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		total++
		if total <= offset || len(out) >= limit {
			continue
		}
		var d Delivery
		if err := Decode(v, &d); err != nil {
			return nil, 0, err
		}
		out = append(out, &d)
	}
	return out, total, nil
}

// CancelPendingDeliveries marks every pending delivery of a subscription cancelled, with reason
// as its last error, and returns how many it cancelled of each event type.
func (t *Tx) CancelPendingDeliveries(webhookID, reason string, at time.Time) (map[string]int, error) {
	pending := t.PendingDeliveries(webhookID)
	out := map[string]int{}
	for _, p := range pending {
		d, err := t.Delivery(webhookID, p.ID)
		if err != nil {
			return nil, err
		}
		d.Status = DeliveryCancelled
		d.NextAttemptAt = nil
		r := reason
		d.LastError = &r
		done := at.UTC()
		d.CompletedAt = &done
		if err := t.PutDelivery(d); err != nil {
			return nil, err
		}
		out[d.Type]++
	}
	return out, nil
}

// PruneDeliveries deletes up to max finished delivery records created before cutoff (the time is
// read from the UUIDv7 delivery id, so records are not decoded) and reports how many it deleted
// and whether it stopped at max.
func (t *Tx) PruneDeliveries(cutoff time.Time, max int) (int, bool, error) {
	pending := t.kv.Bucket(bDeliveriesPending)
	c := t.kv.Bucket(bDeliveries).Cursor()
	n := 0
	cut := cutoff.UnixMilli()
	for k, _ := c.First(); k != nil; {
		if n >= max {
			return n, true, nil
		}
		if len(k) == 32 && uuidV7Millis(k[16:]) < cut && pending.Get(k) == nil {
			key := append([]byte(nil), k...)
			if err := c.Delete(); err != nil {
				return n, false, err
			}
			n++
			k, _ = c.Seek(key)
			continue
		}
		k, _ = c.Next()
	}
	return n, false, nil
}

func uuidV7Millis(id []byte) int64 {
	return int64(id[0])<<40 | int64(id[1])<<32 | int64(id[2])<<24 | int64(id[3])<<16 | int64(id[4])<<8 | int64(id[5])
}

// EventsPending counts the outbox events after the consumer's cursor, up to max, without decoding
// them.
func (t *Tx) EventsPending(consumer string, max int) int {
	return countAfter(t.kv.Bucket(bEvents), t.kv.Bucket(bEventCursors).Get([]byte(consumer)), max)
}

// WebhooksInKeys lists the ids of a workspace's subscriptions (scope: Scope), from the index.
func (t *Tx) WebhooksInKeys(scope string) []string {
	return t.idsUnder(bWebhooksUser, scope)
}
