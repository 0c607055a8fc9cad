// Package pinterest publishes Pins through the Pinterest API v5 (networks.md §8).
//
// A Pin needs media and a board. The board is the one chosen at connect time
// (Credentials.Extra["board_id"]); Exchange stores the account's first board there, and Publish
// falls back to the first board when none is stored. The post's text becomes the Pin's
// description (at most 800 characters) and its first line the title when that line fits in 100
// characters. One image is sent as media_source image_url when the file has a public URL
// (Pinterest fetches it) and as image_base64 otherwise; two to five images make a carousel
// (multiple_image_urls, public URLs required); one video is registered with POST /v5/media,
// uploaded to the returned upload_url as a multipart form, polled with GET /v5/media/{id} until
// "succeeded", and pinned as video_id with the first frame as its cover.
//
// Accounts connect with OAuth 2.0 (the token endpoint takes the client's HTTP Basic credentials;
// no PKCE). Every refresh returns a new refresh token. Pinterest has no token revocation endpoint:
// Revoke does nothing and the user removes the app in their settings.
package pinterest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Production hosts.
const (
	DefaultBaseURL = "https://api.pinterest.com"
	DefaultAuthURL = "https://www.pinterest.com"
)

// Pinterest's content rules (networks.md §8.2; media sizes from integrators, unconfirmed).
const (
	MaxTitleChars  = 100
	MaxDescChars   = 800
	MaxImages      = 5
	MaxImageBytes  = 20 << 20
	MaxVideoBytes  = 2 << 30
	defaultPoll    = 2 * time.Second
	maxProcessing  = 15 * time.Minute
	maxMemoryVideo = 512 << 20
)

// Adapter is the Pinterest adapter. It is stateless and safe for concurrent use.
type Adapter struct {
	cfg       platforms.Config
	hc        *http.Client
	api, auth string
}

var (
	_ platforms.Adapter   = (*Adapter)(nil)
	_ platforms.Connector = (*Adapter)(nil)
)

// New returns an adapter for cfg; empty URLs mean Pinterest's production hosts. Video uploads go
// to the upload_url Pinterest returns, so Config.UploadURL is not used.
func New(cfg platforms.Config) *Adapter {
	a := &Adapter{cfg: cfg, hc: cfg.HTTPClient}
	if a.hc == nil {
		a.hc = platforms.DefaultHTTPClient()
	}
	a.api = strings.TrimRight(or(cfg.BaseURL, DefaultBaseURL), "/")
	a.auth = strings.TrimRight(or(cfg.AuthURL, DefaultAuthURL), "/")
	return a
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Platform names the network.
func (a *Adapter) Platform() platforms.Platform { return platforms.Pinterest }

func invalid(format string, args ...any) error {
	return platforms.Errorf(platforms.Pinterest, platforms.Invalid, 0, format, args...)
}

// Title is the Pin title Herald derives from a post's text: its first line when that fits in 100
// characters, else none.
func Title(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > MaxTitleChars {
		return ""
	}
	return line
}

var (
	imageTypes  = map[string]bool{"image/jpeg": true, "image/png": true, "image/webp": true, "image/gif": true}
	base64Types = map[string]bool{"image/jpeg": true, "image/png": true}
	videoTypes  = map[string]bool{"video/mp4": true, "video/quicktime": true, "video/x-m4v": true}
)

// Validate checks Pinterest's rules: media is required (one image, a carousel of 2 to 5 images
// with public URLs, or one video), images JPEG, PNG, WebP or GIF (JPEG or PNG when they have no
// public URL), videos MP4, MOV or M4V, and a description of at most 800 characters.
func (a *Adapter) Validate(p platforms.Post) error {
	if n := utf8.RuneCountInString(p.Text); n > MaxDescChars {
		return invalid("text is %d characters; Pinterest allows %d in a Pin description", n, MaxDescChars)
	}
	if len(p.Media) == 0 {
		return invalid("Pinterest needs an image or a video; the post has none")
	}
	if err := platforms.CheckMediaShape(platforms.Pinterest, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	switch {
	case p.Media[0].IsVideo():
		m := p.Media[0]
		if !videoTypes[m.ContentType] {
			return invalid("Pinterest takes MP4, MOV or M4V videos; %q is %s", m.Filename, m.ContentType)
		}
		if m.Size > MaxVideoBytes {
			return invalid("the video is %d bytes; Pinterest allows 2 GB", m.Size)
		}
		return nil
	}
	for _, m := range p.Media {
		switch {
		case !imageTypes[m.ContentType]:
			return invalid("Pinterest takes JPEG, PNG, WebP or GIF images; %q is %s", m.Filename, m.ContentType)
		case m.Size > MaxImageBytes:
			return invalid("image %q is %d bytes; Pinterest allows 20 MB", m.Filename, m.Size)
		case len(p.Media) > 1 && m.URL == "":
			return invalid("a Pinterest carousel needs a public URL for every image; %q has none", m.Filename)
		case m.URL == "" && !base64Types[m.ContentType]:
			return invalid("without a public URL Pinterest takes JPEG or PNG images; %q is %s", m.Filename, m.ContentType)
		}
	}
	return nil
}

// Publish creates the Pin (uploading a video first).
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	opts, _ := p.Options.(*platforms.PinterestOptions)
	if opts == nil || opts.BoardID == "" {
		return platforms.Result{}, &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Code: "board_required",
			Message: "the Pin names no board; choose one of the account's boards (options.board_id)"}
	}
	board := opts.BoardID
	source, err := a.mediaSource(ctx, c, p.Media)
	if err != nil {
		return platforms.Result{}, err
	}
	pin := map[string]any{"board_id": board, "description": p.Text, "media_source": source}
	if t := opts.Title; t != "" {
		pin["title"] = t
	} else if t := Title(p.Text); t != "" {
		pin["title"] = t
	}
	if opts.Link != "" {
		pin["link"] = opts.Link
	}
	if alt := p.Media[0].AltText; alt != "" && !p.Media[0].IsVideo() {
		pin["alt_text"] = alt
	}
	body, _ := json.Marshal(pin)
	r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodPost, URL: a.api + "/v5/pins", Body: body, ContentType: "application/json", Bearer: c.AccessToken, Create: true})
	if err != nil {
		return platforms.Result{}, err
	}
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		return platforms.Result{}, classify(r, true)
	}
	var created struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(r.Body, &created) != nil || created.ID == "" {
		return platforms.Result{}, invalidBody(r.Status, "no Pin id", true)
	}
	return platforms.Result{
		Publication: platforms.Publication{ID: created.ID, URL: "https://www.pinterest.com/pin/" + url.PathEscape(created.ID) + "/"},
		Rate:        rateInfo(r.Header),
	}, nil
}

