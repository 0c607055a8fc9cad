// Package linkedin is Herald's adapter for LinkedIn member posts through the versioned REST API:
// POST /rest/posts (201 with the post's URN in x-restli-id), images through the Images API
// (initializeUpload, then PUT the bytes; 2 to 20 make a multiImage post), PDF documents through
// the Documents API (document.go), videos through the Videos API (initializeUpload, PUT each
// part and collect its ETag, finalizeUpload, then poll until AVAILABLE), OAuth 2.0 with the
// authorization code flow at www.linkedin.com, and the member's identity from the OpenID Connect
// /v2/userinfo. Every REST call sends LinkedIn-Version and X-Restli-Protocol-Version: 2.0.0. See
// networks.md §3.
//
// The commentary is written in LinkedIn's "little text" format: its reserved characters are
// backslash-escaped, otherwise LinkedIn may silently truncate the text.
//
// A post without media shares its link (options.link, else the text's first link) as an article
// (content.article: source, title, description and a thumbnail image), read from the page by
// Herald: LinkedIn shows what the post sends and reads no page itself (linkcard.go).
package linkedin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Production hosts.
const (
	DefaultBaseURL = "https://api.linkedin.com"
	DefaultAuthURL = "https://www.linkedin.com"
)

// Scopes asks for the member's identity (OpenID Connect), the right to post as the member, and
// the right to list and post as the organisations the member administers (the Community
// Management API's w_organization_social and r_organization_admin).
const Scopes = "openid profile email w_member_social w_organization_social r_organization_admin"

// Content limits (networks.md §3.2; community-reported where LinkedIn does not publish them).
const (
	MaxCommentary = 3000
	maxImages     = 20
	maxVideoBytes = 500 << 20
)

// Adapter publishes to LinkedIn. It is stateless and safe for concurrent use.
type Adapter struct {
	base, auth             string
	clientID, clientSecret string
	hc                     *http.Client
	poll                   time.Duration
	cards                  platforms.CardReader

	// Version pins the LinkedIn-Version header (YYYYMM). Empty means the month two months before
	// the current one: LinkedIn serves each monthly version for about a year, so this never sends
	// a version that is not released yet nor one that was retired, without a yearly code change.
	Version string
}

var (
	_ platforms.Adapter   = (*Adapter)(nil)
	_ platforms.Connector = (*Adapter)(nil)
)

// New returns an adapter for cfg. Empty base URLs mean LinkedIn's production hosts (BaseURL is the
// API host, AuthURL the host of the consent page and the token endpoint); a nil HTTP client means
// platforms.DefaultHTTPClient (bounded connecting and waiting for an answer; the caller's context
// bounds the whole call).
func New(cfg platforms.Config) *Adapter {
	a := &Adapter{
		base: strings.TrimRight(cfg.BaseURL, "/"), auth: strings.TrimRight(cfg.AuthURL, "/"),
		clientID: cfg.ClientID, clientSecret: cfg.ClientSecret, hc: cfg.HTTPClient, poll: cfg.PollInterval,
		cards: cfg.Cards,
	}
	if a.base == "" {
		a.base = DefaultBaseURL
	}
	if a.auth == "" {
		a.auth = DefaultAuthURL
	}
	if a.hc == nil {
		a.hc = platforms.DefaultHTTPClient()
	}
	return a
}

// version is the LinkedIn-Version header to send.
func (a *Adapter) version() string {
	if a.Version != "" {
		return a.Version
	}
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month()-2, 1, 0, 0, 0, 0, time.UTC).Format("200601")
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.LinkedIn }

func invalid(format string, args ...any) *platforms.Error {
	return platforms.Errorf(platforms.LinkedIn, platforms.Invalid, 0, format, args...)
}

