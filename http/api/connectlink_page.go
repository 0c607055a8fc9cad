package api

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/platforms"
)

// The page of a connect link (accountlink/links.go), which a client opens with no Herald login:
// GET names the agency and the workspace and offers the link's networks, and sets the cookie the
// flow is bound to; POST (the form of that page, with a token only that browser's page carries)
// starts the chosen network's consent. The callback and the picker of such a flow are the connect
// flow's own routes, which tell it from a signed-in user's by its state (Service.LinkFlow).

// linkBrowserCookieAge is how long the link page's cookie lives: longer than a link, so that a
// browser keeps one identity through every flow it starts.
const linkBrowserCookieAge = 8 * 24 * time.Hour

var linkTemplate = template.Must(template.New("link").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Herald: connect an account for {{.Agency}}</title>
<link rel="stylesheet" href="/static/app.css"></head>
<body class="signin-page">
<main id="main" class="signin">
<p class="signin-brand">Herald</p>
<div class="card">
<h1>Connect an account for {{.Agency}}</h1>
<p id="link-who">{{.Agency}} asks you to connect a social account to its workspace <strong id="link-workspace">{{.Workspace}}</strong> in Herald, so that it can publish for you. The account will be connected to that workspace only.</p>
{{with .Note}}<p id="link-note" class="muted">{{.}}</p>{{end}}
{{if .Networks}}<form method="post" action="{{.Action}}" class="stack" id="link-networks">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<p>Choose the network. You will be sent to its own page to sign in and approve access; nothing is connected until you do.</p>
{{range .Networks}}<button type="submit" name="platform" value="{{.ID}}" id="link-{{.ID}}">Connect {{.Name}}</button>
{{end}}</form>{{else}}<p>This link offers no network this server can connect now. Ask whoever sent it for a new one.</p>{{end}}
<p class="muted">This link works until {{.Expires}}. If you did not expect it, close this page: nothing happens unless you approve access on the network.</p>
</div>
</main>
</body>
</html>
`))

type linkNetwork struct{ ID, Name string }

type linkPageData struct {
	Agency, Workspace, Note, Action, CSRF, Expires string
	Networks                                       []linkNetwork
}

// linkCookie is the browser's link cookie, "" when it has none.
func linkCookie(c *echo.Context) string {
	ck, err := c.Cookie(accountlink.LinkCookie)
	if err != nil {
		return ""
	}
	return ck.Value
}

// linkPage is GET /connect/l/:token.
func (h *handlers) linkPage(c *echo.Context) error {
	if h.Connect == nil {
		return h.write(c, http.StatusServiceUnavailable, pageData{Title: "Connecting accounts is not available", Message: "This Herald server cannot connect accounts.", Client: true})
	}
	v, err := h.Connect.OpenLink(c.Param("token"), h.Now())
	if err != nil {
		return h.linkFailure(c, "", err)
	}
	cookie := linkCookie(c)
	if cookie == "" {
		cookie = accountlink.NewBrowserCookie()
		c.SetCookie(&http.Cookie{
			Name: accountlink.LinkCookie, Value: cookie, Path: "/", MaxAge: int(linkBrowserCookieAge / time.Second),
			HttpOnly: true, Secure: h.Server.Secure(), SameSite: http.SameSiteLaxMode,
		})
	}
	d := linkPageData{
		Agency: v.Agency, Workspace: v.Workspace, Note: v.Link.Note, Action: accountlink.LinkPath + c.Param("token"),
		CSRF: accountlink.LinkCSRF(cookie), Expires: v.Link.ExpiresAt.UTC().Format("2 January 2006, 15:04 UTC"),
	}
	for _, p := range v.Offered {
		d.Networks = append(d.Networks, linkNetwork{ID: string(p), Name: displayName(p)})
	}
	var b bytes.Buffer
	if err := linkTemplate.Execute(&b, d); err != nil {
		return err
	}
	noStore(c)
	hdr := c.Response().Header()
	// The form's answer sends the browser on to the network's consent page: form-action allows
	// those origins, and nothing else.
	formAction := "'self'"
	if o := h.Connect.ConsentOrigins(v.Offered); len(o) > 0 {
		formAction += " " + strings.Join(o, " ")
	}
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action "+formAction)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	if h.Server.Secure() {
		hdr.Set("Strict-Transport-Security", "max-age=31536000")
	}
	return c.HTMLBlob(http.StatusOK, b.Bytes())
}

// linkStart is POST /connect/l/:token (the link page's form): 303 to the chosen network's consent.
func (h *handlers) linkStart(c *echo.Context) error {
	if h.Connect == nil {
		return h.write(c, http.StatusServiceUnavailable, pageData{Title: "Connecting accounts is not available", Message: "This Herald server cannot connect accounts.", Client: true})
	}
	cookie := linkCookie(c)
	if cookie == "" {
		return h.linkFailure(c, "", accountlink.ErrNoBrowser)
	}
	if subtle.ConstantTimeCompare([]byte(c.FormValue("csrf_token")), []byte(accountlink.LinkCSRF(cookie))) != 1 {
		return h.write(c, http.StatusForbidden, pageData{Title: "Nothing was started",
			Message: "The form expired or did not come from this link's page. Open the link you were sent again.", Client: true})
	}
	p := platforms.Platform(c.FormValue("platform"))
	ctx, cancel := h.askContext(c)
	defer cancel()
	start, err := h.Connect.BeginLink(ctx, c.Param("token"), cookie, p, h.Now())
	if errors.Is(err, accountlink.ErrLinkBusy) {
		wait := int(start.RetryAt.Sub(h.Now()).Minutes()) + 1
		c.Response().Header().Set("Retry-After", strconv.Itoa(wait*60))
		return h.write(c, http.StatusTooManyRequests, pageData{Title: "This link was used too often",
			Message: "This link started " + strconv.Itoa(accountlink.LinkStartsPerHour) + " connections in the last hour, the most it may. Try again in " +
				strconv.Itoa(wait) + " minutes.", Client: true})
	}
	if err != nil {
		return h.linkFailure(c, p, err)
	}
	h.Log.Info("connect link: consent started", "request_id", server.RequestID(c), "platform", string(p))
	noStore(c)
	return c.Redirect(http.StatusSeeOther, start.ConsentURL)
}

// linkFailure ends a link's page on what happened; nothing was started.
func (h *handlers) linkFailure(c *echo.Context, p platforms.Platform, err error) error {
	status, title, msg := 0, "", ""
	switch {
	case errors.Is(err, accountlink.ErrLinkNotFound):
		status, title, msg = http.StatusNotFound, "This link is not valid",
			"The link is incomplete, was altered, or was not issued by this Herald server. Nothing was started. Ask whoever sent it for a new one."
	case errors.Is(err, accountlink.ErrLinkExpired):
		status, title, msg = http.StatusGone, "This link has expired",
			"Nothing was started. Ask whoever sent it for a new one."
	case errors.Is(err, accountlink.ErrLinkRevoked):
		status, title, msg = http.StatusGone, "This link was withdrawn",
			"Whoever sent it has withdrawn it. Nothing was started. Ask them for a new one if you still need to connect an account."
	case errors.Is(err, accountlink.ErrNotOffered):
		status, title, msg = http.StatusBadRequest, "This link does not offer that network",
			"Nothing was started. Open the link you were sent again and choose one of the networks it offers."
	case errors.Is(err, accountlink.ErrNoBrowser):
		status, title, msg = http.StatusForbidden, "Nothing was started",
			"This browser did not open the link's page first, or does not keep cookies for Herald. Open the link you were sent again, in a browser that allows cookies."
	}
	if status == 0 {
		if e := server.StoreFailure(c, h.Log, err); e != nil {
			return h.write(c, http.StatusServiceUnavailable, pageData{Title: "Herald is busy", Message: "Try again in a moment.", Client: true})
		}
		return h.failureFor(c, p, err, true)
	}
	h.Log.Info("connect link: refused", "request_id", server.RequestID(c), "status", status, "error", err)
	return h.write(c, status, pageData{Title: title, Message: msg, Client: true})
}

// linkCallback is the connect callback of a flow started from a connect link: it acts for the
// browser that presents the link page's cookie, whatever Herald session it may carry.
func (h *handlers) linkCallback(c *echo.Context) error {
	cookie := linkCookie(c)
	holder := accountlink.BrowserHolder(cookie)
	q := c.QueryParams()
	ctx, cancel := h.askContext(c)
	defer cancel()
	p, res, err := h.Connect.Complete(ctx, accountlink.Callback{
		State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"),
	}, holder, h.Now())
	if errors.Is(err, accountlink.ErrUsed) {
		if _, choices, cerr := h.Connect.Choices(q.Get("state"), holder, h.Now()); cerr == nil {
			return h.pickPageWith(c, p, q.Get("state"), accountlink.LinkCSRF(cookie), true, choices, http.StatusOK, "")
		}
	}
	if err != nil {
		return h.failureFor(c, p, err, true)
	}
	if len(res.Choices) > 0 {
		return h.pickPageWith(c, p, q.Get("state"), accountlink.LinkCSRF(cookie), true, res.Choices, http.StatusOK, "")
	}
	name := displayName(p)
	who := name + " account"
	if u := res.Account.Username; u != nil && *u != "" {
		who = name + " account " + *u
	}
	h.Log.Info("connect link: account connected", "request_id", server.RequestID(c), "platform", string(p), "created", res.Created)
	return h.write(c, http.StatusOK, pageData{Title: name + " is connected",
		Message: "Your " + who + " is now connected for whoever sent you the link. Nothing more is needed.", Client: true})
}

// linkPick is the picker's form of a flow started from a connect link, with the token of the
// link's browser.
func (h *handlers) linkPick(c *echo.Context) error {
	cookie := linkCookie(c)
	csrf := accountlink.LinkCSRF(cookie)
	if cookie == "" || subtle.ConstantTimeCompare([]byte(c.FormValue("csrf_token")), []byte(csrf)) != 1 {
		return h.failureFor(c, "", accountlink.ErrOtherBrowser, true)
	}
	return h.pickFor(c, accountlink.BrowserHolder(cookie), csrf, true)
}
