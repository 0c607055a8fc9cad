// Package accountlink links social accounts to Herald users: the browser OAuth flow of the seven
// networks that offer one through the API (LinkedIn, Instagram, YouTube, Pinterest, TikTok,
// Threads, Facebook) and of X when the operator configured an X app (from the dashboard and
// connect links only: Consent), and the credential-based connection of X and Bluesky behind
// `herald accounts add` and the dashboard's forms. Both end in
// Save, which creates the account through its actor, or replaces the tokens of the account the
// same network user already has with the same Herald user: one account per user, platform and
// network user, never a duplicate.
//
// The browser flow:
//
//  1. Begin (POST /v1/accounts/connect) records a state in bbolt (user, platform, PKCE verifier,
//     expiry) and returns a Herald URL carrying the state's signed token.
//  2. Authorize (GET of that URL, no API key: the browser follows it) checks the token and that
//     the browser is signed in to Herald as the user who asked for the link, and answers with the
//     network's consent page, with a PKCE challenge where the network takes one.
//  3. Complete (the network's redirect back to the callback, no API key) checks the token and the
//     signed-in user again, marks the state used in the same write that finds it unused (single
//     use), and exchanges the code.
//  4. When the consent granted several accounts (a LinkedIn member and the organisations they
//     administer, several Facebook Pages or a Page and its Instagram account), Complete connects none yet and the browser gets a
//     picker; Pick (POST PickPath) connects each one chosen as its own account (pick.go).
//
// The signed-in user is the browser's dashboard session (http/session): without it, a link
// forwarded to someone signed in to the network would connect that person's network account to
// the Herald user who made the link. The HTTP layer sends a browser without a session to the
// sign-in page first; a session of another user connects nothing (ErrOtherUser).
//
// The state token is signed with HMAC-SHA256 under a key derived from the data directory's
// secret (StateKey), expires after StateTTL, and is never logged.
package accountlink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
)

// Paths of the browser routes, under the server's base URL: the flow's two, and the form a
// connected TikTok account's page offers (its default privacy level).
const (
	AuthorizePath = "/v1/accounts/connect/authorize"
	CallbackPath  = "/v1/accounts/connect/callback"
	DefaultsPath  = "/v1/accounts/connect/defaults"
)

// Browser lists the platforms that connect through the browser flow, in the spec's order.
var Browser = []platforms.Platform{
	platforms.LinkedIn, platforms.Instagram, platforms.YouTube, platforms.Pinterest,
	platforms.TikTok, platforms.Threads, platforms.Facebook,
}

// IsBrowser reports whether p connects through the browser flow of POST /v1/accounts/connect.
func IsBrowser(p platforms.Platform) bool { return slices.Contains(Browser, p) }

// Consent lists every platform whose consent the browser flow can run: Browser's, then X. X's
// runs only when the server has an X app of its own (Config.Configured), and only from the
// dashboard (POST /api/accounts/connect) and connect links: the spec's POST /v1/accounts/connect
// answers 400 for twitter_x, so the API keeps Browser's list (docs/accounts.md).
var Consent = append(slices.Clone(Browser), platforms.X)

// IsConsent reports whether p is one of Consent's.
func IsConsent(p platforms.Platform) bool { return slices.Contains(Consent, p) }

// Connects reports whether this server can run p's consent now: p is one of Consent's, its
// adapter is a platforms.Connector, and the server has an OAuth client for it.
func (s *Service) Connects(p platforms.Platform) bool {
	_, err := s.connector(p)
	return err == nil
}

// purgeBatch bounds the expired states one Begin deletes.
const purgeBatch = 64

// Config is what the service needs.
type Config struct {
	Store    *persistence.Store
	Accounts actors.Router
	// Adapters are read at each call, so that a map filled later (sandbox mode points the
	// adapters at its simulator once it listens) is seen.
	Adapters map[platforms.Platform]platforms.Adapter
	// Key signs state tokens (StateKey of the data directory's secret).
	Key []byte
	// BaseURL returns the server's public base URL, without a trailing slash.
	BaseURL func() string
	// Configured reports whether the server has an OAuth client for a browser platform (nil:
	// every platform is).
	Configured func(platforms.Platform) bool
	Now        func() time.Time
	Log        *slog.Logger
}

