// Package instagram publishes to Instagram professional accounts through the Instagram API with
// Instagram Login (graph.instagram.com).
//
// Instagram fetches media itself: every Media must carry a public URL (Media.URL), which Instagram
// downloads when a container is created. Publishing reads the account's publishing quota
// (GET /{ig-user-id}/content_publishing_limit; a used-up quota is RateLimited before anything is
// created), creates a container with POST /{ig-user-id}/media (image_url for a photo,
// media_type=REELS with video_url for a video, is_carousel_item children then a CAROUSEL parent for
// several), polls GET /{container-id}?fields=status_code,status until FINISHED, and publishes it with
// POST /{ig-user-id}/media_publish. Only that last call creates the post.
//
// Connecting runs Business Login for Instagram: the consent page www.instagram.com/oauth/authorize,
// POST api.instagram.com/oauth/access_token for a one-hour token, then
// GET graph.instagram.com/access_token?grant_type=ig_exchange_token for a 60-day token, and
// GET /me for the account's id and username. There is no refresh token: Refresh renews the 60-day
// token itself (GET /refresh_access_token?grant_type=ig_refresh_token), which Instagram allows once
// the token is 24 hours old and before it expires. Instagram Login has no revoke endpoint, so
// Revoke does nothing.
//
// An Instagram professional account linked to a Facebook Page can also be connected through a
// Facebook consent (platforms/facebook ExchangeGrants: the Instagram API with Facebook Login).
// Its credentials are the Page's token, the Instagram user id, the username and
// Extra["login"]="facebook"; the same calls then go to the Facebook Graph host
// (graph.facebook.com, Config.GraphURL) instead of graph.instagram.com. A Page token does not
// expire and is not Instagram's to renew: Refresh asks to reconnect when it stops working, as the
// Facebook adapter does.
package instagram

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/graph"
)

// Version is the Graph API version the adapter calls.
const Version = "v25.0"

// Production hosts. The code exchange goes to DefaultTokenURL in production and to BaseURL when a
// BaseURL is configured (the simulator serves both on one host). DefaultGraphURL serves the
// accounts connected through Facebook Login.
const (
	DefaultBaseURL  = "https://graph.instagram.com"
	DefaultAuthURL  = "https://www.instagram.com"
	DefaultTokenURL = "https://api.instagram.com"
	DefaultGraphURL = "https://graph.facebook.com"
)

// Login is the Credentials.Extra key naming how the account was connected: LoginFacebook for an
// account granted by a Facebook consent (the Page's token, the Facebook Graph host); absent for
// Instagram Login.
const (
	Login         = "login"
	LoginFacebook = "facebook"
)

// Content rules.
const (
	MaxCaptionRunes = 2200
	MaxHashtags     = 30
	MaxMentions     = 20
	MaxCarousel     = 10
)

// Scope is the permissions Herald asks for: publishing, and commenting on the account's own posts
// (a first comment) and reading those comments back.
const Scope = "instagram_business_basic,instagram_business_content_publish,instagram_business_manage_comments"

// processingLimit bounds how long a container may stay IN_PROGRESS.
const processingLimit = 10 * time.Minute

// defaultPoll is the polling interval when the configuration sets none.
const defaultPoll = 2 * time.Second

// Adapter publishes to Instagram.
type Adapter struct {
	cfg      platforms.Config
	tokenURL string
	client   *graph.Client
}

var (
	_ platforms.Adapter   = (*Adapter)(nil)
	_ platforms.Connector = (*Adapter)(nil)
)

// New returns an adapter; empty base URLs default to Instagram's production hosts.
func New(cfg platforms.Config) *Adapter {
	tokenURL := DefaultTokenURL
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	} else {
		tokenURL = cfg.BaseURL
	}
	if cfg.AuthURL == "" {
		cfg.AuthURL = DefaultAuthURL
	}
	if cfg.GraphURL == "" {
		cfg.GraphURL = DefaultGraphURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cfg.AuthURL = strings.TrimRight(cfg.AuthURL, "/")
	cfg.GraphURL = strings.TrimRight(cfg.GraphURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = graph.DefaultHTTPClient()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = defaultPoll
	}
	return &Adapter{cfg: cfg, tokenURL: strings.TrimRight(tokenURL, "/"), client: &graph.Client{Platform: platforms.Instagram, HTTP: cfg.HTTPClient}}
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.Instagram }