// Validate checks LinkedIn's rules: at most 3,000 characters; text or media; one image or 2 to 20
// (JPEG, PNG, GIF: a multi-image post), one MP4 video of at most 500 MB, or one PDF document;
// never two kinds together.
func (a *Adapter) Validate(p platforms.Post) error {
	if n := utf8.RuneCountInString(p.Text); n > MaxCommentary {
		return invalid("text is %d characters; LinkedIn allows %d", n, MaxCommentary)
	}
	if strings.TrimSpace(p.Text) == "" && len(p.Media) == 0 {
		return invalid("a post needs text or media")
	}
	if err := platforms.CheckMediaShape(platforms.LinkedIn, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	for i, m := range p.Media {
		switch m.ContentType {
		case "image/jpeg", "image/png", "image/gif":
		case platforms.PDF:
			if m.Size > platforms.MaxDocumentBytes {
				return invalid("the document is %d bytes; LinkedIn allows %d", m.Size, platforms.MaxDocumentBytes)
			}
		case "video/mp4":
			if m.Size > maxVideoBytes {
				return invalid("video is %d bytes; LinkedIn allows %d", m.Size, maxVideoBytes)
			}
		default:
			ct := m.ContentType
			if ct == "" {
				ct = "of unknown type"
			}
			return invalid("media %d is %s; LinkedIn takes JPEG, PNG or GIF images, MP4 videos and PDF documents", i+1, ct)
		}
	}
	return nil
}

// littleTextReserved are the characters LinkedIn's little text format reserves.
const littleTextReserved = `\|{}@[]()<>#*_~`

// escapeCommentary backslash-escapes the reserved characters of little text.
func escapeCommentary(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(littleTextReserved, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unescapeCommentary removes little text's backslash escapes.
func unescapeCommentary(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// personURN is the member's URN.
func personURN(c platforms.Credentials) string { return "urn:li:person:" + c.UserID }

// encodeURN escapes a URN for a REST path or query (Rest.li 2.0 wants ':' as %3A).
func encodeURN(urn string) string { return url.QueryEscape(urn) }

// Publish uploads the media and creates the post as the member. LinkedIn sends no rate-limit
// headers, so the result carries no rate information.
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	if c.UserID == "" {
		return platforms.Result{}, platforms.Errorf(platforms.LinkedIn, platforms.Permanent, 0, "the account has no member id; reconnect it")
	}
	visibility := "PUBLIC"
	o, _ := p.Options.(*platforms.LinkedInOptions)
	if o != nil && o.Visibility != "" {
		visibility = o.Visibility
	}
	body := postBody{Author: authorURN(c), Commentary: escapeCommentary(p.Text), Distribution: mainFeed, LifecycleState: "PUBLISHED", Visibility: visibility}
	if len(p.Media) > 0 {
		content, err := a.content(ctx, c, p.Media, o)
		if err != nil {
			return platforms.Result{}, err
		}
		body.Content = content
	} else {
		content, err := a.article(ctx, c, p)
		if err != nil {
			return platforms.Result{}, err
		}
		if content != nil {
			body.Content = content
		}
	}
	raw, _ := json.Marshal(&body)
	r, err := platforms.Send(ctx, a.hc, platforms.LinkedIn, platforms.Call{Method: http.MethodPost, URL: a.base + "/rest/posts", Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Header: a.restHeader(), Create: true})
	if err != nil {
		return platforms.Result{}, err
	}
	if !r.OK() {
		return platforms.Result{}, classify(r, true)
	}
	urn := r.Header.Get("x-restli-id")
	if !strings.HasPrefix(urn, "urn:li:") {
		if e := errorBody(r); e != nil {
			return platforms.Result{}, e
		}
		return platforms.Result{}, platforms.Garbled(platforms.LinkedIn, r, true, errors.New("no x-restli-id header"))
	}
	return platforms.Result{Publication: publication(urn)}, nil
}

// MediaLimits are LinkedIn's (platforms.MediaLimiter): one image or 2 to 20 (multiImage), one
// video, or one PDF document.
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{MaxItems: maxImages, MinItems: 2, MaxImages: maxImages, MaxVideos: 1,
		Types:         []string{"image/jpeg", "image/png", "image/gif", "video/mp4", "video/quicktime", platforms.PDF},
		MaxVideoBytes: maxVideoBytes, VideoAlone: true,
		Documents: true, MaxDocumentBytes: platforms.MaxDocumentBytes, MaxDocumentPages: platforms.MaxDocumentPages}
}

// postBody is the body of POST /rest/posts. Its fields are in the order of their names, as
// json.Marshal wrote the map it replaces: the same bytes, without a map and its sorting per post.
type postBody struct {
	Author     string `json:"author"`
	Commentary string `json:"commentary"`
	// Content is the media or the article, when the post has one.
	Content                   any          `json:"content,omitempty"`
	Distribution              distribution `json:"distribution"`
	IsReshareDisabledByAuthor bool         `json:"isReshareDisabledByAuthor"`
	LifecycleState            string       `json:"lifecycleState"`
	Visibility                string       `json:"visibility"`
}

type distribution struct {
	FeedDistribution               string   `json:"feedDistribution"`
	TargetEntities                 []string `json:"targetEntities"`
	ThirdPartyDistributionChannels []string `json:"thirdPartyDistributionChannels"`
}

// mainFeed is every post's distribution: the main feed, no targeting.
var mainFeed = distribution{FeedDistribution: "MAIN_FEED", TargetEntities: []string{}, ThirdPartyDistributionChannels: []string{}}

func publication(urn string) platforms.Publication {
	return platforms.Publication{ID: urn, URL: "https://www.linkedin.com/feed/update/" + urn + "/"}
}

// content uploads the media and returns the post's content: media (one image, one video or one
// document) or multiImage (2 to 20 images, in the order given).
func (a *Adapter) content(ctx context.Context, c platforms.Credentials, media []platforms.Media, o *platforms.LinkedInOptions) (map[string]any, error) {
	if media[0].IsDocument() {
		return a.documentContent(ctx, c, media[0], o)
	}
	if media[0].IsVideo() {
		urn, err := a.uploadVideo(ctx, c, media[0])
		if err != nil {
			return nil, err
		}
		video := map[string]any{"id": urn}
		if media[0].AltText != "" {
			video["altText"] = media[0].AltText
		}
		return map[string]any{"media": video}, nil
	}
	var images []map[string]any
	for _, m := range media {
		urn, err := a.uploadImage(ctx, c, m)
		if err != nil {
			return nil, err
		}
		images = append(images, map[string]any{"id": urn, "altText": m.AltText})
	}
	if len(images) == 1 {
		return map[string]any{"media": images[0]}, nil
	}
	return map[string]any{"multiImage": map[string]any{"images": images}}, nil
}

// AuthorizeURL is LinkedIn's consent page. LinkedIn web apps authenticate with their client
// secret, so the adapter does not use PKCE; a challenge, when given, is passed on.
func (a *Adapter) AuthorizeURL(state, redirectURI, codeChallenge string) string {
	q := url.Values{
		"response_type": {"code"}, "client_id": {a.clientID}, "redirect_uri": {redirectURI},
		"state": {state}, "scope": {Scopes},
	}
	if codeChallenge != "" {
		q.Set("code_challenge", codeChallenge)
		q.Set("code_challenge_method", "S256")
	}
	return a.auth + "/oauth/v2/authorization?" + q.Encode()
}

// UsesPKCE reports false: PKCE is for LinkedIn's native-client flow.
func (a *Adapter) UsesPKCE() bool { return false }

// tokenResponse is the token endpoint's answer.
type tokenResponse struct {
	AccessToken           string `json:"access_token"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshToken          string `json:"refresh_token"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
}

// token calls the token endpoint with a grant and applies the answer to c. Refused grants are
// Permanent: the member must connect again.
func (a *Adapter) token(ctx context.Context, c platforms.Credentials, form url.Values) (platforms.Credentials, error) {
	form.Set("client_id", a.clientID)
	form.Set("client_secret", a.clientSecret)
	r, err := platforms.Send(ctx, a.hc, platforms.LinkedIn, platforms.Call{Method: http.MethodPost, URL: a.auth + "/oauth/v2/accessToken", Body: []byte(form.Encode()), ContentType: "application/x-www-form-urlencoded"})
	if err != nil {
		return c, err
	}
	if !r.OK() {
		e := classify(r, false)
		if e.Kind == platforms.AuthExpired || (r.Status >= 400 && r.Status < 500 && r.Status != http.StatusTooManyRequests) {
			e.Kind = platforms.Permanent
			e.Message = "LinkedIn refused the grant; reconnect the account: " + e.Message
		}
		return c, e
	}
	var tok tokenResponse
	if err := json.Unmarshal(r.Body, &tok); err != nil {
		return c, platforms.Garbled(platforms.LinkedIn, r, false, err)
	}
	if tok.AccessToken == "" {
		if e := errorBody(r); e != nil {
			return c, e
		}
		return c, platforms.Garbled(platforms.LinkedIn, r, false, errors.New("no access_token in the answer"))
	}
	now := time.Now()
	c.AccessToken = tok.AccessToken
	c.ExpiresAt = time.Time{}
	if tok.ExpiresIn > 0 {
		c.ExpiresAt = now.Add(time.Duration(tok.ExpiresIn) * time.Second).UTC()
	}
	if tok.RefreshToken != "" {
		c.RefreshToken = tok.RefreshToken
		if tok.RefreshTokenExpiresIn > 0 {
			c.RefreshExpiresAt = now.Add(time.Duration(tok.RefreshTokenExpiresIn) * time.Second).UTC()
		}
	}
	return c, nil
}

// Exchange trades the code for tokens and reads the member's id and name from /v2/userinfo.
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (platforms.Credentials, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	if codeVerifier != "" {
		form.Set("code_verifier", codeVerifier)
	}
	c, err := a.token(ctx, platforms.Credentials{}, form)
	if err != nil {
		return platforms.Credentials{}, err
	}
	var me struct {
		Sub   string `json:"sub"`
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	if _, err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.base + "/v2/userinfo", Bearer: c.AccessToken}, &me); err != nil {
		return platforms.Credentials{}, err
	}
	if me.Sub == "" {
		return platforms.Credentials{}, platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "userinfo answered without sub")
	}
	c.UserID, c.Handle = me.Sub, me.Name
	if c.Handle == "" {
		c.Handle = me.Email
	}
	return c, nil
}

