// Package threads publishes to Threads through the Threads API (graph.threads.net, version v1.0).
//
// Threads fetches media itself: every Media must carry a public URL (Media.URL). Publishing reads
// the profile's quota (GET /{user-id}/threads_publishing_limit: 250 posts per rolling 24 hours; a
// used-up quota is RateLimited before anything is created), creates a container with
// POST /{user-id}/threads (media_type TEXT, IMAGE or VIDEO; several media become is_carousel_item
// children of a CAROUSEL parent; a text post's link card is its link_attachment, options.link or
// the text's first link, which Threads reads itself), polls GET /{container-id}?fields=status,error_message until
// FINISHED and publishes with POST /{user-id}/threads_publish. Only that last call creates the post.
//
// Connecting runs Threads OAuth: the consent page threads.com/oauth/authorize,
// POST /oauth/access_token for a one-hour token, GET /access_token?grant_type=th_exchange_token for
// a 60-day token, and GET /me for the profile's id and username. There is no refresh token: Refresh
// renews the 60-day token itself (GET /refresh_access_token?grant_type=th_refresh_token; Threads
// requires it to be 24 hours old and unexpired). Threads offers no revoke endpoint, so Revoke does
// nothing.
package threads

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/graph"
)

// Version is the Threads API version the adapter calls.
const Version = "v1.0"

// Production hosts.
const (
	DefaultBaseURL = "https://graph.threads.net"
	DefaultAuthURL = "https://threads.com"
)

// Content rules.
const (
	// MaxText is the longest post text, counted as Threads does (see Length).
	MaxText = 500
	// MaxCarousel is the most media of one post.
	MaxCarousel = 20
	// MaxLinks is the most distinct links in one post.
	MaxLinks = 5
)

// Scope is the permissions Herald asks for: publishing, and replying to the profile's own posts
// (a thread's next part, a first comment) and reading those replies back.
const Scope = "threads_basic,threads_content_publish,threads_manage_replies,threads_read_replies"

const (
	processingLimit = 10 * time.Minute
	defaultPoll     = 2 * time.Second
)

// Adapter publishes to Threads.
type Adapter struct {
	cfg    platforms.Config
	client *graph.Client
}

var (
	_ platforms.Adapter   = (*Adapter)(nil)
	_ platforms.Connector = (*Adapter)(nil)
)

// New returns an adapter; empty base URLs default to the production hosts.
func New(cfg platforms.Config) *Adapter {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.AuthURL == "" {
		cfg.AuthURL = DefaultAuthURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cfg.AuthURL = strings.TrimRight(cfg.AuthURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = graph.DefaultHTTPClient()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = defaultPoll
	}
	return &Adapter{cfg: cfg, client: &graph.Client{Platform: platforms.Threads, HTTP: cfg.HTTPClient}}
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.Threads }

func (a *Adapter) api(path string) string { return a.cfg.BaseURL + "/" + Version + path }

func invalid(format string, args ...any) error {
	return platforms.Errorf(platforms.Threads, platforms.Invalid, 0, format, args...)
}

// Length counts text as Threads does: one per character, except that emoji count as many as
// their UTF-8 bytes.
func Length(text string) int {
	n := 0
	for _, r := range text {
		if isEmoji(r) {
			n += utf8.RuneLen(r)
		} else {
			n++
		}
	}
	return n
}

// isEmoji reports whether a rune belongs to the emoji blocks (pictographs, dingbats, regional
// indicators, skin tones) or is an emoji joiner, keycap, variation selector or tag.
func isEmoji(r rune) bool {
	switch {
	case r >= 0x1F000 && r <= 0x1FAFF, r >= 0x2600 && r <= 0x27BF, r >= 0x2300 && r <= 0x23FF,
		r >= 0x2B00 && r <= 0x2BFF, r >= 0xE0020 && r <= 0xE007F:
		return true
	case r == 0x200D, r == 0xFE0F, r == 0x20E3, r == 0x00A9, r == 0x00AE, r == 0x203C, r == 0x2049, r == 0x2122, r == 0x2139:
		return true
	}
	return false
}

// Links counts the distinct links in text (http://, https:// and www. words).
func Links(text string) int {
	seen := map[string]bool{}
	for _, w := range strings.Fields(text) {
		lw := strings.ToLower(w)
		if strings.HasPrefix(lw, "http://") || strings.HasPrefix(lw, "https://") || strings.HasPrefix(lw, "www.") {
			seen[strings.TrimRight(lw, ".,;:!?)]}'\"")] = true
		}
	}
	return len(seen)
}

func isImage(t string) bool { return t == "image/jpeg" || t == "image/png" }
func isVideo(t string) bool { return t == "video/mp4" || t == "video/quicktime" }

// Validate checks Threads' rules: text up to 500 (emoji counted in UTF-8 bytes) with at most 5
// links; text or media; up to 20 JPEG/PNG photos and MP4/MOV videos (several become a carousel).
func (a *Adapter) Validate(p platforms.Post) error {
	if n := Length(p.Text); n > MaxText {
		return invalid("text is %d characters (emoji count as their UTF-8 bytes); Threads allows %d", n, MaxText)
	}
	if n := Links(p.Text); n > MaxLinks {
		return invalid("text has %d links; Threads allows %d", n, MaxLinks)
	}
	if strings.TrimSpace(p.Text) == "" && len(p.Media) == 0 {
		return invalid("a Threads post needs text or media")
	}
	if err := platforms.CheckMediaShape(platforms.Threads, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	for i, m := range p.Media {
		if !isImage(m.ContentType) && !isVideo(m.ContentType) {
			return invalid("media %d has type %q; Threads takes JPEG or PNG photos and MP4 or MOV videos", i+1, m.ContentType)
		}
	}
	return nil
}

// Publish creates the post from a container.
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	if err := mediaURLs(p); err != nil {
		return platforms.Result{}, err
	}
	var quota graph.Quota
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api("/" + url.PathEscape(c.UserID) + "/threads_publishing_limit"), Token: c.AccessToken, Params: url.Values{"fields": {"quota_usage,config"}}}, &quota)
	if err != nil {
		return platforms.Result{}, err
	}
	rate, err := quota.Check(platforms.Threads, resp)
	if err != nil {
		return platforms.Result{}, err
	}
	if !rate.Known {
		rate = resp.Rate
	}
	return a.publish(ctx, c, p, rate, func(form url.Values) {
		if o, _ := p.Options.(*platforms.ThreadsOptions); o != nil {
			switch o.ReplyControl {
			case "accounts_you_follow", "mentioned_only":
				form.Set("reply_control", o.ReplyControl)
			}
			if o.TopicTag != "" {
				form.Set("topic_tag", o.TopicTag)
			}
		}
		if len(p.Media) == 0 {
			// A text post's link card: Threads reads the page itself (link_attachment).
			if link := platforms.CardLink(p.Options, p.Text); link != "" {
				form.Set("link_attachment", link)
			}
		}
	})
}

