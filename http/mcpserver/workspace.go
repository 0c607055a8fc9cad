package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Workspaces. The tools act in one workspace of the user, chosen as /v1 chooses it: the
// Herald-Workspace header of the /mcp request (handed on to every /v1 call the tools make), else
// the workspace the credential is bound to (a connector's key is bound to the workspace chosen on
// the OAuth consent page), else main. They need nothing of their own for it: every tool calls
// /v1 with the caller's principal, and /v1 resolves the workspace of every request (http/server's
// inWorkspace), so a tool sees and changes that workspace's objects only, an id of another
// workspace's object fails as on /v1, and a bound key naming another workspace is refused (403).
// What is here is what carries the header and what the tools say about the workspace.

type workspaceKey struct{}

// withWorkspaceOf is ctx with the workspace the /mcp request names (its Herald-Workspace
// header), when it names one; over stdio there is no header.
func withWorkspaceOf(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if extra == nil || extra.Header == nil {
		return ctx
	}
	if w := strings.TrimSpace(extra.Header.Get(server.WorkspaceHeader)); w != "" {
		return context.WithValue(ctx, workspaceKey{}, w)
	}
	return ctx
}

// askedWorkspace is the workspace the /mcp request named, "" when none.
func askedWorkspace(ctx context.Context) string {
	w, _ := ctx.Value(workspaceKey{}).(string)
	return w
}

// actingIn is the API id of the workspace the tools act in for ctx's principal: the one the
// request names, else the one its key is bound to, else main; "" over stdio, where there is no
// principal (there /v1/me says it).
func actingIn(ctx context.Context) string {
	p := principalOf(ctx)
	switch {
	case p == nil:
		return ""
	case askedWorkspace(ctx) != "":
		return askedWorkspace(ctx)
	case p.Key != nil && p.Key.WorkspaceID != "":
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
