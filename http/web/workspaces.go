package web

import (
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/persistence"
)

// workspaceRow is one workspace of the Workspaces page, with this month's usage as GET
// /v1/workspaces/:id/usage counts it.
type workspaceRow struct {
	*persistence.Workspace
	// Current says the page's session is in this workspace.
	Current bool
	// Accounts is how many accounts it holds (its accounts limit counts them).
	Accounts                        int
	PostsPublished, PostsFailed     int
	TargetsPublished, TargetsFailed int
	PostsAccepted, APIRequests      int
}

type workspacesData struct {
	Rows []workspaceRow
	// Month is this month (UTC, YYYY-MM), which the usage counts.
	Month string
}

// workspaces is GET /workspaces: the user's workspaces with their approval setting, limits and
// this month's usage. Creating, changing and deleting go through /api/workspaces (the page's
// forms); the usage CSV through GET /api/workspaces/:id/usage with Accept: text/csv.
func (p *pages) workspaces(c *echo.Context) error {
	v := p.newView(c, "Workspaces", "workspaces", nil)
	d := workspacesData{Month: p.Now().UTC().Format("2006-01")}
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.Workspaces(v.User.ID)
		if err != nil {
			return err
		}
		for _, w := range list {
			u := tx.Usage(w.Scope(), d.Month)
			u = p.Server.Requests().Pending(w.Scope(), d.Month, u)
			d.Rows = append(d.Rows, workspaceRow{Workspace: w, Current: w.Scope() == v.Scope, Accounts: tx.CountAccounts(w.Scope()),
				PostsPublished: u.Get(persistence.UsagePostsPublished, ""), PostsFailed: u.Get(persistence.UsagePostsFailed, ""),
				TargetsPublished: u.Get(persistence.UsageTargetsPublished, ""), TargetsFailed: u.Get(persistence.UsageTargetsFailed, ""),
				PostsAccepted: u.Get(persistence.UsagePostsAccepted, ""), APIRequests: u.Get(persistence.UsageAPIRequests, "")})
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	v.Data = d
	return p.render(c, 200, "workspaces", v)
}
