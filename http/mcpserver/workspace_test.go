package mcpserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence"
)

// grantIn runs the OAuth flow for resource as the signed-in user, choosing workspace on the
// consent page, and returns the access token.
func grantIn(t *testing.T, h *apptest.OAuth, resource, workspace string) string {
	t.Helper()
	verifier, challenge := apptest.PKCEPair("w")
	br := h.SignedIn()
	page := br.Send("GET", "/oauth/authorize?"+h.AuthRequest(challenge, resource, "service:read service:write").Encode(), nil, nil)
	require.Equal(t, 200, page.Status, string(page.Body))
	form := url.Values{}
	for _, m := range apptest.HiddenField.FindAllStringSubmatch(string(page.Body), -1) {
		form.Add(m[1], apptest.HTMLUnescape(m[2]))
	}
	form.Set("decision", "approve")
	form.Set("workspace", workspace)
	r := br.Send("POST", "/oauth/authorize", form, nil)
	require.Equal(t, 303, r.Status, string(r.Body))
	loc, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	tok := h.Token(url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier},
		"redirect_uri": {h.Redirect}, "client_id": {h.ClientID}, "resource": {resource}})
	require.Equal(t, 200, tok.Status, string(tok.Body))
	return tok.JSON(t)["access_token"].(string)
}

// refused requires a tool error carrying /v1's refusal of an object outside the workspace: 404
// not_found, or 403 forbidden where /v1 answers that for another owner's object.
func refused(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	msg := apptest.ToolError(t, res)
	if !strings.Contains(msg, "(not_found, HTTP 404)") {
		require.Contains(t, msg, "(forbidden, HTTP 403)")
	}
}

