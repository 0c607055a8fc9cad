// Package x is Herald's adapter for X (twitter_x), API v2: posts with POST /2/tweets, media with
// the chunked upload v2 (initialize, append, finalize, then STATUS polling while videos and GIFs
// process), OAuth 2.0 refresh and revoke at /2/oauth2/token and /2/oauth2/revoke, and lookups with
// GET /2/users/{id}/tweets. See networks.md §1.
//
// X connects in one of two ways. With Herald's own X app configured (Config.ClientID, and
// Config.ClientSecret for a confidential client), through X's consent in the browser like the
// other networks (oauth.go: the adapter is a platforms.Connector). Without one, with the tokens
// the user's own OAuth 2.0 client issued (`herald accounts add`, the dashboard's form). Either
// way the credentials carry the client in Extra["client_id"] (and Extra["client_secret"] for a
// user's own confidential client), and Refresh and Revoke authenticate with it. Identify fills in
// the account's id and username from the tokens alone.
package x

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Production hosts.
const (
	DefaultBaseURL = "https://api.x.com"
	DefaultAuthURL = "https://x.com"
)

// Media limits (networks.md §1.2).
const (
	maxImages     = 4
	maxImageBytes = 5 << 20
	maxGIFBytes   = 15 << 20
	maxVideoBytes = 512 << 20
)

// Adapter publishes to X. It is stateless and safe for concurrent use.
type Adapter struct {
	base, auth, upload     string
	clientID, clientSecret string
	hc                     *http.Client
	poll                   time.Duration
}

var _ platforms.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg. Empty base URLs mean X's production hosts (the upload host
// defaults to the API host); a nil HTTP client means platforms.DefaultHTTPClient (bounded
// connecting and waiting for an answer; the caller's context bounds the whole call).
func New(cfg platforms.Config) *Adapter {
	a := &Adapter{
		base:         strings.TrimRight(cfg.BaseURL, "/"),
		auth:         strings.TrimRight(cfg.AuthURL, "/"),
		upload:       strings.TrimRight(cfg.UploadURL, "/"),
		clientID:     cfg.ClientID,
		clientSecret: cfg.ClientSecret,
		hc:           cfg.HTTPClient,
		poll:         cfg.PollInterval,
	}
	if a.base == "" {
		a.base = DefaultBaseURL
	}
	if a.auth == "" {
		a.auth = DefaultAuthURL
	}
	if a.upload == "" {
		a.upload = a.base
	}
	if a.hc == nil {
		a.hc = platforms.DefaultHTTPClient()
	}
	return a
}

// tweetBody is the body of POST /2/tweets. Its fields are in the order of their names, as
// json.Marshal wrote the map it replaces: the same bytes, without a map and its sorting per post.
type tweetBody struct {
	Media         *tweetMedia `json:"media,omitempty"`
	Poll          *tweetPoll  `json:"poll,omitempty"`
	Reply         *tweetReply `json:"reply,omitempty"`
	ReplySettings string      `json:"reply_settings,omitempty"`
	Text          string      `json:"text,omitempty"`
}

type tweetMedia struct {
	MediaIDs []string `json:"media_ids"`
}

type tweetPoll struct {
	DurationMinutes int      `json:"duration_minutes"`
	Options         []string `json:"options"`
}

type tweetReply struct {
	InReplyToTweetID string `json:"in_reply_to_tweet_id"`
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.X }

