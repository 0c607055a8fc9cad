package persistence

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The seam's conformance tests (kv.go): what every backend's buckets and cursors must do, run
// over bbolt and PostgreSQL on a bucket of their own. (No bucket is nested in another: the seam
// has no nested buckets.)

var bKVTest = []byte("kv_conformance")

func init() { registerBuckets(bKVTest) }

var kvBackends = []struct {
	name string
	open func(t *testing.T) *Store
}{
	{"bbolt", func(t *testing.T) *Store { return openSuiteStore(t, nil) }},
	{"postgres", func(t *testing.T) *Store { return openSuitePostgres(t, nil) }},
}

func eachKV(t *testing.T, test func(t *testing.T, s *Store)) {
	t.Parallel()
	for _, b := range kvBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.open(t))
		})
	}
}

// kvUpdate runs fn in one write transaction of the backend, outside the group committer.
func kvUpdate(t *testing.T, s *Store, fn func(b kvBucket) error) error {
	t.Helper()
	return s.c.update(func(tx *Tx) error { return fn(tx.kv.Bucket(bKVTest)) })
}

func kvView(t *testing.T, s *Store, fn func(b kvBucket)) {
	t.Helper()
	require.NoError(t, s.c.view(func(tx *Tx) error { fn(tx.kv.Bucket(bKVTest)); return nil }))
}

func key(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }

// walk returns the keys from First to the end, and from Last to the start.
func walk(b kvBucket) (fwd, back []string) {
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		fwd = append(fwd, string(k))
	}
	for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
		back = append(back, string(k))
	}
	return fwd, back
}

func TestKVCursorOrderBothWays(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		// 3000 keys written in random order, half committed before and half pending in the
		// transaction that walks them: more than any cursor page.
		const n = 3000
		order := rand.Perm(n)
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for _, i := range order[:n/2] {
				if err := b.Put(key(i), []byte{byte(i)}); err != nil {
					return err
				}
			}
			return nil
		}))
		var want []string
		for i := range n {
			want = append(want, string(key(i)))
		}
		rev := slices.Clone(want)
		slices.Reverse(rev)
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for _, i := range order[n/2:] {
				require.NoError(t, b.Put(key(i), []byte{byte(i)}))
			}
			fwd, back := walk(b)
			require.Equal(t, want, fwd)
			require.Equal(t, rev, back)
			// Values follow their keys.
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				var i int
				_, _ = fmt.Sscanf(string(k), "k%05d", &i)
				require.Equal(t, []byte{byte(i)}, v, "value of %s", k)
			}
			return nil
		}))
		kvView(t, s, func(b kvBucket) {
			fwd, back := walk(b)
			require.Equal(t, want, fwd)
			require.Equal(t, rev, back)
			// Changing direction mid-way.
			c := b.Cursor()
			k, _ := c.Seek(key(1500))
			require.Equal(t, key(1500), k)
			k, _ = c.Next()
			require.Equal(t, key(1501), k)
			k, _ = c.Prev()
			require.Equal(t, key(1500), k)
			k, _ = c.Prev()
			require.Equal(t, key(1499), k)
		})
	})
}

func TestKVSeek(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for _, k := range []string{"b", "d", "f"} {
				require.NoError(t, b.Put([]byte(k), []byte("v"+k)))
			}
			return nil
		}))
		check := func(b kvBucket) {
			c := b.Cursor()
			for seek, want := range map[string]string{"a": "b", "b": "b", "c": "d", "d": "d", "e": "f", "f": "f", "\x00": "b", "bb": "d"} {
				k, v := c.Seek([]byte(seek))
				require.Equal(t, want, string(k), "seek %q", seek)
				require.Equal(t, "v"+want, string(v))
			}
			// Past the end.
			k, v := c.Seek([]byte("g"))
			require.Nil(t, k)
			require.Nil(t, v)
			// Prev from the first, Next from the last.
			k, _ = c.First()
			require.Equal(t, "b", string(k))
			k, _ = c.Prev()
			require.Nil(t, k)
			k, _ = c.Last()
			require.Equal(t, "f", string(k))
			k, _ = c.Next()
			require.Nil(t, k)
			// Seek to the last key, then Prev.
			k, _ = c.Seek([]byte("f"))
			require.Equal(t, "f", string(k))
			k, _ = c.Prev()
			require.Equal(t, "d", string(k))
		}
		kvView(t, s, check)
		// The same over pending writes only: a deleted-and-rewritten bucket in one transaction.
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for _, k := range []string{"b", "d", "f"} {
				require.NoError(t, b.Delete([]byte(k)))
			}
			k, _ := b.Cursor().First()
			require.Nil(t, k, "every key deleted in the transaction")
			for _, k := range []string{"b", "d", "f"} {
				require.NoError(t, b.Put([]byte(k), []byte("v"+k)))
			}
			check(b)
			return nil
		}))
	})
}

