package persistence

import (
	"context"
	"encoding/binary"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The keys and values of a commit's statements go to PostgreSQL as bytea[] parameters, one pair
// of arrays for each table written: a batch of sixty jobs is an array of 70 kB. pgx encodes a
// [][]byte parameter element by element, through reflection, into a buffer that starts at 256
// bytes for every statement and doubles as it goes, so that each commit copied and cleared its
// rows several times over (a tenth of the committer's CPU on PostgreSQL). pgByteaArray is such a
// parameter encoded once, in PostgreSQL's binary form, into a buffer of its exact size; each
// connection of the store's pool encodes it by appending its bytes (registerByteaArray).

// pgByteaArray is a bytea[] parameter in PostgreSQL's binary array form (byteaArray).
type pgByteaArray []byte

// byteaArray encodes elems as a one-dimensional bytea[] without nulls: the dimensions, the
// element type, then each element's length and bytes.
func byteaArray[E ~string | ~[]byte](elems []E) pgByteaArray {
	if len(elems) == 0 {
		// No dimensions: the empty array.
		b := make([]byte, 12)
		binary.BigEndian.PutUint32(b[8:], pgtype.ByteaOID)
		return b
	}
	n := 20
	for _, e := range elems {
		n += 4 + len(e)
	}
	b := make([]byte, 20, n)
	binary.BigEndian.PutUint32(b[0:], 1) // dimensions
	binary.BigEndian.PutUint32(b[4:], 0) // no nulls
	binary.BigEndian.PutUint32(b[8:], pgtype.ByteaOID)
	binary.BigEndian.PutUint32(b[12:], uint32(len(elems)))
	binary.BigEndian.PutUint32(b[16:], 1) // lower bound
	for _, e := range elems {
		b = binary.BigEndian.AppendUint32(b, uint32(len(e)))
		b = append(b, e...)
	}
	return b
}

// registerByteaArray makes conn's bytea[] type take a pgByteaArray as it is (binary format),
// every other value as before.
func registerByteaArray(_ context.Context, conn *pgx.Conn) error {
	m := conn.TypeMap()
	t, ok := m.TypeForOID(pgtype.ByteaArrayOID)
	if !ok {
		return nil
	}
	m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: byteaArrayCodec{t.Codec}})
	return nil
}

// byteaArrayCodec is bytea[]'s codec with a plan for pgByteaArray.
type byteaArrayCodec struct{ pgtype.Codec }

func (c byteaArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(pgByteaArray); ok && format == pgtype.BinaryFormatCode {
		return encodeByteaArray{}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

type encodeByteaArray struct{}

func (encodeByteaArray) Encode(value any, buf []byte) ([]byte, error) {
	return append(buf, value.(pgByteaArray)...), nil
}
