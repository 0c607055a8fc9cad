package persistence_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
)

// BenchmarkGroupCommit measures durable post writes through the group committer with 64
// concurrent writers: the throughput ceiling of every write path in Herald.
func BenchmarkGroupCommit(b *testing.B) {
	s, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	user := uuid.NewString()
	var n atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := newPost(user, persistence.PostDraft, "linkedin", "bluesky", "twitter_x")
			raw, _ := persistence.Encode(p)
			if err := s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, raw) }); err != nil {
				b.Error(err)
			}
			n.Add(1)
		}
	})
}

// BenchmarkCodec measures encoding and decoding one post record.
func BenchmarkCodec(b *testing.B) {
	p := newPost(uuid.NewString(), persistence.PostDraft, "linkedin", "bluesky", "twitter_x")
	p.Content = "Our autumn collection is out today, with free shipping on every order this week. #launch"
	now := time.Now()
	p.ScheduledAt = &now
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		raw, err := persistence.Encode(p)
		if err != nil {
			b.Fatal(err)
		}
		var q persistence.Post
		if err := persistence.Decode(raw, &q); err != nil {
			b.Fatal(err)
		}
	}
}