func TestKVEmptyBucket(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		kvView(t, s, func(b kvBucket) {
			c := b.Cursor()
			for _, f := range []func() ([]byte, []byte){c.First, c.Last, func() ([]byte, []byte) { return c.Seek([]byte("a")) }} {
				k, v := f()
				require.Nil(t, k)
				require.Nil(t, v)
			}
			require.Nil(t, b.Get([]byte("a")))
			require.False(t, b.Has([]byte("a")))
		})
	})
}

func TestKVDeletesDuringIteration(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		const n = 500
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for i := range n {
				require.NoError(t, b.Put(key(i), []byte("x")))
			}
			return nil
		}))
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			// The cursor deletes every even key, seeking again after each deletion as the
			// store's code does; the bucket deletes every key ending in 5 ahead of the cursor.
			c := b.Cursor()
			for k, _ := c.First(); k != nil; {
				var i int
				_, _ = fmt.Sscanf(string(k), "k%05d", &i)
				if i%10 == 3 && i+2 < n {
					require.NoError(t, b.Delete(key(i+2)))
				}
				if i%2 == 0 {
					at := slices.Clone(k)
					require.NoError(t, c.Delete())
					k, _ = c.Seek(at)
					continue
				}
				k, _ = c.Next()
			}
			return nil
		}))
		var want []string
		for i := range n {
			if i%2 == 1 && i%10 != 5 {
				want = append(want, string(key(i)))
			}
		}
		kvView(t, s, func(b kvBucket) {
			fwd, _ := walk(b)
			require.Equal(t, want, fwd)
		})
	})
}

func TestKVEmptyValuesAndMissingKeys(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		check := func(b kvBucket) {
			require.True(t, b.Has([]byte("empty")))
			require.Empty(t, b.Get([]byte("empty")))
			require.False(t, b.Has([]byte("missing")))
			require.Nil(t, b.Get([]byte("missing")))
			k, v := b.Cursor().Seek([]byte("empty"))
			require.Equal(t, "empty", string(k))
			require.Empty(t, v)
			k, _ = b.Cursor().Seek([]byte("missing"))
			require.Nil(t, k)
		}
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			require.NoError(t, b.Put([]byte("empty"), nil))
			check(b)
			return nil
		}))
		kvView(t, s, check)
		// An empty key is refused.
		require.Error(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put(nil, []byte("v")) }))
	})
}

func TestKVLargeValues(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		big := make([]byte, 4<<20)
		for i := range big {
			big[i] = byte(i * 7)
		}
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("big"), big) }))
		kvView(t, s, func(b kvBucket) {
			require.True(t, bytes.Equal(big, b.Get([]byte("big"))))
			_, v := b.Cursor().First()
			require.True(t, bytes.Equal(big, v))
		})
	})
}

