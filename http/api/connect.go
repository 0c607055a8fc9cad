package api

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// registerConnect adds the connect flow's two browser routes (no API key: the browser follows
// them, signed in to the dashboard as the user who asked for the link) that end on a plain HTML
// page. The POST that starts the flow is one of the doors' routes (routes.go).
func (h *handlers) registerConnect(e *echo.Echo) {
	e.GET(accountlink.AuthorizePath, h.connectAuthorize)
	e.GET(accountlink.CallbackPath, h.connectCallback)
	e.POST(accountlink.DefaultsPath, h.connectDefaults)
	e.POST(accountlink.PickPath, h.connectPick)
	e.GET(accountlink.LinkPath+":token", h.linkPage)
	e.POST(accountlink.LinkPath+":token", h.linkStart)
}

// browserPlatforms is the allowed list as validation messages spell it.
var browserPlatforms = func() string {
	q := make([]string, 0, len(accountlink.Browser))
	for _, p := range accountlink.Browser {
		q = append(q, "'"+string(p)+"'")
	}
	return strings.Join(q, " | ")
}()

// consentPlatforms is the list connect links take, as validation messages spell it: the browser
// networks and X (accountlink.Consent), each when this server has an OAuth client for it.
var consentPlatforms = func() string {
	q := make([]string, 0, len(accountlink.Consent))
	for _, p := range accountlink.Consent {
		q = append(q, "'"+string(p)+"'")
	}
	return strings.Join(q, " | ")
}()

// dashboardConsent reports whether the request asks, through the dashboard's door, for X's
// consent on a server with an X app: the spec's POST /v1/accounts/connect answers 400 for
// twitter_x ("dashboard only"), so only the dashboard's POST /api/accounts/connect starts it
// (docs/accounts.md).
func (h *handlers) dashboardConsent(c *echo.Context, p platforms.Platform) bool {
	return p == platforms.X && door(c) == DashboardPrefix && h.Connect != nil && h.Connect.Connects(p)
}