// mediaURLs refuses a post whose media have no public URL: Threads fetches media by URL.
func mediaURLs(p platforms.Post) error {
	for i, m := range p.Media {
		if m.URL == "" {
			return platforms.Errorf(platforms.Threads, platforms.Permanent, 0, "media %d has no public URL; Threads fetches media by URL", i+1)
		}
	}
	return nil
}

// publish makes p's container (its carousel's children first, each waited for), with the
// fields set adds, waits for it and publishes it with threads_publish, the only call that
// creates the post (a 5xx or a lost answer there is Unknown). rate is the quota read before.
func (a *Adapter) publish(ctx context.Context, c platforms.Credentials, p platforms.Post, rate platforms.RateInfo, set func(url.Values)) (platforms.Result, error) {
	var form url.Values
	switch len(p.Media) {
	case 0:
		form = url.Values{"media_type": {"TEXT"}}
	case 1:
		form = mediaParams(p.Media[0], false)
	default:
		children := make([]string, 0, len(p.Media))
		for _, m := range p.Media {
			id, err := a.create(ctx, c, mediaParams(m, true))
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
		form = url.Values{"media_type": {"CAROUSEL"}, "children": {strings.Join(children, ",")}}
	}
	if p.Text != "" {
		form.Set("text", p.Text)
	}
	set(form)
	container, err := a.create(ctx, c, form)
	if err != nil {
		return platforms.Result{}, err
	}
	if err := a.wait(ctx, c, container); err != nil {
		return platforms.Result{}, err
	}
	var out struct {
		ID graph.ID `json:"id"`
	}
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: a.api("/" + url.PathEscape(c.UserID) + "/threads_publish"), Token: c.AccessToken, Params: url.Values{"creation_id": {container}}, Create: true}, &out)
	if err != nil {
		return platforms.Result{}, err
	}
	if out.ID == "" {
		return platforms.Result{}, graph.Garbage(platforms.Threads, resp.Status, true, "threads_publish answered no id")
	}
	if rate.Known && rate.Limit > 0 && rate.Remaining > 0 {
		rate.Remaining--
	}
	return platforms.Result{Publication: platforms.Publication{ID: string(out.ID), URL: a.permalink(ctx, c, string(out.ID))}, Rate: rate}, nil
}

