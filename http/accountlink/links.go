package accountlink

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Connect links.
//
// An agency sends a client a connect link ({base}/connect/l/{token}) so that the client connects
// a social account to one of the agency's workspaces without a Herald login. The link names the
// agency and the workspace before any consent, and offers its networks; the chosen network's
// consent runs through the same flow as a signed-in user's (Authorize's consent URL, Complete,
// Pick), and the account lands in the link's workspace.
//
// Such a flow is bound to the browser that opened the link, not to a Herald session: the link's
// page sets a random cookie (LinkCookie) in the browser, and the connect state keeps the cookie's
// SHA-256 (ConnectState.Browser). The callback and the picker act only for the browser that
// presents that cookie (BrowserHolder); a callback or picker URL forwarded to another browser is
// refused (ErrOtherBrowser) and leaves the state as it was. The link itself says which workspace
// the account goes to, so whoever opens it can only add an account to that workspace: forwarding
// it attaches nothing to anyone else.
//
// A link works until it expires (1 to 168 hours after its creation) or is revoked. Every use is
// recorded on the link (ConnectLink.Uses, Log): each consent started, account connected, and
// attempt refused. Consents started through one link are limited to LinkStartsPerHour in any
// hour, so that a leaked link cannot be used to hammer the networks' consent pages or fill a
// workspace with accounts.

// LinkPath is the path of a link's page, followed by the link's secret.
const LinkPath = "/connect/l/"

// LinkCookie is the cookie the link's page sets: the browser the link's flows are bound to.
const LinkCookie = "herald_link_browser"

// LinkStartsPerHour bounds the consents started through one link in any hour.
const LinkStartsPerHour = 20

// Bounds of a link's lifetime, in hours.
const (
	LinkDefaultHours = 72
	LinkMaxHours     = 168
)

// The events a link's log records.
const (
	LinkStarted   = "started"
	LinkConnected = "connected"
	LinkRefused   = "refused"
)

// Errors of connect links. Each says what happened in words the client in the browser can act on.
var (
	// ErrLinkNotFound means the link is malformed or no link has this secret.
	ErrLinkNotFound = errors.New("connect: the link is not valid")
	// ErrLinkExpired means the link is past its expiry.
	ErrLinkExpired = errors.New("connect: the link has expired")
	// ErrLinkRevoked means the link was revoked, or its workspace deleted.
	ErrLinkRevoked = errors.New("connect: the link was revoked")
	// ErrLinkBusy means the link started LinkStartsPerHour consents in the last hour.
	ErrLinkBusy = errors.New("connect: the link was used too often in the last hour")
	// ErrNotOffered means the link does not offer the network asked for.
	ErrNotOffered = errors.New("connect: the link does not offer this network")
	// ErrNoBrowser means the browser did not present the link page's cookie: it did not open the
	// link's page, or refuses cookies.
	ErrNoBrowser = errors.New("connect: the browser did not open the link's page")
	// ErrOtherBrowser means a link's flow was continued in another browser than the one that
	// opened the link: a forwarded callback or picker connects nothing.
	ErrOtherBrowser = errors.New("connect: the connection was started in another browser")
)

// browserPrefix marks a holder that is a browser (BrowserHolder), never a user id.
const browserPrefix = "browser:"

// BrowserHolder is who holds a link's flow in a browser presenting the link page's cookie: what
// Authorize, Complete, Choices and Pick take in place of a signed-in user's id for such a flow.
// "" (no cookie) holds nothing.
func BrowserHolder(cookie string) string {
	if cookie == "" {
		return ""
	}
	return browserPrefix + browserHash(cookie)
}

func browserHash(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:])
}

// NewBrowserCookie returns a new value for LinkCookie.
func NewBrowserCookie() string { return randomToken() }