// Validate checks X's rules: text or media, at most 280 weighted characters, and up to 4 images
// or 1 GIF or 1 video of the supported types and sizes.
func (a *Adapter) Validate(p platforms.Post) error {
	if strings.TrimSpace(p.Text) == "" && len(p.Media) == 0 {
		return invalid("a post needs text or media")
	}
	if n := WeightedLength(p.Text); n > MaxWeightedLength {
		return invalid("text is %d weighted characters; X allows %d (URLs count 23, most emoji and CJK characters 2)", n, MaxWeightedLength)
	}
	if err := platforms.CheckMediaShape(platforms.X, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	for i, m := range p.Media {
		category, limit, ok := mediaCategory(m.ContentType)
		if !ok {
			return invalid("media %d is %s; X takes JPEG, PNG, WEBP or GIF images and MP4 or MOV videos", i+1, typeName(m.ContentType))
		}
		if category != "tweet_image" && len(p.Media) > 1 {
			return invalid("a post takes up to 4 images, or 1 GIF, or 1 video, not %d files with a GIF or video", len(p.Media))
		}
		if m.Size > limit {
			return invalid("media %d is %d bytes; X allows %d for %s", i+1, m.Size, limit, m.ContentType)
		}
	}
	return nil
}

func typeName(ct string) string {
	if ct == "" {
		return "of unknown type"
	}
	return ct
}

// mediaCategory is the media_category X expects for a post's attachment of a content type, and
// its size limit.
func mediaCategory(ct string) (category string, limit int64, ok bool) { return categoryOf("tweet", ct) }

// categoryOf is the media_category (use "tweet" or "dm", then "_image", "_gif" or "_video") of a
// content type, and its size limit.
func categoryOf(use, ct string) (category string, limit int64, ok bool) {
	switch ct {
	case "image/jpeg", "image/png", "image/webp":
		return use + "_image", maxImageBytes, true
	case "image/gif":
		return use + "_gif", maxGIFBytes, true
	case "video/mp4", "video/quicktime":
		return use + "_video", maxVideoBytes, true
	}
	return "", 0, false
}

func invalid(format string, args ...any) *platforms.Error {
	return platforms.Errorf(platforms.X, platforms.Invalid, 0, format, args...)
}

// Publish uploads the media, waits for X to process videos and GIFs, and creates the post. The
// result's rate information is the x-rate-limit-* headers of POST /2/tweets.
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	o, _ := p.Options.(*platforms.XOptions)
	id, r, err := a.createTweetWith(ctx, c, p.Text, p.Media, "", o)
	if err != nil {
		return platforms.Result{}, err
	}
	return platforms.Result{Publication: publication(c, id), Rate: rateInfo(r.Header)}, nil
}

// MediaLimits are X's (platforms.MediaLimiter): up to 4 images, or one GIF or video (a GIF goes
// alone too: Validate).
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{MaxItems: maxImages, MinItems: 2, MaxImages: maxImages, MaxVideos: 1, Types: []string{"image/jpeg", "image/png", "image/webp", "image/gif", "video/mp4", "video/quicktime"},
		MaxImageBytes: maxImageBytes, MaxVideoBytes: maxVideoBytes, VideoAlone: true}
}

// createTweet uploads the media and creates a post with POST /2/tweets, as a reply to replyTo
// when it is set, and returns the new post's id and X's answer. A refused reply whose comment
// is gone is platforms.ErrNotFound.
func (a *Adapter) createTweet(ctx context.Context, c platforms.Credentials, text string, media []platforms.Media, replyTo string) (string, *platforms.Answer, error) {
	return a.createTweetWith(ctx, c, text, media, replyTo, nil)
}

// createTweetWith is createTweet with a post's options: its reply settings and poll, and each
// media's alt text (POST /2/media/metadata after its upload).
func (a *Adapter) createTweetWith(ctx context.Context, c platforms.Credentials, text string, media []platforms.Media, replyTo string, o *platforms.XOptions) (string, *platforms.Answer, error) {
	ids := make([]string, 0, len(media))
	for _, m := range media {
		id, err := a.uploadMedia(ctx, c.AccessToken, m)
		if err != nil {
			return "", nil, err
		}
		if m.AltText != "" {
			if err := a.setAltText(ctx, c.AccessToken, id, m.AltText); err != nil {
				return "", nil, err
			}
		}
		ids = append(ids, id)
	}
	var body tweetBody
	switch {
	case o == nil:
	case o.ReplySettings == "following":
		body.ReplySettings = "following"
	case o.ReplySettings == "mentioned_users":
		body.ReplySettings = "mentionedUsers" // X's name for it
	}
	if o != nil && o.Poll != nil {
		body.Poll = &tweetPoll{DurationMinutes: o.Poll.DurationMinutes, Options: o.Poll.Options}
	}
	if replyTo != "" {
		body.Reply = &tweetReply{InReplyToTweetID: replyTo}
	}
	body.Text = text
	if len(ids) > 0 {
		body.Media = &tweetMedia{MediaIDs: ids}
	}
	raw, _ := json.Marshal(&body)
	r, err := platforms.Send(ctx, a.hc, platforms.X, platforms.Call{Method: http.MethodPost, URL: a.base + "/2/tweets", Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Create: true})
	if err != nil {
		return "", nil, err
	}
	if r.Status < 200 || r.Status > 299 {
		if replyTo != "" {
			return "", nil, readError(r, true)
		}
		return "", nil, classify(r, true)
	}
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := platforms.Decode(platforms.X, r, &out, true); err != nil {
		return "", nil, err
	}
	if out.Data.ID == "" {
		if e := errorBody(r); e != nil {
			// X answered with errors and no post: the post was not created.
			return "", nil, e
		}
		return "", nil, platforms.Garbled(platforms.X, r, true, fmt.Errorf("no data.id in the answer"))
	}
	return out.Data.ID, r, nil
}

