// Package facebook publishes to Facebook Pages through the Graph API.
//
// A connected account is one Page: Credentials.UserID is the Page id, Credentials.AccessToken the
// Page access token, and Handle the Page name. Connecting runs Facebook Login (GET /dialog/oauth on
// www.facebook.com, then GET /oauth/access_token for a short-lived user token), exchanges the user
// token for a long-lived one (grant_type=fb_exchange_token) and reads GET /me/accounts: every Page
// the user manages is offered (ExchangeGrants), with the Instagram professional account linked to
// each (an Instagram account publishing with the Page's token: platforms/instagram), and each one
// picked becomes its own account. A
// Page token obtained from a long-lived user token does not expire, so the credentials carry no
// ExpiresAt and Refresh cannot do anything: it answers a Permanent error asking to reconnect the
// account. The long-lived user token is kept in Extra["user_token"] (with
// Extra["user_id"]) only so that Revoke can remove the app's permissions (DELETE /me/permissions).
//
// Text posts go to POST /{page-id}/feed, with their link card as the post's link (options.link,
// else the text's first link; Facebook reads the page itself); one photo to POST /{page-id}/photos (multipart source);
// several photos are uploaded unpublished and attached to a feed post (attached_media); a video goes
// to POST /{page-id}/videos on graph-video.facebook.com (multipart source). Lookup reads
// GET /{page-id}/feed.
package facebook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/graph"
	"github.com/heraldhq/herald/platforms/instagram"
)

// Version is the Graph API version the adapter calls.
const Version = "v25.0"

// Production hosts.
const (
	DefaultBaseURL   = "https://graph.facebook.com"
	DefaultAuthURL   = "https://www.facebook.com"
	DefaultUploadURL = "https://graph-video.facebook.com"
)

// Content rules.
const (
	// MaxTextRunes is the longest post text Facebook accepts, in characters.
	MaxTextRunes = 63206
	// MaxImages is how many photos Herald attaches to one Page post.
	MaxImages = 10
)

// Scope is the permissions Herald asks for: publishing, and commenting on the account's own posts
// (a first comment) and reading those comments back, on the Pages and on the Instagram
// professional accounts linked to them (business_management lets /me/accounts name those of Pages
// managed through a business portfolio).
const Scope = "pages_show_list,pages_read_engagement,pages_manage_posts,pages_manage_engagement,publish_video," +
	"instagram_basic,instagram_content_publish,instagram_manage_comments,business_management"

// Adapter publishes to Facebook Pages.
type Adapter struct {
	cfg    platforms.Config
	client *graph.Client
}

var (
	_ platforms.Adapter   = (*Adapter)(nil)
	_ platforms.Connector = (*Adapter)(nil)
	_ platforms.Granter   = (*Adapter)(nil)
)

