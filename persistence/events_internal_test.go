package persistence

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// EventsWanted returns, decoded, only the events its filter wants, counts and passes the others,
// and still reads a record of a form its scan does not recognise (it decodes it whole) and
// refuses one that cannot be decoded, as EventsAfter does.
func TestEventsWanted(t *testing.T) {
	EachStore(t, eventsWanted)
}

func eventsWanted(t *testing.T, s *Store) {
	ctx := context.Background()
	alice, bob, space := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, e := range []*Event{
		{Type: "post.published", UserID: alice, CreatedAt: time.Now(), Data: []byte(`{"n":1}`)},
		{Type: "post.failed", UserID: alice, CreatedAt: time.Now(), Data: []byte(`{"n":2}`)},
		{Type: "post.published", UserID: bob, CreatedAt: time.Now(), Data: []byte(`{"n":3}`)},
		{Type: "post.published", UserID: bob, WorkspaceID: space, CreatedAt: time.Now(), Data: []byte(`{"n":4}`)},
	} {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.AppendEvent(e) }))
	}
	// A record of another form (a key in another case): the scan leaves it to encoding/json.
	odd := uuid.Must(uuid.NewV7())
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		return tx.kv.Bucket(bEvents).Put(odd[:], []byte(`{"ID":"x","Type":"post.published","user_id":"`+alice+`","created_at":"2026-01-01T00:00:00Z","data":{"n":5}}`))
	}))

	var asked []string
	wanted := func(scope, typ string) bool {
		asked = append(asked, scope+" "+typ)
		return typ == "post.published" && (scope == alice || scope == space)
	}
	require.NoError(t, s.View(func(tx *Tx) error {
		evs, read, last, err := tx.EventsWanted("webhooks", 10, wanted)
		require.NoError(t, err)
		require.Equal(t, 5, read)
		require.Equal(t, odd.String(), last)
		var data []string
		for _, e := range evs {
			data = append(data, string(e.Data))
		}
		require.Equal(t, []string{`{"n":1}`, `{"n":4}`, `{"n":5}`}, data)
		require.Len(t, asked, 5, "the filter is asked once an event")

		// A limit stops the read; the last id read is the one to advance to.
		evs, read, last, err = tx.EventsWanted("webhooks", 2, wanted)
		require.NoError(t, err)
		require.Equal(t, 2, read)
		require.Len(t, evs, 1)
		all, err := tx.EventsAfter("webhooks", 10)
		require.NoError(t, err)
		require.Equal(t, all[1].ID, last)
		return nil
	}))
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.AdvanceEvents("webhooks", odd.String()) }))

	// A record that cannot be decoded is an error whether or not anyone wants it.
	bad := uuid.Must(uuid.NewV7())
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		return tx.kv.Bucket(bEvents).Put(bad[:], []byte(`{"type":"post.published","user_id":"`+alice+`","created_at":"yesterday","data":{}}`))
	}))
	require.NoError(t, s.View(func(tx *Tx) error {
		_, _, _, err := tx.EventsWanted("webhooks", 10, func(string, string) bool { return false })
		require.Error(t, err)
		return nil
	}))
}

// The scan of an event's type and scope agrees with encoding/json on what it accepts.
func TestEventHeaderOf(t *testing.T) {
	for _, c := range []struct {
		rec string
		ok  bool
	}{
		{`{"id":"i","type":"post.published","user_id":"u","created_at":"2026-01-01T00:00:00Z","data":{"a":[1,"\u00e9"]}}`, true},
		{`{"id":"i","type":"post.deleted","user_id":"u","workspace_id":"w","created_at":"2026-01-01T00:00:00.5+01:00","data":null}`, true},
		{`{"type":"post.published","Data":{}}`, false},
		{`{"type":"post.published","type":"post.failed"}`, false},
		{`{"id":1,"type":"post.published"}`, false},
		{`{"type":"post.published","created_at":"yesterday"}`, false},
		{`{"type":"post.published","data":{"a":}}`, false},
	} {
		h, ok := eventHeaderOf([]byte(c.rec))
		require.Equal(t, c.ok, ok, c.rec)
		if ok {
			var e Event
			require.NoError(t, Decode([]byte(c.rec), &e), c.rec)
			require.Equal(t, eventHeader{Type: e.Type, UserID: e.UserID, WorkspaceID: e.WorkspaceID}, h, c.rec)
		}
	}
}

