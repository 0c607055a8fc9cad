package persistence

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A bytea[] parameter encoded by byteaArray is the array PostgreSQL reads: every element, the
// empty ones and those holding any byte, in order, and the empty array; the store's statements
// write and read with it.
func TestPostgresByteaArrayParameters(t *testing.T) {
	t.Parallel()
	s, _ := openTracedPostgres(t)
	ctx := context.Background()
	big := bytes.Repeat([]byte{0, 0xff, 'x'}, 40_000)
	for _, elems := range [][][]byte{
		{},
		{nil},
		{[]byte("a")},
		{[]byte("k1"), {}, {0, 1, 2, 0xff}, big, nil, []byte("last")},
	} {
		var n int
		var back [][]byte
		require.NoError(t, s.pg.pool.QueryRow(ctx, "SELECT cardinality($1::bytea[]), $1::bytea[]", byteaArray(elems)).Scan(&n, &back))
		require.Equal(t, len(elems), n)
		require.Len(t, back, len(elems))
		for i := range elems {
			require.True(t, bytes.Equal(elems[i], back[i]), "element %d", i)
			require.NotNil(t, back[i], "element %d is empty, not NULL", i)
		}
		keys := make([]string, len(elems))
		for i, e := range elems {
			keys[i] = string(e)
		}
		require.Equal(t, byteaArray(elems), byteaArray(keys), "strings encode as their bytes")
	}
	// Any other value of a bytea[] parameter is encoded as pgx does.
	var back [][]byte
	require.NoError(t, s.pg.pool.QueryRow(ctx, "SELECT $1::bytea[]", [][]byte{[]byte("plain")}).Scan(&back))
	require.Equal(t, [][]byte{[]byte("plain")}, back)

	// The store's writes and reads of many rows at once.
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error {
		if err := b.Put([]byte("empty"), nil); err != nil {
			return err
		}
		if err := b.Put([]byte("big"), big); err != nil {
			return err
		}
		return b.Put([]byte("gone"), []byte("x"))
	}))
	require.NoError(t, kvUpdate(t, s, func(b kvBucket) error { return b.Delete([]byte("gone")) }))
	kvView(t, s, func(b kvBucket) {
		require.Equal(t, []byte{}, b.Get([]byte("empty")))
		require.Equal(t, big, b.Get([]byte("big")))
		require.Nil(t, b.Get([]byte("gone")))
	})
}
