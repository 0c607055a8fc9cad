// Package bluesky is Herald's adapter for Bluesky (AT Protocol) with app-password sessions: Login
// creates a session (com.atproto.server.createSession), Refresh rotates it (refreshSession with the
// refresh JWT), Revoke deletes it (deleteSession); posts are app.bsky.feed.post records created with
// com.atproto.repo.createRecord on the account's PDS, with facets for links, mentions and hashtags
// (UTF-8 byte ranges), images uploaded with com.atproto.repo.uploadBlob, and videos sent to the
// video service (app.bsky.video.uploadVideo, then getJobStatus until the blob is ready), which is
// what Bluesky recommends so that the post never shows a video still processing. Lookup lists the
// repo's posts with com.atproto.repo.listRecords. See networks.md §2.
//
// Bluesky connects with credentials the user brings (a handle and an app password), so the
// adapter is not a platforms.Connector.
package bluesky

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // image sizes for aspect ratios
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Production hosts: the entryway that creates sessions (and the PDS when the session does not
// name another) and the video service.
const (
	DefaultBaseURL  = "https://bsky.social"
	DefaultVideoURL = "https://video.bsky.app"
)

// Content limits (networks.md §2.2).
const (
	MaxGraphemes  = 300
	maxTextBytes  = 3000
	maxImages     = 4
	maxImageBytes = 1_000_000
	maxVideoBytes = 100_000_000
	postNSID      = "app.bsky.feed.post"
)

// Default session lifetimes of the reference PDS, used when a token does not say.
const (
	accessLifetime  = 2 * time.Hour
	refreshLifetime = 90 * 24 * time.Hour
)

// Adapter publishes to Bluesky. It is stateless and safe for concurrent use.
type Adapter struct {
	base, video string
	hc          *http.Client
	poll        time.Duration
	cards       platforms.CardReader
}

var _ platforms.Adapter = (*Adapter)(nil)

// New returns an adapter for cfg. BaseURL is the entryway/PDS (default https://bsky.social);
// UploadURL is the video service (default https://video.bsky.app). A nil HTTP client means
// platforms.DefaultHTTPClient (bounded connecting and waiting for an answer; the caller's context
// bounds the whole call).
func New(cfg platforms.Config) *Adapter {
	a := &Adapter{base: strings.TrimRight(cfg.BaseURL, "/"), video: strings.TrimRight(cfg.UploadURL, "/"), hc: cfg.HTTPClient, poll: cfg.PollInterval, cards: cfg.Cards}
	if a.base == "" {
		a.base = DefaultBaseURL
	}
	if a.video == "" {
		a.video = DefaultVideoURL
	}
	if a.hc == nil {
		a.hc = platforms.DefaultHTTPClient()
	}
	return a
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.Bluesky }

// pds is the account's PDS: Extra["pds"] when the session named one, else the base URL.
func (a *Adapter) pds(c platforms.Credentials) string {
	if p := strings.TrimRight(c.Extra["pds"], "/"); p != "" {
		return p
	}
	return a.base
}

func (a *Adapter) xrpc(c platforms.Credentials, nsid string) string {
	return a.pds(c) + "/xrpc/" + nsid
}

func invalid(format string, args ...any) *platforms.Error {
	return platforms.Errorf(platforms.Bluesky, platforms.Invalid, 0, format, args...)
}

// Validate checks Bluesky's rules: at most 300 graphemes and 3,000 bytes of text; text or media;
// up to 4 images (JPEG, PNG, GIF, WEBP) of at most 1,000,000 bytes, or one video (MP4 or MOV) of
// at most 100 MB; never both.
func (a *Adapter) Validate(p platforms.Post) error {
	if n := platforms.GraphemeCount(p.Text); n > MaxGraphemes {
		return invalid("text is %d graphemes; Bluesky allows %d", n, MaxGraphemes)
	}
	if len(p.Text) > maxTextBytes {
		return invalid("text is %d bytes; Bluesky allows %d", len(p.Text), maxTextBytes)
	}
	if strings.TrimSpace(p.Text) == "" && len(p.Media) == 0 {
		return invalid("a post needs text or media")
	}
	if err := platforms.CheckMediaShape(platforms.Bluesky, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	for i, m := range p.Media {
		switch m.ContentType {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
			if m.Size > maxImageBytes {
				return invalid("image %d is %d bytes; Bluesky allows %d", i+1, m.Size, maxImageBytes)
			}
		case "video/mp4", "video/quicktime":
			if m.Size > maxVideoBytes {
				return invalid("video is %d bytes; Bluesky allows %d", m.Size, maxVideoBytes)
			}
		default:
			return invalid("media %d is %s; Bluesky takes JPEG, PNG, GIF or WEBP images and MP4 or MOV videos", i+1, orUnknown(m.ContentType))
		}
	}
	return nil
}

func orUnknown(ct string) string {
	if ct == "" {
		return "of unknown type"
	}
	return ct
}

// blobRef is an uploaded blob as records reference it.
type blobRef struct {
	Type string `json:"$type"`
	Ref  struct {
		Link string `json:"$link"`
	} `json:"ref"`
	MimeType string `json:"mimeType"`
	Size     int64  `json:"size"`
}

type aspectRatio struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Publish uploads the media, builds the record with its facets and creates it. The publication's
// Ref is the record's CID, which a reply to it (a thread's next part) references. The result's
// rate information is the RateLimit-* headers of createRecord (the repo write points).
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	if c.UserID == "" {
		return platforms.Result{}, platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "the account has no DID; log in again")
	}
	o, _ := p.Options.(*platforms.BlueskyOptions)
	if o == nil {
		o = &platforms.BlueskyOptions{} // a post's options ask for its link card
	}
	uri, cid, r, err := a.createPostWith(ctx, c, p.Text, p.Media, nil, o)
	if err != nil {
		return platforms.Result{}, err
	}
	pub := publication(c, uri)
	pub.Ref = cid
	return platforms.Result{Publication: pub, Rate: rateInfo(r.Header)}, nil
}