// New returns an adapter; empty base URLs default to Facebook's production hosts.
func New(cfg platforms.Config) *Adapter {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.AuthURL == "" {
		cfg.AuthURL = DefaultAuthURL
	}
	if cfg.UploadURL == "" {
		cfg.UploadURL = DefaultUploadURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cfg.AuthURL = strings.TrimRight(cfg.AuthURL, "/")
	cfg.UploadURL = strings.TrimRight(cfg.UploadURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = graph.DefaultHTTPClient()
	}
	return &Adapter{cfg: cfg, client: &graph.Client{Platform: platforms.Facebook, HTTP: cfg.HTTPClient}}
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.Facebook }

func (a *Adapter) api(path string) string    { return a.cfg.BaseURL + "/" + Version + path }
func (a *Adapter) upload(path string) string { return a.cfg.UploadURL + "/" + Version + path }

func invalid(format string, args ...any) error {
	return platforms.Errorf(platforms.Facebook, platforms.Invalid, 0, format, args...)
}

func isImage(t string) bool {
	switch t {
	case "image/jpeg", "image/png", "image/gif", "image/bmp", "image/tiff", "image/webp":
		return true
	}
	return false
}

func isVideo(t string) bool { return t == "video/mp4" || t == "video/quicktime" }

// Validate checks Facebook's rules: text up to 63,206 characters; text or media; up to 10 photos
// (JPEG, PNG, GIF, BMP, TIFF, WebP) or exactly one video (MP4, MOV), never both.
func (a *Adapter) Validate(p platforms.Post) error {
	if n := utf8.RuneCountInString(p.Text); n > MaxTextRunes {
		return invalid("text is %d characters; Facebook allows %d", n, MaxTextRunes)
	}
	if strings.TrimSpace(p.Text) == "" && len(p.Media) == 0 {
		return invalid("a Facebook post needs text or media")
	}
	if err := platforms.CheckMediaShape(platforms.Facebook, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	for i, m := range p.Media {
		if !isImage(m.ContentType) && !isVideo(m.ContentType) {
			return invalid("media %d has type %q; Facebook takes JPEG, PNG, GIF, BMP, TIFF or WebP photos and MP4 or MOV videos", i+1, m.ContentType)
		}
	}
	return nil
}

// Publish creates the Page post.
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	for i, m := range p.Media {
		if m.Open == nil {
			return platforms.Result{}, platforms.Errorf(platforms.Facebook, platforms.Permanent, 0, "media %d cannot be read; Facebook takes uploaded bytes", i+1)
		}
	}
	if c.UserID == "" || c.AccessToken == "" {
		return platforms.Result{}, platforms.Errorf(platforms.Facebook, platforms.Permanent, 0, "the credentials have no Page id or Page token; reconnect the account")
	}
	o, _ := p.Options.(*platforms.FacebookOptions)
	if o == nil {
		o = &platforms.FacebookOptions{}
	}
	switch {
	case o.Type == "reel":
		return a.videoSession(ctx, c, "video_reels", p.Text, p.Media[0])
	case o.Type == "story" && p.Media[0].IsVideo():
		return a.videoSession(ctx, c, "video_stories", "", p.Media[0])
	case o.Type == "story":
		return a.photoStory(ctx, c, p.Media[0])
	case len(p.Media) == 0:
		return a.feed(ctx, c, p.Text, nil, platforms.CardLink(o, p.Text))
	case p.Media[0].IsVideo():
		return a.video(ctx, c, p.Text, p.Media[0])
	case len(p.Media) == 1:
		return a.photo(ctx, c, p.Text, p.Media[0])
	default:
		ids := make([]string, 0, len(p.Media))
		for _, m := range p.Media {
			id, err := a.unpublishedPhoto(ctx, c, m)
			if err != nil {
				return platforms.Result{}, err
			}
			ids = append(ids, id)
		}
		return a.feed(ctx, c, p.Text, ids, "")
	}
}

// MediaLimits are Facebook's (platforms.MediaLimiter): one photo, 2 to 10 photos (a gallery:
// each uploaded unpublished, then attached to one feed post in the order given) or one video.
// A video goes alone: the attached_media of a feed post are photos uploaded unpublished, and
// Herald does not attach videos there (a Page's video is its own post, /videos or a reel).
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{MaxItems: MaxImages, MinItems: 2, MaxImages: MaxImages, MaxVideos: 1,
		Types: []string{"image/jpeg", "image/png", "image/gif", "image/webp", "video/mp4", "video/quicktime"}, VideoAlone: true}
}

// unpublishedPhoto uploads a photo of the Page without publishing it (for a post with several
// photos, or a story) and returns its id.
func (a *Adapter) unpublishedPhoto(ctx context.Context, c platforms.Credentials, m platforms.Media) (string, error) {
	var out struct {
		ID graph.ID `json:"id"`
	}
	form := url.Values{"published": {"false"}}
	if m.AltText != "" {
		form.Set("alt_text_custom", m.AltText)
	}
	resp, err := a.uploadFile(ctx, a.api("/"+url.PathEscape(c.UserID)+"/photos"), c.AccessToken, form, m, false, &out)
	if err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", graph.Garbage(platforms.Facebook, resp.Status, false, "the photo upload answered no id")
	}
	return string(out.ID), nil
}

