// Package tiktok publishes videos and photo posts to TikTok through the Content Posting API's
// Direct Post (networks.md §9).
//
// A post is exactly one video, or 2 to 35 photos published as a photo post (photo.go); the post's text is its caption (at most 2,200 UTF-16 code units).
// Publish queries creator_info, posts with the privacy level the target's options chose (the user
// chooses it: Herald never picks one, as TikTok's Direct Post guidelines ask) when the creator is
// still offered it, and the interactions and disclosures the options set (each interaction off
// unless turned on), initializes a FILE_UPLOAD, PUTs the bytes in chunks following the
// media transfer guide (one chunk up to 10 MB, else 10 MB chunks with the remainder in the last),
// and polls status/fetch until PUBLISH_COMPLETE. The answer to the last chunk starts the
// publication, so a failure of that call is settled by the publish's status where it can be
// (uploadEnded: every byte arrived, or TikTok refused the chunk); otherwise, and when the polling
// after it fails, the outcome is unknown (platforms.Unknown) and Lookup resolves it through
// /v2/video/list/, which lists a video only once it passed processing and moderation.
//
// The post id (publicaly_available_post_id) appears after TikTok's moderation; when it has not
// appeared within the moderation wait, Publish returns the publish_id as the publication's id.
//
// Accounts connect with Login Kit OAuth v2 with PKCE S256; UserID is the open_id.
package tiktok

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/heraldhq/herald/platforms"
)

// Production hosts. Uploads go to the upload_url TikTok returns.
const (
	DefaultBaseURL = "https://open.tiktokapis.com"
	DefaultAuthURL = "https://www.tiktok.com"
)

// TikTok's content rules (networks.md §9.2; the size limit is disputed between 1, 4 and 10 GB).
const (
	MaxCaption       = 2200
	MaxVideoBytes    = 4 << 30
	minChunk         = 5 << 20
	defaultChunkSize = 10 << 20
	defaultPoll      = 3 * time.Second // status/fetch allows 30 calls a minute per token
	maxProcessing    = 10 * time.Minute
	moderationWait   = 2 * time.Minute
	maxPollErrors    = 5
)

var videoTypes = map[string]bool{"video/mp4": true, "video/quicktime": true, "video/webm": true}

// Adapter is the TikTok adapter. It is stateless and safe for concurrent use.
type Adapter struct {
	cfg       platforms.Config
	hc        *http.Client
	api, auth string
	// chunkSize is the upload's chunk size (5 to 64 MB).
	chunkSize int64
	// moderationWait bounds the wait for the post id after PUBLISH_COMPLETE.
	moderationWait time.Duration
}

var (
	_ platforms.Adapter   = (*Adapter)(nil)
	_ platforms.Connector = (*Adapter)(nil)
)

