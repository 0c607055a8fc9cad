package persistence

import (
	"bytes"
	"strings"
	"time"
)

// Members are the people of a Herald user's team (the owner): each is a User of their own, with
// an e-mail and a password to sign in to the dashboard, and a Member record that names the owner
// they act for, their role and the workspaces they may open. A member's user owns no data: their
// session acts for the owner (http/server.SessionPrincipal), so every object they create is the
// owner's, in the owner's workspaces, under the owner's plan. A user is a member of at most one
// team, and an owner is never a member of another (an invitation to an e-mail that already has a
// user is refused).
//
// Invitations are how members join: a random token shown once to the inviter, only its SHA-256
// stored, single use, expiring.
//
// The member buckets:
//
//	members            member's user id (16) → Member (JSON)
//	members_owner      owner's user id | member's user id → empty: a team's members
//	invitations        invitation id (16) → Invitation (JSON)
//	invitations_hash   SHA-256 of the invitation token (32) → invitation id
//	invitations_owner  owner's user id | invitation id → empty: a team's invitations
var (
	bMembers          = []byte("members")
	bMembersOwner     = []byte("members_owner")
	bInvitations      = []byte("invitations")
	bInvitationsHash  = []byte("invitations_hash")
	bInvitationsOwner = []byte("invitations_owner")
)

func init() {
	registerBuckets(bMembers, bMembersOwner, bInvitations, bInvitationsHash, bInvitationsOwner)
}

// Member is a person of an owner's team.
type Member struct {
	// UserID is the member's own user (their e-mail, name, password and sessions).
	UserID string `json:"user_id"`
	// OwnerID is the user the member acts for.
	OwnerID string `json:"owner_id"`
	// Role is owner, admin, editor or viewer (http/auth's roles).
	Role string `json:"role"`
	// Workspaces are the API ids of the owner's workspaces the member may open (MainWorkspace or
	// a workspace's id); empty: every one.
	Workspaces []string  `json:"workspaces,omitempty"`
	InvitedBy  string    `json:"invited_by,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Allows reports whether the member may open the workspace of API id id.
func (m *Member) Allows(id string) bool {
	if len(m.Workspaces) == 0 {
		return true
	}
	for _, w := range m.Workspaces {
		if w == id {
			return true
		}
	}
	return false
}

// Invitation is an owner's invitation of a person to their team.
type Invitation struct {
	ID      string `json:"id"`
	OwnerID string `json:"owner_id"`
	// InvitedBy is the user who invited (the owner, or a member with the owner role).
	InvitedBy  string    `json:"invited_by"`
	Email      string    `json:"email"`
	Role       string    `json:"role"`
	Workspaces []string  `json:"workspaces,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// UsedAt is when the invitation was accepted (MemberID then names the member's user);
	// RevokedAt when the inviter revoked it. Either ends it.
	UsedAt    *time.Time `json:"used_at,omitempty"`
	MemberID  string     `json:"member_id,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Pending reports whether the invitation can still be accepted at now.
func (i *Invitation) Pending(now time.Time) bool {
	return i.UsedAt == nil && i.RevokedAt == nil && now.Before(i.ExpiresAt)
}

// PutMember stores a member (new, or with a changed role or workspaces).
func (t *Tx) PutMember(m *Member) error {
	if err := t.kv.Bucket(bMembersOwner).Put(join(mustID(m.OwnerID), mustID(m.UserID)), nil); err != nil {
		return err
	}
	return t.put(bMembers, mustID(m.UserID), m)
}

// Member returns the member record of a user; ErrNotFound when the user is no one's member.
func (t *Tx) Member(userID string) (*Member, error) {
	key, err := ID(userID)
	if err != nil {
		return nil, ErrNotFound
	}
	var m Member
	if err := t.get(bMembers, key, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// MembersOf lists an owner's members, oldest first.
func (t *Tx) MembersOf(ownerID string) ([]*Member, error) {
	prefix := mustID(ownerID)
	var out []*Member
	c := t.kv.Bucket(bMembersOwner).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var m Member
		if err := t.get(bMembers, k[16:], &m); err != nil {
			return nil, err
		}
		out = append(out, &m)
	}
	return out, nil
}

// DeleteMember removes a member and their user: the record, the e-mail index, the password and
// every session, so that the person can no longer sign in and any browser they left signed in is
// refused at its next request. It returns how many sessions it ended.
func (t *Tx) DeleteMember(m *Member) (int, error) {
	n, err := t.DeleteSessionsOfUser(m.UserID, nil)
	if err != nil {
		return n, err
	}
	id := mustID(m.UserID)
	var u User
	switch err := t.get(bUsers, id, &u); err {
	case nil:
		if err := t.kv.Bucket(bUsersEmail).Delete([]byte(strings.ToLower(u.Email))); err != nil {
			return n, err
		}
		if err := t.kv.Bucket(bUsers).Delete(id); err != nil {
			return n, err
		}
	case ErrNotFound:
	default:
		return n, err
	}
	if err := t.kv.Bucket(bUserPasswords).Delete(id); err != nil {
		return n, err
	}
	if err := t.kv.Bucket(bMembersOwner).Delete(join(mustID(m.OwnerID), id)); err != nil {
		return n, err
	}
	return n, t.kv.Bucket(bMembers).Delete(id)
}

// PutInvitation stores an invitation under its id, and its token's hash (only when new: hash is
// nil on later writes, which mark it used or revoked).
func (t *Tx) PutInvitation(i *Invitation, hash []byte) error {
	id := mustID(i.ID)
	if hash != nil {
		if len(hash) != SessionHashLen {
			return ErrBadSessionKey
		}
		if err := t.kv.Bucket(bInvitationsHash).Put(hash, id); err != nil {
			return err
		}
	}
	if err := t.kv.Bucket(bInvitationsOwner).Put(join(mustID(i.OwnerID), id), nil); err != nil {
		return err
	}
	return t.put(bInvitations, id, i)
}

// Invitation returns an invitation by id; ErrNotFound when there is none.
func (t *Tx) Invitation(id string) (*Invitation, error) {
	key, err := ID(id)
	if err != nil {
		return nil, ErrNotFound
	}
	var i Invitation
	if err := t.get(bInvitations, key, &i); err != nil {
		return nil, err
	}
	return &i, nil
}

// InvitationByHash returns the invitation of a token's SHA-256; ErrNotFound when there is none.
// Used, revoked and expired invitations are found too: the caller says which it is.
func (t *Tx) InvitationByHash(hash []byte) (*Invitation, error) {
	if len(hash) != SessionHashLen {
		return nil, ErrNotFound
	}
	id := t.kv.Bucket(bInvitationsHash).Get(hash)
	if id == nil {
		return nil, ErrNotFound
	}
	var i Invitation
	if err := t.get(bInvitations, id, &i); err != nil {
		return nil, err
	}
	return &i, nil
}

// InvitationsOf lists an owner's invitations, oldest first, ended ones included.
func (t *Tx) InvitationsOf(ownerID string) ([]*Invitation, error) {
	prefix := mustID(ownerID)
	var out []*Invitation
	c := t.kv.Bucket(bInvitationsOwner).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var i Invitation
		if err := t.get(bInvitations, k[16:], &i); err != nil {
			return nil, err
		}
		out = append(out, &i)
	}
	return out, nil
}
