package persistence

import (
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
)

// ID parses a UUID string into its 16-byte key form.
func ID(s string) ([]byte, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("persistence: invalid id %q: %w", s, err)
	}
	b := u[:]
	return append([]byte(nil), b...), nil
}

func mustID(s string) []byte { return appendID(make([]byte, 0, 16), s) }

// appendID appends the 16-byte key form of s, so that a key of several parts is built in one
// allocation (parsing an id allocates nothing of its own). Ids reach the store only after
// validation at the edge; a bad one is a programming error caught in tests, so the zero key
// (which matches nothing) is used rather than a panic.
func appendID(b []byte, s string) []byte {
	u, err := uuid.Parse(s)
	if err != nil {
		var zero uuid.UUID
		return append(b, zero[:]...)
	}
	return append(b, u[:]...)
}

func idString(b []byte) string {
	var u uuid.UUID
	copy(u[:], b)
	return u.String()
}

func join(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