// New returns an adapter for cfg; empty URLs mean TikTok's production hosts.
func New(cfg platforms.Config) *Adapter {
	a := &Adapter{cfg: cfg, hc: cfg.HTTPClient, chunkSize: defaultChunkSize, moderationWait: moderationWait}
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
func (a *Adapter) Platform() platforms.Platform { return platforms.TikTok }

func invalid(format string, args ...any) error {
	return platforms.Errorf(platforms.TikTok, platforms.Invalid, 0, format, args...)
}

// CaptionLength is a caption's length as TikTok counts it: UTF-16 code units.
func CaptionLength(s string) int { return len(utf16.Encode([]rune(s))) }

// Validate checks TikTok's rules: exactly one MP4, MOV or WebM video of at most 4 GB and a caption
// of at most 2,200 UTF-16 code units, or a photo post of 2 to 35 photos (validatePhotos).
func (a *Adapter) Validate(p platforms.Post) error {
	if len(p.Media) == 0 {
		return invalid("TikTok needs a video or photos; the post has none")
	}
	if err := platforms.CheckMediaShape(platforms.TikTok, a.MediaLimits(), p.Media); err != nil {
		return err
	}
	if isPhotoPost(p) {
		return validatePhotos(p)
	}
	switch {
	case !videoTypes[p.Media[0].ContentType]:
		return invalid("TikTok takes MP4, MOV or WebM videos; %q is %s", p.Media[0].Filename, p.Media[0].ContentType)
	case p.Media[0].Size > MaxVideoBytes:
		return invalid("the video is %d bytes; TikTok allows 4 GB", p.Media[0].Size)
	}
	if n := CaptionLength(p.Text); n > MaxCaption {
		return invalid("text is %d characters (UTF-16); TikTok allows %d in a caption", n, MaxCaption)
	}
	return nil
}

// creatorInfo is the data of creator_info/query.
type creatorInfo struct {
	Username            string   `json:"creator_username"`
	Nickname            string   `json:"creator_nickname"`
	PrivacyLevelOptions []string `json:"privacy_level_options"`
	CommentDisabled     bool     `json:"comment_disabled"`
	DuetDisabled        bool     `json:"duet_disabled"`
	StitchDisabled      bool     `json:"stitch_disabled"`
	MaxVideoDuration    int      `json:"max_video_post_duration_sec"`
}

func (a *Adapter) creatorInfo(ctx context.Context, c platforms.Credentials) (creatorInfo, error) {
	var info creatorInfo
	err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/post/publish/creator_info/query/", Bearer: c.AccessToken, ContentType: "application/json; charset=UTF-8"}, &info)
	return info, err
}

// Choices reads the creator's current choices (platforms.ChoiceReader).
func (a *Adapter) Choices(ctx context.Context, c platforms.Credentials) (platforms.Choices, error) {
	info, err := a.creatorInfo(ctx, c)
	if err != nil {
		return platforms.Choices{}, err
	}
	nick := info.Nickname
	if nick == "" {
		nick = info.Username
	}
	return platforms.Choices{PrivacyLevelOptions: info.PrivacyLevelOptions, MaxVideoPostDurationSec: info.MaxVideoDuration,
		CommentDisabled: info.CommentDisabled, DuetDisabled: info.DuetDisabled, StitchDisabled: info.StitchDisabled, Nickname: nick}, nil
}

// MediaLimits are TikTok's (platforms.MediaLimiter): one video, or a photo post of 2 to 35 photos
// (PNG converted to JPEG).
func (a *Adapter) MediaLimits() platforms.MediaLimits {
	return platforms.MediaLimits{Required: true, MaxItems: MaxPhotos, MinItems: MinPhotos, MaxImages: MaxPhotos, MinImages: MinPhotos, MaxVideos: 1,
		Types: []string{"image/jpeg", "image/png", "video/mp4", "video/quicktime", "video/webm"}, MaxImageBytes: MaxPhotoBytes, MaxVideoBytes: MaxVideoBytes, VideoAlone: true}
}

// postInfo is the Direct Post's post_info for the target's options, as the creator may post now:
// a privacy level the creator is no longer offered, or an interaction the creator turned off, is
// refused (Permanent), never replaced by another.
func postInfo(text string, o *platforms.TikTokOptions, info creatorInfo) (map[string]any, error) {
	if o == nil || o.PrivacyLevel == "" {
		return nil, &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Code: "privacy_level_required",
			Message: "TikTok asks the creator to choose who can see the post; the post chose no privacy level (offered: " + strings.Join(info.PrivacyLevelOptions, ", ") + ")"}
	}
	if !slices.Contains(info.PrivacyLevelOptions, o.PrivacyLevel) {
		return nil, &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Code: "privacy_level_option_mismatch",
			Message: o.PrivacyLevel + " is no longer offered to this creator (offered: " + strings.Join(info.PrivacyLevelOptions, ", ") + ")"}
	}
	if (o.AllowComment && info.CommentDisabled) || (o.AllowDuet && info.DuetDisabled) || (o.AllowStitch && info.StitchDisabled) {
		return nil, &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Code: "interaction_disabled",
			Message: "the post allows an interaction the creator has turned off in TikTok"}
	}
	return map[string]any{
		"title": text, "privacy_level": o.PrivacyLevel,
		"disable_comment": !o.AllowComment, "disable_duet": !o.AllowDuet, "disable_stitch": !o.AllowStitch,
		"brand_content_toggle": o.BrandedContent, "brand_organic_toggle": o.BrandOrganic, "is_aigc": o.IsAIGenerated,
		"video_cover_timestamp_ms": 1000,
	}, nil
}

// ChunkPlan is how a video of size bytes is cut for FILE_UPLOAD with chunks of about chunk bytes:
// one chunk when it fits, else floor(size/chunk) chunks, the last taking the remainder.
func ChunkPlan(size, chunk int64) (chunkSize int64, count int) {
	if size <= chunk {
		return size, 1
	}
	return chunk, int(size / chunk)
}

