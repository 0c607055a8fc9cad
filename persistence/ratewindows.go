package persistence

import (
	"encoding/binary"
	"time"
)

// RateWindow is one user's open API quota window, kept so that a restart does not refill the
// quota: when it opened and how many requests it counted.
type RateWindow struct {
	UserID string
	Start  time.Time
	Used   int
}

// rate_windows     user id → window start (Unix nanoseconds, 8 bytes) | requests counted (8 bytes)
var bRateWindows = []byte("rate_windows")

func init() { registerBuckets(bRateWindows) }

// PutRateWindows stores windows, replacing what was stored for the same users.
func (t *Tx) PutRateWindows(ws []RateWindow) error {
	b := t.kv.Bucket(bRateWindows)
	for _, w := range ws {
		if w.UserID == "" || w.Used <= 0 {
			continue
		}
		v := make([]byte, 16)
		binary.BigEndian.PutUint64(v, uint64(w.Start.UnixNano()))
		binary.BigEndian.PutUint64(v[8:], uint64(w.Used))
		if err := b.Put([]byte(w.UserID), v); err != nil {
			return err
		}
	}
	return nil
}

// DeleteRateWindows forgets the stored windows of users.
func (t *Tx) DeleteRateWindows(users []string) error {
	b := t.kv.Bucket(bRateWindows)
	for _, u := range users {
		if err := b.Delete([]byte(u)); err != nil {
			return err
		}
	}
	return nil
}

// RateWindows returns the stored windows (some may have closed since).
func (t *Tx) RateWindows() []RateWindow {
	var out []RateWindow
	b := t.kv.Bucket(bRateWindows)
	if b == nil { // a store opened read-only before the bucket existed
		return nil
	}
	_ = forEach(b, func(k, v []byte) error {
		if len(v) == 16 {
			out = append(out, RateWindow{UserID: string(k), Start: time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), Used: int(binary.BigEndian.Uint64(v[8:]))})
		}
		return nil
	})
	return out
}
