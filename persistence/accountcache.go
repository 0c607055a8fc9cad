package persistence

import "sync"

// accountCache remembers which connected accounts belong to which user, and their platform, so
// that validating a post's targets (on every create and publish) needs no read transaction.
// Entries are learnt from reads and forgotten once a deletion has committed. A generation,
// bumped by every forget, keeps a read that raced a deletion from storing what it saw before
// the deletion.
type accountCache struct {
	mu  sync.RWMutex
	gen uint64
	m   map[[32]byte]string
}

// maxCachedAccounts bounds the cache; past it the cache starts over.
const maxCachedAccounts = 1 << 20

func accountKey(userID, accountID string) (k [32]byte) {
	copy(k[:16], mustID(userID))
	copy(k[16:], mustID(accountID))
	return k
}

// AccountPlatform returns the platform of the user's connected account; ok is false when the
// user has no such account. It reads the index once per account and then answers from memory.
func (s *Store) AccountPlatform(userID, accountID string) (platform string, ok bool, err error) {
	c := &s.accounts
	k := accountKey(userID, accountID)
	c.mu.RLock()
	platform, ok = c.m[k]
	gen := c.gen
	c.mu.RUnlock()
	if ok {
		return platform, true, nil
	}
	err = s.View(func(tx *Tx) error {
		platform, ok = tx.AccountPlatform(userID, accountID)
		return nil
	})
	if err != nil || !ok {
		return "", false, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.m == nil || len(c.m) >= maxCachedAccounts {
			c.m = make(map[[32]byte]string)
		}
		c.m[k] = platform
	}
	c.mu.Unlock()
	return platform, true, nil
}

// ForgetAccount drops a deleted account from the cache. Call it after the deletion committed.
func (s *Store) ForgetAccount(userID, accountID string) {
	c := &s.accounts
	c.mu.Lock()
	c.gen++
	delete(c.m, accountKey(userID, accountID))
	c.mu.Unlock()
}
