package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A team's members and invitations are listed by owner, an invitation is found by its token's
// hash whatever its state, and removing a member removes their user, password and sessions so
// that they can no longer sign in, and leaves the other members alone.
func TestMembersAndInvitations(t *testing.T) { EachStore(t, membersAndInvitations) }

func membersAndInvitations(t *testing.T, s *Store) {
	ctx := context.Background()
	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	now := time.Now().UTC().Truncate(time.Second)
	owner, other := &User{ID: newID(), Email: "owner@example.com", CreatedAt: now}, &User{ID: newID(), Email: "other@example.com", CreatedAt: now}
	ed, vw := &User{ID: newID(), Email: "Ed@Example.com", CreatedAt: now}, &User{ID: newID(), Email: "vw@example.com", CreatedAt: now}
	inv := &Invitation{ID: newID(), OwnerID: owner.ID, InvitedBy: owner.ID, Email: "ed@example.com", Role: "editor",
		Workspaces: []string{MainWorkspace}, CreatedAt: now, ExpiresAt: now.Add(7 * 24 * time.Hour)}
	foreign := &Invitation{ID: newID(), OwnerID: other.ID, InvitedBy: other.ID, Email: "x@example.com", Role: "viewer",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		for _, u := range []*User{owner, other, ed, vw} {
			require.NoError(t, tx.CreateUser(u))
		}
		require.NoError(t, tx.SetPassword(ed.ID, "phc-ed"))
		require.NoError(t, tx.PutSession(sessionHash("ed1"), &Session{UserID: ed.ID, CreatedAt: now, LastSeenAt: now}))
		require.NoError(t, tx.PutSession(sessionHash("ed2"), &Session{UserID: ed.ID, CreatedAt: now, LastSeenAt: now}))
		require.NoError(t, tx.PutSession(sessionHash("vw1"), &Session{UserID: vw.ID, CreatedAt: now, LastSeenAt: now}))
		require.NoError(t, tx.PutMember(&Member{UserID: ed.ID, OwnerID: owner.ID, Role: "editor", Workspaces: []string{MainWorkspace}, CreatedAt: now}))
		require.NoError(t, tx.PutMember(&Member{UserID: vw.ID, OwnerID: owner.ID, Role: "viewer", CreatedAt: now}))
		require.NoError(t, tx.PutInvitation(inv, sessionHash("inv-token")))
		return tx.PutInvitation(foreign, sessionHash("foreign-token"))
	}))

	require.NoError(t, s.View(func(tx *Tx) error {
		m, err := tx.Member(ed.ID)
		require.NoError(t, err)
		require.Equal(t, owner.ID, m.OwnerID)
		require.True(t, m.Allows(MainWorkspace))
		require.False(t, m.Allows(newID()))
		_, err = tx.Member(owner.ID)
		require.ErrorIs(t, err, ErrNotFound, "an owner is no one's member")
		_, err = tx.Member("not-an-id")
		require.ErrorIs(t, err, ErrNotFound)
		ms, err := tx.MembersOf(owner.ID)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		require.Equal(t, ed.ID, ms[0].UserID)
		ms, err = tx.MembersOf(other.ID)
		require.NoError(t, err)
		require.Empty(t, ms)
		got, err := tx.InvitationByHash(sessionHash("inv-token"))
		require.NoError(t, err)
		require.Equal(t, inv.ID, got.ID)
		require.True(t, got.Pending(now))
		require.False(t, got.Pending(got.ExpiresAt), "an invitation ends when it expires")
		_, err = tx.InvitationByHash(sessionHash("unknown"))
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.InvitationByHash([]byte("short"))
		require.ErrorIs(t, err, ErrNotFound)
		is, err := tx.InvitationsOf(owner.ID)
		require.NoError(t, err)
		require.Len(t, is, 1)
		require.Equal(t, inv.ID, is[0].ID)
		return nil
	}))

	// Marking it used keeps it findable by its hash (the page then says it was used).
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		used := *inv
		used.UsedAt, used.MemberID = &now, ed.ID
		return tx.PutInvitation(&used, nil)
	}))
	require.NoError(t, s.View(func(tx *Tx) error {
		got, err := tx.InvitationByHash(sessionHash("inv-token"))
		require.NoError(t, err)
		require.NotNil(t, got.UsedAt)
		require.False(t, got.Pending(now))
		return nil
	}))

	var ended int
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		m, err := tx.Member(ed.ID)
		require.NoError(t, err)
		ended, err = tx.DeleteMember(m)
		return err
	}))
	require.Equal(t, 2, ended)
	require.NoError(t, s.View(func(tx *Tx) error {
		_, err := tx.Member(ed.ID)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.User(ed.ID)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.UserByEmail("ed@example.com")
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.Password(ed.ID)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.Session(sessionHash("ed1"))
		require.ErrorIs(t, err, ErrNotFound)
		_, err = tx.Session(sessionHash("vw1"))
		require.NoError(t, err, "another member's session stays")
		ms, err := tx.MembersOf(owner.ID)
		require.NoError(t, err)
		require.Len(t, ms, 1)
		require.Equal(t, vw.ID, ms[0].UserID)
		_, err = tx.User(owner.ID)
		require.NoError(t, err)
		return nil
	}))
}
