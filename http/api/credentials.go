package api

import (
	"bytes"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// X and Bluesky connect with credentials the user brings, not through the browser flow (the
// spec: "dashboard only, credentials entered there"). The dashboard's forms post them here; they
// run what `herald accounts add` runs (accountlink.Service.Add): the network checks the credentials
// (Bluesky: createSession; X: GET /2/users/me) and nothing is saved when it refuses.
//
//	POST /api/accounts/x        {client_id, access_token, refresh_token?, expires_in?, client_secret?}
//	POST /api/accounts/bluesky  {handle, app_password, pds?}
//
// 201 with the account (the shape of GET /v1/accounts) when it is new; 200 when the same network
// user was connected already and its credentials were replaced. A refusal by the network is 400
// validation_error with the network's reason; a network that does not answer is 503. The
// secrets are sealed with the account's tokens and never logged.

// MaxCredentialLength caps each credential field, in bytes.
const MaxCredentialLength = 4096

// registerCredentials adds the credential forms to the dashboard's group.
func (h *handlers) registerCredentials(g *echo.Group) {
	if h.Connect == nil {
		return
	}
	g.POST("/accounts/x", h.addXAccount)
	g.POST("/accounts/bluesky", h.addBlueskyAccount)
}

// credential reads a string field (trimmed), required or not, at most MaxCredentialLength bytes
// and without control characters.
func credential(o object, field string, required bool) (string, error) {
	v, err := o.str(field, required)
	if err != nil || v == nil {
		return "", err
	}
	s := strings.TrimSpace(*v)
	switch {
	case required && s == "":
		return "", apierr.Validation("%s: String must contain at least 1 character(s)", field)
	case len(s) > MaxCredentialLength:
		return "", apierr.Validation("%s: String must contain at most %d character(s)", field, MaxCredentialLength)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", apierr.Validation("%s: must not contain control characters", field)
	}
	return s, nil
}

// addXAccount is POST /api/accounts/x.
func (h *handlers) addXAccount(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	in := accountlink.Add{Platform: string(platforms.X)}
	if in.ClientID, err = credential(o, "client_id", true); err != nil {
		return err
	}
	if in.AccessToken, err = credential(o, "access_token", true); err != nil {
		return err
	}
	if in.RefreshToken, err = credential(o, "refresh_token", false); err != nil {
		return err
	}
	if in.ClientSecret, err = credential(o, "client_secret", false); err != nil {
		return err
	}
	if raw, ok := o["expires_in"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		if in.ExpiresIn, err = o.integer("expires_in"); err != nil {
			return err
		}
		if in.ExpiresIn < 0 {
			return apierr.Validation("expires_in: Number must be greater than or equal to 0 (seconds the access token has left; 0 or absent: unknown)")
		}
	}
	return h.addAccount(c, in)
}

// addBlueskyAccount is POST /api/accounts/bluesky.
func (h *handlers) addBlueskyAccount(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	in := accountlink.Add{Platform: string(platforms.Bluesky)}
	if in.Handle, err = credential(o, "handle", true); err != nil {
		return err
	}
	if in.AppPassword, err = credential(o, "app_password", true); err != nil {
		return err
	}
	pds, err := credential(o, "pds", false)
	if err != nil {
		return err
	}
	if pds != "" {
		// Signing in on a host the user names would make Herald call any address it is given;
		// until that call goes through the outbound guard the webhooks use, the server's own
		// Bluesky host signs in, and the account's PDS is read from its DID document.
		return apierr.Validation("pds: signing in on a PDS of your own is not supported yet; omit pds: Herald signs in " +
			"through its Bluesky host and finds the account's PDS from its DID document")
	}
	return h.addAccount(c, in)
}

// addAccount runs the credential check and the save for the session's user.
func (h *handlers) addAccount(c *echo.Context, in accountlink.Add) error {
	ctx, cancel := h.askContext(c)
	defer cancel()
	res, err := h.Connect.AddFor(ctx, server.Principal(c).User.ID, server.Principal(c).ObjectWorkspace(), in)
	var xe *accountlink.ExchangeError
	switch {
	case err == nil:
	case errors.As(err, &xe) && xe.Refused():
		h.Log.Info("account credentials refused by the network", append(server.LogAttrs(c), "platform", in.Platform)...)
		return apierr.Validation("%s refused the credentials: %s", displayName(platforms.Platform(in.Platform)), accountlink.Message(xe.Err))
	case errors.As(err, &xe), errors.Is(err, accountlink.ErrNoIdentity):
		h.Log.Warn("account credentials could not be checked", append(server.LogAttrs(c), "platform", in.Platform, "error", err)...)
		return apierr.Unavailable(displayName(platforms.Platform(in.Platform)) + " did not answer the credential check; retry shortly")
	case errors.Is(err, accountlink.ErrNotConfigured):
		return apierr.Validation("%s is not configured on this server", displayName(platforms.Platform(in.Platform)))
	case errors.Is(err, accountlink.ErrElsewhere):
		return apierr.New(http.StatusConflict, apierr.CodeValidation, "%s", accountlink.ErrElsewhere.Error())
	case errors.Is(err, accountlink.ErrWorkspaceFull):
		return apierr.New(http.StatusForbidden, apierr.CodeLimitExceeded, "%s", accountlink.ErrWorkspaceFull.Error())
	case errors.Is(err, accountlink.ErrNoWorkspace):
		return apierr.NotFound("workspace")
	case errors.Is(err, accountlink.ErrInvalid):
		return apierr.Validation("%s", strings.TrimPrefix(err.Error(), accountlink.ErrInvalid.Error()+": "))
	case errors.Is(err, actors.ErrTimeout):
		return h.actorError(c, "account", err)
	case errors.Is(err, persistence.ErrWriteFailed):
		return server.StoreFailure(c, h.Log, err)
	default:
		h.Log.Error("account: cannot add", append(server.LogAttrs(c), "platform", in.Platform, "error", err)...)
		return apierr.Internal()
	}
	h.Log.Info("account added with credentials", append(server.LogAttrs(c), "platform", in.Platform,
		"account_id", res.Account.ID, "created", res.Created)...)
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return c.JSON(status, AccountView(res.Account, h.Now()))
}
