package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestPublicationsNewestFirst(t *testing.T) { persistence.EachStore(t, publicationsNewestFirst) }

func publicationsNewestFirst(t *testing.T, s *persistence.Store) {
	user, other := uuid.NewString(), uuid.NewString()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	put := func(p *persistence.Post) {
		require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))
	}
	published := func(user string, at time.Time, platforms ...string) *persistence.Post {
		p := newPost(user, persistence.PostPublished, platforms...)
		p.UpdatedAt = at
		for i := range p.Targets {
			p.Targets[i].Status = persistence.TargetPublished
			p.Targets[i].PublicationID = "net-" + p.Targets[i].Platform + "-" + at.Format("0102")
		}
		put(p)
		return p
	}
	// Created first, published last: order is by publication time, not creation.
	late := published(user, base.Add(72*time.Hour), "twitter_x")
	old := published(user, base, "twitter_x", "bluesky")
	mid := published(user, base.Add(24*time.Hour), "youtube")
	// A partial post: only its published target counts.
	part := newPost(user, persistence.PostPartial, "bluesky", "tiktok")
	part.UpdatedAt = base.Add(48 * time.Hour)
	part.Targets[0].Status, part.Targets[0].PublicationID = persistence.TargetPublished, "net-part"
	part.Targets[1].Status = persistence.TargetFailed
	put(part)
	// Not publications: drafts, failed posts, other users' posts.
	put(newPost(user, persistence.PostDraft, "twitter_x"))
	put(newPost(user, persistence.PostFailed, "twitter_x"))
	published(other, base, "twitter_x")

	list := func(f persistence.PublicationFilter) []persistence.Publication {
		f.Scope = user
		var out []persistence.Publication
		require.NoError(t, s.View(func(tx *persistence.Tx) error {
			var err error
			out, err = tx.Publications(f)
			return err
		}))
		return out
	}
	all := list(persistence.PublicationFilter{})
	require.Len(t, all, 5)
	require.Equal(t, late.ID, all[0].PostID)
	require.Equal(t, part.ID, all[1].PostID)
	require.Equal(t, "net-part", all[1].NetworkID)
	require.Equal(t, "bluesky", all[1].Platform)
	require.Equal(t, mid.ID, all[2].PostID)
	require.Equal(t, old.ID, all[3].PostID)
	require.Equal(t, 0, all[3].Target)
	require.Equal(t, 1, all[4].Target)
	require.Equal(t, old.Targets[1].AccountID, all[4].AccountID)
	require.True(t, all[0].PublishedAt.Equal(base.Add(72*time.Hour)))

	only := list(persistence.PublicationFilter{Platforms: []string{"bluesky"}})
	require.Len(t, only, 2)
	window := list(persistence.PublicationFilter{Since: base.Add(time.Hour), Until: base.Add(48 * time.Hour)})
	require.Len(t, window, 2)
	require.Equal(t, part.ID, window[0].PostID)
	require.Equal(t, mid.ID, window[1].PostID)
	byAccount := list(persistence.PublicationFilter{AccountID: old.Targets[0].AccountID})
	require.Len(t, byAccount, 1)
	require.Equal(t, old.ID, byAccount[0].PostID)
}

