package oauth

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
)

// signInPath is the dashboard's sign-in page (http/api), which comes back to next.
const signInPath = "/signin"

// authRequest is a checked authorization request.
type authRequest struct {
	Client        *persistence.OAuthClient
	RedirectURI   string
	redirect      *redirect
	State         string
	CodeChallenge string
	Resource      string
	Scopes        []string
}

// params are the request's parameters as the consent form carries them back.
func (r *authRequest) params() url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {r.Client.ID}, "redirect_uri": {r.RedirectURI},
		"state": {r.State}, "code_challenge": {r.CodeChallenge}, "code_challenge_method": {"S256"},
		"resource": {r.Resource}, "scope": {strings.Join(r.Scopes, " ")},
	}
}

// checkRequest checks an authorization request's parameters (RFC 6749 4.1.1, RFC 7636, RFC
// 8707). An unknown client or a redirect_uri not registered for it is shown on a page (never
// redirected to: page is set); any other fault is redirected to the client (redirect is set).
func (s *Service) checkRequest(c *echo.Context, q url.Values) (r *authRequest, page string, redirect string) {
	id := q.Get("client_id")
	var cl *persistence.OAuthClient
	if isDocumentID(id) {
		var why string
		if cl, why = s.documentClient(c.Request().Context(), id); cl == nil {
			return nil, "Herald cannot use this application's client ID metadata document: " + why + ".", ""
		}
	} else {
		var err error
		if cl, err = s.client(id); err != nil {
			if errors.Is(err, persistence.ErrNotFound) {
				return nil, "This application is not registered with Herald (unknown client_id).", ""
			}
			s.cfg.Log.Error("oauth: client lookup failed", append(server.LogAttrs(c), "error", err)...)
			return nil, "Herald could not read the application's registration. Try again shortly.", ""
		}
	}
	ru := q.Get("redirect_uri")
	registered := false
	for _, u := range cl.RedirectURIs {
		if redirectMatches(u, ru) {
			registered = true
		}
	}
	rd, why := parseRedirect(ru)
	if !registered || why != "" || rd.formAction() == "" {
		return nil, "The application asked to return to an address it did not register (redirect_uri). Nothing was shared.", ""
	}
	bad := func(code, desc string) (*authRequest, string, string) {
		v := url.Values{"error": {code}, "error_description": {desc}, "iss": {s.base()}}
		if st := q.Get("state"); st != "" {
			v.Set("state", st)
		}
		return nil, "", redirectWith(ru, v)
	}
	if q.Get("response_type") != "code" {
		return bad("unsupported_response_type", "response_type must be code")
	}
	if q.Get("code_challenge_method") != "S256" || !validChallenge(q.Get("code_challenge")) {
		return bad("invalid_request", "PKCE is required: code_challenge (43 characters) with code_challenge_method S256")
	}
	res := q.Get("resource")
	if res == "" {
		return bad("invalid_target", "resource is required (RFC 8707): "+s.MCPResource()+" or "+s.RESTResource())
	}
	if !s.resourceOK(res) {
		return bad("invalid_target", "this server issues tokens for "+s.MCPResource()+" and "+s.RESTResource()+" only")
	}
	scopes, oe := s.scopesFor(res, q.Get("scope"))
	if oe != nil {
		return bad(oe.Code, oe.Description)
	}
	return &authRequest{Client: cl, RedirectURI: ru, redirect: rd, State: q.Get("state"), CodeChallenge: q.Get("code_challenge"),
		Resource: res, Scopes: scopes}, "", ""
}

func (s *Service) client(id string) (*persistence.OAuthClient, error) {
	if id == "" || len(id) > 100 {
		return nil, persistence.ErrNotFound
	}
	var cl *persistence.OAuthClient
	err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		cl, err = tx.OAuthClient(id)
		return err
	})
	return cl, err
}

