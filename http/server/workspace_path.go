package server

import (
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
)

// InWorkspace returns the request's principal acting in the workspace a route's path names (id:
// persistence.MainWorkspace or a workspace's id), by the rules every request's workspace follows
// (inWorkspace): a workspace the user does not have is 404 not_found; one a bound key is not
// bound to is 403 forbidden with an insufficient_scope challenge. The path's id takes the place of
// the Herald-Workspace header for this route.
func (s *Server) InWorkspace(c *echo.Context, id string) (*auth.Principal, error) {
	return s.resolveWorkspace(c, Principal(c), id, "")
}
