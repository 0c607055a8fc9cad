package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Account is a connected social account as the API shows it. token_expires_at and
// token_status tell the user when they must act (account.TokenHorizon, account.TokenStatus);
// access_token_expires_at is the access token's own expiry, which Herald renews by itself where
// it holds a refresh token. kind says what the account is on its network (persistence.KindOf:
// an account stored before kinds reads as the kind its network's accounts always were) and
// display_name its name there (an organisation's, a Page's).
type Account struct {
	ID                   string     `json:"id"`
	Platform             string     `json:"platform"`
	Kind                 string     `json:"kind"`
	DisplayName          *string    `json:"display_name"`
	Username             *string    `json:"username"`
	ProfileImageURL      *string    `json:"profile_image_url"`
	IsActive             bool       `json:"is_active"`
	TokenExpiresAt       *time.Time `json:"token_expires_at"`
	TokenStatus          *string    `json:"token_status"`
	AccessTokenExpiresAt *time.Time `json:"access_token_expires_at"`
	CreatedAt            *time.Time `json:"created_at"`
}

// AccountView is the API's view of an account record at now.
func AccountView(a *persistence.Account, now time.Time) Account {
	st := account.TokenStatus(a, now)
	created := a.CreatedAt
	return Account{ID: a.ID, Platform: a.Platform, Kind: a.KindOf(), DisplayName: a.DisplayName, Username: a.Username, ProfileImageURL: a.ProfileImageURL,
		IsActive: a.IsActive, TokenExpiresAt: account.TokenHorizon(a), TokenStatus: &st,
		AccessTokenExpiresAt: a.TokenExpiresAt, CreatedAt: &created}
}

func (h *handlers) listAccounts(c *echo.Context) error {
	p := server.Principal(c)
	var list []*persistence.Account
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		list, err = tx.AccountsIn(p.Scope())
		return err
	}); err != nil {
		return h.storeError(c, err)
	}
	now := h.Now()
	out := make([]Account, 0, len(list))
	for _, a := range list {
		out = append(out, AccountView(a, now))
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out})
}

func (h *handlers) deleteAccount(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	// The account actor revokes the token at the network (best effort) and deletes the account;
	// publishes waiting for it fail with a clear error.
	_, err = ask[*account.Reply](h, c, h.Accounts.To(id), &account.Delete{Scope: server.Principal(c).Scope()})
	switch {
	case errors.Is(err, account.ErrNotFound):
		return apierr.NotFound("account")
	case errors.Is(err, account.ErrForbidden):
		return apierr.Forbidden("account")
	case err != nil:
		return h.actorError(c, "account", err)
	}
	return c.NoContent(http.StatusNoContent)
}