// Service runs connections.
type Service struct {
	cfg    Config
	signer signer
	// box seals the grants a consent offers for picking (pick.go).
	box *secret.Box
	// saving serialises Save's find-then-create, so that two connections of the same network
	// user at once cannot both create an account. Connections are rare; one lock is enough.
	saving sync.Mutex
}

// New builds the service.
func New(cfg Config) (*Service, error) {
	if len(cfg.Key) < 32 {
		return nil, errors.New("connect: the state key must be at least 32 bytes")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.BaseURL == nil {
		cfg.BaseURL = func() string { return "" }
	}
	if cfg.Configured == nil {
		cfg.Configured = func(platforms.Platform) bool { return true }
	}
	box, err := newGrantsBox(cfg.Key)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, signer: signer{key: cfg.Key}, box: box}, nil
}

// CallbackURL is the redirect URI registered with every network's OAuth client.
func (s *Service) CallbackURL() string { return strings.TrimRight(s.cfg.BaseURL(), "/") + CallbackPath }

func (s *Service) connector(p platforms.Platform) (platforms.Connector, error) {
	if !IsConsent(p) {
		return nil, ErrNotBrowser
	}
	c, ok := s.cfg.Adapters[p].(platforms.Connector)
	if !ok || !s.cfg.Configured(p) {
		return nil, ErrNotConfigured
	}
	return c, nil
}

// Begin starts a browser connection of platform p for the user at now, whose account lands in
// the user's workspace workspaceID ("" for main), and returns the authorization_url: a Herald URL
// that carries the signed state and is valid for StateTTL.
func (s *Service) Begin(ctx context.Context, userID, workspaceID string, p platforms.Platform, now time.Time) (string, error) {
	c, err := s.connector(p)
	if err != nil {
		return "", err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	st := &persistence.ConnectState{
		ID: id.String(), UserID: userID, WorkspaceID: workspaceID, Platform: string(p),
		CreatedAt: now.UTC(), ExpiresAt: now.Add(StateTTL).UTC(),
	}
	if c.UsesPKCE() {
		st.Verifier, _ = newVerifier()
	}
	if err := s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		if _, err := tx.PurgeConnectStates(now, purgeBatch); err != nil {
			return err
		}
		return tx.PutConnectState(st)
	}); err != nil {
		return "", fmt.Errorf("connect: store state: %w", err)
	}
	token := s.signer.sign(id, st.ExpiresAt)
	return strings.TrimRight(s.cfg.BaseURL(), "/") + AuthorizePath + "?" + url.Values{"state": {token}}.Encode(), nil
}

// check verifies a token's signature and expiry and returns the state id.
func (s *Service) check(token string, now time.Time) (string, error) {
	id, expires, err := s.signer.verify(token)
	if err != nil {
		return "", err
	}
	if !now.Before(expires) {
		return "", ErrExpired
	}
	return id.String(), nil
}

// Authorize checks a state token and that userID (the browser's signed-in Herald user) is the
// user who asked for it, and returns the network's consent page to redirect the browser to.
// Opening the authorization_url again before the callback is allowed (a reload).
func (s *Service) Authorize(token, userID string, now time.Time) (platforms.Platform, string, error) {
	id, err := s.check(token, now)
	if err != nil {
		return "", "", err
	}
	var st *persistence.ConnectState
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		st, err = tx.ConnectState(id)
		return err
	}); err != nil {
		if errors.Is(err, persistence.ErrNotFound) {
			return "", "", ErrBadState
		}
		return "", "", err
	}
	p := platforms.Platform(st.Platform)
	if err := notHeld(st, userID); err != nil {
		return p, "", err
	}
	if st.UsedAt != nil {
		return p, "", ErrUsed
	}
	c, err := s.connector(p)
	if err != nil {
		return p, "", err
	}
	challenge := ""
	if st.Verifier != "" {
		challenge = challengeOf(st.Verifier)
	}
	return p, c.AuthorizeURL(token, s.CallbackURL(), challenge), nil
}

// Callback is what the network sent back to the callback URL.
type Callback struct {
	State string
	Code  string
	// Error and ErrorDescription are the network's refusal (error=access_denied when the person
	// clicked cancel).
	Error            string
	ErrorDescription string
}