// api is the URL of an API path for the account: on the Facebook Graph host for an account
// connected through Facebook Login, else on Instagram's.
func (a *Adapter) api(c platforms.Credentials, path string) string {
	if ViaFacebook(c) {
		return a.cfg.GraphURL + "/" + Version + path
	}
	return a.cfg.BaseURL + "/" + Version + path
}

// ViaFacebook reports whether the credentials are an Instagram account's connected through a
// Facebook consent (a Page's token).
func ViaFacebook(c platforms.Credentials) bool { return c.Extra[Login] == LoginFacebook }

func invalid(format string, args ...any) error {
	return platforms.Errorf(platforms.Instagram, platforms.Invalid, 0, format, args...)
}

func isVideo(t string) bool { return t == "video/mp4" || t == "video/quicktime" }

// countTags counts the hashtags (#) or mentions (@) in a caption: a sigil not preceded by a letter,
// digit or underscore and followed by one (or by a dot, for mentions).
func countTags(text string, sigil rune) int {
	n, prev := 0, ' '
	runes := []rune(text)
	for i, r := range runes {
		if r == sigil && !isWordRune(prev) && i+1 < len(runes) {
			if next := runes[i+1]; isWordRune(next) || (sigil == '@' && next == '.') {
				n++
			}
		}
		prev = r
	}
	return n
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// Images is what Instagram takes as a photo: a JPEG (container image_url, "public JPEG"),
// upright and in RGB. Herald re-encodes any other photo as such a JPEG when it publishes
// (platforms.ConformImages; docs/media.md, "Conversions"): a PNG, a JPEG with an EXIF
// orientation, a CMYK JPEG.
var Images = platforms.ImageRule{Types: []string{"image/jpeg"}, Upright: true, RGB: true}

// Validate checks Instagram's rules: media is required (one photo, one MP4/MOV video published as
// a reel, or a carousel of 2 to 10 photos and videos, in the order given); a photo is a JPEG, or a PNG that Herald converts (one whose
// Media.Conform is set); the caption is at most 2,200 characters with at most 30 hashtags and 20
// @-mentions.
func (a *Adapter) Validate(p platforms.Post) error {
	if n := utf8.RuneCountInString(p.Text); n > MaxCaptionRunes {
		return invalid("caption is %d characters; Instagram allows %d", n, MaxCaptionRunes)
	}
	if n := countTags(p.Text, '#'); n > MaxHashtags {
		return invalid("caption has %d hashtags; Instagram allows %d", n, MaxHashtags)
	}
	if n := countTags(p.Text, '@'); n > MaxMentions {
		return invalid("caption has %d mentions; Instagram allows %d", n, MaxMentions)
	}
	if len(p.Media) == 0 {
		return invalid("an Instagram post needs a photo or a video")
	}
	if err := platforms.CheckMediaShape(platforms.Instagram, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	for i, m := range p.Media {
		if isVideo(m.ContentType) || Images.Takes(m.ContentType) || (m.ContentType == "image/png" && Images.Convertible(m)) {
			continue
		}
		return invalid("media %d has type %q; Instagram takes JPEG photos and MP4 or MOV videos", i+1, m.ContentType)
	}
	return nil
}

// Publish creates the post from containers. Photos Instagram does not take as they are are
// converted first (Images), before any call to Instagram.
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	p, err := platforms.ConformImages(ctx, platforms.Instagram, p, Images)
	if err != nil {
		return platforms.Result{}, err
	}
	for i, m := range p.Media {
		if m.URL == "" {
			return platforms.Result{}, platforms.Errorf(platforms.Instagram, platforms.Permanent, 0, "media %d has no public URL; Instagram fetches media by URL", i+1)
		}
	}
	user := url.PathEscape(c.UserID)
	var quota graph.Quota
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api(c, "/"+user+"/content_publishing_limit"), Token: c.AccessToken, Params: url.Values{"fields": {"quota_usage,config"}}}, &quota)
	if err != nil {
		return platforms.Result{}, err
	}
	rate, err := quota.Check(platforms.Instagram, resp)
	if err != nil {
		return platforms.Result{}, err
	}
	if !rate.Known {
		rate = resp.Rate
	}

	o, _ := p.Options.(*platforms.InstagramOptions)
	if o == nil {
		o = &platforms.InstagramOptions{}
	}
	var container string
	if len(p.Media) == 1 {
		form := mediaParams(p.Media[0], false, o)
		if p.Text != "" && o.Type != "story" {
			form.Set("caption", p.Text)
		}
		setCollaborators(form, o)
		if container, err = a.create(ctx, c, form); err != nil {
			return platforms.Result{}, err
		}
	} else {
		children := make([]string, 0, len(p.Media))
		for _, m := range p.Media {
			id, err := a.create(ctx, c, mediaParams(m, true, o))
			if err != nil {
				return platforms.Result{}, err
			}
			children = append(children, id)
		}
		for _, id := range children {
			if err := a.wait(ctx, c, id); err != nil {
				return platforms.Result{}, err
			}
		}
		form := url.Values{"media_type": {"CAROUSEL"}, "children": {strings.Join(children, ",")}}
		if p.Text != "" {
			form.Set("caption", p.Text)
		}
		setCollaborators(form, o)
		if container, err = a.create(ctx, c, form); err != nil {
			return platforms.Result{}, err
		}
	}
	if err := a.wait(ctx, c, container); err != nil {
		return platforms.Result{}, err
	}

	var out struct {
		ID graph.ID `json:"id"`
	}
	resp, err = a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: a.api(c, "/"+user+"/media_publish"), Token: c.AccessToken, Params: url.Values{"creation_id": {container}}, Create: true}, &out)
	if err != nil {
		return platforms.Result{}, err
	}
	if out.ID == "" {
		return platforms.Result{}, graph.Garbage(platforms.Instagram, resp.Status, true, "media_publish answered no id")
	}
	if rate.Known && rate.Limit > 0 && rate.Remaining > 0 {
		rate.Remaining--
	}
	return platforms.Result{Publication: platforms.Publication{ID: string(out.ID), URL: a.permalink(ctx, c, string(out.ID))}, Rate: rate}, nil
}

