package persistence_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
)

// Store micro-benchmarks (`make bench-micro`). Names are stable so that benchstat can compare
// runs; BenchmarkGroupCommit and BenchmarkCodec (bench_test.go) complete the set.

// BenchmarkStoreUpdate measures one durable write with a single writer: every write waits for its
// own commit and fsync, the latency floor of any acknowledged change.
func BenchmarkStoreUpdate(b *testing.B) {
	s, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	user := uuid.NewString()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := newPost(user, persistence.PostDraft, "linkedin", "bluesky", "twitter_x")
		if err := s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }); err != nil {
			b.Fatal(err)
		}
	}
}

// seedPosts stores n posts of one user in a single transaction and returns their ids.
func seedPosts(b *testing.B, s *persistence.Store, user string, n int) []string {
	b.Helper()
	ids := make([]string, n)
	statuses := []string{persistence.PostDraft, persistence.PostScheduled, persistence.PostPublished, persistence.PostFailed}
	if err := s.Update(context.Background(), func(tx *persistence.Tx) error {
		for i := range ids {
			p := newPost(user, statuses[i%len(statuses)], "linkedin", "bluesky", "twitter_x")
			p.Content = "Our autumn collection is out today, with free shipping on every order this week. #launch"
			ids[i] = p.ID
			if err := tx.PutPost(p, nil); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return ids
}

// BenchmarkStoreGetPost measures reading and decoding one post by id among 10,000.
func BenchmarkStoreGetPost(b *testing.B) {
	s, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ids := seedPosts(b, s, uuid.NewString(), 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := ids[i%len(ids)]
		if err := s.View(func(tx *persistence.Tx) error {
			_, err := tx.Post(id)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreListPosts measures GET /v1/posts' read: the newest page of 20 of a user's 10,000
// posts, with no filter, with a status filter (answered from the index summaries) and with a
// search (which reads every post's content).
func BenchmarkStoreListPosts(b *testing.B) {
	s, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	user := uuid.NewString()
	seedPosts(b, s, user, 10_000)
	for _, bc := range []struct {
		name   string
		filter persistence.PostFilter
	}{
		{"all", persistence.PostFilter{Scope: user, Limit: 20}},
		{"status", persistence.PostFilter{Scope: user, Status: persistence.PostFailed, Limit: 20}},
		{"search", persistence.PostFilter{Scope: user, Search: "Autumn", Limit: 20}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := s.View(func(tx *persistence.Tx) error {
					page, _, err := tx.ListPosts(bc.filter)
					if err == nil && len(page) != 20 {
						b.Fatalf("page of %d posts", len(page))
					}
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