// LinkCSRF is the token the link page's form carries for the browser presenting cookie: only a
// page served to that browser knows it.
func LinkCSRF(cookie string) string {
	sum := sha256.Sum256([]byte("herald link form\x00" + cookie))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// linkHash is the SHA-256 of a link's secret.
func linkHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// holderOf is who may continue the state's flow: the browser of a link's flow, else the user who
// started it.
func holderOf(st *persistence.ConnectState) string {
	if st.LinkID != "" {
		return browserPrefix + st.Browser
	}
	return st.UserID
}

// notHeld is nil when who holds the state's flow.
func notHeld(st *persistence.ConnectState, who string) error {
	switch {
	case who != "" && holderOf(st) == who:
		return nil
	case st.LinkID != "":
		return ErrOtherBrowser
	}
	return ErrOtherUser
}

// NewLink is a connect link to create.
type NewLink struct {
	UserID string
	// WorkspaceID is the workspace the accounts land in ("" for main).
	WorkspaceID string
	// Platforms are the networks offered (none: every browser network this server connects).
	Platforms []platforms.Platform
	Note      string
	Hours     int
}

// CreateLink stores a new link and returns it with its URL, the only place its secret appears.
func (s *Service) CreateLink(ctx context.Context, in NewLink, now time.Time) (*persistence.ConnectLink, string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, "", err
	}
	token := randomToken()
	l := &persistence.ConnectLink{
		ID: id.String(), UserID: in.UserID, WorkspaceID: in.WorkspaceID, Hash: linkHash(token), Prefix: token[:8],
		Note: in.Note, CreatedAt: now.UTC(), ExpiresAt: now.Add(time.Duration(in.Hours) * time.Hour).UTC(),
	}
	for _, p := range in.Platforms {
		l.Platforms = append(l.Platforms, string(p))
	}
	if err := s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutConnectLink(l) }); err != nil {
		return nil, "", fmt.Errorf("connect: store link: %w", err)
	}
	return l, s.LinkURL(token), nil
}

// LinkURL is the URL of a link's page.
func (s *Service) LinkURL(token string) string {
	return strings.TrimRight(s.cfg.BaseURL(), "/") + LinkPath + token
}

// Links lists a workspace's links (scope: persistence.Scope), oldest first.
func (s *Service) Links(scope string) ([]*persistence.ConnectLink, error) {
	var out []*persistence.ConnectLink
	err := s.cfg.Store.View(func(tx *persistence.Tx) (err error) {
		out, err = tx.ConnectLinks(scope)
		return err
	})
	return out, err
}

// RevokeLink revokes the link id of the workspace scope; persistence.ErrNotFound when the
// workspace has no such link. Revoking a revoked link changes nothing.
func (s *Service) RevokeLink(ctx context.Context, scope, id string, now time.Time) error {
	return s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		l, err := tx.ConnectLink(id)
		if err != nil {
			return err
		}
		if l.Scope() != scope {
			return persistence.ErrNotFound
		}
		if l.RevokedAt != nil {
			return nil
		}
		at := now.UTC()
		l.RevokedAt = &at
		return tx.PutConnectLink(l)
	})
}

// LinkView is what a link's page shows before any consent.
type LinkView struct {
	Link *persistence.ConnectLink
	// Agency is the name of the link's user (their name, else their e-mail).
	Agency    string
	Workspace string
	// Offered are the networks the client may choose.
	Offered []platforms.Platform
}

// usable is nil when the link at now can start a consent.
func linkUsable(l *persistence.ConnectLink, now time.Time) error {
	switch {
	case l.RevokedAt != nil:
		return ErrLinkRevoked
	case !now.Before(l.ExpiresAt):
		return ErrLinkExpired
	}
	return nil
}

// OpenLink returns what the page of the link of this secret shows; ErrLinkNotFound,
// ErrLinkExpired or ErrLinkRevoked when it cannot be used.
func (s *Service) OpenLink(token string, now time.Time) (*LinkView, error) {
	var v *LinkView
	err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		l, err := tx.ConnectLinkByHash(linkHash(token))
		if errors.Is(err, persistence.ErrNotFound) {
			return ErrLinkNotFound
		}
		if err != nil {
			return err
		}
		if err := linkUsable(l, now); err != nil {
			return err
		}
		u, err := tx.User(l.UserID)
		if errors.Is(err, persistence.ErrNotFound) {
			return ErrLinkRevoked
		}
		if err != nil {
			return err
		}
		w, err := tx.Workspace(l.UserID, persistence.WorkspaceOf(l.WorkspaceID))
		if errors.Is(err, persistence.ErrNotFound) {
			return ErrLinkRevoked
		}
		if err != nil {
			return err
		}
		agency := u.Email
		if u.Name != nil && strings.TrimSpace(*u.Name) != "" {
			agency = strings.TrimSpace(*u.Name)
		}
		v = &LinkView{Link: l, Agency: agency, Workspace: w.Name, Offered: s.offered(l)}
		return nil
	})
	return v, err
}

