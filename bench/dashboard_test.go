package bench

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
)

// The seeded store holds the mix it reports, counted, listed, scheduled and with no job left to
// resume at start-up.
func TestSeedPostsWritesTheMix(t *testing.T) {
	s, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	user := uuid.NewString()
	var accounts []*persistence.Account
	for _, p := range []string{"linkedin", "bluesky", "twitter_x", "pinterest"} {
		accounts = append(accounts, &persistence.Account{ID: uuid.NewString(), UserID: user, Platform: p})
	}
	const n = 1000
	counts, err := SeedPosts(s, user, accounts, n, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"draft": 300, "scheduled": 150, "published": 400, "partial": 50, "failed": 100}
	if countList(counts) != countList(want) {
		t.Fatalf("mix %s, want %s", countList(counts), countList(want))
	}
	if err := s.View(func(tx *persistence.Tx) error {
		for status, k := range want {
			if got := tx.PostCount(user, status, ""); got != k {
				t.Errorf("%s: counted %d, want %d", status, got, k)
			}
		}
		page, total, err := tx.ListPosts(persistence.PostFilter{Scope: user, Search: dashboardNeedle, Limit: 20})
		if err != nil || total != n/50 || len(page) != 20 {
			t.Errorf("search: %d of %d, %v", len(page), total, err)
		}
		if due := tx.DueBefore(time.Now().Add(365*24*time.Hour), persistence.Due{}, 1000); len(due) != want["scheduled"] {
			t.Errorf("%d posts in the schedule, want %d", len(due), want["scheduled"])
		}
		if active := tx.ActiveJobs(); len(active) != 0 {
			t.Errorf("%d jobs left to resume", len(active))
		}
		newest, _, err := tx.ListPosts(persistence.PostFilter{Scope: user, Status: persistence.PostFailed, Limit: 1})
		if err != nil || len(newest) != 1 || newest[0].TrackingID == nil {
			t.Fatalf("the newest failed post: %v %v", newest, err)
		}
		j, err := tx.Job(*newest[0].TrackingID)
		if err != nil || j.Status != persistence.JobFailed {
			t.Errorf("its job: %+v %v", j, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
