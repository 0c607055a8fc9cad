package mcpserver

import (
	"context"
	"errors"
	"net/http"

	"github.com/heraldhq/herald/persistence"
)

// Workspaces. The tools act in one workspace of the user: the one the credential is bound to
// (a connector's key is bound to the workspace chosen on the OAuth consent page), else main.
// They need nothing of their own for it: every tool calls /v1 with the caller's principal, and
// /v1 resolves the workspace of every request (http/server's inWorkspace), so a tool sees and
// changes that workspace's objects only, and an id of another workspace's object is not found,
// as on /v1. What is here is what the tools say about it.

// actingIn is the API id of the workspace the tools act in for ctx's principal: the workspace
// its key is bound to, else main (the tools name no workspace in their requests); "" over
// stdio, where there is no principal.
func actingIn(ctx context.Context) string {
	p := principalOf(ctx)
	if p == nil {
		return ""
	}
	if p.Key != nil && p.Key.WorkspaceID != "" {
		return p.Key.WorkspaceID
	}
	return persistence.MainWorkspace
}

// workspaceGone is e, or, when e is /v1's 403 because the caller's key is bound to a workspace
// that no longer exists, the same refusal in words that say what happened and what to do: the
// user deleted the workspace the connector was connected to, and connecting again (choosing
// another workspace) is the way out. The lookup runs only on a 403.
func (t *Tools) workspaceGone(ctx context.Context, e *apiError) *apiError {
	p := principalOf(ctx)
	if e.Status != http.StatusForbidden || t.cfg.Workspace == nil || p == nil || p.Key == nil ||
		p.Key.WorkspaceID == "" || p.Key.WorkspaceID == persistence.MainWorkspace {
		return e
	}
	if _, err := t.cfg.Workspace(p.User.ID, p.Key.WorkspaceID); !errors.Is(err, persistence.ErrNotFound) {
		return e
	}
	out := *e
	if p.Key.Kind == persistence.KeyKindConnector {
		out.Message = "the workspace " + p.Key.WorkspaceID + " this connector was connected to has been deleted, so it can act nowhere: nothing was done. " +
			"The user can connect Herald again from this AI host and choose another workspace on Herald's consent page"
	} else {
		out.Message = "the workspace " + p.Key.WorkspaceID + " this API key is bound to has been deleted, so it can act nowhere: nothing was done. " +
			"Use a key of another workspace"
	}
	return &out
}