func TestKVReadsOwnWrites(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("a"), []byte("1")) }))
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			require.Equal(t, "1", string(b.Get([]byte("a"))))
			require.NoError(t, b.Put([]byte("a"), []byte("2")))
			require.Equal(t, "2", string(b.Get([]byte("a"))))
			require.NoError(t, b.Put([]byte("b"), []byte("3")))
			require.Equal(t, "3", string(b.Get([]byte("b"))))
			require.NoError(t, b.Delete([]byte("a")))
			require.Nil(t, b.Get([]byte("a")))
			require.False(t, b.Has([]byte("a")))
			fwd, back := walk(b)
			require.Equal(t, []string{"b"}, fwd)
			require.Equal(t, []string{"b"}, back)
			require.NoError(t, b.Put([]byte("a"), []byte("4")))
			fwd, _ = walk(b)
			require.Equal(t, []string{"a", "b"}, fwd)
			require.Equal(t, "4", string(b.Get([]byte("a"))))
			return nil
		}))
		kvView(t, s, func(b kvBucket) {
			require.Equal(t, "4", string(b.Get([]byte("a"))))
			require.Equal(t, "3", string(b.Get([]byte("b"))))
		})
	})
}

func TestKVRollbackLeavesNothing(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("kept"), []byte("1")) }))
		refused := errors.New("refused")
		err := kvUpdate(t, s, func(b kvBucket) error {
			require.NoError(t, b.Put([]byte("new"), []byte("x")))
			require.NoError(t, b.Put([]byte("kept"), []byte("2")))
			require.NoError(t, b.Delete([]byte("kept")))
			return refused
		})
		require.ErrorIs(t, err, refused)
		kvView(t, s, func(b kvBucket) {
			fwd, _ := walk(b)
			require.Equal(t, []string{"kept"}, fwd)
			require.Equal(t, "1", string(b.Get([]byte("kept"))))
		})
		// A read transaction cannot write.
		require.Error(t, s.c.view(func(tx *Tx) error { return tx.kv.Bucket(bKVTest).Put([]byte("x"), nil) }))
	})
}

// On PostgreSQL a transaction that fails to serialize runs again from the start: its function
// runs twice, and only the second run's writes are kept.
func TestKVRetriedTransactionRunsAgain(t *testing.T) {
	t.Parallel()
	s := openSuitePostgres(t, nil)
	ctx := context.Background()
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Put([]byte("n"), []byte{1}) }))
	runs := 0
	err := s.Update(ctx, func(tx *Tx) error {
		runs++
		b := tx.kv.Bucket(bKVTest)
		n := b.Get([]byte("n"))[0]
		if runs == 1 {
			// Another connection changes the row after this transaction read it.
			_, err := s.pg.pool.Exec(ctx, `UPDATE "kv_kv_conformance" SET v = '\x05' WHERE k = 'n'`)
			require.NoError(t, err)
		}
		return b.Put([]byte("n"), []byte{n + 1})
	})
	require.NoError(t, err)
	require.Equal(t, 2, runs)
	kvView(t, s, func(b kvBucket) { require.Equal(t, []byte{6}, b.Get([]byte("n"))) })
}