// Offerable lists the networks a link can offer on this server: those whose consent runs in
// the browser and that have an OAuth client here (X among them when the server has an X app).
func (s *Service) Offerable() []platforms.Platform {
	var out []platforms.Platform
	for _, p := range Consent {
		if _, err := s.connector(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// offered lists the networks a link offers now: its own, else every one this server connects in
// the browser; a network whose OAuth client was removed since is left out.
func (s *Service) offered(l *persistence.ConnectLink) []platforms.Platform {
	all := s.Offerable()
	if len(l.Platforms) == 0 {
		return all
	}
	var out []platforms.Platform
	for _, p := range all {
		if slices.Contains(l.Platforms, string(p)) {
			out = append(out, p)
		}
	}
	return out
}

// LinkStart is a consent started through a link.
type LinkStart struct {
	// ConsentURL is the network's consent page to send the browser to.
	ConsentURL string
	// RetryAt, when the link is busy (ErrLinkBusy), is when it can start a consent again.
	RetryAt time.Time
}

// BeginLink starts the consent of network p through the link of this secret, for the browser
// presenting cookie, at now: it records a connect state bound to that browser, whose account
// lands in the link's workspace, and returns the network's consent page. The start is counted on
// the link, within LinkStartsPerHour; a start refused for that is recorded too. Nothing is
// started for a link that cannot be used, a network it does not offer, or a browser without the
// cookie.
func (s *Service) BeginLink(ctx context.Context, token, cookie string, p platforms.Platform, now time.Time) (*LinkStart, error) {
	if cookie == "" {
		return nil, ErrNoBrowser
	}
	c, err := s.connector(p)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	st := &persistence.ConnectState{
		ID: id.String(), Platform: string(p), Browser: browserHash(cookie),
		CreatedAt: now.UTC(), ExpiresAt: now.Add(StateTTL).UTC(),
	}
	if c.UsesPKCE() {
		st.Verifier, _ = newVerifier()
	}
	var out LinkStart
	var outcome error
	err = s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		out, outcome = LinkStart{}, nil // the function may run twice
		l, err := tx.ConnectLinkByHash(linkHash(token))
		if errors.Is(err, persistence.ErrNotFound) {
			outcome = ErrLinkNotFound
			return nil
		}
		if err != nil {
			return err
		}
		if outcome = linkUsable(l, now); outcome != nil {
			return nil
		}
		if !slices.Contains(s.offered(l), p) {
			outcome = ErrNotOffered
			return nil
		}
		if _, err := tx.Workspace(l.UserID, persistence.WorkspaceOf(l.WorkspaceID)); err != nil {
			if errors.Is(err, persistence.ErrNotFound) {
				outcome = ErrLinkRevoked
				return nil
			}
			return err
		}
		// The starts of the last hour, oldest first.
		keep := l.Starts[:0:0]
		for _, at := range l.Starts {
			if at.After(now.Add(-time.Hour)) {
				keep = append(keep, at)
			}
		}
		l.Starts = keep
		if len(l.Starts) >= LinkStartsPerHour {
			out.RetryAt = l.Starts[len(l.Starts)-LinkStartsPerHour].Add(time.Hour)
			outcome = ErrLinkBusy
			l.Record(persistence.ConnectLinkUse{At: now.UTC(), Event: LinkRefused, Platform: string(p), Detail: "too many consents started in the last hour"})
			return tx.PutConnectLink(l)
		}
		l.Starts = append(l.Starts, now.UTC())
		l.Record(persistence.ConnectLinkUse{At: now.UTC(), Event: LinkStarted, Platform: string(p)})
		if err := tx.PutConnectLink(l); err != nil {
			return err
		}
		st.UserID, st.WorkspaceID, st.LinkID = l.UserID, l.WorkspaceID, l.ID
		if _, err := tx.PurgeConnectStates(now, purgeBatch); err != nil {
			return err
		}
		return tx.PutConnectState(st)
	})
	if err != nil {
		return nil, fmt.Errorf("connect: start link: %w", err)
	}
	if outcome != nil {
		return &out, outcome
	}
	challenge := ""
	if st.Verifier != "" {
		challenge = challengeOf(st.Verifier)
	}
	out.ConsentURL = c.AuthorizeURL(s.signer.sign(id, st.ExpiresAt), s.CallbackURL(), challenge)
	return &out, nil
}

// LinkFlow reports whether the state token belongs to a flow started from a connect link (whose
// holder is the browser, BrowserHolder, not a signed-in user). A token that is not valid is not.
func (s *Service) LinkFlow(token string, now time.Time) bool {
	id, _, err := s.signer.verify(token)
	if err != nil {
		return false
	}
	var st *persistence.ConnectState
	if err := s.cfg.Store.View(func(tx *persistence.Tx) (err error) {
		st, err = tx.ConnectState(id.String())
		return err
	}); err != nil {
		return false
	}
	return st.LinkID != ""
}

// recordLink notes a use on the link of a state's flow (none for a signed-in user's flow). A
// failure to record is logged: the connection itself stands.
func (s *Service) recordLink(ctx context.Context, st *persistence.ConnectState, u persistence.ConnectLinkUse) {
	if st == nil || st.LinkID == "" {
		return
	}
	err := s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		l, err := tx.ConnectLink(st.LinkID)
		if err != nil {
			return err
		}
		l.Record(u)
		return tx.PutConnectLink(l)
	})
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		s.cfg.Log.Warn("connect: link use not recorded", "link_id", st.LinkID, "event", u.Event, "error", err)
	}
}

