package persistence

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Event is a post lifecycle event (post.published, post.failed, post.scheduled, post.deleted) or
// a campaign's (campaign.completed), written to the outbox in the same transaction as the state
// change that caused it, so that no event is lost at a crash and none exists for a change that
// did not commit.
type Event struct {
	ID     string `json:"id"` // UUIDv7 taken at commit (AppendEvent): outbox order is commit order
	Type   string `json:"type"`
	UserID string `json:"user_id"`
	// WorkspaceID is the workspace it belongs to ("" for its user's main workspace; Scope).
	WorkspaceID string          `json:"workspace_id,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	Data        json.RawMessage `json:"data"`
}

// The outbox buckets:
//
//	events       event id → Event (JSON); kept until every consumer has taken it
//	event_cursors consumer name → the id (16 bytes) of the last event it took
var (
	bEvents       = []byte("events")
	bEventCursors = []byte("event_cursors")
)

func init() { registerBuckets(bEvents, bEventCursors) }

// outboxID is the id of the outbox's topic (OutboxTopic): there is one outbox.
var outboxID [16]byte

// AppendEvent writes an event to the outbox within the caller's transaction, under an id taken
// now (it sets e.ID). The group committer runs the transactions' functions one after another, so
// ids taken inside them (UUIDv7, monotonic in the process) follow the order in which the events
// commit, and a consumer's cursor (EventsAfter, AdvanceEvents) never passes an event that has yet
// to commit. An id taken before the transaction could commit after a later one that a consumer
// has already passed, and that event would never be read.
func (t *Tx) AppendEvent(e *Event) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	e.ID = id.String()
	t.touch(topicOutbox, outboxID[:])
	return t.put(bEvents, mustID(e.ID), e)
}

// eventsFrom places a cursor of the outbox on the first event after the consumer's cursor.
// near, when not "", is the event id the consumer expects its cursor to be at (the one it last
// advanced to): the outbox is read there before the cursor's row is, so that a transaction that
// reads ahead (Store.UpdateAhead) reads both in one round trip instead of the one after the
// other. The cursor's row decides where the read starts, whatever near says.
// want is how many events the consumer means to read: the read at near asks for them at once.
func (t *Tx) eventsFrom(consumer, near string, want int) (c kvCursor, k, v []byte) {
	c = t.kv.Bucket(bEvents).Cursor()
	var nearKey, nk, nv []byte
	if near != "" {
		nearKey = mustID(near)
		if p, ok := c.(kvPager); ok {
			p.wantPage(want + 1) // the event at near, and those after it
		}
		nk, nv = c.Seek(nearKey)
	}
	cur := t.kv.Bucket(bEventCursors).Get([]byte(consumer))
	if cur == nil {
		if t.guessing(bEventCursors, []byte(consumer)) {
			// A probe reading ahead has no answer for the cursor yet: the walk from the first
			// event is only for a consumer with no cursor, and the next round knows.
			return c, nil, nil
		}
		k, v = c.First()
		return c, k, v
	}
	if nearKey != nil && bytes.Equal(cur, nearKey) {
		k, v = nk, nv
	} else {
		k, v = c.Seek(cur)
	}
	if k != nil && bytes.Equal(k, cur) {
		k, v = c.Next()
	}
	return c, k, v
}

// EventsAfter returns up to limit events after the consumer's cursor, oldest first.
func (t *Tx) EventsAfter(consumer string, limit int) ([]*Event, error) {
	c, k, v := t.eventsFrom(consumer, "", 0)
	var out []*Event
	for ; k != nil && len(out) < limit; k, v = c.Next() {
		var e Event
		if err := Decode(v, &e); err != nil {
			return nil, err
		}
		out = append(out, &e)
	}
	return out, nil
}

// EventsWanted is EventsAfter for a consumer that takes only some events: it reads up to limit
// events after the consumer's cursor, oldest first, and returns, decoded, those that wanted
// accepts (given the event's scope and type), with how many it read and the id of the last one
// read ("" when none), for AdvanceEvents. An event nobody wants is read only as far as its scope
// and type: its other fields are checked, not decoded. A record the scan does not recognise
// is decoded whole, and one that cannot be decoded is an error, as in EventsAfter.
func (t *Tx) EventsWanted(consumer string, limit int, wanted func(scope, typ string) bool) (out []*Event, read int, last string, err error) {
	return t.EventsWantedNear(consumer, "", limit, wanted)
}

// EventsWantedNear is EventsWanted for a consumer that expects its cursor at the event id near
// (the last it advanced to; "" when it does not know): the same events, read in fewer round
// trips on PostgreSQL when near is right (eventsFrom).
func (t *Tx) EventsWantedNear(consumer, near string, limit int, wanted func(scope, typ string) bool) (out []*Event, read int, last string, err error) {
	c, k, v := t.eventsFrom(consumer, near, limit)
	var lastKey []byte
	for ; k != nil && read < limit; k, v = c.Next() {
		read++
		lastKey = k
		h, scanned := eventHeaderOf(v)
		if scanned && !wanted(Scope(h.UserID, h.WorkspaceID), h.Type) {
			continue
		}
		var e Event
		if err := Decode(v, &e); err != nil {
			return nil, 0, "", err
		}
		if scanned || wanted(e.Scope(), e.Type) { // wanted is asked once an event
			out = append(out, &e)
		}
	}
	if lastKey != nil {
		last = idString(lastKey)
	}
	return out, read, last, nil
}

// eventHeader is what a consumer filters events on.
type eventHeader struct{ Type, UserID, WorkspaceID string }

// eventHeaderOf reads an event's type and scope, passing over (and checking) its other fields;
// false when the record has a field or form the scan does not recognise (see codec_decode.go).
func eventHeaderOf(b []byte) (eventHeader, bool) {
	var h eventHeader
	var mask uint32
	d := decoder{b: b, ok: true}
	ok := d.document(func() {
		d.fields(func(key []byte) {
			switch string(key) {
			case "type":
				d.seen(&mask, 0)
				h.Type = d.str()
			case "user_id":
				d.seen(&mask, 1)
				h.UserID = d.str()
			case "workspace_id":
				d.seen(&mask, 2)
				h.WorkspaceID = d.str()
			case "id":
				d.seen(&mask, 3)
				if d.peek() != '"' {
					d.fail()
				}
				d.skipString()
			case "created_at":
				d.seen(&mask, 4)
				d.time()
			case "data":
				d.seen(&mask, 5)
				d.skip()
			default:
				d.fail()
			}
		})
	})
	return h, ok
}

// AdvanceEvents moves the consumer's cursor to the event id (it has taken every event up to it).
func (t *Tx) AdvanceEvents(consumer, eventID string) error {
	return t.kv.Bucket(bEventCursors).Put([]byte(consumer), mustID(eventID))
}

// PruneEvents deletes, oldest first, up to limit events that every consumer has taken and that
// were created before cutoff, and reports how many it deleted. Consumers are those with a cursor.
func (t *Tx) PruneEvents(cutoff time.Time, limit int) (int, error) {
	var minCursor []byte
	cc := t.kv.Bucket(bEventCursors).Cursor()
	for k, v := cc.First(); k != nil; k, v = cc.Next() {
		if minCursor == nil || bytes.Compare(v, minCursor) < 0 {
			minCursor = append([]byte(nil), v...)
		}
	}
	if minCursor == nil {
		return 0, nil // no consumer yet: keep everything for the first one
	}
	b := t.kv.Bucket(bEvents)
	c := b.Cursor()
	var dead [][]byte
	for k, v := c.First(); k != nil && len(dead) < limit && bytes.Compare(k, minCursor) <= 0; k, v = c.Next() {
		var e Event
		if err := Decode(v, &e); err == nil && !e.CreatedAt.Before(cutoff) {
			break
		}
		dead = append(dead, append([]byte(nil), k...))
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}
