package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldhq/herald/persistence"
)

// Key use (a key's last_used_at) is recorded without a write per request. Authenticate notes the
// time of each accepted request in memory, per key; FlushUse writes every key noted since the
// last flush in one transaction. The server flushes every minute (RunUseFlusher) and once more
// at shutdown, so a key costs at most one write a minute however busy it is, and a crash forgets
// at most the last minute's uses. Listings overlay the notes not yet written (WithUse), so the
// dashboard shows a use at once.

// DefaultUseFlushEvery is how often noted key uses are written.
const DefaultUseFlushEvery = time.Minute

type keyUse struct {
	mu      sync.Mutex
	pending map[string]time.Time // key id → latest use not yet written
}

func (u *keyUse) note(id string, t time.Time) {
	u.mu.Lock()
	if u.pending == nil {
		u.pending = map[string]time.Time{}
	}
	if t.After(u.pending[id]) {
		u.pending[id] = t
	}
	u.mu.Unlock()
}

func (u *keyUse) get(id string) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.pending[id]
	return t, ok
}

// take empties the notes and returns them.
func (u *keyUse) take() map[string]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := u.pending
	u.pending = nil
	return out
}

// putBack returns notes a failed flush could not write (a newer note wins).
func (u *keyUse) putBack(m map[string]time.Time) {
	for id, t := range m {
		u.note(id, t)
	}
}

// FlushUse writes the key uses noted since the last flush, in one transaction. A key's
// last_used_at only moves forward; a key that no longer exists is skipped. On failure the notes
// are kept for the next flush.
func (a *Authenticator) FlushUse(ctx context.Context) error {
	notes := a.use.take()
	if len(notes) == 0 {
		return nil
	}
	err := a.store.Update(ctx, func(tx *persistence.Tx) error {
		for id, t := range notes {
			k, err := tx.APIKey(id)
			if errors.Is(err, persistence.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if k.LastUsedAt != nil && !t.After(*k.LastUsedAt) {
				continue
			}
			t := t.UTC()
			k.LastUsedAt = &t
			if err := tx.PutAPIKey(k, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		a.use.putBack(notes)
	}
	return err
}

// RunUseFlusher flushes noted key uses every interval until ctx ends, then once more. log
// receives a failed flush.
func (a *Authenticator) RunUseFlusher(ctx context.Context, every time.Duration, log func(msg string, args ...any)) {
	if every <= 0 {
		every = DefaultUseFlushEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := a.FlushUse(context.Background()); err != nil {
				log("storing the API keys' last use failed", "error", err)
			}
			return
		case <-t.C:
			if err := a.FlushUse(ctx); err != nil {
				log("storing the API keys' last use failed", "error", err)
			}
		}
	}
}

// WithUse sets each listed key's LastUsedAt to its latest use, noted or written.
func (a *Authenticator) WithUse(keys []KeyInfo) []KeyInfo {
	for i := range keys {
		if t, ok := a.use.get(keys[i].ID); ok && (keys[i].LastUsedAt == nil || t.After(*keys[i].LastUsedAt)) {
			t := t.UTC()
			keys[i].LastUsedAt = &t
		}
	}
	return keys
}