// connectAccount is POST /v1/accounts/connect {platform}: 200 {authorization_url}. On the
// dashboard's door it also starts X's consent when the server has an X app.
func (h *handlers) connectAccount(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	raw, err := o.str("platform", true)
	if err != nil {
		return err
	}
	p := platforms.Platform(*raw)
	switch {
	case h.dashboardConsent(c, p):
		// X's consent, begun below like a browser network's.
	case p == platforms.X || p == platforms.Bluesky:
		form := "/api/accounts/bluesky"
		if p == platforms.X {
			form = "/api/accounts/x"
		}
		return apierr.Validation("platform: %s is not connected through the API: it connects with credentials the user brings "+
			"(the dashboard's POST %s, or herald accounts add --platform %s); allowed here: %s", p, form, p, browserPlatforms)
	case !accountlink.IsBrowser(p):
		return apierr.Validation("platform: Invalid enum value. Expected %s, received '%s'", browserPlatforms, truncate(*raw, 64))
	case h.Connect == nil:
		return apierr.Unavailable("connecting accounts is not available on this server")
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	u, err := h.Connect.Begin(ctx, server.Principal(c).User.ID, server.Principal(c).ObjectWorkspace(), p, h.Now())
	if errors.Is(err, accountlink.ErrNotConfigured) {
		return apierr.Validation("platform: %s is not configured on this server (it has no OAuth client for %s)", p, displayName(p))
	}
	if e := server.StoreFailure(c, h.Log, err); e != nil {
		return e
	}
	if err != nil {
		h.Log.Error("connect: cannot start", append(server.LogAttrs(c), "platform", string(p), "error", err)...)
		return apierr.Internal()
	}
	return c.JSON(http.StatusOK, map[string]string{"authorization_url": u})
}

// connectAuthorize is GET /v1/accounts/connect/authorize?state=…: 302 to the network's consent
// page.
func (h *handlers) connectAuthorize(c *echo.Context) error {
	if h.Connect == nil {
		return h.page(c, http.StatusServiceUnavailable, "Connecting accounts is not available", "This Herald server cannot connect accounts.")
	}
	user, err := h.browserUser(c)
	if user == "" || err != nil {
		return err
	}
	p, target, err := h.Connect.Authorize(c.QueryParam("state"), user, h.Now())
	if err != nil {
		return h.failure(c, p, err)
	}
	noStore(c)
	return c.Redirect(http.StatusFound, target)
}

// browserUser is the Herald user the browser is signed in as. Without a session it answers the
// redirect to the sign-in page, which comes back here afterwards, and returns "".
func (h *handlers) browserUser(c *echo.Context) (string, error) {
	s, err := h.Server.SessionFromCookie(c)
	if err != nil {
		h.Log.Error("connect: session lookup failed", "request_id", server.RequestID(c), "error", err)
		return "", h.page(c, http.StatusInternalServerError, "The account could not be connected",
			"Herald could not check who is signed in (request "+server.RequestID(c)+"). Try again.")
	}
	if s == nil {
		noStore(c)
		return "", c.Redirect(http.StatusFound, SignInPath+"?"+url.Values{"next": {c.Request().URL.RequestURI()}}.Encode())
	}
	if !s.HasRole(auth.RoleAdmin) {
		return "", h.page(c, http.StatusForbidden, "The account could not be connected",
			"Connecting accounts needs the admin role in this team; ask its owner.")
	}
	return s.ActsFor(), nil
}

// connectCallback is GET /v1/accounts/connect/callback?code=…&state=… (or error=…): the
// network's redirect back.
func (h *handlers) connectCallback(c *echo.Context) error {
	if h.Connect == nil {
		return h.page(c, http.StatusServiceUnavailable, "Connecting accounts is not available", "This Herald server cannot connect accounts.")
	}
	q := c.QueryParams()
	if h.Connect.LinkFlow(q.Get("state"), h.Now()) {
		return h.linkCallback(c) // bound to the link's browser, not to a session
	}
	user, err := h.browserUser(c)
	if user == "" || err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	p, res, err := h.Connect.Complete(ctx, accountlink.Callback{
		State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"),
	}, user, h.Now())
	if errors.Is(err, accountlink.ErrUsed) {
		// A reload of the picker's page: while its choice is open, show it again.
		if _, choices, cerr := h.Connect.Choices(q.Get("state"), user, h.Now()); cerr == nil {
			return h.pickPage(c, p, q.Get("state"), choices, http.StatusOK, "")
		}
	}
	if err != nil {
		return h.failure(c, p, err)
	}
	if len(res.Choices) > 0 {
		return h.pickPage(c, p, q.Get("state"), res.Choices, http.StatusOK, "")
	}
	name := displayName(p)
	who := name + " account"
	if u := res.Account.Username; u != nil && *u != "" {
		who = name + " account " + *u
	}
	h.Log.Info("connect: account connected", "request_id", server.RequestID(c), "platform", string(p), "created", res.Created)
	title, msg := name+" is connected", "Your "+who+" is now connected to Herald."
	if !res.Created {
		title, msg = name+" is connected again", "Your "+who+" was already connected to Herald; its access was renewed."
	}
	if p == platforms.TikTok {
		return h.privacyPage(c, user, res.Account, title, msg)
	}
	return h.page(c, http.StatusOK, title, msg)
}

// privacyPage ends a TikTok connection: TikTok asks that the creator choose who can see each post,
// among the levels TikTok offers the creator now, with nothing chosen for them. The page offers
// the choice of a default for the account (optional: without one, each post chooses), read live
// from TikTok; when the creator's choices cannot be read it only says where to set one later.
func (h *handlers) privacyPage(c *echo.Context, userID string, a *persistence.Account, title, msg string) error {
	msg += " TikTok asks you to choose who can see each post. You may choose a default for this account now (optional; each post can choose another), or later on the dashboard."
	if h.Live == nil {
		return h.page(c, http.StatusOK, title, msg)
	}
	s, err := h.Server.SessionFromCookie(c)
	if err != nil || s == nil {
		return h.page(c, http.StatusOK, title, msg)
	}
	caps, err := h.Live.Capabilities(c.Request().Context(), userID, a.ID, true)
	if err != nil || len(caps.Choices.PrivacyLevelOptions) == 0 {
		return h.page(c, http.StatusOK, title, msg)
	}
	current := ""
	if o, fe := platforms.DecodeOptions(platforms.TikTok, a.DefaultOptions); fe == nil {
		current = o.(*platforms.TikTokOptions).PrivacyLevel
	}
	form := &privacyForm{Action: accountlink.DefaultsPath, CSRF: s.Record.CSRFToken, AccountID: a.ID, Nickname: caps.Choices.Nickname}
	for _, l := range caps.Choices.PrivacyLevelOptions {
		form.Levels = append(form.Levels, privacyLevel{Value: l, Label: privacyLabels[l], Selected: l == current})
	}
	return h.render(c, http.StatusOK, title, msg, form)
}

// privacyLabels are TikTok's privacy levels as its app names them.
var privacyLabels = map[string]string{
	"PUBLIC_TO_EVERYONE":    "Everyone",
	"MUTUAL_FOLLOW_FRIENDS": "Friends (followers you follow back)",
	"FOLLOWER_OF_CREATOR":   "Followers",
	"SELF_ONLY":             "Only me",
}

// privacyForm is the default-privacy form of a connected TikTok account's page.
type privacyForm struct {
	Action, CSRF, AccountID, Nickname string
	Levels                            []privacyLevel
}

type privacyLevel struct {
	Value, Label string
	Selected     bool
}

// connectDefaults is POST /v1/accounts/connect/defaults (a form of the signed-in user, with the
// session's CSRF token): sets or clears the TikTok account's default privacy level, checked against
// the creator's current choices, and ends on a page that says what was saved.
func (h *handlers) connectDefaults(c *echo.Context) error {
	s, err := h.Server.SessionFromCookie(c)
	if err != nil {
		return h.page(c, http.StatusInternalServerError, "The default was not saved", "Herald could not check who is signed in (request "+server.RequestID(c)+"). Try again.")
	}
	if s == nil {
		noStore(c)
		return c.Redirect(http.StatusFound, SignInPath)
	}
	if !s.CheckCSRF(c.FormValue("csrf_token")) {
		return h.page(c, http.StatusForbidden, "The default was not saved", "The form expired or did not come from Herald. Set the default on the dashboard's Accounts page.")
	}
	id, err := parseUUID("account_id", c.FormValue("account_id"))
	if err != nil {
		return h.page(c, http.StatusBadRequest, "The default was not saved", "The form named no account. Set the default on the dashboard's Accounts page.")
	}
	var a *persistence.Account
	err = h.Store.View(func(tx *persistence.Tx) error {
		var err error
		a, err = tx.Account(id)
		return err
	})
	if err != nil || a.UserID != s.ActsFor() || !s.HasRole(auth.RoleAdmin) || a.Platform != string(platforms.TikTok) ||
		(s.Member != nil && !s.Member.Allows(persistence.WorkspaceOf(a.WorkspaceID))) {
		return h.page(c, http.StatusNotFound, "The default was not saved", "No such TikTok account of yours is connected.")
	}
	opts := &platforms.TikTokOptions{}
	if o, fe := platforms.DecodeOptions(platforms.TikTok, a.DefaultOptions); fe == nil {
		opts = o.(*platforms.TikTokOptions)
	}
	opts.PrivacyLevel = c.FormValue("privacy_level")
	choices := h.Live.Choices(c.Request().Context(), a.Scope(), a.ID, platforms.TikTok)
	if errs, _ := platforms.CheckOptions(opts, platforms.Target{Choices: choices, Defaults: true}); len(errs) > 0 {
		return h.page(c, http.StatusBadRequest, "The default was not saved", "TikTok does not offer this creator that choice: "+errs[0].Message+".")
	}
	if _, err := ask[*account.Reply](h, c, h.Accounts.To(id), &account.SetDefaults{Scope: a.Scope(), Options: platforms.EncodeOptions(opts)}); err != nil {
		return h.page(c, http.StatusServiceUnavailable, "The default was not saved", "Herald could not save it (request "+server.RequestID(c)+"). Try again on the dashboard's Accounts page.")
	}
	if opts.PrivacyLevel == "" {
		return h.page(c, http.StatusOK, "No default privacy", "Each post to this TikTok account chooses who can see it.")
	}
	return h.page(c, http.StatusOK, "Default privacy saved", "Posts to this TikTok account are seen by: "+privacyLabels[opts.PrivacyLevel]+", unless a post chooses otherwise.")
}

// failure ends the browser flow on a page that says what happened. Nothing was created.
func (h *handlers) failure(c *echo.Context, p platforms.Platform, err error) error {
	return h.failureFor(c, p, err, false)
}

// failureFor is failure for a signed-in user's flow, or for a client's flow started from a
// connect link (client), whose page neither sends them to the dashboard nor speaks of it.
func (h *handlers) failureFor(c *echo.Context, p platforms.Platform, err error, client bool) error {
	name := displayName(p)
	var ne *accountlink.NetworkError
	var xe *accountlink.ExchangeError
	again := "Start again from the dashboard's Accounts page, or from your application: it asks Herald for a new link."
	if client {
		again = "Open the link you were sent again to start over."
	}
	status, title, msg := http.StatusInternalServerError, "The account could not be connected",
		"Herald could not finish connecting the account (request "+server.RequestID(c)+"). "+again
	switch {
	case errors.Is(err, accountlink.ErrBadState):
		status, title, msg = http.StatusBadRequest, "This connection link is not valid",
			"The link is incomplete, was altered, or was not issued by this Herald server. Nothing was connected. "+again
	case errors.Is(err, accountlink.ErrExpired):
		status, title, msg = http.StatusGone, "This connection link has expired",
			"Connection links are valid for 10 minutes. Nothing was connected. "+again
	case errors.Is(err, accountlink.ErrUsed):
		status, title, msg = http.StatusGone, "This connection link was already used",
			"Each connection link works once. Nothing more was connected. "+again
	case errors.Is(err, accountlink.ErrOtherUser):
		status, title, msg = http.StatusForbidden, "This connection link belongs to another Herald user",
			"You are signed in to Herald as another user than the one who asked for this link, so nothing was connected. "+
				"If you did not ask for it, someone may have sent it to you to connect your account to theirs: ignore it."
	case errors.Is(err, accountlink.ErrNoChoices):
		status, title, msg = http.StatusBadRequest, "This connection link has nothing to choose from",
			"Its authorization was not completed, or granted one account, which is connected already. Nothing more was connected. "+again
	case errors.Is(err, accountlink.ErrDenied):
		status, title, msg = http.StatusForbidden, "Connection cancelled",
			"Access was refused on "+name+", so nothing was connected. "+again
	case errors.As(err, &ne):
		detail := ne.Code
		if ne.Description != "" {
			detail += ": " + ne.Description
		}
		status, title, msg = http.StatusBadRequest, name+" reported an error",
			name+" did not authorize the connection ("+detail+"). Nothing was connected. "+again
	case errors.Is(err, accountlink.ErrNoCode):
		status, title, msg = http.StatusBadRequest, name+" sent no authorization code",
			"The answer from "+name+" carried neither a code nor an error. Nothing was connected. "+again
	case errors.As(err, &xe) && xe.Refused():
		status, title, msg = http.StatusBadRequest, name+" refused the connection",
			name+" did not accept the authorization ("+accountlink.Message(xe.Err)+"). Nothing was connected. "+again
	case errors.As(err, &xe):
		status, title, msg = http.StatusBadGateway, name+" could not be reached",
			"Herald could not complete the authorization with "+name+" ("+accountlink.Message(xe.Err)+"). Nothing was connected. "+again
	case errors.Is(err, accountlink.ErrElsewhere):
		status, title, msg = http.StatusConflict, "This "+name+" account is connected in another workspace",
			"It stays where it is and nothing was connected here. Disconnect it in the other workspace first, or renew it from there."
	case errors.Is(err, accountlink.ErrNoIdentity):
		status, title, msg = http.StatusBadGateway, name+" did not name the account",
			name+" did not say which account was authorized, so it was not connected. "+again
	case errors.Is(err, accountlink.ErrNotConfigured), errors.Is(err, accountlink.ErrNotBrowser):
		status, title, msg = http.StatusBadRequest, name+" cannot be connected here",
			"This Herald server has no OAuth client for "+name+". Nothing was connected."
	case errors.Is(err, accountlink.ErrOtherBrowser):
		status, title, msg = http.StatusForbidden, "This connection was started in another browser",
			"This page belongs to a connection started in another browser, so nothing was connected. "+
				"If someone sent you this address, ignore it; to connect your own account, open the link you were sent."
	case errors.Is(err, accountlink.ErrWorkspaceFull):
		status, title, msg = http.StatusConflict, "No more accounts can be connected here",
			"The workspace this account was to join already holds as many connected accounts as its limit allows, so nothing was connected. "+
				"Ask whoever sent you the link to make room."
	case errors.Is(err, accountlink.ErrNoWorkspace):
		status, title, msg = http.StatusGone, "This workspace no longer exists",
			"The workspace this account was to join was deleted, so nothing was connected."
	case errors.Is(err, actors.ErrTimeout):
		status = http.StatusServiceUnavailable
	}
	level := h.Log.Info
	if status >= 500 {
		level = h.Log.Warn
	}
	// The state and the code are never logged.
	level("connect: browser flow failed", "request_id", server.RequestID(c), "platform", string(p), "status", status, "error", err)
	return h.write(c, status, pageData{Title: title, Message: msg, Client: client})
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Herald: {{.Title}}</title>
<link rel="stylesheet" href="/static/app.css"></head>
<body class="signin-page">
<main id="main" class="signin">
<p class="signin-brand">Herald</p>
<div class="card">
<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
{{with .Form}}<form method="post" action="{{.Action}}" class="stack">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<input type="hidden" name="account_id" value="{{.AccountID}}">
<label for="privacy_level">Who can see posts to {{if .Nickname}}{{.Nickname}}{{else}}this account{{end}} by default</label>
<select id="privacy_level" name="privacy_level">
<option value="">No default: choose for each post</option>
{{range .Levels}}<option value="{{.Value}}"{{if .Selected}} selected{{end}}>{{.Label}}</option>
{{end}}</select>
<button type="submit">Save</button>
</form>{{end}}
{{with .Pick}}<form method="post" action="{{.Action}}" class="stack" id="pick">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<input type="hidden" name="state" value="{{.State}}">
<fieldset>
<legend>Accounts to connect</legend>
{{range .Choices}}<label class="pick-choice"><input type="checkbox" name="choice" value="{{.ID}}"> {{.Name}} <span class="muted">({{.Label}})</span></label>
{{end}}</fieldset>
<button type="submit">Connect the accounts ticked</button>
</form>{{end}}
{{if .Client}}<p class="muted">You can close this window.</p>{{else}}<p><a id="back-to-accounts" href="/accounts">Back to your accounts in Herald</a></p>{{end}}
</div>
</main>
</body>
</html>
`))

// ConnectPagePolicy is the connect flow pages' policy: nothing but the dashboard's stylesheet.
const ConnectPagePolicy = "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// page answers with a small plain HTML page (styled by the dashboard's stylesheet), with a link back to the dashboard's Accounts page
// (where a person who clicked Connect came from; a program's user may close the window). It is
// never cached and sends no Referer onwards.
func (h *handlers) page(c *echo.Context, status int, title, msg string) error {
	return h.render(c, status, title, msg, nil)
}

// render is page with an optional form.
func (h *handlers) render(c *echo.Context, status int, title, msg string, form *privacyForm) error {
	return h.write(c, status, pageData{Title: title, Message: msg, Form: form})
}

// pageData is what the connect flow's page shows: a title, a message, and at most one form.
type pageData struct {
	Title, Message string
	Form           *privacyForm
	Pick           *pickForm
	// Client marks a page of a connect link's flow: the person is a client of the link's user,
	// with no Herald login, so the page does not point to the dashboard.
	Client bool
}

// write answers with the page.
func (h *handlers) write(c *echo.Context, status int, d pageData) error {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, d); err != nil {
		return err
	}
	noStore(c)
	hdr := c.Response().Header()
	hdr.Set("Content-Security-Policy", ConnectPagePolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	if h.Server.Secure() {
		hdr.Set("Strict-Transport-Security", "max-age=31536000")
	}
	return c.HTMLBlob(status, b.Bytes())
}

func noStore(c *echo.Context) {
	hdr := c.Response().Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Referrer-Policy", "no-referrer")
}

// displayName is a platform's name as people write it.
func displayName(p platforms.Platform) string {
	switch p {
	case platforms.LinkedIn:
		return "LinkedIn"
	case platforms.Instagram:
		return "Instagram"
	case platforms.YouTube:
		return "YouTube"
	case platforms.Pinterest:
		return "Pinterest"
	case platforms.TikTok:
		return "TikTok"
	case platforms.Threads:
		return "Threads"
	case platforms.Facebook:
		return "Facebook"
	case platforms.X:
		return "X"
	case platforms.Bluesky:
		return "Bluesky"
	}
	return "The network"
}