// mediaSource builds the Pin's media_source, uploading a video first.
func (a *Adapter) mediaSource(ctx context.Context, c platforms.Credentials, media []platforms.Media) (map[string]any, error) {
	m := media[0]
	switch {
	case m.IsVideo():
		id, err := a.uploadVideo(ctx, c, m)
		if err != nil {
			return nil, err
		}
		return map[string]any{"source_type": "video_id", "media_id": id, "cover_image_key_frame_time": 0}, nil
	case len(media) > 1:
		items := make([]map[string]string, 0, len(media))
		for _, im := range media {
			items = append(items, map[string]string{"url": im.URL})
		}
		return map[string]any{"source_type": "multiple_image_urls", "items": items}, nil
	case m.URL != "":
		return map[string]any{"source_type": "image_url", "url": m.URL}, nil
	}
	data, err := readAll(ctx, m, MaxImageBytes)
	if err != nil {
		return nil, err
	}
	return map[string]any{"source_type": "image_base64", "content_type": m.ContentType, "data": base64.StdEncoding.EncodeToString(data)}, nil
}

// readAll reads a media file into memory.
func readAll(ctx context.Context, m platforms.Media, limit int64) ([]byte, error) {
	rc, err := m.Open(ctx)
	if err != nil {
		return nil, &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Transient, Message: "opening " + m.Filename + " failed", Err: err}
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Transient, Message: "reading " + m.Filename + " failed", Err: err}
	}
	if int64(len(data)) > limit {
		return nil, invalid("%q is larger than %d bytes", m.Filename, limit)
	}
	return data, nil
}

// registration is the answer of POST /v5/media.
type registration struct {
	MediaID          string            `json:"media_id"`
	UploadURL        string            `json:"upload_url"`
	UploadParameters map[string]string `json:"upload_parameters"`
}

// uploadVideo registers, uploads and waits for a video, and returns its media id.
func (a *Adapter) uploadVideo(ctx context.Context, c platforms.Credentials, m platforms.Media) (string, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodPost, URL: a.api + "/v5/media", Body: []byte(`{"media_type":"video"}`), ContentType: "application/json", Bearer: c.AccessToken})
	if err != nil {
		return "", err
	}
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		return "", classify(r, false)
	}
	var reg registration
	if json.Unmarshal(r.Body, &reg) != nil || reg.MediaID == "" || reg.UploadURL == "" {
		return "", invalidBody(r.Status, "no media_id or upload_url", false)
	}
	if err := a.postFile(ctx, reg, m); err != nil {
		return "", err
	}
	return reg.MediaID, a.awaitMedia(ctx, c, reg.MediaID)
}