// MediaLimits are Bluesky's (platforms.MediaLimiter): up to 4 images or one video.
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{MaxItems: maxImages, MinItems: 2, MaxImages: maxImages, MaxVideos: 1, Types: []string{"image/jpeg", "image/png", "image/webp", "image/gif", "video/mp4", "video/quicktime", "video/webm"},
		MaxImageBytes: maxImageBytes, MaxVideoBytes: maxVideoBytes, VideoAlone: true}
}

// createPost uploads the media and creates a post record (with its facets; a reply when reply is
// set) with createRecord, and returns the record's at:// URI and Bluesky's answer.
func (a *Adapter) createPost(ctx context.Context, c platforms.Credentials, text string, media []platforms.Media, reply map[string]strongRef) (string, *platforms.Answer, error) {
	uri, _, r, err := a.createPostWith(ctx, c, text, media, reply, nil)
	return uri, r, err
}

// createPostWith is createPost with a post's options: its languages, self-labels and, for a post
// without media, its link card (linkcard.go).
func (a *Adapter) createPostWith(ctx context.Context, c platforms.Credentials, text string, media []platforms.Media, reply map[string]strongRef, o *platforms.BlueskyOptions) (uri, cid string, r *platforms.Answer, err error) {
	in := createRecordInput{Repo: c.UserID, Collection: postNSID, Record: postRecord{
		Type:      postNSID,
		Text:      text,
		CreatedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		Reply:     reply,
		Facets:    a.facets(ctx, c, text),
	}}
	if o != nil {
		in.Record.Langs = o.Langs
		if len(o.Labels) > 0 {
			vals := make([]map[string]string, len(o.Labels))
			for i, l := range o.Labels {
				vals[i] = map[string]string{"val": l}
			}
			in.Record.Labels = map[string]any{"$type": "com.atproto.label.defs#selfLabels", "values": vals}
		}
	}
	if len(media) > 0 {
		embed, err := a.embed(ctx, c, media)
		if err != nil {
			return "", "", nil, err
		}
		in.Record.Embed = embed
	} else if o != nil {
		embed, err := a.linkCard(ctx, c, text, o)
		if err != nil {
			return "", "", nil, err
		}
		in.Record.Embed = embed
	}
	raw, _ := json.Marshal(in)
	r, err = platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodPost, URL: a.xrpc(c, "com.atproto.repo.createRecord"), Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Create: true})
	if err != nil {
		return "", "", nil, err
	}
	if !r.OK() {
		return "", "", nil, classify(r, true)
	}
	var out struct {
		URI string `json:"uri"`
		// CID is read with the URI rather than in a second pass; an answer whose cid is not a
		// string still gives its post, without the cid, as that pass gave it.
		CID any `json:"cid"`
	}
	if err := platforms.Decode(platforms.Bluesky, r, &out, true); err != nil {
		return "", "", nil, err
	}
	if !strings.HasPrefix(out.URI, "at://") {
		if e := errorBody(r); e != nil {
			return "", "", nil, e
		}
		return "", "", nil, platforms.Garbled(platforms.Bluesky, r, true, fmt.Errorf("no uri in the answer"))
	}
	cid, _ = out.CID.(string)
	return out.URI, cid, r, nil
}

