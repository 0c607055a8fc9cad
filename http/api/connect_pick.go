package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/platforms"
)

// pickForm is the picker of what a consent granted: the accounts, each with a checkbox, posted
// back with the session's CSRF token and the connect state's token (the grants themselves stay
// sealed in the state; the form names them by their network ids).
type pickForm struct {
	Action, CSRF, State string
	Choices             []pickChoice
}

type pickChoice struct {
	ID, Name, Label string
}

// kindLabels name the kinds of accounts as the picker shows them.
var kindLabels = map[string]string{
	platforms.KindProfile:      "your profile",
	platforms.KindOrganization: "organisation",
	platforms.KindPage:         "Page",
	platforms.KindChannel:      "channel",
}

// choiceLabel says what a choice is: its kind, and, when the picker of a consent on p offers
// accounts of several networks, its network ("Facebook Page", "Instagram professional account").
func choiceLabel(p, on platforms.Platform, kind string, mixed bool) string {
	if on != p {
		if on == platforms.Instagram {
			return "Instagram professional account"
		}
		return displayName(on) + " account"
	}
	label := kindLabels[kind]
	if label == "" {
		label = kind
	}
	if mixed {
		label = displayName(p) + " " + label
	}
	return label
}

// choiceName is a choice's name, or a name made of its network and id when it has none.
func choiceName(ch accountlink.Choice, on platforms.Platform) string {
	if ch.Name != "" {
		return ch.Name
	}
	id := ch.ID
	if i := strings.IndexByte(id, ':'); i >= 0 {
		id = id[i+1:]
	}
	return displayName(on) + " account " + id
}

// pickPage shows the picker of the state's choices; problem, when set, says why the last
// submission was refused.
func (h *handlers) pickPage(c *echo.Context, p platforms.Platform, state string, choices []accountlink.Choice, status int, problem string) error {
	s, err := h.Server.SessionFromCookie(c)
	if err != nil || s == nil {
		return h.page(c, http.StatusInternalServerError, "The account could not be connected",
			"Herald could not check who is signed in (request "+server.RequestID(c)+"). Start again from the dashboard's Accounts page.")
	}
	return h.pickPageWith(c, p, state, s.Record.CSRFToken, false, choices, status, problem)
}

// pickPageWith is pickPage with the form's CSRF token given: the session's, or for a connect
// link's flow (client) the one of the link's browser (accountlink.LinkCSRF).
func (h *handlers) pickPageWith(c *echo.Context, p platforms.Platform, state, csrf string, client bool, choices []accountlink.Choice, status int, problem string) error {
	name := displayName(p)
	form := &pickForm{Action: accountlink.PickPath, CSRF: csrf, State: state}
	mixed := false
	for _, ch := range choices {
		mixed = mixed || (ch.Platform != "" && ch.Platform != p)
	}
	for _, ch := range choices {
		on := ch.Platform
		if on == "" {
			on = p
		}
		form.Choices = append(form.Choices, pickChoice{ID: ch.ID, Name: choiceName(ch, on), Label: choiceLabel(p, on, ch.Kind, mixed)})
	}
	msg := "You can publish to several " + name + " accounts. Tick the ones to connect to Herald: each becomes its own account. " +
		"This choice is valid for 10 minutes."
	if mixed {
		msg = "This " + name + " authorization lets Herald publish to several accounts. Tick the ones to connect to Herald: each becomes its own account, on its network. " +
			"This choice is valid for 10 minutes."
	}
	if problem != "" {
		msg = problem + " " + msg
	}
	return h.write(c, status, pageData{Title: "Choose the " + name + " accounts to connect", Message: msg, Pick: form, Client: client})
}