// photoStory publishes a photo as a Page story: the photo is uploaded unpublished, then
// POST /{page-id}/photo_stories.
func (a *Adapter) photoStory(ctx context.Context, c platforms.Credentials, m platforms.Media) (platforms.Result, error) {
	photo, err := a.unpublishedPhoto(ctx, c, m)
	if err != nil {
		return platforms.Result{}, err
	}
	var out struct {
		PostID graph.ID `json:"post_id"`
	}
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: a.api("/" + url.PathEscape(c.UserID) + "/photo_stories"), Token: c.AccessToken, Params: url.Values{"photo_id": {photo}}, Create: true}, &out)
	if err != nil {
		return platforms.Result{}, err
	}
	if out.PostID == "" {
		return platforms.Result{}, graph.Garbage(platforms.Facebook, resp.Status, true, "the photo story answered no post_id")
	}
	return platforms.Result{Publication: platforms.Publication{ID: string(out.PostID), URL: "https://www.facebook.com/stories/" + url.PathEscape(c.UserID)}, Rate: resp.Rate}, nil
}

// videoSession publishes a video through an upload session of edge (video_reels for a reel,
// video_stories for a story): upload_phase=start gives an upload URL on the rupload host, the
// bytes go there in one request (headers offset and file_size), and upload_phase=finish publishes
// it (a reel with its description). The publication id is the reel's video id, or the story's
// post id.
func (a *Adapter) videoSession(ctx context.Context, c platforms.Credentials, edge, text string, m platforms.Media) (platforms.Result, error) {
	target := a.api("/" + url.PathEscape(c.UserID) + "/" + edge)
	var start struct {
		VideoID   graph.ID `json:"video_id"`
		UploadURL string   `json:"upload_url"`
	}
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: target, Token: c.AccessToken, Params: url.Values{"upload_phase": {"start"}}}, &start)
	if err != nil {
		return platforms.Result{}, err
	}
	if start.VideoID == "" || start.UploadURL == "" {
		return platforms.Result{}, graph.Garbage(platforms.Facebook, resp.Status, false, "the upload session answered no video_id or upload_url")
	}
	if err := a.rupload(ctx, c, start.UploadURL, m); err != nil {
		return platforms.Result{}, err
	}
	finish := url.Values{"upload_phase": {"finish"}, "video_id": {string(start.VideoID)}}
	if edge == "video_reels" {
		finish.Set("video_state", "PUBLISHED")
		if text != "" {
			finish.Set("description", text)
		}
	}
	var done struct {
		Success bool     `json:"success"`
		PostID  graph.ID `json:"post_id"`
	}
	resp, err = a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: target, Token: c.AccessToken, Params: finish, Create: true}, &done)
	if err != nil {
		return platforms.Result{}, err
	}
	if !done.Success {
		return platforms.Result{}, graph.Garbage(platforms.Facebook, resp.Status, true, "the upload session's finish did not succeed")
	}
	if edge == "video_stories" && done.PostID != "" {
		return platforms.Result{Publication: platforms.Publication{ID: string(done.PostID), URL: "https://www.facebook.com/stories/" + url.PathEscape(c.UserID)}, Rate: resp.Rate}, nil
	}
	u := "https://www.facebook.com/reel/" + url.PathEscape(string(start.VideoID))
	return platforms.Result{Publication: platforms.Publication{ID: string(start.VideoID), URL: u}, Rate: resp.Rate}, nil
}

// rupload sends a video's bytes to its upload session's URL.
func (a *Adapter) rupload(ctx context.Context, c platforms.Credentials, uploadURL string, m platforms.Media) error {
	rc, err := m.Open(ctx)
	if err != nil {
		return &platforms.Error{Platform: platforms.Facebook, Kind: platforms.Transient, Message: "cannot read the media: " + err.Error(), Err: err}
	}
	defer func() { _ = rc.Close() }()
	size := m.Size
	var body io.Reader = rc
	if size <= 0 {
		data, err := io.ReadAll(rc)
		if err != nil {
			return &platforms.Error{Platform: platforms.Facebook, Kind: platforms.Transient, Message: "cannot read the media: " + err.Error(), Err: err}
		}
		body, size = bytes.NewReader(data), int64(len(data))
	}
	// rupload takes the token as "Authorization: OAuth <token>"; offset 0 sends the whole file.
	hdr := http.Header{"Authorization": {"OAuth " + c.AccessToken}, "offset": {"0"}, "file_size": {strconv.FormatInt(size, 10)}}
	var out struct {
		Success bool `json:"success"`
	}
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: uploadURL, Body: body, ContentType: "application/octet-stream", ContentLength: size, Header: hdr}, &out)
	if err != nil {
		return err
	}
	if !out.Success {
		return graph.Garbage(platforms.Facebook, resp.Status, false, "the video upload did not succeed")
	}
	return nil
}

