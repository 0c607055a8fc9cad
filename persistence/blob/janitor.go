package blob

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// sweepBatch bounds the records one transaction of the janitor handles.
const sweepBatch = 256

// Sweep deletes the uploads that were presigned more than PendingTTL ago and never confirmed:
// the record first (in a transaction that checks it is still unconfirmed, so a confirm that
// commits first wins), then the bytes. A media that a post which is not final (draft, scheduled,
// publishing) references is never deleted. Bytes whose deletion fails stay recorded as orphans
// and are retried on the next sweep. It returns how many uploads it deleted.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	// Presigned at or before now - PendingTTL: at least PendingTTL old.
	cutoff := s.o.Now().Add(-s.o.PendingTTL).Add(time.Nanosecond)
	deleted := 0
	for {
		var batch []*persistence.Media
		if err := s.o.Store.View(func(tx *persistence.Tx) error {
			var err error
			batch, err = tx.PendingMediaBefore(cutoff, sweepBatch)
			return err
		}); err != nil {
			return deleted, err
		}
		var gone []string
		err := s.o.Store.Update(ctx, func(tx *persistence.Tx) error {
			gone = gone[:0]
			for _, m := range batch {
				cur, err := tx.Media(m.ID)
				if errors.Is(err, persistence.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if cur.Confirmed() {
					continue
				}
				inUse, err := tx.MediaInUse(cur.Scope(), cur.ID)
				if err != nil {
					return err
				}
				if inUse {
					continue
				}
				if err := tx.DeleteMedia(cur); err != nil {
					return err
				}
				gone = append(gone, cur.Key)
			}
			return nil
		})
		if err != nil {
			return deleted, err
		}
		deleted += len(gone)
		if err := s.deleteOrphans(ctx); err != nil {
			return deleted, err
		}
		if len(batch) < sweepBatch || len(gone) == 0 {
			return deleted, nil
		}
	}
}

// deleteOrphans deletes the bytes of deleted records.
func (s *Service) deleteOrphans(ctx context.Context) error {
	for {
		var keys []string
		_ = s.o.Store.View(func(tx *persistence.Tx) error {
			keys = tx.MediaOrphans(sweepBatch)
			return nil
		})
		if len(keys) == 0 {
			return nil
		}
		var done []string
		var firstErr error
		for _, k := range keys {
			if err := s.o.Blob.Delete(ctx, k); err != nil && !errors.Is(err, ErrBadKey) {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			done = append(done, k)
		}
		if len(done) > 0 {
			if err := s.o.Store.Update(ctx, func(tx *persistence.Tx) error {
				for _, k := range done {
					if err := tx.ForgetOrphan(k); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		if firstErr != nil {
			return firstErr
		}
		if len(keys) < sweepBatch {
			return nil
		}
	}
}

// RunJanitor sweeps every interval until ctx ends, logging failures.
func (s *Service) RunJanitor(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.Sweep(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.o.Log.Warn("media janitor: sweep failed", "deleted", n, "error", err)
		} else if n > 0 {
			s.o.Log.Info("media janitor: deleted unconfirmed uploads", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
