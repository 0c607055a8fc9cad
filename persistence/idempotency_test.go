package persistence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/pgtest"
)

// The first transaction that claims an Idempotency-Key stores its answer; a later one within the
// retention is refused with ErrIdempotencyKeyUsed and its writes are not kept; past the
// retention the key is free again.
func TestAnIdempotencyKeyIsClaimedOnce(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		key := []byte("user\x00POST /v1/posts/publish\x00order-1")
		now := time.Now().UTC()
		first := &IdempotencyRecord{Fingerprint: []byte("a"), Status: 202, Body: []byte(`{"tracking_id":"1"}`), CreatedAt: now}
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.ClaimIdempotency(key, first) }))

		second := &IdempotencyRecord{Fingerprint: []byte("a"), Status: 202, Body: []byte(`{"tracking_id":"2"}`), CreatedAt: now.Add(time.Second)}
		err := s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.PutIdempotency([]byte("written beside the claim"), second); err != nil {
				return err
			}
			return tx.ClaimIdempotency(key, second)
		})
		require.ErrorIs(t, err, ErrIdempotencyKeyUsed)
		require.NoError(t, s.View(func(tx *Tx) error {
			rec, err := tx.Idempotency(key)
			require.NoError(t, err)
			require.JSONEq(t, `{"tracking_id":"1"}`, string(rec.Body), "the first answer stands")
			_, err = tx.Idempotency([]byte("written beside the claim"))
			require.ErrorIs(t, err, ErrNotFound, "the refused transaction wrote nothing")
			return nil
		}))

		later := &IdempotencyRecord{Fingerprint: []byte("b"), Status: 202, Body: []byte(`{"tracking_id":"3"}`), CreatedAt: now.Add(IdempotencyRetention + time.Second)}
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.ClaimIdempotency(key, later) }),
			"a key whose answer is past the retention is free again")
	})
}

// Two processes claiming the same keys at once (their transactions overlap: each reads the key
// absent before either commits) never both commit a claim: PostgreSQL's serializable isolation
// fails one, which runs again, finds the other's answer and is refused.
func TestConcurrentClaimsOfAKeyOnTwoStoresCommitOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	stores := []*Store{openShared(t, url), openShared(t, url)}
	const keys = 20
	var mu sync.Mutex
	claimed := map[string][]int{}
	var wg sync.WaitGroup
	for k := range keys {
		key := []byte(fmt.Sprintf("key-%d", k))
		start := make(chan struct{})
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				rec := &IdempotencyRecord{Fingerprint: []byte("f"), Status: 202, Body: []byte(fmt.Sprintf(`{"by":%d}`, i)), CreatedAt: time.Now().UTC()}
				err := s.Update(context.Background(), func(tx *Tx) error { return tx.ClaimIdempotency(key, rec) })
				if err == nil {
					mu.Lock()
					claimed[string(key)] = append(claimed[string(key)], i)
					mu.Unlock()
					return
				}
				if !errors.Is(err, ErrIdempotencyKeyUsed) {
					t.Errorf("claim of %s through store %d: %v", key, i, err)
				}
			}()
		}
		close(start)
	}
	wg.Wait()
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		require.Len(t, claimed[key], 1, "%s claimed by %v", key, claimed[key])
		require.NoError(t, stores[0].View(func(tx *Tx) error {
			rec, err := tx.Idempotency([]byte(key))
			require.NoError(t, err)
			require.JSONEq(t, fmt.Sprintf(`{"by":%d}`, claimed[key][0]), string(rec.Body), "the stored answer is the claim that committed")
			return nil
		}))
	}
}