// feed creates a feed post, with unpublished photos attached when ids are given, or a link.
func (a *Adapter) feed(ctx context.Context, c platforms.Credentials, text string, photoIDs []string, link string) (platforms.Result, error) {
	form := url.Values{}
	if text != "" {
		form.Set("message", text)
	}
	if link != "" {
		form.Set("link", link)
	}
	for i, id := range photoIDs {
		b, _ := json.Marshal(map[string]string{"media_fbid": id})
		form.Set(fmt.Sprintf("attached_media[%d]", i), string(b))
	}
	var out struct {
		ID graph.ID `json:"id"`
	}
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: a.api("/" + url.PathEscape(c.UserID) + "/feed"), Token: c.AccessToken, Params: form, Create: true}, &out)
	if err != nil {
		return platforms.Result{}, err
	}
	if out.ID == "" {
		return platforms.Result{}, graph.Garbage(platforms.Facebook, resp.Status, true, "the feed post answered no id")
	}
	return platforms.Result{Publication: platforms.Publication{ID: string(out.ID), URL: postURL(c.UserID, string(out.ID))}, Rate: resp.Rate}, nil
}

// photo publishes one photo with the text as its message; the post id is the answer's post_id.
func (a *Adapter) photo(ctx context.Context, c platforms.Credentials, text string, m platforms.Media) (platforms.Result, error) {
	form := url.Values{"published": {"true"}}
	if text != "" {
		form.Set("message", text)
	}
	if m.AltText != "" {
		form.Set("alt_text_custom", m.AltText)
	}
	var out struct {
		ID     graph.ID `json:"id"`
		PostID graph.ID `json:"post_id"`
	}
	resp, err := a.uploadFile(ctx, a.api("/"+url.PathEscape(c.UserID)+"/photos"), c.AccessToken, form, m, true, &out)
	if err != nil {
		return platforms.Result{}, err
	}
	id := string(out.PostID)
	if id == "" {
		id = string(out.ID)
	}
	if id == "" {
		return platforms.Result{}, graph.Garbage(platforms.Facebook, resp.Status, true, "the photo post answered no id")
	}
	return platforms.Result{Publication: platforms.Publication{ID: id, URL: postURL(c.UserID, id)}, Rate: resp.Rate}, nil
}

// video publishes a video on the video host; the text is its description. The publication id is
// the video id.
func (a *Adapter) video(ctx context.Context, c platforms.Credentials, text string, m platforms.Media) (platforms.Result, error) {
	form := url.Values{}
	if text != "" {
		form.Set("description", text)
	}
	var out struct {
		ID graph.ID `json:"id"`
	}
	resp, err := a.uploadFile(ctx, a.upload("/"+url.PathEscape(c.UserID)+"/videos"), c.AccessToken, form, m, true, &out)
	if err != nil {
		return platforms.Result{}, err
	}
	if out.ID == "" {
		return platforms.Result{}, graph.Garbage(platforms.Facebook, resp.Status, true, "the video upload answered no id")
	}
	u := "https://www.facebook.com/" + url.PathEscape(c.UserID) + "/videos/" + url.PathEscape(string(out.ID))
	return platforms.Result{Publication: platforms.Publication{ID: string(out.ID), URL: u}, Rate: resp.Rate}, nil
}