// postFile sends the video to upload_url as a multipart form: every upload parameter, then the
// file (last, as S3 requires), with an exact Content-Length.
func (a *Adapter) postFile(ctx context.Context, reg registration, m platforms.Media) error {
	var src io.Reader
	size := m.Size
	if size <= 0 {
		data, err := readAll(ctx, m, maxMemoryVideo)
		if err != nil {
			return err
		}
		src, size = bytes.NewReader(data), int64(len(data))
	} else {
		rc, err := m.Open(ctx)
		if err != nil {
			return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Transient, Message: "opening the video failed", Err: err}
		}
		defer rc.Close()
		src = io.LimitReader(rc, size)
	}
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	// Parameters first, in a stable order; Content-Type describes the form itself.
	for _, k := range slices.Sorted(maps.Keys(reg.UploadParameters)) {
		if strings.EqualFold(k, "Content-Type") {
			continue
		}
		if err := mw.WriteField(k, reg.UploadParameters[k]); err != nil {
			return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Message: "building the upload form failed", Err: err}
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, or(m.Filename, "video.mp4")))
	h.Set("Content-Type", m.ContentType)
	if _, err := mw.CreatePart(h); err != nil {
		return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Message: "building the upload form failed", Err: err}
	}
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, reg.UploadURL, io.MultiReader(&head, src, strings.NewReader(tail)))
	if err != nil {
		return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Message: "the upload_url does not parse", Err: err}
	}
	req.ContentLength = int64(head.Len()) + size + int64(len(tail))
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := a.hc.Do(req)
	if err != nil {
		return platforms.NoAnswer(platforms.Pinterest, err, false, false)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusForbidden:
		// S3 outages, and upload parameters that expired: a new registration will do.
		return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Transient, Status: resp.StatusCode, Message: "the video upload failed: " + strings.TrimSpace(string(body))}
	}
	return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Status: resp.StatusCode, Message: "the video upload was refused: " + strings.TrimSpace(string(body))}
}

// awaitMedia polls GET /v5/media/{id} until the video is "succeeded". No Pin exists yet, so every
// failure here can be retried from the start.
func (a *Adapter) awaitMedia(ctx context.Context, c platforms.Credentials, id string) error {
	wait := a.cfg.PollInterval
	if wait <= 0 {
		wait = defaultPoll
	}
	deadline := time.Now().Add(maxProcessing)
	for {
		r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodGet, URL: a.api + "/v5/media/" + url.PathEscape(id), Bearer: c.AccessToken})
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK {
			return classify(r, false)
		}
		var st struct {
			Status string `json:"status"`
		}
		if json.Unmarshal(r.Body, &st) != nil || st.Status == "" {
			return invalidBody(r.Status, "no media status", false)
		}
		switch st.Status {
		case "succeeded":
			return nil
		case "failed":
			return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Code: "failed", Message: "Pinterest could not process the video"}
		}
		if time.Now().After(deadline) {
			return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Transient, Message: "Pinterest is still processing the video after " + maxProcessing.String()}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Transient, Message: "gave up waiting for the video", Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// board is a Pinterest board.
type board struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// maxBoardPages bounds the board listing of Choices: 250 boards a page, 8 pages.
const maxBoardPages = 8

// Choices lists the account's boards (platforms.ChoiceReader), following the listing's bookmark.
func (a *Adapter) Choices(ctx context.Context, c platforms.Credentials) (platforms.Choices, error) {
	var out platforms.Choices
	bookmark := ""
	for page := 0; page < maxBoardPages; page++ {
		u := a.api + "/v5/boards?page_size=250"
		if bookmark != "" {
			u += "&bookmark=" + url.QueryEscape(bookmark)
		}
		r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodGet, URL: u, Bearer: c.AccessToken})
		if err != nil {
			return out, err
		}
		if r.Status != http.StatusOK {
			return out, classify(r, false)
		}
		var list struct {
			Items    []board `json:"items"`
			Bookmark *string `json:"bookmark"`
		}
		if err := json.Unmarshal(r.Body, &list); err != nil {
			return out, invalidBody(r.Status, "not a board list", false)
		}
		for _, b := range list.Items {
			out.Boards = append(out.Boards, platforms.Choice{ID: b.ID, Name: b.Name})
		}
		if list.Bookmark == nil || *list.Bookmark == "" {
			break
		}
		bookmark = *list.Bookmark
	}
	return out, nil
}

// MediaLimits are Pinterest's (platforms.MediaLimiter): a photo, 2 to 5 photos (a carousel Pin)
// or a video.
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{Required: true, MaxItems: MaxImages, MinItems: 2, MaxImages: MaxImages, MaxVideos: 1, Types: []string{"image/jpeg", "image/png", "video/mp4", "video/quicktime"},
		MaxImageBytes: MaxImageBytes, MaxVideoBytes: MaxVideoBytes, VideoAlone: true}
}

// firstBoard returns the account's first board (zero when it has none).
func (a *Adapter) firstBoard(ctx context.Context, token string) (board, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodGet, URL: a.api + "/v5/boards?page_size=25", Bearer: token})
	if err != nil {
		return board{}, err
	}
	if r.Status != http.StatusOK {
		return board{}, classify(r, false)
	}
	var list struct {
		Items []board `json:"items"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		return board{}, invalidBody(r.Status, "not a board list", false)
	}
	if len(list.Items) == 0 {
		return board{}, nil
	}
	return list.Items[0], nil
}
