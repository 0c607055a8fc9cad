package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
)

// The roles of a team's members (auth.Roles) on the dashboard's door. Each operation of the /api
// group needs a least role, as it needs an OAuth scope on /v1 (routes.go): leastRoles names the
// writes an editor may make and the operations above admin or open to a viewer otherwise; every
// other read (GET) is a viewer's, every other write an admin's, so that an operation added
// without an entry is closed to editors and viewers rather than open. The team's owner and API
// keys have no role and pass; a member below the route's role gets 403 forbidden naming the role
// it needs (docs/workspaces.md, Members and roles).
var leastRoles = map[string]string{
	// Editors compose and submit.
	"POST /posts":                           auth.RoleEditor,
	"PATCH /posts/:id":                      auth.RoleEditor,
	"POST /posts/validate":                  auth.RoleEditor,
	"POST /posts/publish":                   auth.RoleEditor,
	"POST /posts/:id/publish":               auth.RoleEditor,
	"POST /posts/schedule":                  auth.RoleEditor,
	"POST /posts/:id/schedule":              auth.RoleEditor,
	"POST /posts/:id/queue":                 auth.RoleEditor,
	"POST /media/presign":                   auth.RoleEditor,
	"POST /media/confirm":                   auth.RoleEditor,
	"PATCH /media/:id":                      auth.RoleEditor,
	"POST " + campaignsPath:                 auth.RoleEditor,
	"POST " + campaignsPath + "/:id/retry":  auth.RoleEditor,
	"POST /inbox/comments/:commentId/reply": auth.RoleEditor,
	"POST /inbox/comments/:commentId/like":  auth.RoleEditor,
	"POST /inbox/comments/:commentId/hide":  auth.RoleEditor,
	"POST /inbox/dms/:conversationId/reply": auth.RoleEditor,
	// Anyone may choose the workspace their dashboard shows (among those their role opens).
	"POST /session/workspace": auth.RoleViewer,
	// The team's keys are an admin's to see as well as to manage.
	"GET /keys": auth.RoleAdmin,
	// The owner manages the team.
	"GET /members":                    auth.RoleOwner,
	"POST /members/invitations":       auth.RoleOwner,
	"DELETE /members/invitations/:id": auth.RoleOwner,
	"PATCH /members/:id":              auth.RoleOwner,
	"DELETE /members/:id":             auth.RoleOwner,
}

// leastRole is the least role of the operation method path (path below the door's prefix).
func leastRole(method, path string) string {
	if r, ok := leastRoles[method+" "+path]; ok {
		return r
	}
	if method == http.MethodGet || method == http.MethodHead {
		return auth.RoleViewer
	}
	return auth.RoleAdmin
}

// MayDo reports whether the principal's role lets it call the dashboard's operation method route
// (the route below the door's prefix, as the router names it: "/posts/:id"): the pages offer an
// action only to whom the operation would not refuse, by the same table.
func MayDo(p *auth.Principal, method, route string) bool {
	return p != nil && p.HasRole(leastRole(method, route))
}

// requireRole is the dashboard group's middleware that holds a member to the least role of the
// route the request matched. A request that matched no route passes on to its 404.
func requireRole(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p := server.Principal(c)
		route := strings.TrimPrefix(c.Path(), DashboardPrefix)
		if p == nil || p.Member == nil || route == "" || strings.HasSuffix(route, "*") {
			return next(c)
		}
		if need := leastRole(c.Request().Method, route); !p.HasRole(need) {
			return roleRefused(need, p.Role)
		}
		return next(c)
	}
}

// roleRefused is the 403 of a member whose role is below need.
func roleRefused(need, have string) *apierr.Error {
	return apierr.New(http.StatusForbidden, apierr.CodeForbidden,
		"this operation needs the %s role or above in this team; yours is %s", need, have)
}