// uploadFile posts the media's bytes as the multipart field "source" with form.
func (a *Adapter) uploadFile(ctx context.Context, target, token string, form url.Values, m platforms.Media, create bool, out any) (graph.Response, error) {
	rc, err := m.Open(ctx)
	if err != nil {
		return graph.Response{}, &platforms.Error{Platform: platforms.Facebook, Kind: platforms.Transient, Message: "cannot read the media: " + err.Error(), Err: err}
	}
	defer func() { _ = rc.Close() }()
	name := m.Filename
	if name == "" {
		name = "media"
	}
	body, ctype, length, err := graph.Multipart(form, "source", name, m.ContentType, rc, m.Size)
	if err != nil {
		return graph.Response{}, &platforms.Error{Platform: platforms.Facebook, Kind: platforms.Permanent, Message: err.Error(), Err: err}
	}
	return a.client.Do(ctx, graph.Call{Method: http.MethodPost, URL: target, Token: token, Body: body, ContentType: ctype, ContentLength: length, Create: create}, out)
}

// postURL links a "{page-id}_{post-id}" post.
func postURL(pageID, id string) string {
	post := id
	if i := strings.IndexByte(id, '_'); i >= 0 {
		post = id[i+1:]
	}
	return "https://www.facebook.com/" + url.PathEscape(pageID) + "/posts/" + url.PathEscape(post)
}

// Refresh cannot renew a Page token: Page tokens do not expire, and one that stopped working was
// invalidated (password change, role removed, app removed), which only a new login fixes. It
// always answers a Permanent error asking to reconnect.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	return c, platforms.Errorf(platforms.Facebook, platforms.Permanent, 0, "facebook page tokens cannot be refreshed; reconnect the account")
}

// Revoke removes the app's permissions with DELETE /me/permissions using the long-lived user token
// kept at connect time. Without one (credentials not made by Exchange) there is nothing Herald can
// revoke at Facebook and it answers nil; nor when the consent granted several Pages
// (platforms.SharedToken), since removing the user's permissions cuts off every Page's token.
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error {
	tok := c.Extra["user_token"]
	if tok == "" || c.Extra[platforms.SharedToken] == "true" {
		return nil
	}
	_, err := a.client.Do(ctx, graph.Call{Method: http.MethodDelete, URL: a.api("/me/permissions"), Token: tok}, nil)
	return err
}

// Lookup looks through GET /{page-id}/feed for a post with exactly this message created at or
// after since (up to three pages of 100).
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	params := url.Values{"fields": {"id,message,created_time"}, "limit": {"100"}, "since": {strconv.FormatInt(since.Unix()-1, 10)}}
	next := a.api("/" + url.PathEscape(c.UserID) + "/feed")
	floor := since.Truncate(time.Second)
	for page := 0; page < graph.LookupPages && next != ""; page++ {
		var out struct {
			Data []struct {
				ID          graph.ID `json:"id"`
				Message     string   `json:"message"`
				CreatedTime string   `json:"created_time"`
			} `json:"data"`
			Paging struct {
				Next string `json:"next"`
			} `json:"paging"`
		}
		if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: next, Token: c.AccessToken, Params: params}, &out); err != nil {
			return platforms.Publication{}, false, err
		}
		for _, d := range out.Data {
			t, err := graph.ParseTime(d.CreatedTime)
			if err != nil || t.Before(floor) || d.Message != p.Text || d.ID == "" {
				continue
			}
			return platforms.Publication{ID: string(d.ID), URL: postURL(c.UserID, string(d.ID))}, true, nil
		}
		next, params = out.Paging.Next, nil
	}
	if next != "" {
		return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.Facebook, graph.LookupPages)
	}
	return platforms.Publication{}, false, nil
}

// UsesPKCE reports false: the server-side Facebook Login flow authenticates with the app secret.
func (a *Adapter) UsesPKCE() bool { return false }

// AuthorizeURL returns the Facebook Login dialog asking for the Page publishing permissions.
func (a *Adapter) AuthorizeURL(state, redirectURI, codeChallenge string) string {
	q := url.Values{
		"client_id":     {a.cfg.ClientID},
		"redirect_uri":  {redirectURI},
		"state":         {state},
		"response_type": {"code"},
		"scope":         {Scope},
	}
	return a.cfg.AuthURL + "/" + Version + "/dialog/oauth?" + q.Encode()
}

// Exchange trades the code as ExchangeGrants does and connects the first Page the user manages,
// alone: its token is not shared with another account of Herald's (its Instagram account, if
// any, is left out).
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (platforms.Credentials, error) {
	grants, err := a.ExchangeGrants(ctx, code, redirectURI, codeVerifier)
	if err != nil {
		return platforms.Credentials{}, err
	}
	c := grants[0].Creds
	delete(c.Extra, platforms.SharedToken)
	return c, nil
}

