package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Per-network posts: what an account allows (GET /v1/accounts/:id/capabilities), its default
// options (PATCH /v1/accounts/:id), the check of a post before anything is written (POST
// /v1/posts/validate) and a media's alt text (PATCH /v1/media/:id). The check itself is check.go.

// Validation is the answer of POST /v1/posts/validate.
type Validation struct {
	Valid bool `json:"valid"`
	// Errors are the post's own (its fields, its time), each also counted in Valid.
	Errors []platforms.FieldError `json:"errors"`
	// Targets are each target's check, in the order of platforms.
	Targets []TargetCheck `json:"targets"`
}

// validatePost serves POST /v1/posts/validate: the body of POST /v1/posts/publish (with an
// optional scheduledAt and timezone), checked as a publish or schedule would check it, every rule
// of every target, and nothing written. A body that is not a JSON object is 400; everything else
// is answered 200 with what would be refused.
func (h *handlers) validatePost(c *echo.Context) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	o, err := parseObject(raw)
	if err != nil {
		return err
	}
	out := Validation{Errors: []platforms.FieldError{}, Targets: []TargetCheck{}}
	if o.has("scheduledAt") || o.has("timezone") {
		if _, _, err := h.scheduleInput(c, o); err != nil {
			out.Errors = append(out.Errors, fieldError(err))
		}
	}
	_, res, err := h.postInputCheck(c, raw, &submission{whole: true, publish: true, preview: true}, nil)
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		out.Errors = append(out.Errors, fieldError(err))
	case err != nil:
		return err
	default:
		for _, msg := range res.errs[:res.fields] {
			out.Errors = append(out.Errors, splitField(msg))
		}
		if res.targets != nil { // none when a field refused the post: still a list
			out.Targets = res.targets
		}
	}
	out.Valid = len(out.Errors) == 0
	for _, t := range out.Targets {
		out.Valid = out.Valid && t.Valid
	}
	return c.JSON(http.StatusOK, out)
}

// fieldError is a refusal as a validation error of one field.
func fieldError(err error) platforms.FieldError {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return splitField(ae.Message)
	}
	return platforms.FieldError{Field: "", Message: err.Error()}
}

// splitField reads a refusal's message "field: reason" as a FieldError.
func splitField(msg string) platforms.FieldError {
	field, reason, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(field, " ") {
		return platforms.FieldError{Field: "", Message: msg}
	}
	return platforms.FieldError{Field: field, Message: reason}
}

// getCapabilities serves GET /v1/accounts/:id/capabilities (?fresh=true reads the choices again
// unless they are younger than 90 seconds).
func (h *handlers) getCapabilities(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	fresh, err := live.ParseBool("fresh", c.QueryParam("fresh"), false)
	if err != nil {
		return err
	}
	caps, err := h.Live.Capabilities(c.Request().Context(), server.Principal(c).Scope(), id, fresh)
	if err != nil {
		return h.liveError(c, err)
	}
	return c.JSON(http.StatusOK, caps)
}

// AccountDetail is an account with its default options (PATCH /v1/accounts/:id).
type AccountDetail struct {
	Account
	DefaultOptions json.RawMessage `json:"default_options"`
}

// updateAccount serves PATCH /v1/accounts/:id: {"default_options": {...}} sets what a target of
// the account without options gets (null or {} clears them). The options are checked as the
// network's (platforms.DecodeOptions, and platforms.CheckOptions as defaults: each value given,
// not what only a post decides); what depends on the account's live choices (a TikTok privacy
// level, a Pinterest board) is checked against them when they can be read.
func (h *handlers) updateAccount(c *echo.Context) error {
	id, o, err := patchOf(c, "an account", "default_options")
	if err != nil {
		return err
	}
	raw, ok := o["default_options"]
	if !ok {
		return apierr.Validation("nothing to update: send default_options")
	}
	if t := jsonType(raw); t != "object" && t != "null" {
		return typeError("default_options", "object", raw)
	}
	userID := server.Principal(c).Scope()
	var a *persistence.Account
	err = h.Store.View(func(tx *persistence.Tx) error {
		var err error
		a, err = tx.Account(id)
		return err
	})
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return apierr.NotFound("account")
	case err != nil:
		return h.storeError(c, err)
	case a.Scope() != userID:
		return apierr.Forbidden("account")
	}
	platform := platforms.Platform(a.Platform)
	opts, fe := platforms.DecodeOptions(platform, raw)
	if fe != nil {
		return apierr.Validation("default_options.%s: %s", strings.TrimPrefix(fe.Field, "options."), fe.Message)
	}
	var choices *platforms.Choices
	if h.Live != nil {
		choices = h.Live.Choices(c.Request().Context(), userID, a.ID, platform)
	}
	if errs, _ := platforms.CheckOptions(opts, platforms.Target{Choices: choices, Defaults: true}); len(errs) > 0 {
		return apierr.Validation("default_options.%s: %s", strings.TrimPrefix(errs[0].Field, "options."), errs[0].Message).
			WithDetails(map[string]any{"errors": errs})
	}
	r, err := ask[*account.Reply](h, c, h.Accounts.To(id), &account.SetDefaults{Scope: userID, Options: platforms.EncodeOptions(opts)})
	switch {
	case errors.Is(err, account.ErrNotFound):
		return apierr.NotFound("account")
	case errors.Is(err, account.ErrForbidden):
		return apierr.Forbidden("account")
	case err != nil:
		return h.actorError(c, "account", err)
	}
	return c.JSON(http.StatusOK, accountDetail(r.Account, h.Now()))
}

// accountDetail is an account as PATCH answers it.
func accountDetail(a *persistence.Account, now time.Time) AccountDetail {
	d := AccountDetail{Account: AccountView(a, now), DefaultOptions: a.DefaultOptions}
	if len(d.DefaultOptions) == 0 {
		d.DefaultOptions = json.RawMessage("{}")
	}
	return d
}

// patchOf reads a PATCH of one changeable field: the path's id and the body, refusing any other
// field.
func patchOf(c *echo.Context, what, field string) (string, object, error) {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return "", nil, err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return "", nil, err
	}
	for k := range o {
		if k != field {
			return "", nil, apierr.Validation("%s: unknown field; %s's only changeable field is %s", k, what, field)
		}
	}
	return id, o, nil
}

// updateMedia serves PATCH /v1/media/:id: {"alt_text": "..."} ("" removes it).
func (h *handlers) updateMedia(c *echo.Context) error {
	id, o, err := patchOf(c, "a media", "alt_text")
	if err != nil {
		return err
	}
	alt, err := o.str("alt_text", true)
	if err != nil {
		return err
	}
	m, err := h.Media.SetAltText(c.Request().Context(), server.Principal(c).Scope(), id, *alt)
	if err != nil {
		return h.mediaError(c, err)
	}
	return c.JSON(http.StatusOK, mediaResponse(m, h.Media.URL(m)))
}