// Publish uploads the video as a Direct Post and waits until TikTok published it.
func (a *Adapter) Publish(ctx context.Context, c platforms.Credentials, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	info, err := a.creatorInfo(ctx, c)
	if err != nil {
		return platforms.Result{}, err
	}
	if isPhotoPost(p) {
		return a.publishPhotos(ctx, c, p, info)
	}
	opts, _ := p.Options.(*platforms.TikTokOptions)
	pi, err := postInfo(p.Text, opts, info)
	if err != nil {
		return platforms.Result{}, err
	}
	m := p.Media[0]
	rc, err := m.Open(ctx)
	if err != nil {
		return platforms.Result{}, &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Transient, Message: "opening the video failed", Err: err}
	}
	defer rc.Close()
	var src io.Reader = rc
	size := m.Size
	if size <= 0 {
		data, err := io.ReadAll(io.LimitReader(rc, MaxVideoBytes+1))
		if err != nil {
			return platforms.Result{}, &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Transient, Message: "reading the video failed", Err: err}
		}
		if len(data) == 0 || len(data) > MaxVideoBytes {
			return platforms.Result{}, invalid("the video is %d bytes; TikTok takes 1 byte to 4 GB", len(data))
		}
		src, size = bytes.NewReader(data), int64(len(data))
	}
	chunk, count := ChunkPlan(size, max(a.chunkSize, minChunk))
	initBody, _ := json.Marshal(map[string]any{
		"post_info":   pi,
		"source_info": map[string]any{"source": "FILE_UPLOAD", "video_size": size, "chunk_size": chunk, "total_chunk_count": count},
	})
	var init struct {
		PublishID string `json:"publish_id"`
		UploadURL string `json:"upload_url"`
	}
	if err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/post/publish/video/init/", Body: initBody, Bearer: c.AccessToken, ContentType: "application/json; charset=UTF-8"}, &init); err != nil {
		return platforms.Result{}, err
	}
	if init.PublishID == "" || init.UploadURL == "" {
		return platforms.Result{}, invalidBody(http.StatusOK, "no publish_id or upload_url", false)
	}
	if err := a.upload(ctx, init.UploadURL, src, m.ContentType, size, chunk, count); err != nil {
		if err = a.uploadEnded(ctx, c, init.PublishID, size, err); err != nil {
			return platforms.Result{}, err
		}
	}
	id, err := a.awaitPublish(ctx, c, init.PublishID)
	if err != nil {
		return platforms.Result{}, err
	}
	pub := platforms.Publication{ID: id}
	if id != init.PublishID {
		pub.URL = "https://www.tiktok.com/@" + url.PathEscape(or(info.Username, c.Handle)) + "/video/" + url.PathEscape(id)
	}
	return platforms.Result{Publication: pub}, nil
}

// upload PUTs the chunks in order; the last one creates the post.
func (a *Adapter) upload(ctx context.Context, uploadURL string, src io.Reader, ctype string, size, chunk int64, count int) error {
	var first int64
	for i := range count {
		n := chunk
		if i == count-1 {
			n = size - first
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(src, buf); err != nil {
			return &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Message: "reading the video failed (is its size right?)", Err: err}
		}
		last := i == count-1
		r, err := platforms.Send(ctx, a.hc, platforms.TikTok, platforms.Call{Method: http.MethodPut, URL: uploadURL, Body: buf, ContentType: ctype, Create: last,
			Header: http.Header{"Content-Range": {fmt.Sprintf("bytes %d-%d/%d", first, first+n-1, size)}}})
		if err != nil {
			return err
		}
		if r.Status < 200 || r.Status > 299 {
			var env envelope
			_ = json.Unmarshal(r.Body, &env)
			return classify(r.Status, env.Error.Code, env.Error.Message, last)
		}
		first += n
	}
	return nil
}

// status is the data of status/fetch.
type status struct {
	Status        string            `json:"status"`
	FailReason    string            `json:"fail_reason"`
	PostIDs       []json.RawMessage `json:"publicaly_available_post_id"`
	UploadedBytes int64             `json:"uploaded_bytes"`
}