// publication builds the post's bsky.app URL from its at:// URI.
func publication(c platforms.Credentials, uri string) platforms.Publication {
	rkey := uri[strings.LastIndex(uri, "/")+1:]
	who := c.Handle
	if who == "" {
		who = c.UserID
	}
	return platforms.Publication{ID: uri, URL: "https://bsky.app/profile/" + who + "/post/" + rkey}
}

// facets builds the record's facets. Mentions need the handle's DID
// (com.atproto.identity.resolveHandle); a handle that does not resolve stays plain text.
func (a *Adapter) facets(ctx context.Context, c platforms.Credentials, text string) []facet {
	spans := detectFacets(text)
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var out []facet
	for _, s := range spans {
		var f feature
		switch s.kind {
		case "link":
			f = feature{Type: "app.bsky.richtext.facet#link", URI: s.value}
		case "tag":
			f = feature{Type: "app.bsky.richtext.facet#tag", Tag: s.value}
		case "mention":
			did, err := a.resolveHandle(ctx, c, s.value)
			if err != nil {
				continue
			}
			f = feature{Type: "app.bsky.richtext.facet#mention", DID: did}
		}
		out = append(out, facet{Index: byteSlice{ByteStart: s.start, ByteEnd: s.end}, Features: []feature{f}})
	}
	return out
}

// createRecordInput is the body of com.atproto.repo.createRecord for a post.
type createRecordInput struct {
	Repo       string     `json:"repo"`
	Collection string     `json:"collection"`
	Record     postRecord `json:"record"`
}

// postRecord is an app.bsky.feed.post record.
type postRecord struct {
	Type      string               `json:"$type"`
	Text      string               `json:"text"`
	CreatedAt string               `json:"createdAt"`
	Reply     map[string]strongRef `json:"reply,omitempty"`
	Facets    []facet              `json:"facets,omitempty"`
	Embed     map[string]any       `json:"embed,omitempty"`
	Langs     []string             `json:"langs,omitempty"`
	Labels    map[string]any       `json:"labels,omitempty"`
}

// facet is an app.bsky.richtext.facet: a byte range of the text and what it links to.
type facet struct {
	Index    byteSlice `json:"index"`
	Features []feature `json:"features"`
}

type byteSlice struct {
	ByteStart int `json:"byteStart"`
	ByteEnd   int `json:"byteEnd"`
}

// feature is one of the facet features #link (URI), #tag (Tag) and #mention (DID).
type feature struct {
	Type string `json:"$type"`
	URI  string `json:"uri,omitempty"`
	Tag  string `json:"tag,omitempty"`
	DID  string `json:"did,omitempty"`
}

func (a *Adapter) resolveHandle(ctx context.Context, c platforms.Credentials, handle string) (string, error) {
	var out struct {
		DID string `json:"did"`
	}
	err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.xrpc(c, "com.atproto.identity.resolveHandle") + "?handle=" + url.QueryEscape(handle)}, &out)
	if err == nil && !strings.HasPrefix(out.DID, "did:") {
		err = fmt.Errorf("resolveHandle answered without a did")
	}
	return out.DID, err
}

// embed uploads the media and returns the record's embed: app.bsky.embed.images or
// app.bsky.embed.video.
func (a *Adapter) embed(ctx context.Context, c platforms.Credentials, media []platforms.Media) (map[string]any, error) {
	if media[0].IsVideo() {
		blob, err := a.uploadVideo(ctx, c, media[0])
		if err != nil {
			return nil, err
		}
		embed := map[string]any{"$type": "app.bsky.embed.video", "video": blob}
		if media[0].AltText != "" {
			embed["alt"] = media[0].AltText
		}
		return embed, nil
	}
	images := make([]map[string]any, 0, len(media))
	for _, m := range media {
		data, err := readMedia(ctx, m, maxImageBytes)
		if err != nil {
			return nil, err
		}
		var out struct {
			Blob *blobRef `json:"blob"`
		}
		if err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.xrpc(c, "com.atproto.repo.uploadBlob"), Body: data, ContentType: m.ContentType, Bearer: c.AccessToken}, &out); err != nil {
			return nil, err
		}
		if out.Blob == nil || out.Blob.Ref.Link == "" {
			return nil, platforms.Errorf(platforms.Bluesky, platforms.Transient, 0, "uploadBlob answered without a blob")
		}
		img := map[string]any{"image": out.Blob, "alt": m.AltText}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil && cfg.Width > 0 && cfg.Height > 0 {
			img["aspectRatio"] = aspectRatio{Width: cfg.Width, Height: cfg.Height}
		}
		images = append(images, img)
	}
	return map[string]any{"$type": "app.bsky.embed.images", "images": images}, nil
}