// session is the request's dashboard session, or a redirect to the sign-in page that comes back
// to the authorization request.
func (s *Service) session(c *echo.Context, back url.Values) (*session.Session, error) {
	sess, err := s.cfg.Server.SessionFromCookie(c)
	if err != nil {
		s.cfg.Log.Error("oauth: session lookup failed", append(server.LogAttrs(c), "error", err)...)
		return nil, s.page(c, http.StatusInternalServerError, consentView{Message: "Herald could not read your session. Try again shortly."})
	}
	if sess == nil {
		next := AuthorizePath + "?" + back.Encode()
		return nil, c.Redirect(http.StatusSeeOther, signInPath+"?next="+url.QueryEscape(next))
	}
	if !sess.HasRole(auth.RoleAdmin) {
		// A grant is a key of the team's owner: a member approves one only as an admin.
		return nil, s.page(c, http.StatusForbidden, consentView{Message: "Connecting an application gives it a key to your team's data: it needs the admin role in the team. Ask its owner."})
	}
	return sess, nil
}

// authorizePage is GET /oauth/authorize: the consent page.
func (s *Service) authorizePage(c *echo.Context) error {
	q := c.Request().URL.Query()
	r, msg, redirect := s.checkRequest(c, q)
	if msg != "" {
		return s.page(c, http.StatusBadRequest, consentView{Message: msg})
	}
	if redirect != "" {
		return c.Redirect(http.StatusFound, redirect)
	}
	sess, err := s.session(c, r.params())
	if sess == nil {
		return err
	}
	// Chrome applies form-action to the redirect that follows the form's post: the client's
	// origin (or its own scheme) must be allowed for the answer to reach it. formAction is built
	// from the checked host, port and scheme only (redirect.go).
	c.Response().Header().Set("Content-Security-Policy", strings.Replace(s.cfg.Server.ContentSecurityPolicy(),
		"form-action 'self'", "form-action 'self' "+r.redirect.formAction(), 1))
	v := consentView{Client: r.Client.Name, Host: r.redirect.display(), User: sess.User.Email, CSRF: sess.Record.CSRFToken,
		Params: r.params(), MCP: r.Resource == s.MCPResource()}
	if isDocumentID(r.Client.ID) {
		u, _ := url.Parse(r.Client.ID)
		v.Publisher = u.Host
	}
	for _, sc := range r.Scopes {
		v.Scopes = append(v.Scopes, scopeLine{Name: sc, Text: auth.ScopeDescriptions[sc]})
	}
	for _, sc := range readOnly(r.Scopes) {
		v.ReadOnly = append(v.ReadOnly, scopeLine{Name: sc, Text: auth.ScopeDescriptions[sc]})
	}
	err = s.cfg.Store.View(func(tx *persistence.Tx) error {
		ws, err := tx.Workspaces(sess.ActsFor())
		for _, w := range ws {
			if sess.Member != nil && !sess.Member.Allows(w.ID) {
				continue // a member chooses among the workspaces they may act in
			}
			v.Workspaces = append(v.Workspaces, workspaceOption{ID: w.ID, Name: w.Name})
		}
		return err
	})
	if err != nil {
		s.cfg.Log.Error("oauth: workspaces not read", append(server.LogAttrs(c), "error", err)...)
		return s.page(c, http.StatusInternalServerError, consentView{Message: "Herald could not read your workspaces. Try again shortly."})
	}
	return s.page(c, http.StatusOK, v)
}

// errNoWorkspace is a consent naming a workspace the user does not have (another user's, a
// deleted one, a made-up id).
var errNoWorkspace = errors.New("oauth: no such workspace of the user")

// chosenWorkspace is the workspace the consent form names (its workspace field; main when it
// names none), read in the approval's transaction: errNoWorkspace when it is not the user's.
func chosenWorkspace(tx *persistence.Tx, userID, field string) (*persistence.Workspace, error) {
	id := strings.TrimSpace(field)
	if id == "" {
		id = persistence.MainWorkspace
	}
	w, err := tx.Workspace(userID, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, errNoWorkspace
	}
	return w, err
}