// pageFields are what GET /me/accounts reads of each Page: its id, name and Page token, and the
// Instagram professional account linked to it (field expansion), if any.
const pageFields = "id,name,access_token,instagram_business_account{id,username}"

// instagramGrant is the Instagram professional account linked to a Page, as an Instagram account
// that publishes through the Instagram API with Facebook Login: the Page's token, the Instagram
// user id, and Extra login=facebook, which sends the Instagram adapter's calls to the Facebook
// Graph host (platforms/instagram). It keeps no user token: removing the Instagram account
// revokes nothing at Facebook.
func instagramGrant(pageToken, id, username string) platforms.Grant {
	name := username
	if name != "" {
		name = "@" + name
	}
	return platforms.Grant{Platform: platforms.Instagram, Kind: platforms.KindProfile, Name: name, Creds: platforms.Credentials{
		AccessToken: pageToken,
		UserID:      id,
		Handle:      username,
		Extra:       map[string]string{instagram.Login: instagram.LoginFacebook},
	}}
}

// ExchangeGrants trades the code for a user token, makes it long-lived, and returns every Page
// the user manages (GET /me/accounts), each with its own Page token, each followed by the
// Instagram professional account linked to it (a Grant on Instagram, with the Page's token).
func (a *Adapter) ExchangeGrants(ctx context.Context, code, redirectURI, codeVerifier string) ([]platforms.Grant, error) {
	var short graph.Token
	_, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api("/oauth/access_token"), Params: url.Values{
		"client_id": {a.cfg.ClientID}, "client_secret": {a.cfg.ClientSecret}, "redirect_uri": {redirectURI}, "code": {code},
	}}, &short)
	if err != nil {
		return nil, err
	}
	if short.AccessToken == "" {
		return nil, graph.Garbage(platforms.Facebook, 200, false, "the code exchange answered no access token")
	}
	var long graph.Token
	_, err = a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api("/oauth/access_token"), Params: url.Values{
		"grant_type": {"fb_exchange_token"}, "client_id": {a.cfg.ClientID}, "client_secret": {a.cfg.ClientSecret}, "fb_exchange_token": {short.AccessToken},
	}}, &long)
	if err != nil {
		return nil, err
	}
	if long.AccessToken == "" {
		return nil, graph.Garbage(platforms.Facebook, 200, false, "the token exchange answered no access token")
	}
	var me struct {
		ID graph.ID `json:"id"`
	}
	if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api("/me"), Token: long.AccessToken, Params: url.Values{"fields": {"id"}}}, &me); err != nil {
		return nil, err
	}
	var pages struct {
		Data []struct {
			ID          graph.ID `json:"id"`
			Name        string   `json:"name"`
			AccessToken string   `json:"access_token"`
			Instagram   *struct {
				ID       graph.ID `json:"id"`
				Username string   `json:"username"`
			} `json:"instagram_business_account"`
		} `json:"data"`
	}
	if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api("/me/accounts"), Token: long.AccessToken, Params: url.Values{"fields": {pageFields}, "limit": {"100"}}}, &pages); err != nil {
		return nil, err
	}
	var out []platforms.Grant
	for _, pg := range pages.Data {
		if pg.ID == "" || pg.AccessToken == "" {
			continue
		}
		out = append(out, platforms.Grant{Kind: platforms.KindPage, Name: pg.Name, Creds: platforms.Credentials{
			AccessToken: pg.AccessToken,
			UserID:      string(pg.ID),
			Handle:      pg.Name,
			Extra:       map[string]string{"user_token": long.AccessToken, "user_id": string(me.ID)},
		}})
		if ig := pg.Instagram; ig != nil && ig.ID != "" {
			out = append(out, instagramGrant(pg.AccessToken, string(ig.ID), ig.Username))
		}
	}
	if len(out) > 0 {
		platforms.MarkShared(out)
		return out, nil
	}
	return nil, platforms.Errorf(platforms.Facebook, platforms.Permanent, 200, "the Facebook user manages no Page Herald can publish to")
}