// readMedia reads a file of at most limit bytes.
func readMedia(ctx context.Context, m platforms.Media, limit int64) ([]byte, error) {
	if m.Open == nil {
		return nil, platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "media %s has no content", m.Filename)
	}
	rc, err := m.Open(ctx)
	if err != nil {
		return nil, &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Transient, Message: "reading the media failed", Err: err}
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Transient, Message: "reading the media failed", Err: err}
	}
	if int64(len(data)) > limit {
		return nil, invalid("media %s is over %d bytes; Bluesky allows %d", m.Filename, limit, limit)
	}
	return data, nil
}

// session is the answer of createSession and refreshSession.
type session struct {
	AccessJwt  string `json:"accessJwt"`
	RefreshJwt string `json:"refreshJwt"`
	Handle     string `json:"handle"`
	DID        string `json:"did"`
	DIDDoc     *struct {
		Service []struct {
			ID              string `json:"id"`
			Type            string `json:"type"`
			ServiceEndpoint string `json:"serviceEndpoint"`
		} `json:"service"`
	} `json:"didDoc"`
}

// credentials turns a session into credentials, keeping c's Extra and recording the PDS the DID
// document names when it is not the base URL.
func (a *Adapter) credentials(c platforms.Credentials, s session) platforms.Credentials {
	now := time.Now()
	out := c
	out.AccessToken = s.AccessJwt
	if s.RefreshJwt != "" {
		out.RefreshToken = s.RefreshJwt
	}
	out.ExpiresAt = jwtExpiry(s.AccessJwt, now.Add(accessLifetime))
	if s.RefreshJwt != "" {
		out.RefreshExpiresAt = jwtExpiry(s.RefreshJwt, now.Add(refreshLifetime))
	}
	if s.DID != "" {
		out.UserID = s.DID
	}
	if s.Handle != "" {
		out.Handle = s.Handle
	}
	if s.DIDDoc != nil {
		for _, svc := range s.DIDDoc.Service {
			if svc.ID == "#atproto_pds" || strings.HasSuffix(svc.ID, "#atproto_pds") {
				if pds := strings.TrimRight(svc.ServiceEndpoint, "/"); pds != "" && pds != a.base {
					extra := make(map[string]string, len(c.Extra)+1)
					for k, v := range c.Extra {
						extra[k] = v
					}
					extra["pds"] = pds
					out.Extra = extra
				}
			}
		}
	}
	return out
}

// jwtExpiry reads the exp claim of a JWT, or returns def for a token that is not one.
func jwtExpiry(token string, def time.Time) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return def.UTC()
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return def.UTC()
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp <= 0 {
		return def.UTC()
	}
	return time.Unix(claims.Exp, 0).UTC()
}

// Login creates a session with a handle (or DID or email) and an app password. Wrong credentials
// and accounts that need a second factor are Permanent: the user must fix them.
func (a *Adapter) Login(ctx context.Context, identifier, appPassword string) (platforms.Credentials, error) {
	raw, _ := json.Marshal(map[string]string{"identifier": strings.TrimPrefix(strings.TrimSpace(identifier), "@"), "password": appPassword})
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodPost, URL: a.base + "/xrpc/com.atproto.server.createSession", Body: raw, ContentType: "application/json"})
	if err != nil {
		return platforms.Credentials{}, err
	}
	if !r.OK() {
		e := classify(r, false)
		if e.Kind == platforms.AuthExpired || (r.Status >= 400 && r.Status < 500 && r.Status != http.StatusTooManyRequests) {
			e.Kind = platforms.Permanent
			if e.Code == "AuthenticationRequired" {
				e.Message = "invalid handle or app password"
			}
		}
		return platforms.Credentials{}, e
	}
	var s session
	if err := platforms.Decode(platforms.Bluesky, r, &s, false); err != nil {
		return platforms.Credentials{}, err
	}
	if s.AccessJwt == "" || s.DID == "" {
		if e := errorBody(r); e != nil {
			return platforms.Credentials{}, e
		}
		return platforms.Credentials{}, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no session in the answer"))
	}
	return a.credentials(platforms.Credentials{}, s), nil
}