// linkOutcome records how a link's flow ended: an account connected (or several, through the
// picker), or why nothing was.
func (s *Service) linkOutcome(ctx context.Context, st *persistence.ConnectState, p platforms.Platform, res []*Result, err error, now time.Time) {
	if st == nil || st.LinkID == "" {
		return
	}
	u := persistence.ConnectLinkUse{At: now.UTC(), Event: LinkConnected, Platform: string(p)}
	switch {
	case err != nil:
		u.Event, u.Detail = LinkRefused, linkDetail(err)
	case len(res) == 0:
		return // the picker is shown: nothing connected yet
	}
	s.recordLink(ctx, st, u)
}

// linkDetail is the safe reason a link's flow connected nothing, as the link's log keeps it.
func linkDetail(err error) string {
	var ne *NetworkError
	var xe *ExchangeError
	switch {
	case errors.Is(err, ErrWorkspaceFull):
		return "the workspace holds as many accounts as its limit allows"
	case errors.Is(err, ErrNoWorkspace):
		return "the workspace no longer exists"
	case errors.Is(err, ErrDenied):
		return "consent was refused on the network"
	case errors.As(err, &ne):
		return "the network answered " + ne.Code
	case errors.As(err, &xe):
		return "the network did not complete the authorization"
	case errors.Is(err, ErrNoIdentity):
		return "the network did not name the account"
	case errors.Is(err, ErrNoCode):
		return "the network sent no authorization code"
	}
	return "the account could not be connected"
}

// ConsentOrigins are the origins (scheme://host) of the consent pages of the networks ps: where
// the link page's form may send the browser (its Content-Security-Policy's form-action).
func (s *Service) ConsentOrigins(ps []platforms.Platform) []string {
	var out []string
	for _, p := range ps {
		c, err := s.connector(p)
		if err != nil {
			continue
		}
		u, err := url.Parse(c.AuthorizeURL("state", s.CallbackURL(), ""))
		if err != nil || u.Scheme == "" || u.Host == "" {
			continue
		}
		if o := u.Scheme + "://" + u.Host; !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}