// authorizeDecision is POST /oauth/authorize: the consent form's answer, approve or deny.
func (s *Service) authorizeDecision(c *echo.Context) error {
	req := c.Request()
	if err := req.ParseForm(); err != nil {
		return s.page(c, http.StatusBadRequest, consentView{Message: "The form could not be read."})
	}
	f := req.PostForm
	r, msg, redirect := s.checkRequest(c, f)
	if msg != "" {
		return s.page(c, http.StatusBadRequest, consentView{Message: msg})
	}
	if redirect != "" {
		return c.Redirect(http.StatusSeeOther, redirect)
	}
	sess, err := s.session(c, r.params())
	if sess == nil {
		return err
	}
	if !sess.CheckCSRF(f.Get(server.CSRFField)) {
		return s.page(c, http.StatusForbidden, consentView{Message: "The form's security token is missing or out of date. Go back, reload the page and try again."})
	}
	answer := url.Values{"iss": {s.base()}}
	if r.State != "" {
		answer.Set("state", r.State)
	}
	switch f.Get("decision") {
	case "approve":
	case "approve_read":
		if r.Scopes = readOnly(r.Scopes); r.Scopes == nil {
			return s.page(c, http.StatusBadRequest, consentView{Message: "This request has no read-only form. Go back and choose again."})
		}
	default:
		answer.Set("error", "access_denied")
		answer.Set("error_description", "the user denied the request")
		s.cfg.Log.Info("oauth: consent denied", append(server.LogAttrs(c), "user_id", sess.User.ID, "client_id", r.Client.ID)...)
		return c.Redirect(http.StatusSeeOther, redirectWith(r.RedirectURI, answer))
	}
	now := s.cfg.Now().UTC()
	code, codeHash := auth.GenerateToken(auth.CodePrefix)
	var key *persistence.APIKey
	var ws *persistence.Workspace
	err = s.cfg.Store.Update(req.Context(), func(tx *persistence.Tx) error {
		var err error
		// The workspace is checked in the transaction that binds the key to it: a workspace
		// deleted meanwhile, or one a member may not act in, binds nothing.
		if ws, err = chosenWorkspace(tx, sess.ActsFor(), f.Get("workspace")); err != nil {
			return err
		}
		if sess.Member != nil && !sess.Member.Allows(ws.ID) {
			return errNoWorkspace
		}
		if key, err = auth.NewConnectorKey(tx, sess.ActsFor(), ws.ID, r.Client, now); err != nil {
			return err
		}
		g := &persistence.OAuthGrant{KeyID: key.ID, UserID: sess.ActsFor(), ClientID: r.Client.ID, Resource: r.Resource,
			Scopes: r.Scopes, WorkspaceID: ws.ID, CreatedAt: now}
		if err := tx.PutOAuthGrant(g); err != nil {
			return err
		}
		return tx.PutOAuthCode(codeHash, &persistence.OAuthCode{KeyID: key.ID, ClientID: r.Client.ID, RedirectURI: r.RedirectURI,
			CodeChallenge: r.CodeChallenge, ExpiresAt: now.Add(CodeTTL)})
	})
	if errors.Is(err, errNoWorkspace) {
		return s.page(c, http.StatusBadRequest, consentView{Message: "The workspace chosen is not one of yours (it may have been deleted meanwhile). Nothing was shared: go back, reload the page and choose again."})
	}
	if err != nil {
		s.cfg.Log.Error("oauth: approval not stored", append(server.LogAttrs(c), "error", err)...)
		return s.page(c, http.StatusInternalServerError, consentView{Message: "Herald could not record your approval. Try again shortly."})
	}
	s.cfg.Auth.Invalidate() // the client's earlier connector key, revoked, is refused from now on
	s.cfg.Log.Info("oauth: consent given", append(server.LogAttrs(c), "user_id", sess.User.ID, "client_id", r.Client.ID, "key_id", key.ID,
		"workspace_id", ws.ID, "scopes", strings.Join(r.Scopes, " "))...)
	answer.Set("code", code)
	return c.Redirect(http.StatusSeeOther, redirectWith(r.RedirectURI, answer))
}

