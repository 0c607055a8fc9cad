package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The read-only resources: what a host may attach to a conversation without a tool call. Each is
// the answer of the read tool of the same data, so a resource and a tool never disagree, and each
// needs service:read.
const (
	ResourceAccounts    = "herald://accounts"
	ResourceRecentPosts = "herald://posts/recent"
)

func (t *Tools) addResources() {
	t.addResource(&mcp.Resource{URI: ResourceAccounts, Name: "accounts", Title: "Connected accounts", MIMEType: "application/json",
		Description: "The user's connected social accounts (as list_accounts answers)."},
		func(ctx context.Context) (any, error) { return t.listAccounts(ctx, listAccountsIn{}) })
	t.addResource(&mcp.Resource{URI: ResourceRecentPosts, Name: "recent_posts", Title: "Recent posts", MIMEType: "application/json",
		Description: "The user's 20 latest posts (as list_posts answers its first page)."},
		func(ctx context.Context) (any, error) { return t.listPosts(ctx, listPostsIn{Limit: 20}) })
}

func (t *Tools) addResource(r *mcp.Resource, read func(ctx context.Context) (any, error)) {
	t.srv.AddResource(r, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil {
			g, _ := req.Extra.TokenInfo.Extra[grantKey].(*Grant)
			if g != nil {
				if !g.Has(ScopeRead) {
					return nil, fmt.Errorf("the resource %s needs the scope %s, which this token was not granted", r.URI, ScopeRead)
				}
				ctx = withPrincipal(ctx, g.Principal)
			}
		}
		if req != nil {
			ctx = withWorkspaceOf(ctx, req.Extra)
		}
		v, err := read(ctx)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: string(b)}}}, nil
	})
}
