package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bench"
	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// benchPosts is how many posts the pages' benchmarks seed (the dashboard scenario's store).
const benchPosts = 100_000

// seededDashboard starts a sandbox Herald, writes benchPosts posts of the demo user (the mix of
// the bench's dashboard scenario) and returns its URL and a client signed in as the demo user.
func seededDashboard(b *testing.B) (string, *http.Client) {
	b.Helper()
	a, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: b.TempDir(), Sandbox: true, SimAddr: "127.0.0.1:0", NoAdminSocket: true,
		Log:            slog.New(slog.DiscardHandler),
		PasswordParams: auth.PasswordParams{Time: 1, MemoryKiB: 1024, Threads: 1}})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Shutdown() })
	var user *persistence.User
	var accounts []*persistence.Account
	if err := a.Store.View(func(tx *persistence.Tx) error {
		if user, err = tx.SandboxUser(); err != nil {
			return err
		}
		accounts, err = tx.AccountsIn(user.ID)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := bench.SeedPosts(a.Store, user.ID, accounts, benchPosts, time.Now()); err != nil {
		b.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Post(a.URL()+"/api/session", "application/json",
		strings.NewReader(`{"email":"`+user.Email+`","password":"`+a.SandboxPassword+`"}`))
	if err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("sign in: %s", resp.Status)
	}
	return a.URL(), client
}

func benchPages(b *testing.B, paths map[string]string) {
	base, client := seededDashboard(b)
	for name, path := range paths {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				resp, err := client.Get(base + path)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %s", path, resp.Status)
				}
			}
		})
	}
}

// BenchmarkOverviewPage measures GET / over 100,000 posts, one request at a time.
func BenchmarkOverviewPage(b *testing.B) {
	benchPages(b, map[string]string{"overview": "/"})
}

// BenchmarkPostsPage measures GET /posts over 100,000 posts: the first page, a filtered page, a
// page far back, and a search (which reads every post's text).
func BenchmarkPostsPage(b *testing.B) {
	benchPages(b, map[string]string{
		"first":    "/posts",
		"filtered": "/posts?status=failed&platform=bluesky",
		"page200":  "/posts?page=200",
		"search":   "/posts?search=giveaway",
	})
}

// BenchmarkLivePages measures GET /analytics and GET /inbox over 100,000 posts: after the first
// request of each, the live answers come from the cache (90-second floor), so this is the pages'
// own cost: the cache, the decoding of its body, the charts and the template.
func BenchmarkLivePages(b *testing.B) {
	benchPages(b, map[string]string{"analytics": "/analytics", "inbox": "/inbox"})
}

// BenchmarkCalendarPage measures GET /calendar over 100,000 posts: this month, and a week.
func BenchmarkCalendarPage(b *testing.B) {
	benchPages(b, map[string]string{"month": "/calendar", "week": "/calendar?view=week"})
}
