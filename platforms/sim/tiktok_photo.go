package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"unicode/utf16"
	"unicode/utf8"
)

// TikTok photo posts (networks.md §9.2): POST /v2/post/publish/content/init/ with media_type
// PHOTO, post_mode DIRECT_POST, post_info {title ≤ 90 characters, description ≤ 4,000 UTF-16
// code units, privacy_level, disable_comment, disclosures} and source_info {source
// PULL_FROM_URL, photo_images (1 to 35 URLs), photo_cover_index (0-based, less than the number of
// photos)}. The call counts against video/init's window ("video_init", 6 a minute) and the
// creator's daily posts; it fetches each photo (JPEG or WebP only: a PNG or anything else answers
// 400 invalid_params), creates the post, and the post then goes through the same processing and
// moderation as a video, read through status/fetch. The record holds the photos in the order of
// photo_images, with their sniffed types and sizes, and the options title, description,
// privacy_level, photo_cover_index and media_type PHOTO.

const (
	ttMaxPhotos     = 35
	ttMaxPhotoTitle = 90
	ttMaxPhotoDesc  = 4000
	ttMaxPhotoBytes = 20 << 20
)

// initContent is POST /v2/post/publish/content/init/ (photo posts).
func (t *ttSim) initContent(w http.ResponseWriter, r *http.Request, u ttUser) {
	var req struct {
		PostInfo struct {
			Title              string `json:"title"`
			Description        string `json:"description"`
			PrivacyLevel       string `json:"privacy_level"`
			DisableComment     bool   `json:"disable_comment"`
			AutoAddMusic       bool   `json:"auto_add_music"`
			BrandContentToggle bool   `json:"brand_content_toggle"`
			BrandOrganicToggle bool   `json:"brand_organic_toggle"`
		} `json:"post_info"`
		SourceInfo struct {
			Source          string   `json:"source"`
			PhotoImages     []string `json:"photo_images"`
			PhotoCoverIndex *int     `json:"photo_cover_index"`
		} `json:"source_info"`
		PostMode  string `json:"post_mode"`
		MediaType string `json:"media_type"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		t.invalidParams(w, "The request body is not valid JSON.")
		return
	}
	pi, si := req.PostInfo, req.SourceInfo
	n := len(si.PhotoImages)
	switch {
	case req.MediaType != "PHOTO":
		t.invalidParams(w, "media_type must be PHOTO.")
		return
	case req.PostMode != "DIRECT_POST" && req.PostMode != "MEDIA_UPLOAD":
		t.invalidParams(w, "post_mode must be DIRECT_POST or MEDIA_UPLOAD.")
		return
	case si.Source != "PULL_FROM_URL":
		t.invalidParams(w, "source_info.source must be PULL_FROM_URL for photo posts.")
		return
	case n < 1 || n > ttMaxPhotos:
		t.invalidParams(w, fmt.Sprintf("source_info.photo_images must have 1 to %d URLs, not %d.", ttMaxPhotos, n))
		return
	case si.PhotoCoverIndex == nil || *si.PhotoCoverIndex < 0 || *si.PhotoCoverIndex >= n:
		t.invalidParams(w, fmt.Sprintf("source_info.photo_cover_index must be an index of photo_images (0 to %d).", n-1))
		return
	case utf8.RuneCountInString(pi.Title) > ttMaxPhotoTitle:
		t.invalidParams(w, fmt.Sprintf("The title is longer than %d characters.", ttMaxPhotoTitle))
		return
	case len(utf16.Encode([]rune(pi.Description))) > ttMaxPhotoDesc:
		t.invalidParams(w, fmt.Sprintf("The description is longer than %d characters.", ttMaxPhotoDesc))
		return
	}
	if t.privacyRefused(w, pi.PrivacyLevel, pi.BrandContentToggle) {
		return
	}
	if off := t.n.Sim.ttInteractionsOff(); off[0] && !pi.DisableComment {
		t.invalidParams(w, "An interaction the creator turned off in TikTok is enabled in post_info.")
		return
	}
	var files []File
	for i, raw := range si.PhotoImages {
		if uu, err := url.Parse(raw); err != nil || (uu.Scheme != "http" && uu.Scheme != "https") || uu.Host == "" {
			t.invalidParams(w, fmt.Sprintf("source_info.photo_images[%d] is not a valid URL.", i))
			return
		}
		data := t.fetch(r.Context(), raw)
		if data == nil || len(data) > ttMaxPhotoBytes {
			t.invalidParams(w, fmt.Sprintf("source_info.photo_images[%d] could not be downloaded (or is over 20 MB).", i))
			return
		}
		typ := http.DetectContentType(data)
		if typ != "image/jpeg" && typ != "image/webp" {
			t.invalidParams(w, fmt.Sprintf("source_info.photo_images[%d] is %s; photo posts take JPEG or WebP.", i, typ))
			return
		}
		sum := sha256.Sum256(data)
		files = append(files, File{SHA256: hex.EncodeToString(sum[:]), Type: typ, Size: int64(len(data))})
	}
	if _, _, _, ok := t.n.Take("daily_posts", u.id, 1, ttLimitDailyPosts); !ok {
		t.reply(w, http.StatusForbidden, nil, "spam_risk_too_many_posts", "The daily post cap of this creator is reached.")
		return
	}
	now := t.n.Sim.Now()
	pub := &ttPublish{id: "p_pub_url~v2-1." + RandomID(10), owner: u.id, handle: u.handle, caption: pi.Description, privacy: pi.PrivacyLevel,
		source: "PULL_FROM_URL", created: now.UTC(), done: true, received: int64(n), sha: files[0].SHA256,
		readyAt: now.Add(t.n.Sim.opts.ProcessingDelay), postID: ttPostID()}
	pub.moderated = pub.readyAt.Add(t.moderationDelay())
	t.n.Store.Put("tt-pub:"+pub.id, pub)
	rec := Record{ID: pub.postID, Platform: string(t.n.Platform), Account: u.id, Text: pi.Description, MediaSHA256: []string{},
		Options: map[string]any{"media_type": "PHOTO", "title": pi.Title, "description": pi.Description, "privacy_level": pi.PrivacyLevel,
			"photo_cover_index": *si.PhotoCoverIndex, "disable_comment": pi.DisableComment, "auto_add_music": pi.AutoAddMusic,
			"brand_content_toggle": pi.BrandContentToggle, "brand_organic_toggle": pi.BrandOrganicToggle},
		CreatedAt: now.UTC()}
	for _, f := range files {
		rec.MediaSHA256 = append(rec.MediaSHA256, f.SHA256)
		rec.MediaTypes = append(rec.MediaTypes, f.Type)
		rec.MediaSizes = append(rec.MediaSizes, f.Size)
	}
	t.n.record(rec)
	if t.n.TakeFault(FaultPostThenError) != "" {
		t.reply(w, http.StatusInternalServerError, nil, "internal_error", "Something went wrong. Please try again later.")
		return
	}
	t.ok(w, map[string]any{"publish_id": pub.id})
}
