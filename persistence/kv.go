package persistence

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// The key-value seam under Tx: every typed accessor of this package reads and writes buckets
// through these three interfaces, and a backend implements them (bbolt here, PostgreSQL in
// postgres.go). The contract is bbolt's, so that bbolt implements it with no copy and no
// indirection beyond the interface call:
//
//   - A bucket is an ordered map of byte-string keys (compared bytewise) to byte-string values.
//     Buckets are flat: none is nested in another. Every bucket this package names exists once
//     the store is open.
//   - Get returns the value of key, or nil when there is none. An empty value may also read as nil
//     (bbolt's Get cannot tell them apart); Has, or a cursor, tells a key with an empty value from
//     a missing key.
//   - A slice that Get or a cursor returns is valid only until the transaction ends, and must
//     not be modified: decode or copy it before. (bbolt hands out its memory-mapped pages; the
//     PostgreSQL backend hands out its own buffers.) A slice passed to Put may be kept by the
//     transaction until it ends, so the caller must not modify it afterwards either.
//   - A transaction reads its own writes: a Get, Has or cursor after a Put or Delete in the same
//     transaction sees it.
//   - A cursor walks keys in order: First and Last position on the smallest and largest key,
//     Seek on the smallest key at or after the one given, Next and Prev on the next larger and
//     smaller key. Each returns the key and value there, or a nil key when there is none (past
//     either end the cursor stays there: Prev after a nil Next does not come back). Delete removes
//     the key the cursor is on; after it, a Seek positions the cursor afresh (bbolt may skip a key
//     on Next after Delete; every caller here seeks again).
//   - Writes happen only inside Update. A write transaction's function may run more than once
//     (a batch is replayed, PostgreSQL retries a serialization failure), so it must only touch the
//     transaction.
type kvTx interface {
	// Bucket returns the bucket of this name, nil when it does not exist (a store opened
	// read-only before the bucket was added).
	Bucket(name []byte) kvBucket
}

// kvBucket is one bucket of a transaction.
type kvBucket interface {
	Get(key []byte) []byte
	// Has reports whether the bucket holds key, whatever its value's length.
	Has(key []byte) bool
	Put(key, value []byte) error
	Delete(key []byte) error
	Cursor() kvCursor
}

// kvCursor walks a bucket's keys in order.
type kvCursor interface {
	First() (key, value []byte)
	Last() (key, value []byte)
	Seek(key []byte) (key2, value []byte)
	Next() (key, value []byte)
	Prev() (key, value []byte)
	Delete() error
}

// kvPager is a cursor that reads its rows in pages (PostgreSQL's): wantPage asks its next read
// for at least n rows, for a walk that knows how far it goes.
type kvPager interface {
	wantPage(n int)
}

// kvCounter is a bucket that counts its keys without walking them (PostgreSQL's): countAfter
// counts those after x (every key when x is nil), up to max; ok false means it cannot here, and
// the caller walks (countAfter below).
type kvCounter interface {
	countAfter(x []byte, max int) (n int, ok bool)
}

// countAfter counts the keys of b after x (every key when x is nil), up to max: in one statement
// where the bucket can (kvCounter), by a walk of its keys otherwise (bbolt's walk reads the
// mapped file in place).
func countAfter(b kvBucket, x []byte, max int) int {
	if max <= 0 {
		return 0
	}
	if c, ok := b.(kvCounter); ok {
		if n, ok := c.countAfter(x, max); ok {
			return n
		}
	}
	c := b.Cursor()
	var k []byte
	if x == nil {
		k, _ = c.First()
	} else if k, _ = c.Seek(x); k != nil && bytes.Equal(k, x) {
		k, _ = c.Next()
	}
	n := 0
	for ; k != nil && n < max; k, _ = c.Next() {
		n++
	}
	return n
}

// forEach calls fn for every key of b in order, until fn returns an error.
func forEach(b kvBucket, fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// ---- bbolt ----

// boltTx is a bbolt transaction behind the seam. It keeps the buckets it opened, each with one
// cursor that its Get, Has and Delete seek with: bbolt's own make a cursor for every call, and
// the stack that cursor grows on its way down the tree is allocated each time (a few objects a
// call, the first allocator of a publish); a transaction reads a few buckets many times.
type boltTx struct {
	tx   *bolt.Tx
	open []*boltBucket
	// first holds the first buckets opened, in the transaction's own allocation (a commit of
	// a publish's writes opens about a dozen).
	first [16]boltBucket
	ptrs  [16]*boltBucket
}

func newBoltTx(tx *bolt.Tx) *boltTx {
	b := &boltTx{tx: tx}
	b.open = b.ptrs[:0]
	return b
}

func (b *boltTx) Bucket(name []byte) kvBucket {
	for _, o := range b.open {
		if bytes.Equal(o.name, name) {
			return o
		}
	}
	bk := b.tx.Bucket(name)
	if bk == nil {
		return nil
	}
	var o *boltBucket
	if n := len(b.open); n < len(b.first) {
		o = &b.first[n]
	} else {
		o = new(boltBucket)
	}
	*o = boltBucket{Bucket: bk, name: name}
	b.open = append(b.open, o)
	return o
}

// boltBucket is a bbolt bucket; *bolt.Cursor is a kvCursor as it is.
type boltBucket struct {
	*bolt.Bucket
	name []byte
	// seek is the cursor Get, Has and Delete position afresh on every call (bbolt's Seek starts
	// from the root each time, so it sees the transaction's own writes); never handed out.
	seek *bolt.Cursor
}

func (b *boltBucket) Cursor() kvCursor { return b.Bucket.Cursor() }

// Get is bbolt's Get through the bucket's own cursor. Buckets are flat (none is nested), so a
// key found is a value.
func (b *boltBucket) Get(key []byte) []byte {
	k, v := b.find(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

func (b *boltBucket) Has(key []byte) bool {
	k, _ := b.find(key)
	return bytes.Equal(k, key)
}

// Delete is bbolt's Delete through the bucket's own cursor (the same seek, then the same removal
// from the node the cursor is on); a missing key is no change.
func (b *boltBucket) Delete(key []byte) error {
	if !b.Writable() {
		return b.Bucket.Delete(key) // bbolt's refusal
	}
	if k, _ := b.find(key); !bytes.Equal(k, key) {
		return nil
	}
	return b.seek.Delete()
}

func (b *boltBucket) find(key []byte) (k, v []byte) {
	if b.seek == nil {
		b.seek = b.Bucket.Cursor()
	}
	return b.seek.Seek(key)
}
