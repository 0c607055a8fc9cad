package persistence

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/google/uuid"
)

// Keys of several parts hold each id's 16 bytes in place, the zero key for an id that is not a
// UUID, and are built in a single allocation (the reads and writes of every job build dozens).
func TestKeysOfSeveralIDs(t *testing.T) {
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	var zero [16]byte
	if got := mustID(a.String()); !bytes.Equal(got, a[:]) {
		t.Fatalf("mustID = %x, want %x", got, a[:])
	}
	if got := mustID("not-a-uuid"); !bytes.Equal(got, zero[:]) {
		t.Fatalf("mustID of a bad id = %x, want zeros", got)
	}
	if got, want := waitingKey(a.String(), b.String(), 258), append(append(a[:], b[:]...), 1, 2); !bytes.Equal(got, want) {
		t.Fatalf("waitingKey = %x, want %x", got, want)
	}
	if got, want := attemptKey(b.String(), 3), append(b[:], 0, 3); !bytes.Equal(got, want) {
		t.Fatalf("attemptKey = %x, want %x", got, want)
	}
	if got, want := jobEventKey(a.String(), 1<<40), binary.BigEndian.AppendUint64(a[:], 1<<40); !bytes.Equal(got, want) {
		t.Fatalf("jobEventKey = %x, want %x", got, want)
	}
	if got, want := accountKey(a.String(), "bad"), append(a[:], zero[:]...); !bytes.Equal(got[:], want) {
		t.Fatalf("accountKey = %x, want %x", got, want)
	}
	if got, want := usageKey(a.String(), "2026-11"), append(a[:], "2026-11"...); !bytes.Equal(got, want) {
		t.Fatalf("usageKey = %x, want %x", got, want)
	}
	if got, want := deliveryKey(a.String(), b.String()), append(a[:], b[:]...); !bytes.Equal(got, want) {
		t.Fatalf("deliveryKey = %x, want %x", got, want)
	}

	as, bs := a.String(), b.String()
	for name, build := range map[string]func(){
		"mustID":      func() { _ = mustID(as) },
		"waitingKey":  func() { _ = waitingKey(as, bs, 1) },
		"attemptKey":  func() { _ = attemptKey(as, 1) },
		"jobEventKey": func() { _ = jobEventKey(as, 1) },
		"usageKey":    func() { _ = usageKey(as, "2026-11") },
	} {
		if n := testing.AllocsPerRun(100, build); n > 1 {
			t.Errorf("%s: %v allocations, want 1", name, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = accountKey(as, bs) }); n != 0 {
		t.Errorf("accountKey: %v allocations, want none", n)
	}
}
