package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// memberRow is a member as the members page lists them.
type memberRow struct {
	*persistence.Member
	User *persistence.User
	// Self is the member viewing the page (who cannot change or remove themselves).
	Self bool
}

type membersData struct {
	Members     []memberRow
	Invitations []*persistence.Invitation
	Workspaces  []*persistence.Workspace
	// Names maps a workspace's API id to its name.
	Names map[string]string
	Roles []string
}

// members is GET /members: the team's members and pending invitations, the invitation form and
// each member's role and removal. The owner's (or an owner-role member's) page only: the others
// get 403 and no entry in the navigation. The forms post to /api/members (http/api/members.go).
func (p *pages) members(c *echo.Context) error {
	pr := server.Principal(c)
	if !pr.HasRole(auth.RoleOwner) {
		return p.fail(c, http.StatusForbidden, "Managing the team's members needs the owner role.")
	}
	v := p.newView(c, "Members", "members", nil)
	d := membersData{Names: map[string]string{}, Roles: auth.Roles}
	now := p.Now()
	err := p.Store.View(func(tx *persistence.Tx) error {
		var err error
		if d.Workspaces, err = tx.Workspaces(pr.User.ID); err != nil {
			return err
		}
		for _, w := range d.Workspaces {
			d.Names[w.ID] = w.Name
		}
		ms, err := tx.MembersOf(pr.User.ID)
		if err != nil {
			return err
		}
		for _, m := range ms {
			u, err := tx.User(m.UserID)
			if err != nil {
				return err
			}
			d.Members = append(d.Members, memberRow{Member: m, User: u, Self: pr.Member != nil && pr.Member.ID == u.ID})
		}
		is, err := tx.InvitationsOf(pr.User.ID)
		if err != nil {
			return err
		}
		for _, i := range is {
			if i.Pending(now) {
				d.Invitations = append(d.Invitations, i)
			}
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	v.Data = d
	return p.render(c, http.StatusOK, "members", v)
}