// BenchmarkPublications lists a week of publications of a user with 10,000 published posts, one
// an hour (and as many drafts, which the index summaries skip without decoding).
func BenchmarkPublications(b *testing.B) {
	s, err := persistence.Open(b.TempDir(), persistence.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	user := uuid.NewString()
	at := time.Now().UTC()
	for batch := range 20 {
		if err := s.Update(context.Background(), func(tx *persistence.Tx) error {
			for i := range 1000 {
				status := persistence.PostDraft
				if i%2 == 0 {
					status = persistence.PostPublished
				}
				p := newPost(user, status, "twitter_x", "bluesky")
				p.Content = "A realistic post text with a few words, a link https://example.com/launch and #tags."
				p.UpdatedAt = at.Add(-time.Duration(batch*1000+i) * time.Hour)
				if status == persistence.PostPublished {
					for k := range p.Targets {
						p.Targets[k].Status, p.Targets[k].PublicationID = persistence.TargetPublished, uuid.NewString()
					}
				}
				if err := tx.PutPost(p, nil); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		var n int
		_ = s.View(func(tx *persistence.Tx) error {
			pubs, err := tx.Publications(persistence.PublicationFilter{Scope: user, Platforms: []string{"twitter_x", "bluesky"}, Since: at.Add(-7 * 24 * time.Hour)})
			n = len(pubs)
			return err
		})
		if n == 0 {
			b.Fatal("no publications")
		}
	}
}

// A publication id names one target of one post; PublicationOf resolves it, and a post id too
// (target -1), for its owner only.
func TestPublicationIDsResolveToTheirTarget(t *testing.T) {
	persistence.EachStore(t, publicationIDsResolveToTheirTarget)
}

func publicationIDsResolveToTheirTarget(t *testing.T, s *persistence.Store) {
	user, other := uuid.NewString(), uuid.NewString()
	p := newPost(user, persistence.PostPartial, "twitter_x", "bluesky", "youtube")
	p.Targets[0].Status, p.Targets[0].PublicationID = persistence.TargetPublished, "tw-1"
	p.Targets[1].Status = persistence.TargetFailed
	p.Targets[2].Status, p.Targets[2].PublicationID = persistence.TargetPublished, "yt-1"
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutPost(p, nil) }))

	ids := map[string]bool{}
	for i := range p.Targets {
		id := persistence.PublicationUUID(p.ID, i)
		u, err := uuid.Parse(id)
		require.NoError(t, err)
		require.Equal(t, uuid.Version(8), u.Version())
		require.Equal(t, uuid.RFC4122, u.Variant())
		require.Equal(t, p.ID[:13], id[:13], "a publication id keeps its post's creation time")
		require.Equal(t, id, persistence.PublicationUUID(p.ID, i), "derived, so always the same")
		ids[id] = true
	}
	require.Len(t, ids, 3)

	resolve := func(user, id string) (string, int, error) {
		var post string
		var target int
		err := s.View(func(tx *persistence.Tx) error {
			got, tg, err := tx.PublicationOf(user, id)
			if err == nil {
				post, target = got.ID, tg
			}
			return err
		})
		return post, target, err
	}
	for _, i := range []int{0, 2} {
		post, target, err := resolve(user, persistence.PublicationUUID(p.ID, i))
		require.NoError(t, err)
		require.Equal(t, p.ID, post)
		require.Equal(t, i, target)
	}
	post, target, err := resolve(user, p.ID)
	require.NoError(t, err)
	require.Equal(t, p.ID, post)
	require.Equal(t, -1, target, "a post id names every publication of the post")

	for _, c := range []struct{ user, id string }{
		{other, persistence.PublicationUUID(p.ID, 0)}, // another user's
		{other, p.ID},
		{user, persistence.PublicationUUID(p.ID, 1)}, // a failed target is no publication
		{user, uuid.NewString()},
		{user, "not-a-uuid"},
	} {
		_, _, err := resolve(c.user, c.id)
		require.ErrorIs(t, err, persistence.ErrNotFound, c.id)
	}

	all, err := func() (out []persistence.Publication, err error) {
		err = s.View(func(tx *persistence.Tx) error {
			out, err = tx.Publications(persistence.PublicationFilter{Scope: user})
			return err
		})
		return
	}()
	require.NoError(t, err)
	require.Len(t, all, 2)
	for _, pub := range all {
		require.Equal(t, persistence.PublicationUUID(pub.PostID, pub.Target), pub.ID)
	}

	// Deleting the post forgets its publications.
	require.NoError(t, s.Update(context.Background(), func(tx *persistence.Tx) error { return tx.DeletePost(p) }))
	_, _, err = resolve(user, persistence.PublicationUUID(p.ID, 0))
	require.ErrorIs(t, err, persistence.ErrNotFound)
}