func mediaParams(m platforms.Media, carouselItem bool) url.Values {
	form := url.Values{}
	if m.IsVideo() {
		form.Set("media_type", "VIDEO")
		form.Set("video_url", m.URL)
	} else {
		form.Set("media_type", "IMAGE")
		form.Set("image_url", m.URL)
	}
	if m.AltText != "" {
		form.Set("alt_text", m.AltText)
	}
	if carouselItem {
		form.Set("is_carousel_item", "true")
	}
	return form
}

// MediaLimits are Threads' (platforms.MediaLimiter): text alone, a photo or a video, or 2 to 20
// of them (a carousel).
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{MaxItems: MaxCarousel, MinItems: 2, MaxImages: MaxCarousel, MaxVideos: MaxCarousel, Mixed: true,
		Types: []string{"image/jpeg", "image/png", "video/mp4", "video/quicktime"}}
}

// create makes a container and returns its id.
func (a *Adapter) create(ctx context.Context, c platforms.Credentials, form url.Values) (string, error) {
	return a.client.CreateContainer(ctx, a.api("/"+url.PathEscape(c.UserID)+"/threads"), c.AccessToken, form)
}

func (a *Adapter) wait(ctx context.Context, c platforms.Credentials, id string) error {
	return a.client.Wait(ctx, graph.Container{StatusField: "status", MessageField: "error_message"}, a.api("/"+url.PathEscape(id)), c.AccessToken, a.cfg.PollInterval, processingLimit)
}

// permalink reads the post's link; a failure only leaves the URL empty.
func (a *Adapter) permalink(ctx context.Context, c platforms.Credentials, id string) string {
	return a.client.Permalink(ctx, a.api("/"+url.PathEscape(id)), c.AccessToken)
}

// Refresh renews the 60-day token itself; the account keeps its id and handle. A token that can no
// longer be refreshed is a Permanent error asking to reconnect.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	return a.client.RefreshLongLived(ctx, a.cfg.BaseURL, "th_refresh_token", c)
}

// Revoke does nothing: Threads offers no token revocation (the user removes the app in the
// Threads settings).
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error { return nil }

// Lookup looks through GET /{user-id}/threads for a post with exactly this text published at
// or after since (up to three pages of 100).
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	return a.client.FindPost(ctx, a.api("/"+url.PathEscape(c.UserID)+"/threads"), c.AccessToken, "text", p.Text, since)
}

// UsesPKCE reports false: Threads OAuth authenticates with the app secret.
func (a *Adapter) UsesPKCE() bool { return false }

// AuthorizeURL returns the Threads consent page.
func (a *Adapter) AuthorizeURL(state, redirectURI, codeChallenge string) string {
	q := url.Values{
		"client_id":     {a.cfg.ClientID},
		"redirect_uri":  {redirectURI},
		"scope":         {Scope},
		"response_type": {"code"},
		"state":         {state},
	}
	return a.cfg.AuthURL + "/oauth/authorize?" + q.Encode()
}

// Exchange trades the code for a one-hour token, exchanges it for a 60-day token and reads the
// profile's id and username.
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (platforms.Credentials, error) {
	var short graph.Token
	if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: a.cfg.BaseURL + "/oauth/access_token", Params: url.Values{
		"client_id": {a.cfg.ClientID}, "client_secret": {a.cfg.ClientSecret}, "grant_type": {"authorization_code"}, "redirect_uri": {redirectURI}, "code": {code},
	}}, &short); err != nil {
		return platforms.Credentials{}, err
	}
	if short.AccessToken == "" {
		return platforms.Credentials{}, graph.Garbage(platforms.Threads, 200, false, "the code exchange answered no access token")
	}
	var long graph.Token
	if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.cfg.BaseURL + "/access_token", Params: url.Values{
		"grant_type": {"th_exchange_token"}, "client_secret": {a.cfg.ClientSecret}, "access_token": {short.AccessToken},
	}}, &long); err != nil {
		return platforms.Credentials{}, err
	}
	if long.AccessToken == "" {
		return platforms.Credentials{}, graph.Garbage(platforms.Threads, 200, false, "the token exchange answered no access token")
	}
	var me struct {
		ID       graph.ID `json:"id"`
		Username string   `json:"username"`
	}
	if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api("/me"), Token: long.AccessToken, Params: url.Values{"fields": {"id,username"}}}, &me); err != nil {
		return platforms.Credentials{}, err
	}
	id := string(me.ID)
	if id == "" {
		id = string(short.UserID)
	}
	if id == "" {
		return platforms.Credentials{}, graph.Garbage(platforms.Threads, 200, false, "the profile has no id")
	}
	return platforms.Credentials{AccessToken: long.AccessToken, ExpiresAt: long.Expiry(time.Now()), UserID: id, Handle: me.Username}, nil
}
