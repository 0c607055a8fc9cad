package persistence

import (
	"encoding/json"
	"fmt"
)

// Records are stored as JSON: self-describing, additive (a new optional field needs no
// migration) and readable with `bbolt get` when debugging. BenchmarkCodec measures its cost.

// Encode encodes a record for storage.
func Encode(v any) ([]byte, error) {
	switch r := v.(type) {
	case *Post:
		if timeEncodable(r.CreatedAt) && timeEncodable(r.UpdatedAt) && (r.ScheduledAt == nil || timeEncodable(*r.ScheduledAt)) && targetTimesEncodable(r.Targets) {
			return appendPost(make([]byte, 0, 512+len(r.Content)+200*len(r.Targets)), r), nil
		}
	case *Job:
		if timeEncodable(r.CreatedAt) && (r.CompletedAt == nil || timeEncodable(*r.CompletedAt)) {
			return appendJob(make([]byte, 0, 256+300*len(r.Targets)), r), nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("persistence: encode %T: %w", v, err)
	}
	return b, nil
}

func targetTimesEncodable(ts []Target) bool {
	for _, t := range ts {
		if t.PublishedAt != nil && !timeEncodable(*t.PublishedAt) {
			return false
		}
	}
	return true
}

// Decode decodes a stored record into v. The input may be a transaction's memory: Decode copies
// what it keeps.
func Decode(b []byte, v any) error {
	if decodeFast(b, v) {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("persistence: decode %T: %w", v, err)
	}
	return nil
}