// setAltText gives an uploaded media its alt text: POST /2/media/metadata. Nothing was posted yet,
// so a failure is the network's to classify like an upload's.
func (a *Adapter) setAltText(ctx context.Context, token, mediaID, alt string) error {
	raw, _ := json.Marshal(map[string]any{"id": mediaID, "metadata": map[string]any{"alt_text": map[string]string{"text": alt}}})
	r, err := platforms.Send(ctx, a.hc, platforms.X, platforms.Call{Method: http.MethodPost, URL: a.base + "/2/media/metadata", Body: raw, ContentType: "application/json", Bearer: token})
	if err != nil {
		return err
	}
	if r.Status < 200 || r.Status > 299 {
		return classify(r, false)
	}
	return nil
}

// publication builds the post's public URL.
func publication(c platforms.Credentials, id string) platforms.Publication {
	handle := c.Handle
	if handle == "" {
		handle = "i/web"
	}
	return platforms.Publication{ID: id, URL: "https://x.com/" + handle + "/status/" + id}
}

// client returns the OAuth client of the account: the one named in Extra, else Herald's
// (Config). An account connected through Herald's app names its client id and stores no secret:
// the configured secret is used while the id is still Herald's, so that a secret the operator
// rotates applies to every such account at once.
func (a *Adapter) client(c platforms.Credentials) (id, secret string) {
	if id := c.Extra["client_id"]; id != "" {
		if sec := c.Extra["client_secret"]; sec != "" || id != a.clientID {
			return id, sec
		}
		return id, a.clientSecret
	}
	return a.clientID, a.clientSecret
}

// oauthRequest builds a form call to an OAuth endpoint: confidential clients authenticate with
// Basic auth, public clients send client_id in the form.
func (a *Adapter) oauthRequest(c platforms.Credentials, path string, form url.Values) platforms.Call {
	id, secret := a.client(c)
	form.Set("client_id", id)
	rq := platforms.Call{Method: http.MethodPost, URL: a.base + path, Body: []byte(form.Encode()), ContentType: "application/x-www-form-urlencoded"}
	if secret != "" {
		rq.BasicUser, rq.BasicPass = id, secret
	}
	return rq
}

// tokenGrant is what /2/oauth2/token answers a code or a refresh token with.
type tokenGrant struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

// tokenAnswer reads a successful answer of /2/oauth2/token: one without an access token is X's
// error body, or garbled.
func tokenAnswer(r *platforms.Answer) (tokenGrant, error) {
	var tok tokenGrant
	if err := platforms.Decode(platforms.X, r, &tok, false); err != nil {
		return tok, err
	}
	if tok.AccessToken == "" {
		if e := errorBody(r); e != nil {
			return tok, e
		}
		return tok, platforms.Garbled(platforms.X, r, false, fmt.Errorf("no access_token in the answer"))
	}
	return tok, nil
}

// Refresh uses the refresh token (single use: X returns a new one) with the account's OAuth
// client. A refused refresh token is Permanent: the account must be connected again.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	if c.RefreshToken == "" {
		return c, platforms.Errorf(platforms.X, platforms.Permanent, 0, "no refresh token (offline.access was not granted); reconnect the account")
	}
	if id, _ := a.client(c); id == "" {
		return c, platforms.Errorf(platforms.X, platforms.Permanent, 0, "no OAuth client id to refresh with; reconnect the account")
	}
	rq := a.oauthRequest(c, "/2/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}})
	r, err := platforms.Send(ctx, a.hc, platforms.X, rq)
	if err != nil {
		return c, err
	}
	if r.Status < 200 || r.Status > 299 {
		e := classify(r, false)
		if e.Kind == platforms.AuthExpired || (r.Status >= 400 && r.Status < 500 && r.Status != http.StatusTooManyRequests) {
			e.Kind = platforms.Permanent
			e.Message = "X refused the refresh token; reconnect the account: " + e.Message
		}
		return c, e
	}
	tok, err := tokenAnswer(r)
	if err != nil {
		return c, err
	}
	out := c
	out.AccessToken = tok.AccessToken
	if tok.RefreshToken != "" {
		out.RefreshToken = tok.RefreshToken
	}
	out.ExpiresAt = time.Time{}
	if tok.ExpiresIn > 0 {
		out.ExpiresAt = time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second).UTC()
	}
	return out, nil
}