// Refresh uses the refresh token (issued to approved partner apps; it keeps its fixed 365-day
// lifetime). Without one the member must connect again.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	if c.RefreshToken == "" {
		return c, platforms.Errorf(platforms.LinkedIn, platforms.Permanent, 0, "LinkedIn issued no refresh token; reconnect the account")
	}
	return a.token(ctx, c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}})
}

// Revoke revokes the access token at /oauth/v2/revoke, unless the member's token is shared with
// their organisations' accounts (platforms.SharedToken): revoking it would cut them all off.
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error {
	if c.AccessToken == "" || c.Extra[platforms.SharedToken] == "true" {
		return nil
	}
	form := url.Values{"token": {c.AccessToken}, "client_id": {a.clientID}, "client_secret": {a.clientSecret}}
	_, err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.auth + "/oauth/v2/revoke", Body: []byte(form.Encode()), ContentType: "application/x-www-form-urlencoded"}, nil)
	return err
}

// lookupPageSize and lookupPages bound how far back Lookup reads: 2,000 posts, newest first. It
// stops at the first page that reaches back past the attempt, the first for a member or page
// that posts as people do; the bound is reached only by an account that published 2,000 posts
// since, and then the outcome stays unknown (platforms.ErrLookupIncomplete).
const (
	lookupPageSize = 50
	lookupPages    = 40
)