// connectPick is POST /v1/accounts/connect/pick (the picker's form, of the signed-in user, with
// the session's CSRF token): connects each account ticked among those the consent granted. A
// submission naming nothing, or anything the consent did not grant, changes nothing: the picker
// is shown again with 400 and what was wrong.
func (h *handlers) connectPick(c *echo.Context) error {
	if h.Connect == nil {
		return h.page(c, http.StatusServiceUnavailable, "Connecting accounts is not available", "This Herald server cannot connect accounts.")
	}
	if h.Connect.LinkFlow(c.FormValue("state"), h.Now()) {
		return h.linkPick(c) // bound to the link's browser, not to a session
	}
	s, err := h.Server.SessionFromCookie(c)
	if err != nil {
		return h.page(c, http.StatusInternalServerError, "The account could not be connected", "Herald could not check who is signed in (request "+server.RequestID(c)+"). Try again.")
	}
	if s == nil {
		noStore(c)
		return c.Redirect(http.StatusFound, SignInPath)
	}
	if !s.CheckCSRF(c.FormValue("csrf_token")) {
		return h.page(c, http.StatusForbidden, "Nothing was connected",
			"The form expired or did not come from Herald. Start again from the dashboard's Accounts page.")
	}
	if !s.HasRole(auth.RoleAdmin) {
		return h.page(c, http.StatusForbidden, "Nothing was connected", "Connecting accounts needs the admin role in this team; ask its owner.")
	}
	return h.pickFor(c, s.ActsFor(), s.Record.CSRFToken, false)
}

// pickFor connects the accounts ticked for holder (the signed-in user, or a connect link's
// browser: client), whose form carries csrf (checked by the caller).
func (h *handlers) pickFor(c *echo.Context, holder, csrf string, client bool) error {
	again := "Start again from the dashboard's Accounts page."
	if client {
		again = "Open the link you were sent again to start over."
	}
	values, err := c.FormValues()
	if err != nil {
		return h.write(c, http.StatusBadRequest, pageData{Title: "Nothing was connected", Message: "The form could not be read. " + again, Client: client})
	}
	state := values.Get("state")
	ctx, cancel := h.askContext(c)
	defer cancel()
	p, results, err := h.Connect.Pick(ctx, state, holder, values["choice"], h.Now())
	switch {
	case errors.Is(err, accountlink.ErrNoChoice), errors.Is(err, accountlink.ErrNotGranted):
		problem := "Tick at least one account."
		if errors.Is(err, accountlink.ErrNotGranted) {
			problem = "The form named an account this authorization did not grant, so nothing was connected."
		}
		h.Log.Info("connect: pick refused", "request_id", server.RequestID(c), "platform", string(p), "error", err)
		_, choices, cerr := h.Connect.Choices(state, holder, h.Now())
		if cerr != nil {
			return h.failureFor(c, p, cerr, client)
		}
		return h.pickPageWith(c, p, state, csrf, client, choices, http.StatusBadRequest, problem)
	case err != nil && len(results) == 0:
		return h.failureFor(c, p, err, client)
	}
	// The page is named after the network of the accounts connected: the consent's, or the one
	// other network all of them are on (Instagram accounts picked through Facebook).
	name := displayName(p)
	if len(results) > 0 {
		on := results[0].Account.Platform
		for _, r := range results[1:] {
			if r.Account.Platform != on {
				on = string(p)
			}
		}
		name = displayName(platforms.Platform(on))
	}
	created, renewed := 0, 0
	msg := ""
	for _, r := range results {
		if r.Created {
			created++
		} else {
			renewed++
		}
		who := displayName(platforms.Platform(r.Account.Platform)) + " account"
		if d := r.Account.DisplayName; d != nil && *d != "" {
			who += " " + *d
		} else if u := r.Account.Username; u != nil && *u != "" {
			who += " " + *u
		}
		if r.Created {
			msg += "Your " + who + " is now connected to Herald. "
		} else {
			msg += "Your " + who + " was already connected; its access was renewed. "
		}
	}
	h.Log.Info("connect: accounts picked", "request_id", server.RequestID(c), "platform", string(p), "created", created, "renewed", renewed)
	if err != nil {
		h.Log.Warn("connect: pick partly failed", "request_id", server.RequestID(c), "platform", string(p), "error", err)
		msg += "Herald could not connect the other accounts ticked (request " + server.RequestID(c) + "). " + again
		return h.write(c, http.StatusServiceUnavailable, pageData{Title: name + " is partly connected", Message: msg, Client: client})
	}
	return h.write(c, http.StatusOK, pageData{Title: name + " is connected", Message: msg, Client: client})
}
