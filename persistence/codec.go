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
	case []JobEvent:
		if jobEventTimesEncodable(r) {
			return appendJobEvents(make([]byte, 0, 16+120*len(r)), r), nil
		}
	case *Attempt:
		if timeEncodable(r.StartedAt) {
			return appendAttempt(make([]byte, 0, 160+100*len(r.Done)), r), nil
		}
	case *Event:
		if timeEncodable(r.CreatedAt) && rawEncodable(r.Data) {
			return appendEvent(make([]byte, 0, 200+len(r.Data)), r), nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("persistence: encode %T: %w", v, err)
	}
	return b, nil
}

func jobEventTimesEncodable(evs []JobEvent) bool {
	for i := range evs {
		if !timeEncodable(evs[i].At) {
			return false
		}
	}
	return true
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