// uploadEnded settles an upload whose last chunk failed with an unknown outcome (err) by reading
// the publish's status: all size bytes uploaded means TikTok took the video, and the publish goes
// on (nil: await it); fewer bytes after TikTok answered the chunk with an error means the chunk
// never arrived, so nothing was created and sending the post again is safe (Transient). When the
// answer was lost instead (a reset, a timeout), the chunk may still be on its way, and the outcome
// stays unknown; so it does when the status cannot be read (tried up to maxPollErrors times, as
// awaitPublish does). Without this, the lookup that
// resolves an unknown outcome would list the creator's videos while the new one is still in
// processing or moderation, where TikTok does not list it, and the post would be sent twice.
func (a *Adapter) uploadEnded(ctx context.Context, c platforms.Credentials, publishID string, size int64, err error) error {
	if platforms.KindOf(err) != platforms.Unknown {
		return err
	}
	body, _ := json.Marshal(map[string]string{"publish_id": publishID})
	wait := a.cfg.PollInterval
	if wait <= 0 {
		wait = defaultPoll
	}
	var st status
	for tries := 1; ; tries++ {
		serr := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/post/publish/status/fetch/", Body: body, Bearer: c.AccessToken, ContentType: "application/json; charset=UTF-8"}, &st)
		if serr == nil {
			break
		}
		if k := platforms.KindOf(serr); tries >= maxPollErrors || k == platforms.AuthExpired || k == platforms.Permanent {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
	var pe *platforms.Error
	answered := errors.As(err, &pe) && pe.Status != 0
	switch {
	case st.UploadedBytes >= size || st.Status == "PUBLISH_COMPLETE" || st.Status == "SEND_TO_USER_INBOX" || st.Status == "FAILED":
		return nil // awaitPublish reads the outcome
	case answered:
		return &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Transient, Status: pe.Status, Code: pe.Code,
			Message: fmt.Sprintf("TikTok answered %d to the last chunk and has %d of the video's %d bytes: nothing was published", pe.Status, st.UploadedBytes, size), Err: err}
	}
	return err
}

// awaitPublish polls status/fetch until the post is published and returns its id (the publish_id
// when the post id has not appeared within the moderation wait). The post exists once the upload
// ended, so a poll that keeps failing ends in Unknown, never in a retryable error.
func (a *Adapter) awaitPublish(ctx context.Context, c platforms.Credentials, publishID string) (string, error) {
	wait := a.cfg.PollInterval
	if wait <= 0 {
		wait = defaultPoll
	}
	body, _ := json.Marshal(map[string]string{"publish_id": publishID})
	deadline := time.Now().Add(maxProcessing)
	var completeSince time.Time
	errs := 0
	for {
		var st status
		err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/post/publish/status/fetch/", Body: body, Bearer: c.AccessToken, ContentType: "application/json; charset=UTF-8"}, &st)
		switch {
		case err != nil && ctx.Err() != nil:
			return "", unknown("the wait for the post was cut short", ctx.Err())
		case err != nil:
			if errs++; errs >= maxPollErrors || platforms.KindOf(err) == platforms.AuthExpired || platforms.KindOf(err) == platforms.Permanent {
				return "", unknown("the post's status could not be read", err)
			}
		case st.Status == "FAILED":
			e := &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Code: st.FailReason, Message: "TikTok did not publish the video: " + st.FailReason}
			if st.FailReason == "spam_risk_too_many_posts" {
				e.Kind, e.ResetAt = platforms.RateLimited, time.Now().Add(24*time.Hour)
			}
			return "", e
		case st.Status == "PUBLISH_COMPLETE" && len(st.PostIDs) > 0:
			if id := strings.Trim(string(st.PostIDs[0]), `"`); id != "" {
				return id, nil
			}
		case st.Status == "PUBLISH_COMPLETE" || st.Status == "SEND_TO_USER_INBOX":
			if completeSince.IsZero() {
				completeSince = time.Now()
			}
			if time.Since(completeSince) >= a.moderationWait {
				return publishID, nil
			}
		default:
			errs = 0
		}
		if time.Now().After(deadline) {
			return "", unknown("TikTok is still processing the video after "+maxProcessing.String(), nil)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", unknown("the wait for the post was cut short", ctx.Err())
		case <-t.C:
		}
	}
}

func unknown(msg string, err error) *platforms.Error {
	e := &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Unknown, Message: msg + "; the video was uploaded and may be published", Err: err}
	var pe *platforms.Error
	if err != nil && errors.As(err, &pe) {
		e.Status, e.Code = pe.Status, pe.Code
	}
	return e
}