// readOnly is the read-only form of requested scopes: their reads, and the read of each write
// (service:write gives service:read, posts:write posts:read; media:write, which has no read of
// its own, gives nothing). It is nil when the request asks nothing but reads, or when nothing
// would be left: the consent page then offers no read-only approval.
func readOnly(scopes []string) []string {
	var out []string
	writes := false
	add := func(sc string) {
		if auth.ScopeDescriptions[sc] != "" && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	for _, sc := range scopes {
		if base, ok := strings.CutSuffix(sc, ":write"); ok {
			writes = true
			add(base + ":read")
			continue
		}
		add(sc)
	}
	if !writes || len(out) == 0 {
		return nil
	}
	return out
}

type scopeLine struct{ Name, Text string }

// workspaceOption is one of the user's workspaces on the consent page.
type workspaceOption struct{ ID, Name string }

type consentView struct {
	Message            string
	Client, Host, User string
	// Publisher is the host of a client ID metadata document's URL: who published the client.
	Publisher string
	CSRF      string
	MCP       bool
	Params    url.Values
	Scopes    []scopeLine
	// ReadOnly is the read-only approval's scopes; empty when none is offered.
	ReadOnly []scopeLine
	// Workspaces are the user's workspaces, main first (the default): the connector acts in the
	// one chosen and in no other.
	Workspaces []workspaceOption
}

// consentTemplate is the consent page, in the dashboard's sign-in layout and stylesheet.
var consentTemplate = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Herald: connect an application</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/app.css"></head>
<body class="signin-page">
<main id="main" class="signin">
<p class="signin-brand">Herald</p>
<div class="card stack">
{{if .Message}}<h1>Cannot connect</h1>
<p class="flash error" role="alert">{{.Message}}</p>
{{else}}<h1>Connect {{.Client}}?</h1>
<p><strong>{{.Client}}</strong> {{if .Publisher}}(published by <strong>{{.Publisher}}</strong>) {{end}}{{if .MCP}}(an AI assistant, through Herald's MCP connector) {{end}}asks to use your Herald account <strong>{{.User}}</strong>. After you approve, you return to <strong>{{.Host}}</strong>.</p>
<p>With full access it will be able to:</p>
<ul class="scopes">{{range .Scopes}}<li>{{.Text}} <code>{{.Name}}</code></li>{{end}}</ul>
{{if .ReadOnly}}<p>Read-only, it will only be able to:</p>
<ul class="scopes">{{range .ReadOnly}}<li>{{.Text}} <code>{{.Name}}</code></li>{{end}}</ul>
{{end}}<p>Approving creates a connector key on your Developer page, one per application; revoke it there at any time to disconnect the application. Approving the same application again replaces its key.</p>
<form method="post" action="/oauth/authorize">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
{{if eq (len .Workspaces) 1}}{{with index .Workspaces 0}}<p>It will act only in your workspace <strong>{{.Name}}</strong>: its accounts, posts, media, campaigns and webhooks.</p>
<input type="hidden" name="workspace" value="{{.ID}}">
{{end}}{{else}}<p><label for="workspace">It will act only in the workspace</label>
<select id="workspace" name="workspace">{{range .Workspaces}}<option value="{{.ID}}">{{.Name}}</option>{{end}}</select></p>
<p class="muted">Its accounts, posts, media, campaigns and webhooks, and those of no other workspace. To act in another, connect the application again and choose it.</p>
{{end}}{{range $k, $vs := .Params}}{{range $vs}}<input type="hidden" name="{{$k}}" value="{{.}}">
{{end}}{{end}}<p class="actions"><button type="submit" name="decision" value="approve">Approve full access</button>{{if .ReadOnly}} <button type="submit" name="decision" value="approve_read" class="secondary">Approve read-only</button>{{end}} <button type="submit" name="decision" value="deny" class="secondary">Deny</button></p>
</form>{{end}}
</div>
</main>
</body>
</html>
`))

func (s *Service) page(c *echo.Context, status int, v consentView) error {
	var b bytes.Buffer
	if err := consentTemplate.Execute(&b, v); err != nil {
		return err
	}
	return c.HTMLBlob(status, b.Bytes())
}