// On PostgreSQL a deletion of an account is announced to every connection: a deletion that
// another process commits (here: another connection, as another Herald node would, without
// ForgetAccount in this process) ends the cached answer once its notification arrives, and a
// deletion committed through the store announces itself.
func TestAccountDeletionIsHeardAcrossConnections(t *testing.T) {
	t.Parallel()
	s := openSuitePostgres(t, nil)
	ctx := context.Background()
	a := &Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.Must(uuid.NewV7()).String(), Platform: "bluesky", CreatedAt: time.Now()}
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAccount(a) }))
	cached := func() bool {
		_, ok, err := s.AccountPlatform(a.UserID, a.ID)
		require.NoError(t, err)
		return ok
	}
	// Wait for the listener, then fill the cache, until the put's own notification (a write of the
	// user index notifies too) has come and gone.
	require.Eventually(t, func() bool { return !s.accounts.bypass.Load() }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		require.True(t, cached())
		time.Sleep(50 * time.Millisecond)
		s.accounts.mu.RLock()
		defer s.accounts.mu.RUnlock()
		_, in := s.accounts.m[accountKey(a.UserID, a.ID)]
		return in
	}, 10*time.Second, 10*time.Millisecond)
	key := join(mustID(a.UserID), mustID(a.ID))
	_, err := s.pg.pool.Exec(ctx, `DELETE FROM "kv_accounts_user" WHERE k = $1`, key)
	require.NoError(t, err)
	require.True(t, cached(), "answered from the cache until the notification")
	_, err = s.pg.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.pg.channel, hex.EncodeToString(key))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !cached() }, 10*time.Second, 10*time.Millisecond)

	// A deletion through the store notifies by itself: put the account back, cache it, delete
	// it without ForgetAccount.
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAccount(a) }))
	require.Eventually(t, cached, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.DeleteAccount(a) }))
	require.Eventually(t, func() bool { return !cached() }, 10*time.Second, 10*time.Millisecond)

	// A change of an account's default options notifies too, without ForgetAccount: what the
	// cache knew of them is read again.
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAccount(a) }))
	require.Eventually(t, cached, 10*time.Second, 10*time.Millisecond)
	a.DefaultOptions = []byte(`{"langs":["en"]}`)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { return tx.PutAccount(a) }))
	require.Eventually(t, func() bool {
		has, ok, err := s.AccountHasDefaults(a.UserID, a.ID)
		require.NoError(t, err)
		return ok && has
	}, 10*time.Second, 10*time.Millisecond)
}

// Get and Has read every key right while the transaction's own writes split and merge the
// bucket's pages under them, and a key missing between two pages (past the end of one) is
// missing: bbolt's Get and Has seek with one cursor a bucket keeps for the transaction.
// PostgreSQL's transaction has no pages (its writes wait in a map and a sorted key list), and each
// read of a key it has not written is a round trip: there a tenth of the keys reads the same
// overlay both ways without 16,000 round trips in one transaction, which a loaded machine cannot
// answer within the transaction's bound.
func TestKVGetAndHasWhilePagesSplitAndMerge(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		n := 4000
		if s.pg != nil {
			n = 400
		}
		even := func(i int) []byte { return key(2 * i) }
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for i := range n {
				if err := b.Put(even(i), []byte(fmt.Sprint(i))); err != nil {
					return err
				}
				if got := string(b.Get(even(i))); got != fmt.Sprint(i) {
					return fmt.Errorf("key %d read %q right after its put", i, got)
				}
				if i > 0 && b.Get(even(i-1)) == nil {
					return fmt.Errorf("key %d lost after the put of %d", i-1, i)
				}
			}
			return nil
		}))
		check := func(b kvBucket, gone func(i int) bool) {
			for i := range n {
				require.Equal(t, !gone(i), b.Has(even(i)), "key %d", i)
				if gone(i) {
					require.Nil(t, b.Get(even(i)), "key %d", i)
				} else {
					require.Equal(t, fmt.Sprint(i), string(b.Get(even(i))), "key %d", i)
				}
				odd := key(2*i + 1)
				require.Nil(t, b.Get(odd), "odd key %d", i)
				require.False(t, b.Has(odd), "odd key %d", i)
			}
		}
		kvView(t, s, func(b kvBucket) { check(b, func(int) bool { return false }) })
		// Most keys deleted, in the transaction that then reads them all: pages merge.
		gone := func(i int) bool { return i%10 != 0 }
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for i := range n {
				if gone(i) {
					if err := b.Delete(even(i)); err != nil {
						return err
					}
					if b.Has(even(i)) {
						return fmt.Errorf("key %d still there after its delete", i)
					}
				}
			}
			check(b, gone)
			return nil
		}))
		kvView(t, s, func(b kvBucket) { check(b, gone) })
	})
}