// mediaParams are the container parameters of one photo or video, as the options make it a feed
// post, a reel or a story (default: a video is a reel, a photo a feed post). A story takes no
// caption (Instagram shows none).
func mediaParams(m platforms.Media, carouselItem bool, o *platforms.InstagramOptions) url.Values {
	form := url.Values{}
	switch {
	case o.Type == "story" && !carouselItem:
		form.Set("media_type", "STORIES")
		if m.IsVideo() {
			form.Set("video_url", m.URL)
		} else {
			form.Set("image_url", m.URL)
		}
	case m.IsVideo() && carouselItem:
		form.Set("media_type", "VIDEO")
		form.Set("video_url", m.URL)
	case m.IsVideo():
		form.Set("media_type", "REELS")
		form.Set("video_url", m.URL)
		share := o.ShareToFeed == nil || *o.ShareToFeed
		form.Set("share_to_feed", strconv.FormatBool(share))
	default:
		form.Set("image_url", m.URL)
		if m.AltText != "" {
			form.Set("alt_text", m.AltText)
		}
	}
	if carouselItem {
		form.Set("is_carousel_item", "true")
	}
	return form
}

// setCollaborators invites the options' collaborators (feed posts and reels; a story takes none).
func setCollaborators(form url.Values, o *platforms.InstagramOptions) {
	if len(o.Collaborators) == 0 || o.Type == "story" {
		return
	}
	names := make([]string, len(o.Collaborators))
	for i, n := range o.Collaborators {
		names[i] = strings.TrimPrefix(n, "@")
	}
	b, _ := json.Marshal(names)
	form.Set("collaborators", string(b))
}

// MediaLimits are Instagram's (platforms.MediaLimiter): a photo or a video, or 2 to 10 of them,
// photos and videos mixed (a carousel); other image types are converted to JPEG.
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{Required: true, MaxItems: MaxCarousel, MinItems: 2, MaxImages: MaxCarousel, MaxVideos: MaxCarousel, Mixed: true,
		Types: []string{"image/jpeg", "image/png", "video/mp4", "video/quicktime"}}
}

// create makes a container and returns its id.
func (a *Adapter) create(ctx context.Context, c platforms.Credentials, form url.Values) (string, error) {
	return a.client.CreateContainer(ctx, a.api(c, "/"+url.PathEscape(c.UserID)+"/media"), c.AccessToken, form)
}

func (a *Adapter) wait(ctx context.Context, c platforms.Credentials, id string) error {
	return a.client.Wait(ctx, graph.Container{StatusField: "status_code", MessageField: "status"}, a.api(c, "/"+url.PathEscape(id)), c.AccessToken, a.cfg.PollInterval, processingLimit)
}

