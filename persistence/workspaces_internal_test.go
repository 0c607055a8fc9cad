package persistence

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// A workspace's objects are indexed under its scope, the main workspace's under its user's id;
// usage is counted per workspace and month; clearing a workspace removes its posts, campaigns,
// media and usage and nothing of another; a network account is found in any of its user's
// workspaces.
func TestWorkspacesInStore(t *testing.T) {
	EachStore(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		u := &User{ID: newID(), Email: newID() + "@example.com", Plan: "pro", CreatedAt: now}
		w := &Workspace{ID: newID(), UserID: u.ID, Name: "Client", CreatedAt: now}
		inMain := &Post{ID: newID(), UserID: u.ID, Content: "main", Status: PostDraft, CreatedAt: now}
		inW := &Post{ID: newID(), UserID: u.ID, WorkspaceID: w.ID, Content: "w", Status: PostPublished, CreatedAt: now,
			Targets: []Target{{AccountID: newID(), Platform: "bluesky", Status: TargetPublished}, {AccountID: newID(), Platform: "linkedin", Status: TargetFailed}}}
		acct := &Account{ID: newID(), UserID: u.ID, WorkspaceID: w.ID, Platform: "bluesky", NetworkUserID: "did:plc:client", CreatedAt: now}
		media := &Media{ID: newID(), UserID: u.ID, WorkspaceID: w.ID, Key: "uploads/" + u.ID + "/" + newID() + ".png", CreatedAt: now}
		camp := &Campaign{ID: newID(), UserID: u.ID, WorkspaceID: w.ID, Publish: CampaignDraft, CreatedAt: now}
		if err := s.Update(ctx, func(tx *Tx) error {
			for _, f := range []func() error{
				func() error { return tx.CreateUser(u) },
				func() error { return tx.PutWorkspace(w) },
				func() error { return tx.PutPost(inMain, nil) },
				func() error { return tx.PutPost(inW, nil) },
				func() error { return tx.PutAccount(acct) },
				func() error { return tx.PutMedia(media) },
				func() error { return tx.PutCampaign(camp) },
				func() error { return tx.CountOutcome(inW, "2026-11", []int{0, 1}) },
				func() error { return tx.AddUsage(w.Scope(), "2026-11", UsagePostsAccepted, "", 2) },
			} {
				if err := f(); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.View(func(tx *Tx) error {
			list, err := tx.Workspaces(u.ID)
			if err != nil {
				return err
			}
			if len(list) != 2 || list[0].ID != MainWorkspace || list[0].Scope() != u.ID || list[1].ID != w.ID {
				t.Fatalf("workspaces: %+v", list)
			}
			if ids := tx.PostIDsIn(u.ID); len(ids) != 1 || ids[0] != inMain.ID {
				t.Fatalf("main's posts: %v", ids)
			}
			if ids := tx.PostIDsIn(w.ID); len(ids) != 1 || ids[0] != inW.ID {
				t.Fatalf("the workspace's posts: %v", ids)
			}
			if _, ok := tx.AccountPlatform(u.ID, acct.ID); ok {
				t.Fatal("the workspace's account is found in main")
			}
			if a, err := tx.AccountOfNetworkUser(u.ID, "bluesky", "did:plc:client"); err != nil || a.ID != acct.ID {
				t.Fatalf("the network user's account across workspaces: %v %v", a, err)
			}
			if _, err := tx.ConfirmedMedia(u.ID, media.ID); err != ErrNotFound {
				t.Fatalf("the workspace's media from main: %v", err)
			}
			us := tx.Usage(w.Scope(), "2026-11")
			for _, c := range []struct {
				m        int
				platform string
				want     int
			}{
				{UsagePostsPublished, "", 1}, {UsagePostsFailed, "", 0}, {UsagePostsPublished, "bluesky", 1},
				{UsagePostsFailed, "linkedin", 1}, {UsageTargetsPublished, "", 1}, {UsageTargetsFailed, "", 1},
				{UsageTargetsFailed, "linkedin", 1}, {UsagePostsAccepted, "", 2},
			} {
				if got := us.Get(c.m, c.platform); got != c.want {
					t.Errorf("usage %d on %q: %d, want %d", c.m, c.platform, got, c.want)
				}
			}
			if got := tx.Usage(u.ID, "2026-11").Get(UsagePostsAccepted, ""); got != 0 {
				t.Errorf("main's usage counts the workspace's: %d", got)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// Cleared in batches of one: four objects, several transactions.
		rounds := 0
		for done := false; !done; rounds++ {
			if err := s.Update(ctx, func(tx *Tx) error {
				var err error
				if err := tx.DeleteAccount(acct); err != nil {
					return err
				}
				done, err = tx.ClearWorkspace(w.Scope(), 1)
				if err != nil || !done {
					return err
				}
				return tx.DeleteWorkspace(w)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if rounds < 3 {
			t.Errorf("cleared in %d rounds with a batch of one", rounds)
		}
		if err := s.View(func(tx *Tx) error {
			if tx.HasPost(inW.ID) || !tx.HasPost(inMain.ID) {
				t.Error("clearing the workspace removed the wrong posts")
			}
			if tx.HasCampaign(camp.ID) {
				t.Error("the workspace's campaign is left")
			}
			if _, err := tx.Media(media.ID); err != ErrNotFound {
				t.Errorf("the workspace's media is left: %v", err)
			}
			if tx.Usage(w.Scope(), "2026-11").Get(UsagePostsAccepted, "") != 0 {
				t.Error("the workspace's usage is left")
			}
			if _, err := tx.Workspace(u.ID, w.ID); err != ErrNotFound {
				t.Errorf("the workspace is left: %v", err)
			}
			if n := tx.CountWorkspaces(u.ID); n != 0 {
				t.Errorf("%d workspaces left", n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

// herald check finds an index entry whose workspace exists nowhere.
func TestCheckFindsEntriesOfNoWorkspace(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	u := &User{ID: newID(), Email: "check@example.com", Plan: "pro", CreatedAt: now}
	gone := newID()
	if err := s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		if err := tx.PutPost(&Post{ID: newID(), UserID: u.ID, Content: "main", Status: PostDraft, CreatedAt: now}, nil); err != nil {
			return err
		}
		return tx.PutPost(&Post{ID: newID(), UserID: u.ID, WorkspaceID: gone, Content: "nowhere", Status: PostDraft, CreatedAt: now}, nil)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := CheckFile(filepath.Join(dir, FileName), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range r.Problems {
		if strings.Contains(p, "names workspace "+gone) {
			found++
		}
	}
	if found != 2 { // posts_user and posts_count
		t.Fatalf("problems: %v", r.Problems)
	}
}
