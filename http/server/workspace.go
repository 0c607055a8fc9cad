package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// WorkspaceHeader names the workspace a request acts in (persistence.MainWorkspace or a
// workspace's id).
const WorkspaceHeader = "Herald-Workspace"

// inWorkspace returns a copy of p (principals are shared between requests) acting in the
// workspace the request names: its Herald-Workspace header, else the key's own workspace, else
// chosen (the dashboard session's choice), else main. A workspace the user does not have is 404
// not_found; one a bound key is not bound to is 403 forbidden with an insufficient_scope
// challenge; a bound key whose workspace was deleted is 403 as well.
func (s *Server) inWorkspace(c *echo.Context, p *auth.Principal, chosen string) (*auth.Principal, error) {
	return s.resolveWorkspace(c, p, strings.TrimSpace(c.Request().Header.Get(WorkspaceHeader)), chosen)
}

// resolveWorkspace is inWorkspace with the workspace asked for given (a route's path names one,
// a request its header): the one rule of which workspace a principal may act in.
func (s *Server) resolveWorkspace(c *echo.Context, p *auth.Principal, asked, chosen string) (*auth.Principal, error) {
	bound := ""
	if p.Key != nil {
		bound = p.Key.WorkspaceID
	}
	id := persistence.MainWorkspace
	switch {
	case asked != "":
		id = asked
	case bound != "":
		id = bound
	case chosen != "":
		id = chosen
	}
	if id == p.User.ID {
		id = persistence.MainWorkspace // the main workspace's scope names it too
	}
	if bound != "" && id != bound {
		return nil, BoundElsewhere(bound, id)
	}
	if id != persistence.MainWorkspace {
		if s.cfg.Auth == nil {
			return nil, apierr.NotFound("workspace " + id)
		}
		w, err := s.cfg.Auth.Workspace(p.User.ID, id)
		switch {
		case errors.Is(err, persistence.ErrNotFound) && bound != "":
			return nil, apierr.New(http.StatusForbidden, apierr.CodeForbidden,
				"this API key is bound to workspace %s, which no longer exists", bound).
				WithHeader("WWW-Authenticate", `Bearer error="insufficient_scope", error_description="the key's workspace was deleted"`)
		case errors.Is(err, persistence.ErrNotFound) && asked == "" && chosen != "":
			id = persistence.MainWorkspace // the dashboard's choice was deleted: back to main
		case errors.Is(err, persistence.ErrNotFound):
			return nil, apierr.NotFound("workspace " + id)
		case err != nil:
			if e := StoreFailure(c, s.cfg.Log, err); e != nil {
				return nil, e
			}
			s.cfg.Log.Error("workspace lookup failed", "request_id", RequestID(c), "error", err)
			return nil, apierr.Internal()
		default:
			id = w.ID
		}
	}
	cp := *p
	cp.WorkspaceID = id
	return &cp, nil
}

// BoundElsewhere is the 403 of a key bound to workspace bound that asks for workspace id.
func BoundElsewhere(bound, id string) *apierr.Error {
	return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "this API key is bound to workspace %s and cannot act in %s", bound, id).
		WithHeader("WWW-Authenticate", `Bearer error="insufficient_scope", error_description="the key is bound to another workspace"`)
}