// permalink reads the post's link; a failure only leaves the URL empty.
func (a *Adapter) permalink(ctx context.Context, c platforms.Credentials, id string) string {
	return a.client.Permalink(ctx, a.api(c, "/"+url.PathEscape(id)), c.AccessToken)
}

// Refresh renews the 60-day token itself; the account keeps its id and handle. A token that can no
// longer be refreshed is a Permanent error asking to reconnect. An account connected through
// Facebook holds a Page token, which does not expire (Herald never refreshes it ahead) and which
// nothing but a new Facebook login replaces: one that stopped working is a Permanent error asking
// to reconnect, and Instagram is not called.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	if ViaFacebook(c) {
		return c, platforms.Errorf(platforms.Instagram, platforms.Permanent, 0, "an Instagram account connected through Facebook uses its Page's token, which cannot be refreshed; reconnect the account")
	}
	return a.client.RefreshLongLived(ctx, a.cfg.BaseURL, "ig_refresh_token", c)
}

// Revoke does nothing: Instagram Login offers no token revocation (the user removes the app in
// Instagram's settings), and the Page token of an account connected through Facebook is the
// Page's too (its consent is withdrawn in Facebook's settings).
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error { return nil }

// Lookup looks through GET /{user-id}/media for a post with exactly this caption published at
// or after since (up to three pages of 100).
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	return a.client.FindPost(ctx, a.api(c, "/"+url.PathEscape(c.UserID)+"/media"), c.AccessToken, "caption", p.Text, since)
}

// UsesPKCE reports false: Instagram Login authenticates with the app secret.
func (a *Adapter) UsesPKCE() bool { return false }

// AuthorizeURL returns Instagram's Business Login consent page.
func (a *Adapter) AuthorizeURL(state, redirectURI, codeChallenge string) string {
	q := url.Values{
		"client_id":     {a.cfg.ClientID},
		"redirect_uri":  {redirectURI},
		"response_type": {"code"},
		"scope":         {Scope},
		"state":         {state},
	}
	return a.cfg.AuthURL + "/oauth/authorize?" + q.Encode()
}

// Exchange trades the code for a one-hour token, exchanges that for a 60-day token and reads the
// account's id and username.
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (platforms.Credentials, error) {
	var short struct {
		graph.Token
		Data []graph.Token `json:"data"`
	}
	_, err := a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: a.tokenURL + "/oauth/access_token", Params: url.Values{
		"client_id": {a.cfg.ClientID}, "client_secret": {a.cfg.ClientSecret}, "grant_type": {"authorization_code"}, "redirect_uri": {redirectURI}, "code": {code},
	}}, &short)
	if err != nil {
		return platforms.Credentials{}, err
	}
	st := short.Token
	if len(short.Data) > 0 {
		st = short.Data[0]
	}
	if st.AccessToken == "" {
		return platforms.Credentials{}, graph.Garbage(platforms.Instagram, 200, false, "the code exchange answered no access token")
	}
	var long graph.Token
	if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.cfg.BaseURL + "/access_token", Params: url.Values{
		"grant_type": {"ig_exchange_token"}, "client_secret": {a.cfg.ClientSecret}, "access_token": {st.AccessToken},
	}}, &long); err != nil {
		return platforms.Credentials{}, err
	}
	if long.AccessToken == "" {
		return platforms.Credentials{}, graph.Garbage(platforms.Instagram, 200, false, "the token exchange answered no access token")
	}
	var me struct {
		ID       graph.ID `json:"id"`
		UserID   graph.ID `json:"user_id"`
		Username string   `json:"username"`
	}
	if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.cfg.BaseURL + "/" + Version + "/me", Token: long.AccessToken, Params: url.Values{"fields": {"user_id,username"}}}, &me); err != nil {
		return platforms.Credentials{}, err
	}
	id := string(me.UserID)
	if id == "" {
		id = string(st.UserID)
	}
	if id == "" {
		id = string(me.ID)
	}
	if id == "" {
		return platforms.Credentials{}, graph.Garbage(platforms.Instagram, 200, false, "the account has no id")
	}
	return platforms.Credentials{AccessToken: long.AccessToken, ExpiresAt: long.Expiry(time.Now()), UserID: id, Handle: me.Username}, nil
}