// A connector bound to workspace B (chosen on the consent page), through the official SDK
// client: whoami names B; every tool group and resource sees B's objects only; an id of one of
// main's objects is not found, as on /v1, and changes nothing; what it creates lands in B. Once
// B is deleted, its calls are refused and the error says what happened.
func TestMCPConnectorActsInItsWorkspace(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{Config: func(c *app.Config) { c.WebhookAllowPrivate = true }})
	ctx := context.Background()
	hooks := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hooks.Close)

	// Main's objects, made with the user's key (a key of every workspace acts in main).
	mainS := h.MCPSession(h.Key)
	mainMedia := apptest.OKJSON(t, apptest.CallTool(t, mainS, "upload_media", map[string]any{"data": base64.StdEncoding.EncodeToString(apptest.PNGFile), "filename": "a.png"}))["media_id"].(string)
	mainPost := apptest.OKJSON(t, apptest.CallTool(t, mainS, "create_draft", map[string]any{"content": "main's draft", "accounts": []string{"linkedin"}}))["post_id"].(string)
	mainCampaign := apptest.OKJSON(t, apptest.CallTool(t, mainS, "create_campaign", map[string]any{"name": "main's", "mode": "draft",
		"posts": []map[string]any{{"content": "one", "accounts": []string{"linkedin"}}}}))["campaign_id"].(string)
	mainHook := apptest.OKJSON(t, apptest.CallTool(t, mainS, "create_webhook", map[string]any{"url": hooks.URL + "/main", "events": []string{"post.published"}}))["webhook_id"].(string)

	// Workspace B, with one LinkedIn account of its own.
	ws := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, Name: "Client B", CreatedAt: time.Now().UTC()}
	name := "client-b"
	exp := time.Now().Add(30 * 24 * time.Hour).UTC()
	acct := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, WorkspaceID: ws.ID, Platform: "linkedin", Username: &name,
		IsActive: true, TokenExpiresAt: &exp, CreatedAt: time.Now().UTC()}
	require.NoError(t, h.App.Store.Update(ctx, func(tx *persistence.Tx) error {
		if err := tx.PutWorkspace(ws); err != nil {
			return err
		}
		return tx.PutAccount(acct)
	}))

	s := h.MCPSession(grantIn(t, h, h.URL+"/mcp", ws.ID))
	me := apptest.OKJSON(t, apptest.CallTool(t, s, "whoami", nil))
	require.Equal(t, ws.ID, me["workspace_id"])
	require.Equal(t, "Client B", me["workspace_name"])
	require.Equal(t, h.User.Email, me["email"], "the user is the same; the plan stays theirs")

	// Accounts: B's only; main's are refused as /v1 refuses them.
	accts := apptest.OKJSON(t, apptest.CallTool(t, s, "list_accounts", nil))["accounts"].([]any)
	require.Len(t, accts, 1)
	require.Equal(t, acct.ID, accts[0].(map[string]any)["account_id"])
	refused(t, apptest.CallTool(t, s, "get_account_capabilities", map[string]any{"account": h.Account("bluesky").ID}))
	refused(t, apptest.CallTool(t, s, "set_account_defaults", map[string]any{"account": h.Account("linkedin").ID, "default_options": map[string]any{}}))
	refused(t, apptest.CallTool(t, s, "disconnect_account", map[string]any{"account": h.Account("linkedin").ID}))
	require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, s, "list_inbox_comments", map[string]any{"account": "bluesky"})), "no connected account on bluesky")
	refused(t, apptest.CallTool(t, s, "get_post_analytics", map[string]any{"post_id": mainPost}))

	// Posts: main's draft is neither listed nor reachable, and stays as it was.
	require.Empty(t, apptest.OKJSON(t, apptest.CallTool(t, s, "list_posts", nil))["posts"])
	refused(t, apptest.CallTool(t, s, "get_post", map[string]any{"post_id": mainPost}))
	refused(t, apptest.CallTool(t, s, "update_draft", map[string]any{"post_id": mainPost, "content": "taken over"}))
	refused(t, apptest.CallTool(t, s, "delete_draft", map[string]any{"post_id": mainPost}))
	refused(t, apptest.CallTool(t, s, "publish_post", map[string]any{"post_id": mainPost}))
	require.Equal(t, "main's draft", apptest.OKJSON(t, apptest.CallTool(t, mainS, "get_post", map[string]any{"post_id": mainPost}))["content"])
	// Main's media and accounts are refused in a new post.
	require.True(t, apptest.CallTool(t, s, "create_draft", map[string]any{"content": "x", "accounts": []string{h.Account("linkedin").ID}}).IsError)
	require.True(t, apptest.CallTool(t, s, "create_draft", map[string]any{"content": "x", "accounts": []string{acct.ID}, "media_ids": []string{mainMedia}}).IsError)

	// What the connector makes lands in B.
	media := apptest.OKJSON(t, apptest.CallTool(t, s, "upload_media", map[string]any{"data": base64.StdEncoding.EncodeToString(apptest.PNGFile), "filename": "b.png"}))["media_id"].(string)
	post := apptest.OKJSON(t, apptest.CallTool(t, s, "create_draft", map[string]any{"content": "B's draft", "accounts": []string{"linkedin"}, "media_ids": []string{media}}))["post_id"].(string)
	listed := apptest.OKJSON(t, apptest.CallTool(t, s, "list_posts", nil))["posts"].([]any)
	require.Len(t, listed, 1)
	require.Equal(t, post, listed[0].(map[string]any)["post_id"])
	camp := apptest.OKJSON(t, apptest.CallTool(t, s, "create_campaign", map[string]any{"name": "B's", "mode": "draft",
		"posts": []map[string]any{{"content": "two", "accounts": []string{"linkedin"}}}}))["campaign_id"].(string)
	hook := apptest.OKJSON(t, apptest.CallTool(t, s, "create_webhook", map[string]any{"url": hooks.URL + "/b", "events": []string{"post.published"}}))["webhook_id"].(string)
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(post)
		require.NoError(t, err)
		require.Equal(t, ws.ID, p.WorkspaceID)
		m, err := tx.Media(media)
		require.NoError(t, err)
		require.Equal(t, ws.ID, m.WorkspaceID)
		c, err := tx.Campaign(camp)
		require.NoError(t, err)
		require.Equal(t, ws.ID, c.WorkspaceID)
		w, err := tx.Webhook(hook)
		require.NoError(t, err)
		require.Equal(t, ws.ID, w.WorkspaceID)
		return nil
	}))
	require.Empty(t, apptest.OKJSON(t, apptest.CallTool(t, mainS, "list_posts", map[string]any{"search": "B's"}))["posts"], "main does not see B's post")

	// Campaigns and webhooks: B's only.
	cl := apptest.OKJSON(t, apptest.CallTool(t, s, "list_campaigns", nil))["campaigns"].([]any)
	require.Len(t, cl, 1)
	require.Equal(t, camp, cl[0].(map[string]any)["campaign_id"])
	refused(t, apptest.CallTool(t, s, "get_campaign", map[string]any{"campaign_id": mainCampaign}))
	refused(t, apptest.CallTool(t, s, "retry_campaign", map[string]any{"campaign_id": mainCampaign}))
	wl := apptest.OKJSON(t, apptest.CallTool(t, s, "list_webhooks", nil))["webhooks"].([]any)
	require.Len(t, wl, 1)
	require.Equal(t, hook, wl[0].(map[string]any)["webhook_id"])
	refused(t, apptest.CallTool(t, s, "delete_webhook", map[string]any{"webhook_id": mainHook}))
	require.Len(t, apptest.OKJSON(t, apptest.CallTool(t, mainS, "list_webhooks", nil))["webhooks"], 1, "main's webhook is still there")

	// Resources: B's accounts and posts.
	res, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "herald://accounts"})
	require.NoError(t, err)
	var ra struct {
		Accounts []map[string]any `json:"accounts"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), &ra))
	require.Len(t, ra.Accounts, 1)
	require.Equal(t, acct.ID, ra.Accounts[0]["account_id"])
	res, err = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "herald://posts/recent"})
	require.NoError(t, err)
	require.Contains(t, res.Contents[0].Text, post)
	require.NotContains(t, res.Contents[0].Text, mainPost)

	// A token for the REST API approved for B (another application: approving the same one
	// again would replace the connector's key) acts in B on /v1, and cannot name main.
	other := *h
	other.ClientID = h.Register("REST app")
	rest := grantIn(t, &other, h.URL, ws.ID)
	r := restGet(t, h, rest, "/v1/accounts", "")
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), acct.ID)
	require.NotContains(t, string(r.Body), h.Accounts[0].ID)
	r = restGet(t, h, rest, "/v1/accounts", persistence.MainWorkspace)
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, "forbidden", r.ErrorCode(t))
	require.Contains(t, r.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)

	// B is deleted: the REST token's requests answer 403, and every tool call is refused (403 on /v1, as the core answers a key bound to a
	// deleted workspace), and the error says what happened and what to do.
	require.NoError(t, h.App.Store.Update(ctx, func(tx *persistence.Tx) error { return tx.DeleteWorkspace(ws) }))
	h.App.Auth.Invalidate() // as DELETE /v1/workspaces/:id does after its write
	for _, call := range []struct {
		tool string
		args map[string]any
	}{{"whoami", nil}, {"list_accounts", nil}, {"create_draft", map[string]any{"content": "after", "accounts": []string{acct.ID}}}} {
		msg := apptest.ToolError(t, apptest.CallTool(t, s, call.tool, call.args))
		require.Contains(t, msg, "the workspace "+ws.ID+" this connector was connected to has been deleted", call.tool)
		require.Contains(t, msg, "connect Herald again", call.tool)
		require.Contains(t, msg, "HTTP 403", call.tool)
	}
	r = restGet(t, h, rest, "/v1/accounts", "")
	require.Equal(t, 403, r.Status, string(r.Body))
	require.Equal(t, "forbidden", r.ErrorCode(t))
	require.Equal(t, "main's draft", apptest.OKJSON(t, apptest.CallTool(t, mainS, "get_post", map[string]any{"post_id": mainPost}))["content"], "main is untouched")
}

// A connector bound to main (the consent page's default) names it, cannot reach another
// workspace's objects, and cannot name another workspace; a key of every workspace names one
// with the Herald-Workspace header on /mcp.
func TestMCPConnectorInMainAndTheWorkspaceHeader(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	ws := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, Name: "Client B", CreatedAt: time.Now().UTC()}
	name := "client-b"
	acct := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, WorkspaceID: ws.ID, Platform: "linkedin", Username: &name,
		IsActive: true, CreatedAt: time.Now().UTC()}
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		if err := tx.PutWorkspace(ws); err != nil {
			return err
		}
		return tx.PutAccount(acct)
	}))
	s := h.MCPSession(h.Grant(h.URL+"/mcp", "service:read service:write")["access_token"].(string))
	me := apptest.OKJSON(t, apptest.CallTool(t, s, "whoami", nil))
	require.Equal(t, persistence.MainWorkspace, me["workspace_id"])
	require.Equal(t, persistence.MainWorkspaceName, me["workspace_name"])
	accts := apptest.OKJSON(t, apptest.CallTool(t, s, "list_accounts", nil))["accounts"].([]any)
	require.Len(t, accts, len(h.Accounts))
	require.NotContains(t, apptest.ResultText(apptest.CallTool(t, s, "list_accounts", nil)), acct.ID)
	refused(t, apptest.CallTool(t, s, "get_account_capabilities", map[string]any{"account": acct.ID}))

	// The connector is bound to main: naming B on /mcp is refused as /v1 refuses it.
	bound := workspaceSession(t, h.Herald, h.Grant(h.URL+"/mcp", "service:read service:write")["access_token"].(string), ws.ID)
	msg := apptest.ToolError(t, apptest.CallTool(t, bound, "list_accounts", nil))
	require.Contains(t, msg, "bound to workspace main and cannot act in "+ws.ID)
	require.Contains(t, msg, "(forbidden, HTTP 403)")

	// A key of every workspace picks B with Herald-Workspace on /mcp, as on /v1: the tools and
	// resources act there.
	inB := workspaceSession(t, h.Herald, h.Key, ws.ID)
	me = apptest.OKJSON(t, apptest.CallTool(t, inB, "whoami", nil))
	require.Equal(t, ws.ID, me["workspace_id"])
	require.Equal(t, "Client B", me["workspace_name"])
	accts = apptest.OKJSON(t, apptest.CallTool(t, inB, "list_accounts", nil))["accounts"].([]any)
	require.Len(t, accts, 1)
	require.Equal(t, acct.ID, accts[0].(map[string]any)["account_id"])
	res, err := inB.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "herald://accounts"})
	require.NoError(t, err)
	require.Contains(t, res.Contents[0].Text, acct.ID)
	require.NotContains(t, res.Contents[0].Text, h.Accounts[0].ID)
	// A workspace the user does not have is not found.
	nowhere := workspaceSession(t, h.Herald, h.Key, uuid.Must(uuid.NewV7()).String())
	require.Contains(t, apptest.ToolError(t, apptest.CallTool(t, nowhere, "list_accounts", nil)), "(not_found, HTTP 404)")
}

// restGet sends GET path with an OAuth access token, naming workspace when not "".
func restGet(t *testing.T, h *apptest.OAuth, token, path, workspace string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if workspace != "" {
		req.Header.Set("Herald-Workspace", workspace)
	}
	resp, err := h.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return &apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// workspaceSession is an MCP session with key whose every request names workspace.
func workspaceSession(t *testing.T, h *apptest.Herald, key, workspace string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "herald-test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: h.URL + "/mcp", HTTPClient: &http.Client{Transport: workspaceTransport{key: key, workspace: workspace}}, DisableStandaloneSSE: true,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type workspaceTransport struct{ key, workspace string }

func (w workspaceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.key)
	r.Header.Set("Herald-Workspace", w.workspace)
	return http.DefaultTransport.RoundTrip(r)
}