// Lookup reads the member's posts newest first with the author finder (GET
// /rest/posts?q=author&sortBy=CREATED) and returns the one with this text created at or after
// since. LinkedIn grants that finder for members only with the restricted r_member_social scope:
// a 403 answer is reported as a Permanent error wrapping platforms.ErrLookupUnsupported.
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	if c.UserID == "" {
		return platforms.Publication{}, false, platforms.Errorf(platforms.LinkedIn, platforms.Permanent, 0, "the account has no member id; reconnect it")
	}
	sinceMs := since.UnixMilli()
	escaped := escapeCommentary(p.Text)
	for page := 0; page < lookupPages; page++ {
		q := fmt.Sprintf("q=author&author=%s&sortBy=CREATED&count=%d&start=%d", encodeURN(authorURN(c)), lookupPageSize, page*lookupPageSize)
		var out struct {
			Elements []struct {
				ID         string `json:"id"`
				Commentary string `json:"commentary"`
				CreatedAt  int64  `json:"createdAt"`
			} `json:"elements"`
		}
		r, err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.base + "/rest/posts?" + q, Bearer: c.AccessToken, Header: a.restHeader("X-RestLi-Method", "FINDER")}, &out)
		if err != nil {
			var e *platforms.Error
			if r != nil && r.Status == http.StatusForbidden && errors.As(err, &e) {
				e.Err = platforms.ErrLookupUnsupported
				e.Message = "LinkedIn does not let this app read the member's posts (r_member_social): " + e.Message
			}
			return platforms.Publication{}, false, err
		}
		if out.Elements == nil {
			return platforms.Publication{}, false, platforms.Garbled(platforms.LinkedIn, r, false, errors.New("no elements in the answer"))
		}
		older := false
		for _, el := range out.Elements {
			if el.CreatedAt < sinceMs {
				older = true
				continue
			}
			if el.Commentary == escaped || unescapeCommentary(el.Commentary) == p.Text {
				return publication(el.ID), true, nil
			}
		}
		if older || len(out.Elements) < lookupPageSize {
			return platforms.Publication{}, false, nil
		}
	}
	return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.LinkedIn, lookupPages)
}
