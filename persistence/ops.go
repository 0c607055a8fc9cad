package persistence

import (
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

// Operational read-outs for /metrics: what an operator watches of the store itself (file size,
// free pages, open readers), of the jobs still running, and of connected accounts' token expiry.
// They read committed state and touch no bucket of their own.

// DBStats is a snapshot of the bbolt file. On PostgreSQL only SizeBytes is set: the size of the
// store's tables with their indexes.
type DBStats struct {
	// SizeBytes is the size of the data file as bbolt sees it (the high-water mark: bbolt never
	// shrinks its file; `bbolt compact` does).
	SizeBytes int64
	// FreeBytes is the space in free pages, reusable by later writes.
	FreeBytes int64
	// PendingPages are pages freed by writes but still visible to an open read transaction.
	PendingPages int
	// OpenReadTx counts read transactions open right now.
	OpenReadTx int
}

// Stats reads the data file's statistics.
func (s *Store) Stats() DBStats {
	if s.pg != nil {
		return s.pg.stats()
	}
	st := s.db.Stats()
	out := DBStats{FreeBytes: int64(st.FreeAlloc), PendingPages: st.PendingPageN, OpenReadTx: st.OpenTxN}
	_ = s.db.View(func(tx *bolt.Tx) error {
		out.SizeBytes = tx.Size()
		return nil
	})
	return out
}

// ActiveJobStats counts the jobs whose post has not yet taken their outcome (queued, processing,
// or finished but not yet synced to the post) and returns the creation time of the oldest, read
// from its UUIDv7 tracking id (zero when there is none). It reads the count kept with the index
// and the index's first key, so it costs the same whatever the backlog.
func (t *Tx) ActiveJobStats() (n int, oldest time.Time) {
	c := t.kv.Bucket(bJobsActive).Cursor()
	k, _ := c.First()
	if k == nil {
		return 0, time.Time{}
	}
	var id uuid.UUID
	copy(id[:], k)
	if id.Version() == 7 {
		sec, nsec := id.Time().UnixTime()
		oldest = time.Unix(sec, nsec)
	}
	if n, ok := activeJobsCount(t.kv); ok {
		return n, oldest
	}
	for ; k != nil; k, _ = c.Next() {
		n++
	}
	return n, oldest
}

// AccountExpiry is the part of an account record the token-expiry read-out needs.
type AccountExpiry struct {
	Platform         string     `json:"platform"`
	IsActive         bool       `json:"is_active"`
	TokenExpiresAt   *time.Time `json:"token_expires_at"`
	Refreshes        bool       `json:"refreshes"`
	RefreshExpiresAt *time.Time `json:"refresh_expires_at"`
	ReconnectAt      *time.Time `json:"reconnect_at"`
}

// Account returns the token fields as an Account, for the rules that read them.
func (a AccountExpiry) Account() *Account {
	return &Account{Platform: a.Platform, IsActive: a.IsActive, TokenExpiresAt: a.TokenExpiresAt,
		Refreshes: a.Refreshes, RefreshExpiresAt: a.RefreshExpiresAt, ReconnectAt: a.ReconnectAt}
}

// EachAccountExpiry calls fn for every connected account of every user, decoding only its
// platform, active flag and token expiry (never its sealed credentials).
func (t *Tx) EachAccountExpiry(fn func(AccountExpiry)) error {
	c := t.kv.Bucket(bAccounts).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var a AccountExpiry
		if err := Decode(v, &a); err != nil {
			return err
		}
		fn(a)
	}
	return nil
}
