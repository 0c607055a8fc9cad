package tiktok

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Photo posts (networks.md §9.2): POST /v2/post/publish/content/init/ with media_type PHOTO,
// post_mode DIRECT_POST, post_info {title, description, privacy_level, disable_comment,
// auto_add_music, disclosures} and source_info {source: PULL_FROM_URL, photo_images: [urls],
// photo_cover_index}. TikTok fetches the photos itself, in the order given, so every photo needs
// a public URL (Media.URL); the call answers a publish_id, and the publication is awaited through
// status/fetch as a video's is. TikTok takes JPEG and WebP photos, not PNG: Herald converts other
// photos to JPEG first (Photos, platforms.ConformImages).

// Photo post limits (networks.md §9.2: ≤ 35 photos, title ≤ 90, description ≤ 4,000).
const (
	MinPhotos          = 2
	MaxPhotos          = 35
	MaxPhotoTitle      = 90
	MaxPhotoDesc       = 4000
	MaxPhotoBytes      = 20 << 20
	photoContentInitEP = "/v2/post/publish/content/init/"
)

// Photos is what TikTok takes as a photo: JPEG or WebP (never PNG).
var Photos = platforms.ImageRule{Types: []string{"image/jpeg", "image/webp"}}

// isPhotoPost reports whether the post is a photo post (its media are photos).
func isPhotoPost(p platforms.Post) bool { return len(p.Media) > 0 && !p.Media[0].IsVideo() }

// validatePhotos checks a photo post: JPEG or WebP photos (or ones Herald converts), at most 20 MB
// each, and a description of at most 4,000 UTF-16 code units. The count and the mix are
// CheckMediaShape's.
func validatePhotos(p platforms.Post) error {
	for i, m := range p.Media {
		switch {
		case !Photos.Takes(m.ContentType) && !Photos.Convertible(m):
			return invalid("TikTok photo posts take JPEG or WebP photos; media %d (%q) is %s", i+1, m.Filename, m.ContentType)
		case m.Size > MaxPhotoBytes:
			return invalid("photo %d is %d bytes; TikTok allows 20 MB", i+1, m.Size)
		}
	}
	if n := CaptionLength(p.Text); n > MaxPhotoDesc {
		return invalid("text is %d characters (UTF-16); TikTok allows %d in a photo post's description", n, MaxPhotoDesc)
	}
	return nil
}

// PhotoTitle is a photo post's title: the text's first line cut to 90 characters.
func PhotoTitle(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > MaxPhotoTitle {
		line = string([]rune(line)[:MaxPhotoTitle])
	}
	return line
}

// publishPhotos creates a photo post from the photos' public URLs and waits until TikTok
// published it. The content/init call creates the post (TikTok fetches the photos after it), so
// its failure without an answer is an unknown outcome.
func (a *Adapter) publishPhotos(ctx context.Context, c platforms.Credentials, p platforms.Post, info creatorInfo) (platforms.Result, error) {
	opts, _ := p.Options.(*platforms.TikTokOptions)
	if opts != nil && (opts.AllowDuet || opts.AllowStitch) {
		// A photo post has no duets or stitches: what the options say of them does not apply.
		o := *opts
		o.AllowDuet, o.AllowStitch = false, false
		opts = &o
	}
	pi, err := postInfo(p.Text, opts, info)
	if err != nil {
		return platforms.Result{}, err
	}
	p, err = platforms.ConformImages(ctx, platforms.TikTok, p, Photos)
	if err != nil {
		return platforms.Result{}, err
	}
	urls := make([]string, len(p.Media))
	for i, m := range p.Media {
		if m.URL == "" {
			return platforms.Result{}, platforms.Errorf(platforms.TikTok, platforms.Permanent, 0, "photo %d has no public URL; TikTok fetches photos by URL", i+1)
		}
		urls[i] = m.URL
	}
	// A photo post's post_info: no duet, stitch or video cover; the text is the description,
	// its first line the title.
	delete(pi, "disable_duet")
	delete(pi, "disable_stitch")
	delete(pi, "video_cover_timestamp_ms")
	pi["title"], pi["description"] = PhotoTitle(p.Text), p.Text
	cover := 0
	if opts != nil {
		cover = opts.PhotoCoverIndex
	}
	body, _ := json.Marshal(map[string]any{
		"post_info":   pi,
		"source_info": map[string]any{"source": "PULL_FROM_URL", "photo_images": urls, "photo_cover_index": cover},
		"post_mode":   "DIRECT_POST",
		"media_type":  "PHOTO",
	})
	var init struct {
		PublishID string `json:"publish_id"`
	}
	if err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.api + photoContentInitEP, Body: body, Bearer: c.AccessToken, ContentType: "application/json; charset=UTF-8", Create: true}, &init); err != nil {
		return platforms.Result{}, err
	}
	if init.PublishID == "" {
		return platforms.Result{}, invalidBody(http.StatusOK, "no publish_id", true)
	}
	id, err := a.awaitPublish(ctx, c, init.PublishID)
	if err != nil {
		return platforms.Result{}, err
	}
	pub := platforms.Publication{ID: id}
	if id != init.PublishID {
		pub.URL = "https://www.tiktok.com/@" + url.PathEscape(or(info.Username, c.Handle)) + "/photo/" + url.PathEscape(id)
	}
	return platforms.Result{Publication: pub}, nil
}
