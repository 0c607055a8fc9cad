package auth

import "github.com/heraldhq/herald/persistence"

// Roles of a team's members (persistence.Member), least first: a viewer reads; an editor also
// composes and submits posts; an admin also deletes, manages accounts, keys, webhooks,
// workspaces and connect links, and approves; the owner also manages members and the plan. The
// user who owns the team, and API keys (which are no one's member), are not limited by a role.
const (
	RoleViewer = "viewer"
	RoleEditor = "editor"
	RoleAdmin  = "admin"
	RoleOwner  = "owner"
)

// Roles lists the roles, least first.
var Roles = []string{RoleViewer, RoleEditor, RoleAdmin, RoleOwner}

// RoleRank is a role's place in Roles; -1 for a name that is no role.
func RoleRank(role string) int {
	for i, r := range Roles {
		if r == role {
			return i
		}
	}
	return -1
}

// HasRole reports whether the principal holds at least the role least: always for the team's
// owner and for keys, by rank for a member.
func (p *Principal) HasRole(least string) bool {
	if p.Member == nil {
		return true
	}
	return RoleRank(p.Role) >= RoleRank(least)
}

// MemberOf returns the principal that a member's request acts for: the owner's user, with the
// member and their role beside it.
func MemberOf(owner, member *persistence.User, m *persistence.Member) *Principal {
	return &Principal{User: owner, Member: member, Role: m.Role}
}