// A transaction opens each bucket once, and bbolt's Get and Has allocate nothing on a tree of
// several levels (they seek with the bucket's cursor of the transaction).
func TestBoltGetAndHasAllocateNothing(t *testing.T) { //nolint:paralleltest // AllocsPerRun refuses a parallel test
	s := openSuiteStore(t, nil)
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
		for i := range 20000 {
			if err := b.Put(key(i), make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, s.c.view(func(tx *Tx) error {
		b := tx.kv.Bucket(bKVTest)
		require.Same(t, b, tx.kv.Bucket(bKVTest), "one bucket per transaction")
		require.Greater(t, tx.kv.(*boltTx).tx.Bucket(bKVTest).Stats().Depth, 2)
		present, other, missing := key(12345), key(777), []byte("k1234x")
		b.Get(key(1))
		allocs := testing.AllocsPerRun(100, func() {
			if b.Get(present) == nil || !b.Has(other) || b.Has(missing) {
				t.Error("wrong read")
			}
			_ = tx.kv.Bucket(bKVTest)
		})
		require.Zero(t, allocs)
		require.ErrorIs(t, b.Delete(present), bolterrors.ErrTxNotWritable, "a read refuses a delete, there or not")
		require.ErrorIs(t, b.Delete(missing), bolterrors.ErrTxNotWritable)
		return nil
	}))
	// A transaction that opens more buckets than it keeps in place opens each once all the same.
	require.NoError(t, s.c.view(func(tx *Tx) error {
		seen := map[kvBucket][]byte{}
		for range 2 {
			for _, name := range bucketNames {
				b := tx.kv.Bucket(name)
				if prev, ok := seen[b]; ok {
					require.Equal(t, string(prev), string(name), "one bucket per name")
				}
				seen[b] = name
			}
		}
		require.Len(t, seen, len(bucketNames))
		require.Greater(t, len(bucketNames), 16)
		return nil
	}))
	// Deletes too, of keys there and not, on pages already in the transaction's memory.
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
		keys := make([][]byte, 0, 300)
		for i := range 150 {
			keys = append(keys, key(5000+i), []byte(fmt.Sprintf("k%05dx", 5000+i)))
		}
		require.NoError(t, b.Delete(keys[0]))
		next := 0
		allocs := testing.AllocsPerRun(100, func() {
			next++
			if err := b.Delete(keys[next]); err != nil {
				t.Error(err)
			}
		})
		require.Zero(t, allocs)
		for i := range 50 {
			require.False(t, b.Has(key(5000+i)), "key %d deleted", 5000+i)
		}
		require.True(t, b.Has(key(5051)))
		return nil
	}))
}

// countAfter counts the keys after a key (every key from nil), up to max, the same on every
// backend: in a read transaction, and in a write transaction with its own writes pending (which
// PostgreSQL's count cannot see, so it walks there).
func TestKVCountAfter(t *testing.T) {
	eachKV(t, func(t *testing.T, s *Store) {
		kvView(t, s, func(b kvBucket) {
			require.Zero(t, countAfter(b, nil, 10))
			require.Zero(t, countAfter(b, key(3), 10))
		})
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			for i := range 20 {
				if err := b.Put(key(i), bytes.Repeat([]byte{'v'}, 100)); err != nil {
					return err
				}
			}
			return nil
		}))
		kvView(t, s, func(b kvBucket) {
			require.Equal(t, 20, countAfter(b, nil, 100))
			require.Equal(t, 7, countAfter(b, nil, 7), "up to max")
			require.Equal(t, 16, countAfter(b, key(3), 100), "after k00003, not with it")
			require.Equal(t, 16, countAfter(b, append(key(3), 0), 100), "after a key between two")
			require.Equal(t, 5, countAfter(b, key(3), 5))
			require.Zero(t, countAfter(b, key(19), 100))
			require.Zero(t, countAfter(b, []byte("z"), 100))
			require.Zero(t, countAfter(b, nil, 0))
		})
		require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
			require.NoError(t, b.Delete(key(5)))
			require.NoError(t, b.Put(key(25), nil))
			require.Equal(t, 20, countAfter(b, nil, 100), "its own writes counted")
			require.Equal(t, 16, countAfter(b, key(3), 100), "k00004, k00006 to k00019 and k00025")
			return nil
		}))
		kvView(t, s, func(b kvBucket) {
			require.Equal(t, 20, countAfter(b, nil, 100))
		})
	})
}