// Result is a completed connection.
type Result struct {
	Account *persistence.Account
	// Created is false when the tokens of an existing account were replaced.
	Created bool
	// Choices, when set, are the accounts the consent granted for the person to pick from
	// (pick.go): nothing is connected yet and Account is nil.
	Choices []Choice
}

// Complete finishes a browser connection for userID (the browser's signed-in Herald user, or for
// a connect link's flow the browser holding it: BrowserHolder): it
// checks the state and that it was issued to userID, uses it up, then trades the code for
// credentials and saves the account. A state of another user is left as it is and nothing is
// connected (ErrOtherUser; ErrOtherBrowser for a link's flow). The outcome of a link's flow is
// recorded on its link. Platform is set whenever the state was valid.
func (s *Service) Complete(ctx context.Context, cb Callback, userID string, now time.Time) (platforms.Platform, *Result, error) {
	id, err := s.check(cb.State, now)
	if err != nil {
		return "", nil, err
	}
	st, err := s.take(ctx, id, userID, now)
	if err != nil {
		if st != nil {
			return platforms.Platform(st.Platform), nil, err
		}
		return "", nil, err
	}
	p := platforms.Platform(st.Platform)
	res, err := s.complete(ctx, cb, st, p)
	var results []*Result
	if res != nil && res.Account != nil {
		results = []*Result{res}
	}
	s.linkOutcome(ctx, st, p, results, err, now)
	return p, res, err
}

// complete trades the code of a callback whose state st was taken, and saves what it grants.
func (s *Service) complete(ctx context.Context, cb Callback, st *persistence.ConnectState, p platforms.Platform) (*Result, error) {
	switch {
	case cb.Error == "access_denied":
		return nil, ErrDenied
	case cb.Error != "":
		return nil, &NetworkError{Platform: p, Code: cb.Error, Description: cb.ErrorDescription}
	case cb.Code == "":
		return nil, ErrNoCode
	}
	c, err := s.connector(p)
	if err != nil {
		return nil, err
	}
	g, ok := c.(platforms.Granter)
	if !ok {
		creds, err := c.Exchange(ctx, cb.Code, s.CallbackURL(), st.Verifier)
		if err != nil {
			return nil, &ExchangeError{Platform: p, Err: err}
		}
		res, err := s.Save(ctx, st.UserID, st.WorkspaceID, p, creds)
		return res, err
	}
	grants, err := g.ExchangeGrants(ctx, cb.Code, s.CallbackURL(), st.Verifier)
	if err != nil {
		return nil, &ExchangeError{Platform: p, Err: err}
	}
	switch grants = usable(p, grants); len(grants) {
	case 0:
		return nil, ErrNoIdentity
	case 1:
		res, err := s.saveGrant(ctx, st.UserID, st.WorkspaceID, p, grants[0])
		return res, err
	}
	choices, err := s.offer(ctx, st, grants)
	if err != nil {
		return nil, err
	}
	return &Result{Choices: choices}, nil
}

// take marks a state of userID used, in the same write that finds it unused, and returns it.
func (s *Service) take(ctx context.Context, id, userID string, now time.Time) (*persistence.ConnectState, error) {
	var st *persistence.ConnectState
	var outcome error
	err := s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		st, outcome = nil, nil // the function may run twice
		got, err := tx.ConnectState(id)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			outcome = ErrBadState
			return nil
		case err != nil:
			return err
		case notHeld(got, userID) != nil:
			st, outcome = got, notHeld(got, userID)
			return nil
		case got.UsedAt != nil:
			outcome = ErrUsed
			return nil
		case !now.Before(got.ExpiresAt):
			outcome = ErrExpired
			return nil
		}
		used := now.UTC()
		got.UsedAt = &used
		st = got
		return tx.PutConnectState(got)
	})
	if err != nil {
		return nil, fmt.Errorf("connect: use state: %w", err)
	}
	return st, outcome
}

