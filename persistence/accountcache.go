package persistence

import (
	"sync"
	"sync/atomic"
)

// accountCache remembers which connected accounts belong to which workspace, and their platform, so
// that validating a post's targets (on every create and publish) needs no read transaction.
// Entries are learnt from reads and forgotten once a deletion has committed. A generation,
// bumped by every forget, keeps a read that raced a deletion from storing what it saw before
// the deletion.
type accountCache struct {
	mu  sync.RWMutex
	gen uint64
	m   map[[32]byte]accountEntry
	// bypass is set while deletions by other processes could go unheard (the PostgreSQL
	// backend's listening connection is down): every look-up then reads the store.
	bypass atomic.Bool
}

// accountEntry is what the cache knows of an account: its platform and whether it has default
// options. An account whose defaults change is forgotten once the change committed (the account's
// actor saves it and forgets it; on PostgreSQL every write of the user index notifies the other
// processes, as a deletion does).
type accountEntry struct {
	platform string
	defaults bool
}

// maxCachedAccounts bounds the cache; past it the cache starts over.
const maxCachedAccounts = 1 << 20

func accountKey(scope, accountID string) (k [32]byte) {
	appendID(k[:0], scope)
	appendID(k[16:16], accountID)
	return k
}

// AccountPlatform returns the platform of the workspace's connected account; ok is false when the
// user has no such account. It reads the index once per account and then answers from memory.
func (s *Store) AccountPlatform(scope, accountID string) (platform string, ok bool, err error) {
	e, ok, err := s.accountEntry(scope, accountID)
	return e.platform, ok, err
}

// AccountHasDefaults reports whether the workspace's account has default options (ok is false when
// the workspace has no such account), from memory once the account was read.
func (s *Store) AccountHasDefaults(scope, accountID string) (defaults, ok bool, err error) {
	e, ok, err := s.accountEntry(scope, accountID)
	return e.defaults, ok, err
}

func (s *Store) accountEntry(scope, accountID string) (e accountEntry, ok bool, err error) {
	c := &s.accounts
	k := accountKey(scope, accountID)
	if c.bypass.Load() {
		e, ok, err = s.readAccountEntry(scope, accountID)
		return e, ok && err == nil, err
	}
	c.mu.RLock()
	e, ok = c.m[k]
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return e, true, nil
	}
	if e, ok, err = s.readAccountEntry(scope, accountID); err != nil || !ok {
		return accountEntry{}, false, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.m == nil || len(c.m) >= maxCachedAccounts {
			c.m = make(map[[32]byte]accountEntry)
		}
		c.m[k] = e
	}
	c.mu.Unlock()
	return e, true, nil
}

// readAccountEntry reads an account's entry from the store. It is a function of its own so that
// the results its read closes over are allocated on a miss only, not on every hit of the cache.
func (s *Store) readAccountEntry(scope, accountID string) (e accountEntry, ok bool, err error) {
	err = s.View(func(tx *Tx) error {
		e.platform, e.defaults, ok = tx.accountIndex(scope, accountID)
		return nil
	})
	return e, ok, err
}

// ForgetAccount drops an account from the cache. Call it after its deletion, or a change of its
// default options, committed.
func (s *Store) ForgetAccount(scope, accountID string) {
	s.accounts.forget(accountKey(scope, accountID))
}

func (c *accountCache) forget(k [32]byte) {
	c.mu.Lock()
	c.gen++
	delete(c.m, k)
	c.mu.Unlock()
}

// forgetAll empties the cache and sets whether it is bypassed from now on.
func (c *accountCache) forgetAll(bypass bool) {
	c.mu.Lock()
	c.gen++
	c.m = nil
	c.bypass.Store(bypass)
	c.mu.Unlock()
}