// EventsWantedNear reads what EventsWanted reads whether near is the consumer's cursor, another
// event, or no event at all: the cursor decides where the read starts.
func TestEventsWantedNear(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		user := uuid.NewString()
		var ids []string
		for i := range 12 {
			e := &Event{Type: "post.published", UserID: user, CreatedAt: time.Now(), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}
			require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.AppendEvent(e) }))
			ids = append(ids, e.ID)
		}
		all := func(string, string) bool { return true }
		read := func(near string) (data []string, last string) {
			require.NoError(t, s.View(func(tx *Tx) error {
				evs, _, l, err := tx.EventsWantedNear("webhooks", near, 5, all)
				require.NoError(t, err)
				for _, e := range evs {
					data = append(data, string(e.Data))
				}
				last = l
				return nil
			}))
			return data, last
		}
		// No cursor yet: from the first event, wherever near points.
		for _, near := range []string{"", ids[3], uuid.NewString()} {
			data, last := read(near)
			require.Equal(t, []string{`{"n":0}`, `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`}, data, "near %q", near)
			require.Equal(t, ids[4], last)
		}
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.AdvanceEvents("webhooks", ids[4]) }))
		for _, near := range []string{"", ids[4], ids[2], ids[9], uuid.NewString()} {
			data, last := read(near)
			require.Equal(t, []string{`{"n":5}`, `{"n":6}`, `{"n":7}`, `{"n":8}`, `{"n":9}`}, data, "near %q", near)
			require.Equal(t, ids[9], last)
		}
	})
}

// On PostgreSQL a fan-out that knows where the cursor is and which scopes its events are likely
// of reads ahead in one round trip: the outbox's page at near (every event it will read, not a
// first few) and the subscriptions of those scopes go with the cursor's row, instead of the
// page after the row, and the subscriptions after the events that name their scopes.
func TestPostgresEventsWantedNearReadsAhead(t *testing.T) {
	t.Parallel()
	s, trips := openTracedPostgres(t)
	ctx := context.Background()
	user := uuid.NewString()
	var ids []string
	for i := range 14 {
		e := &Event{Type: "post.published", UserID: user, CreatedAt: time.Now(), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.AppendEvent(e) }))
		ids = append(ids, e.ID)
	}
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.AdvanceEvents("webhooks", ids[1]) }))
	// A fan-out as the webhooks' (the subscriptions of each event's scope), beside another
	// write, as one batch; it returns how many events it read and the last.
	fanout := func(near string, scopes []string) (trip int64, read int, last string) {
		fns := []func(*Tx) error{
			func(tx *Tx) error {
				tx.ReadSubscriptionsAhead(scopes)
				var err error
				_, read, last, err = tx.EventsWantedNear("webhooks", near, 256, func(scope, typ string) bool {
					return len(tx.SubscribersOf(scope, typ)) > 0
				})
				return err
			},
			func(tx *Tx) error { return tx.kv.Bucket(bKVTest).Put([]byte("other"), []byte{1}) },
		}
		before := trips.n.Load()
		for _, err := range commitBatch(s, true, fns) {
			require.NoError(t, err)
		}
		return trips.n.Load() - before, read, last
	}
	fanout("", nil) // the statements prepared on the connection
	far, read, last := fanout("", nil)
	require.Equal(t, 12, read)
	require.Equal(t, ids[13], last)
	near, read, last := fanout(ids[1], []string{Scope(user, "")})
	require.Equal(t, 12, read)
	require.Equal(t, ids[13], last)
	// BEGIN with every read; the writes with COMMIT.
	require.Equal(t, int64(2), near, "round trips with the cursor and scopes known ahead (against %d without)", far)
	require.Less(t, near, far)
}