// Save stores credentials of a network user for a Herald user: it replaces the tokens of the
// user's account on platform p that belongs to the same network user (Credentials.UserID), or
// creates the account when there is none. The account actor seals the tokens. The account's kind
// is the one p's accounts have when a consent grants no choice (persistence.DefaultKind) and its
// display name the network's handle. A new account lands in the user's workspace workspaceID (""
// for main); a network account is connected once per user, so connecting it again from another
// workspace is refused (ErrElsewhere).
func (s *Service) Save(ctx context.Context, userID, workspaceID string, p platforms.Platform, creds platforms.Credentials) (*Result, error) {
	return s.save(ctx, userID, workspaceID, p, creds, persistence.DefaultKind(string(p)), creds.Handle)
}

// save is Save of an account of this kind and display name. The network user of an organisation
// or a Page is the organisation or the Page (Credentials.UserID), so that connecting a member and
// their organisation gives two accounts, and connecting either again renews its tokens.
func (s *Service) save(ctx context.Context, userID, workspaceID string, p platforms.Platform, creds platforms.Credentials, kind, name string) (*Result, error) {
	if strings.TrimSpace(creds.UserID) == "" {
		return nil, ErrNoIdentity
	}
	var username, display *string
	if h := strings.TrimSpace(creds.Handle); h != "" {
		username = &h
	}
	if n := strings.TrimSpace(name); n != "" {
		display = &n
	}
	s.saving.Lock()
	defer s.saving.Unlock()
	var existing *persistence.Account
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		a, err := tx.AccountOfNetworkUser(userID, string(p), creds.UserID)
		if errors.Is(err, persistence.ErrNotFound) {
			return workspaceRoom(tx, userID, workspaceID)
		}
		existing = a
		return err
	}); err != nil {
		if errors.Is(err, ErrWorkspaceFull) || errors.Is(err, ErrNoWorkspace) {
			return nil, err
		}
		return nil, fmt.Errorf("connect: find account: %w", err)
	}
	if existing != nil && existing.Scope() != persistence.Scope(userID, workspaceID) {
		return nil, ErrElsewhere
	}
	if existing != nil {
		r, err := actors.Ask[*account.Reply](ctx, s.cfg.Accounts.To(existing.ID), &account.SetCredentials{Creds: creds, Username: username, Kind: kind, DisplayName: display})
		if err != nil {
			return nil, fmt.Errorf("connect: update account: %w", err)
		}
		return &Result{Account: r.Account}, nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	acc := &persistence.Account{
		UserID: userID, WorkspaceID: workspaceID, Platform: string(p), Username: username, IsActive: true,
		CreatedAt: s.cfg.Now().UTC(), NetworkUserID: creds.UserID, Kind: kind, DisplayName: display,
	}
	r, err := actors.Ask[*account.Reply](ctx, s.cfg.Accounts.To(id.String()), &account.Create{Account: acc, Creds: creds})
	if err != nil {
		return nil, fmt.Errorf("connect: create account: %w", err)
	}
	return &Result{Account: r.Account, Created: true}, nil
}

// ErrWorkspaceFull means the workspace holds as many accounts as its limits allow.
var ErrWorkspaceFull = errors.New("the workspace holds as many connected accounts as its limit allows")

// ErrElsewhere means the network account is connected already, in another workspace of the same
// user: it is renewed only from the workspace it is in (a network account is connected once per
// user, so that its rate limits are counted in one place), and a connection from elsewhere
// changes nothing and names nothing of that workspace.
var ErrElsewhere = errors.New("this account is already connected in another workspace; disconnect it there first, or renew it from that workspace")

// ErrNoWorkspace means the workspace an account was to land in no longer exists.
var ErrNoWorkspace = errors.New("the workspace this connection was for no longer exists")

// workspaceRoom checks that the user's workspace workspaceID exists and has room for one more
// account under its limits. The connect flow's saves run one at a time (Service.saving), so the
// count cannot move between this check and the account's creation in this process.
func workspaceRoom(tx *persistence.Tx, userID, workspaceID string) error {
	w, err := tx.Workspace(userID, persistence.WorkspaceOf(workspaceID))
	if errors.Is(err, persistence.ErrNotFound) {
		return ErrNoWorkspace
	}
	if err != nil {
		return err
	}
	if w.Limits.Accounts != nil && tx.CountAccounts(w.Scope()) >= *w.Limits.Accounts {
		return ErrWorkspaceFull
	}
	return nil
}
