package accountlink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Add is an account connected with credentials the user brings (`herald accounts add`): a
// Bluesky handle and app password, or X tokens issued to the user's own OAuth 2.0 client. It
// travels over the admin socket as JSON; it is never logged.
type Add struct {
	Email    string `json:"email"`
	Platform string `json:"platform"`
	// Bluesky.
	Handle      string `json:"handle,omitempty"`
	AppPassword string `json:"app_password,omitempty"`
	// X: the user's OAuth 2.0 client (a public client has no secret) and the tokens it issued.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	// ExpiresIn is the access token's remaining lifetime in seconds (0: unknown; the token is
	// then refreshed when X answers that it expired).
	ExpiresIn int64 `json:"expires_in,omitempty"`
}

// bluesky and xIdentity are what Add needs of the two adapters beyond platforms.Adapter.
type bluesky interface {
	Login(ctx context.Context, identifier, appPassword string) (platforms.Credentials, error)
}

type xIdentity interface {
	Identify(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Add checks the credentials with the network (Bluesky: createSession; X: GET /2/users/me, which
// also names the account) and saves the account for the user with in.Email; nothing is created
// when the network refuses.
func (s *Service) Add(ctx context.Context, in Add) (*Result, error) {
	user, err := s.user(in.Email)
	if err != nil {
		return nil, err
	}
	return s.AddFor(ctx, user.ID, "", in)
}

// AddFor is Add for the user with this id, into the user's workspace workspaceID ("" for main)
// (the dashboard's POST /api/accounts/x and /bluesky); in.Email is not read.
func (s *Service) AddFor(ctx context.Context, userID, workspaceID string, in Add) (*Result, error) {
	var err error
	p := platforms.Platform(in.Platform)
	var creds platforms.Credentials
	switch p {
	case platforms.Bluesky:
		if in.Handle = strings.TrimSpace(in.Handle); in.Handle == "" || in.AppPassword == "" {
			return nil, invalid("bluesky needs --handle and --app-password")
		}
		b, ok := s.cfg.Adapters[p].(bluesky)
		if !ok {
			return nil, ErrNotConfigured
		}
		if creds, err = b.Login(ctx, in.Handle, in.AppPassword); err != nil {
			return nil, &ExchangeError{Platform: p, Err: err}
		}
	case platforms.X:
		if strings.TrimSpace(in.ClientID) == "" || strings.TrimSpace(in.AccessToken) == "" {
			return nil, invalid("twitter_x needs --client-id and --access-token (and --refresh-token to stay connected past the token's two hours)")
		}
		if in.ExpiresIn < 0 {
			return nil, invalid("--expires-in must not be negative")
		}
		x, ok := s.cfg.Adapters[p].(xIdentity)
		if !ok {
			return nil, ErrNotConfigured
		}
		creds = platforms.Credentials{
			AccessToken:  strings.TrimSpace(in.AccessToken),
			RefreshToken: strings.TrimSpace(in.RefreshToken),
			Extra:        map[string]string{"client_id": strings.TrimSpace(in.ClientID)},
		}
		if sec := strings.TrimSpace(in.ClientSecret); sec != "" {
			creds.Extra["client_secret"] = sec
		}
		if in.ExpiresIn > 0 {
			creds.ExpiresAt = s.cfg.Now().Add(time.Duration(in.ExpiresIn) * time.Second).UTC()
		}
		if creds, err = x.Identify(ctx, creds); err != nil {
			return nil, &ExchangeError{Platform: p, Err: err}
		}
	case "":
		return nil, invalid("--platform is required (bluesky or twitter_x)")
	default:
		if IsBrowser(p) {
			return nil, invalid("%s connects through the browser: POST /v1/accounts/connect {\"platform\":%q} and open the authorization_url it returns", p, p)
		}
		return nil, invalid("unknown platform %q (bluesky or twitter_x)", in.Platform)
	}
	return s.Save(ctx, userID, workspaceID, p, creds)
}

// List returns the accounts of the user with this e-mail, oldest first.
func (s *Service) List(email string) ([]*persistence.Account, error) {
	user, err := s.user(email)
	if err != nil {
		return nil, err
	}
	var out []*persistence.Account
	err = s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		out, err = tx.AccountsIn(user.ID)
		return err
	})
	return out, err
}

func (s *Service) user(email string) (*persistence.User, error) {
	if strings.TrimSpace(email) == "" {
		return nil, invalid("--email is required")
	}
	var u *persistence.User
	err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		u, err = tx.UserByEmail(strings.TrimSpace(email))
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fmt.Errorf("%w %s", ErrUnknownUser, strings.TrimSpace(email))
	}
	return u, err
}
