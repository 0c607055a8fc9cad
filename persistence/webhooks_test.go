package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func newDelivery(webhookID string, created time.Time, status string) *persistence.Delivery {
	id, _ := uuid.NewV7()
	// The id's first 48 bits are its creation time in milliseconds.
	ms := created.UnixMilli()
	for i := 0; i < 6; i++ {
		id[i] = byte(ms >> (40 - 8*i))
	}
	return &persistence.Delivery{ID: id.String(), WebhookID: webhookID, EventID: uuid.NewString(), Type: persistence.PostEventPublished,
		CreatedAt: created, Body: []byte(`{}`), Status: status}
}

func TestWebhookIndexesAndDeliveryLog(t *testing.T) {
	persistence.EachStore(t, webhookIndexesAndDeliveryLog)
}

func webhookIndexesAndDeliveryLog(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	user, other := uuid.NewString(), uuid.NewString()
	a := &persistence.Webhook{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, URL: "https://a.example/h", Events: []string{persistence.PostEventPublished}, Active: true}
	b := &persistence.Webhook{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, URL: "https://b.example/h", Events: persistence.WebhookEvents, Active: false}
	c := &persistence.Webhook{ID: uuid.Must(uuid.NewV7()).String(), UserID: other, URL: "https://c.example/h", Events: persistence.WebhookEvents, Active: true}
	now := time.Now().UTC()
	old := now.Add(-40 * 24 * time.Hour)
	var ds []*persistence.Delivery
	for i := 0; i < 5; i++ {
		ds = append(ds, newDelivery(a.ID, old.Add(time.Duration(i)*time.Millisecond), persistence.DeliverySucceeded))
	}
	oldPending := newDelivery(a.ID, old.Add(time.Second), persistence.DeliveryPending)
	recent := newDelivery(a.ID, now, persistence.DeliveryFailed)
	cPending := newDelivery(c.ID, now, persistence.DeliveryPending)
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		for _, w := range []*persistence.Webhook{a, b, c} {
			if err := tx.PutWebhook(w); err != nil {
				return err
			}
		}
		for _, d := range append(ds, oldPending, recent, cPending) {
			if err := tx.PutDelivery(d); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		require.Equal(t, []string{a.ID}, tx.SubscribersOf(user, persistence.PostEventPublished))
		require.Empty(t, tx.SubscribersOf(user, persistence.PostEventFailed), "b is inactive")
		require.Empty(t, tx.SubscribersOf(user, "job.progress"), "unknown types reach no one")
		require.Equal(t, 2, tx.CountWebhooks(user))
		require.ElementsMatch(t, []string{a.ID, c.ID}, tx.WebhooksWithPending())
		require.Equal(t, 2, tx.CountPendingDeliveries(100))
		list, total, err := tx.ListDeliveries(a.ID, 0, 3)
		require.NoError(t, err)
		require.Equal(t, 7, total)
		require.Equal(t, recent.ID, list[0].ID, "newest first")
		require.Len(t, list, 3)
		return nil
	}))

	// Pruning deletes finished records older than the cutoff, never pending ones.
	var n int
	var more bool
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) (err error) {
		n, more, err = tx.PruneDeliveries(now.Add(-30*24*time.Hour), 3)
		return err
	}))
	require.Equal(t, 3, n)
	require.True(t, more)
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) (err error) {
		n, more, err = tx.PruneDeliveries(now.Add(-30*24*time.Hour), 100)
		return err
	}))
	require.Equal(t, 2, n)
	require.False(t, more)
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		list, total, err := tx.ListDeliveries(a.ID, 0, 100)
		require.NoError(t, err)
		require.Equal(t, 2, total)
		require.ElementsMatch(t, []string{oldPending.ID, recent.ID}, []string{list[0].ID, list[1].ID})
		return nil
	}))

	// Cancelling and deleting keep the pending index true.
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		got, err := tx.CancelPendingDeliveries(a.ID, "cancelled: test", now)
		require.Equal(t, map[string]int{persistence.PostEventPublished: 1}, got)
		return err
	}))
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.DeleteWebhook(c) }))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		require.Empty(t, tx.WebhooksWithPending())
		d, err := tx.Delivery(a.ID, oldPending.ID)
		require.NoError(t, err)
		require.Equal(t, persistence.DeliveryCancelled, d.Status)
		_, err = tx.Delivery(c.ID, cPending.ID)
		require.ErrorIs(t, err, persistence.ErrNotFound)
		_, err = tx.Webhook(c.ID)
		require.ErrorIs(t, err, persistence.ErrNotFound)
		require.Empty(t, tx.SubscribersOf(other, persistence.PostEventPublished))
		return nil
	}))
}

func TestEventsPending(t *testing.T) { persistence.EachStore(t, eventsPending) }

func eventsPending(t *testing.T, s *persistence.Store) {
	ctx := context.Background()
	var ids []string
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error {
		ids = nil
		for i := 0; i < 5; i++ {
			ev := &persistence.Event{Type: persistence.PostEventDeleted, Data: []byte(`{}`)}
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
			ids = append(ids, ev.ID) // the id is taken at the append
		}
		return nil
	}))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		require.Equal(t, 5, tx.EventsPending("c", 100))
		require.Equal(t, 3, tx.EventsPending("c", 3))
		return nil
	}))
	require.NoError(t, s.Update(ctx, func(tx *persistence.Tx) error { return tx.AdvanceEvents("c", ids[1]) }))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		require.Equal(t, 3, tx.EventsPending("c", 100))
		require.Equal(t, 5, tx.EventsPending("other", 100))
		return nil
	}))
}

// A delivery keeps the receiver's answer, text or binary bytes alike, on both backends.
func TestDeliveryKeepsTheAnswer(t *testing.T) { persistence.EachStore(t, deliveryKeepsTheAnswer) }

func deliveryKeepsTheAnswer(t *testing.T, s *persistence.Store) {
	hook := uuid.Must(uuid.NewV7()).String()
	text := newDelivery(hook, time.Now().UTC(), persistence.DeliveryFailed)
	code := 422
	text.LastStatusCode = &code
	text.LastResponseBody, text.LastResponseSize = []byte(`{"error":"<unknown post>"}`), 9000
	binary := newDelivery(hook, time.Now().UTC(), persistence.DeliverySucceeded)
	binary.LastResponseBody, binary.LastResponseSize = []byte{0x89, 'P', 'N', 'G', 0, 0xff}, 6
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.PutDelivery(text); err != nil {
			return err
		}
		return tx.PutDelivery(binary)
	}))
	require.NoError(t, s.View(func(tx *persistence.Tx) error {
		got, err := tx.Delivery(hook, text.ID)
		require.NoError(t, err)
		require.Equal(t, text.LastResponseBody, got.LastResponseBody)
		require.Equal(t, int64(9000), got.LastResponseSize)
		require.Equal(t, 422, *got.LastStatusCode)
		got, err = tx.Delivery(hook, binary.ID)
		require.NoError(t, err)
		require.Equal(t, binary.LastResponseBody, got.LastResponseBody)
		require.Equal(t, int64(6), got.LastResponseSize)
		return nil
	}))
}
