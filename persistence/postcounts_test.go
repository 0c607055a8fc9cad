package persistence

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
)

var countPlatformNames = []string{"linkedin", "instagram", "youtube", "pinterest", "tiktok", "threads", "facebook", "twitter_x", "bluesky"}

func randomPost(r *rand.Rand, user string) *Post {
	p := &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "post", Status: PostStatuses[r.IntN(len(PostStatuses))], CreatedAt: time.Now().UTC()}
	for _, i := range r.Perm(len(countPlatformNames))[:1+r.IntN(3)] {
		p.Targets = append(p.Targets, Target{AccountID: uuid.NewString(), Platform: countPlatformNames[i]})
	}
	return p
}

// checkCounts compares every total the counts give with the total a walk of the index finds.
func checkCounts(t *testing.T, s *Store, users []string) {
	t.Helper()
	err := s.View(func(tx *Tx) error {
		for _, u := range users {
			for _, status := range append([]string{""}, PostStatuses...) {
				for _, platform := range append([]string{""}, countPlatformNames...) {
					f := PostFilter{Scope: u, Status: status, Platform: platform, Limit: 3}
					_, counted, err := tx.ListPosts(f)
					if err != nil {
						return err
					}
					f.Search = "post" // every post matches: the walk counts
					_, walked, err := tx.ListPosts(f)
					if err != nil {
						return err
					}
					if counted != walked {
						t.Errorf("user %s, status %q, platform %q: counts say %d, the index holds %d", u[:8], status, platform, counted, walked)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPostCountsFollowEveryChange(t *testing.T) { EachStore(t, postCountsFollowEveryChange) }

func postCountsFollowEveryChange(t *testing.T, s *Store) {
	r := rand.New(rand.NewPCG(1, 2))
	users := []string{uuid.NewString(), uuid.NewString()}
	var posts []*Post
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		var p *Post
		switch op := r.IntN(10); {
		case op < 5 || len(posts) == 0: // create
			p = randomPost(r, users[r.IntN(2)])
			posts = append(posts, p)
		case op < 7: // status change
			p = posts[r.IntN(len(posts))]
			p.Status = PostStatuses[r.IntN(len(PostStatuses))]
		case op < 8: // other targets
			p = posts[r.IntN(len(posts))]
			p.Targets = randomPost(r, p.UserID).Targets
		case op < 9: // a change that keeps the summary
			p = posts[r.IntN(len(posts))]
			p.Content = "post, edited"
		default: // delete
			k := r.IntN(len(posts))
			gone := posts[k]
			posts = append(posts[:k], posts[k+1:]...)
			if err := s.Update(ctx, func(tx *Tx) error { return tx.DeletePost(gone) }); err != nil {
				t.Fatal(err)
			}
			continue
		}
		cp := p.Clone()
		if err := s.Update(ctx, func(tx *Tx) error { return tx.PutPost(cp, nil) }); err != nil {
			t.Fatal(err)
		}
	}
	checkCounts(t, s, users)

	// A store written before the counts existed (layout 1) is counted when opened.
	dir := t.TempDir()
	old, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range posts {
		p := p
		if err := old.Update(ctx, func(tx *Tx) error { return tx.PutPost(p, nil) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bPostsCount); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bPostsCount); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("schema"), u64(1))
	}); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	checkCounts(t, reopened, users)
}