// Revoke revokes the access token and then the refresh token at /2/oauth2/revoke. It tries both
// and returns the first failure.
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error {
	var first error
	for _, t := range []struct{ token, hint string }{{c.AccessToken, "access_token"}, {c.RefreshToken, "refresh_token"}} {
		if t.token == "" {
			continue
		}
		r, err := platforms.Send(ctx, a.hc, platforms.X, a.oauthRequest(c, "/2/oauth2/revoke", url.Values{"token": {t.token}, "token_type_hint": {t.hint}}))
		if err == nil && (r.Status < 200 || r.Status > 299) {
			err = classify(r, false)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Identify fills in the account's id and username from GET /2/users/me.
func (a *Adapter) Identify(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.X, platforms.Call{Method: http.MethodGet, URL: a.base + "/2/users/me", Bearer: c.AccessToken})
	if err != nil {
		return c, err
	}
	if r.Status < 200 || r.Status > 299 {
		return c, classify(r, false)
	}
	var me struct {
		Data struct {
			ID       string `json:"id"`
			Username string `json:"username"`
		} `json:"data"`
	}
	if err := platforms.Decode(platforms.X, r, &me, false); err != nil {
		return c, err
	}
	if me.Data.ID == "" {
		if e := errorBody(r); e != nil {
			return c, e
		}
		return c, platforms.Garbled(platforms.X, r, false, fmt.Errorf("no data.id in the answer"))
	}
	c.UserID, c.Handle = me.Data.ID, me.Data.Username
	return c, nil
}

// lookupPages bounds how far back Lookup reads the timeline (100 posts a page).
const lookupPages = 5

// Lookup reads the account's posts since then (GET /2/users/{id}/tweets with start_time, replies
// excluded) and returns the one with this text. X rewrites URLs to t.co links, HTML-escapes &, < and >, and
// appends a t.co link for attached media, so texts are compared with every URL masked.
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	want := maskURLs(p.Text)
	// A thread's parts and first comments are not the post.
	return a.findTweet(ctx, c, since, url.Values{"tweet.fields": {"created_at"}, "exclude": {"retweets,replies"}}, func(t timelineTweet) bool {
		got := maskURLs(html.UnescapeString(t.Text))
		return got == want || (len(p.Media) > 0 && strings.TrimSpace(strings.TrimSuffix(got, urlMask)) == want)
	})
}

// timelineTweet is a post of the account's timeline as findTweet reads it.
type timelineTweet struct {
	ID               string `json:"id"`
	Text             string `json:"text"`
	ReferencedTweets []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"referenced_tweets"`
}

// findTweet reads the account's timeline since then (GET /2/users/{id}/tweets with start_time and
// the fields and exclusions of q), up to lookupPages pages, and returns the first post match
// takes.
func (a *Adapter) findTweet(ctx context.Context, c platforms.Credentials, since time.Time, q url.Values, match func(timelineTweet) bool) (platforms.Publication, bool, error) {
	if c.UserID == "" {
		var err error
		if c, err = a.Identify(ctx, c); err != nil {
			return platforms.Publication{}, false, err
		}
	}
	q.Set("max_results", "100")
	q.Set("start_time", since.UTC().Truncate(time.Second).Format(time.RFC3339))
	for page := 0; page < lookupPages; page++ {
		r, err := platforms.Send(ctx, a.hc, platforms.X, platforms.Call{Method: http.MethodGet, URL: a.base + "/2/users/" + url.PathEscape(c.UserID) + "/tweets?" + q.Encode(), Bearer: c.AccessToken})
		if err != nil {
			return platforms.Publication{}, false, err
		}
		if !r.OK() {
			return platforms.Publication{}, false, classify(r, false)
		}
		var out struct {
			Data []timelineTweet `json:"data"`
			Meta *struct {
				NextToken string `json:"next_token"`
			} `json:"meta"`
		}
		if err := platforms.Decode(platforms.X, r, &out, false); err != nil {
			return platforms.Publication{}, false, err
		}
		if out.Meta == nil && out.Data == nil {
			if e := errorBody(r); e != nil {
				return platforms.Publication{}, false, e
			}
			return platforms.Publication{}, false, platforms.Garbled(platforms.X, r, false, fmt.Errorf("neither data nor meta in the answer"))
		}
		for _, t := range out.Data {
			if match(t) {
				return publication(c, t.ID), true, nil
			}
		}
		if out.Meta == nil || out.Meta.NextToken == "" {
			return platforms.Publication{}, false, nil
		}
		q.Set("pagination_token", out.Meta.NextToken)
	}
	return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.X, lookupPages)
}

const urlMask = "\x00url\x00"

// maskURLs replaces every URL by one marker and trims surrounding space.
func maskURLs(s string) string {
	return strings.TrimSpace(urlPattern.ReplaceAllStringFunc(s, func(u string) string {
		trimmed := strings.TrimRight(u, urlTrailing)
		return urlMask + u[len(trimmed):]
	}))
}