// Refresh rotates the session with refreshSession (the refresh JWT as the bearer). A refused
// refresh token is Permanent: the user must log in again.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	if c.RefreshToken == "" {
		return c, platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "no refresh token; log in again")
	}
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodPost, URL: a.xrpc(c, "com.atproto.server.refreshSession"), Bearer: c.RefreshToken})
	if err != nil {
		return c, err
	}
	if !r.OK() {
		e := classify(r, false)
		if e.Kind == platforms.AuthExpired || (r.Status >= 400 && r.Status < 500 && r.Status != http.StatusTooManyRequests) {
			e.Kind = platforms.Permanent
			e.Message = "Bluesky refused to refresh the session; log in again: " + e.Message
		}
		return c, e
	}
	var s session
	if err := platforms.Decode(platforms.Bluesky, r, &s, false); err != nil {
		return c, err
	}
	if s.AccessJwt == "" {
		if e := errorBody(r); e != nil {
			return c, e
		}
		return c, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no accessJwt in the answer"))
	}
	return a.credentials(c, s), nil
}

// Revoke deletes the session (deleteSession with the refresh JWT).
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error {
	if c.RefreshToken == "" {
		return nil
	}
	return a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.xrpc(c, "com.atproto.server.deleteSession"), Bearer: c.RefreshToken}, nil)
}

// lookupPages bounds how far back Lookup reads the repo (100 records a page).
const lookupPages = 5

// Lookup lists the repo's posts, newest first, and returns the one with exactly this text whose
// createdAt is at or after since (createdAt is the adapter's own clock, like since), with its CID
// as the publication's Ref. Replies (a thread's parts, first comments) are not the post.
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	return a.findRecord(ctx, c, since, func(r repoPost) bool { return r.Text == p.Text && r.Reply == nil })
}

// repoPost is a post record of the account's repo as findRecord reads it.
type repoPost struct {
	Text      string `json:"text"`
	CreatedAt string `json:"createdAt"`
	// Reply is the post's place in a thread (nil, or null, for a post that answers nothing).
	Reply *struct {
		Parent strongRef `json:"parent"`
	} `json:"reply"`
}

// findRecord lists the repo's posts, newest first, up to lookupPages pages or the first older
// than since, and returns the first created at or after since that match takes, with its CID as
// the publication's Ref.
func (a *Adapter) findRecord(ctx context.Context, c platforms.Credentials, since time.Time, match func(repoPost) bool) (platforms.Publication, bool, error) {
	if c.UserID == "" {
		return platforms.Publication{}, false, platforms.Errorf(platforms.Bluesky, platforms.Permanent, 0, "the account has no DID; log in again")
	}
	since = since.Truncate(time.Millisecond)
	q := url.Values{"repo": {c.UserID}, "collection": {postNSID}, "limit": {"100"}}
	for page := 0; page < lookupPages; page++ {
		var out struct {
			Records []struct {
				URI   string   `json:"uri"`
				CID   string   `json:"cid"`
				Value repoPost `json:"value"`
			} `json:"records"`
			Cursor string `json:"cursor"`
		}
		r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, platforms.Call{Method: http.MethodGet, URL: a.xrpc(c, "com.atproto.repo.listRecords") + "?" + q.Encode(), Bearer: c.AccessToken})
		if err != nil {
			return platforms.Publication{}, false, err
		}
		if !r.OK() {
			return platforms.Publication{}, false, classify(r, false)
		}
		if err := platforms.Decode(platforms.Bluesky, r, &out, false); err != nil {
			return platforms.Publication{}, false, err
		}
		if out.Records == nil {
			if e := errorBody(r); e != nil {
				return platforms.Publication{}, false, e
			}
			return platforms.Publication{}, false, platforms.Garbled(platforms.Bluesky, r, false, fmt.Errorf("no records in the answer"))
		}
		older := false
		for _, rec := range out.Records {
			created, err := time.Parse(time.RFC3339, rec.Value.CreatedAt)
			if err != nil {
				continue
			}
			if created.Before(since) {
				older = true
				continue
			}
			if match(rec.Value) {
				pub := publication(c, rec.URI)
				pub.Ref = rec.CID
				return pub, true, nil
			}
		}
		if older || out.Cursor == "" {
			return platforms.Publication{}, false, nil
		}
		q.Set("cursor", out.Cursor)
	}
	return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.Bluesky, lookupPages)
}
