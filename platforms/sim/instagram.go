package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Instagram API with Instagram Login (networks.md §5, §10.5), served under /instagram; the hosts
// www.instagram.com, api.instagram.com and graph.instagram.com share it, Graph paths with an
// optional /vNN.N prefix:
//
//	GET  /oauth/authorize                      consent page
//	POST /oauth/access_token                   code → {"data":[{access_token (1 h), user_id, permissions}]}
//	GET  /access_token?grant_type=ig_exchange_token     → 60-day token
//	GET  /refresh_access_token?grant_type=ig_refresh_token → a new 60-day token (token ≥ 24 h old)
//	GET  /me                                   {id, user_id, username}
//	POST /{ig-user-id}/media                   container: image_url | media_type=REELS|VIDEO + video_url |
//	                                           is_carousel_item | media_type=CAROUSEL + children; caption
//	GET  /{id}                                 container: status_code, status; media: caption, timestamp, permalink
//	POST /{ig-user-id}/media_publish           creation_id → {"id"}
//	GET  /{ig-user-id}/media                   the account's posts: id, caption, timestamp, permalink
//	GET  /{ig-user-id}/content_publishing_limit quota_usage, config
//	POST /{ig-media-id}/comments               message → {"id"}: the account's comment on its media
//	GET  /{ig-media-id}/comments               id, text, timestamp, from, username (graph_comment.go)
//
// Containers fetch their media URL (unreachable → status ERROR; an image container whose bytes
// are not a JPEG, or are over 8 MB, is ERROR too), are IN_PROGRESS for the processing
// delay (twice that for video), expire after 24 hours; publishing an unfinished one answers code
// 9007 subcode 2207027. Buckets: "publish" (100 per 24 h, counted at media_publish, carousel = 1;
// exhausted → code 9 subcode 2207042), "containers" (400 per 24 h), "calls" (Instagram business use
// case, 4,800 per 24 h → code 80002). Captions over 2,200 characters, 30 hashtags or 20 mentions
// are refused; there are no text-only containers.
func init() { register(platforms.Instagram, registerInstagram) }

const (
	igMaxCaption  = 2200
	igMaxHashtags = 30
	igMaxMentions = 20
)

type igSim struct {
	n *Network
	g *graphAPI
}

func igPublishLimit() Limit   { return Limit{Count: 100, Window: 24 * time.Hour} }
func igContainerLimit() Limit { return Limit{Count: 400, Window: 24 * time.Hour} }

func registerInstagram(n *Network) {
	g := newGraphAPI(n, "instagram", 80002, "(#80002) There have been too many calls to this Instagram account. Wait a bit and try again. For more info, please refer to https://developers.facebook.com/docs/graph-api/overview/rate-limiting.", Limit{Count: 4800, Window: 24 * time.Hour})
	s := &igSim{n: n, g: g}
	g.checkImage = igCheckImage
	g.handle("GET /oauth/authorize", g.consent)
	g.handle("POST /oauth/access_token", s.codeToken)
	g.handle("GET /access_token", func(w http.ResponseWriter, r *http.Request) { g.exchangeShort(w, r, "ig_exchange_token") })
	g.handle("GET /refresh_access_token", func(w http.ResponseWriter, r *http.Request) { g.refreshLongLived(w, r, "ig_refresh_token") })
	g.api("GET /me", s.me)
	g.api("GET /{id}", s.object)
	g.api("POST /{id}/media", s.createContainer)
	g.api("GET /{id}/media", s.listMedia)
	g.api("POST /{id}/media_publish", s.publish)
	g.comments(true, "text", "timestamp", 2200)
	g.api("GET /{id}/content_publishing_limit", func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		if s.owner(w, r, who) {
			g.publishQuota(w, who.User, igPublishLimit(), nil)
		}
	})
}

// igOAuthError answers in the shape of api.instagram.com's token endpoint.
func igOAuthError(w http.ResponseWriter, msg string) {
	WriteJSON(w, http.StatusBadRequest, map[string]any{"error_type": "OAuthException", "code": 400, "error_message": msg})
}

func (s *igSim) codeToken(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("client_id") != ClientID || r.PostFormValue("client_secret") != ClientSecret {
		igOAuthError(w, "Invalid client_id or client_secret")
		return
	}
	if r.PostFormValue("grant_type") != "authorization_code" {
		igOAuthError(w, "Invalid grant_type")
		return
	}
	handle, problem := s.g.takeCode(r.PostFormValue("code"), r.PostFormValue("redirect_uri"))
	switch problem {
	case "used":
		igOAuthError(w, "This authorization code has been used")
		return
	case "expired":
		igOAuthError(w, "This authorization code has expired")
		return
	case "redirect":
		igOAuthError(w, "Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request")
		return
	case "invalid":
		igOAuthError(w, "Invalid authorization code")
		return
	}
	user := s.n.UserID(handle)
	tok, _ := s.g.issueShort(user, handle)
	WriteJSON(w, http.StatusOK, map[string]any{"data": []any{map[string]any{"access_token": tok, "user_id": user, "permissions": "instagram_business_basic,instagram_business_content_publish"}}})
}

// igMaxImageBytes is Instagram's limit on a photo (networks.md §5.2).
const igMaxImageBytes = 8 << 20

// igCheckImage refuses what Instagram refuses in an image container: a file that is not a JPEG
// (by its bytes, whatever its URL or Content-Type say), or one over 8 MB.
func igCheckImage(f File) error {
	if f.Type != "image/jpeg" {
		return fmt.Errorf("the image format is not supported: Instagram takes JPEG photos; the media URI returned %s", f.Type)
	}
	if f.Size > igMaxImageBytes {
		return fmt.Errorf("the image is %d bytes; Instagram takes photos of up to 8 MB (2207004)", f.Size)
	}
	return nil
}

func (s *igSim) me(w http.ResponseWriter, r *http.Request, who graphCaller) {
	WriteJSON(w, http.StatusOK, map[string]any{"id": who.User, "user_id": who.User, "username": who.Handle})
}

// owner checks that the path's user is the caller.
func (s *igSim) owner(w http.ResponseWriter, r *http.Request, who graphCaller) bool {
	id := r.PathValue("id")
	if id != who.User && id != "me" {
		graphError(w, http.StatusBadRequest, 100, 33, "Unsupported request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
		return false
	}
	return true
}

// countSigil counts #tags or @mentions the way the adapter's Validate does.
func countSigil(text string, sigil rune) int {
	n, prev := 0, ' '
	runes := []rune(text)
	for i, r := range runes {
		if r == sigil && !(unicode.IsLetter(prev) || unicode.IsDigit(prev) || prev == '_') && i+1 < len(runes) {
			next := runes[i+1]
			if unicode.IsLetter(next) || unicode.IsDigit(next) || next == '_' || (sigil == '@' && next == '.') {
				n++
			}
		}
		prev = r
	}
	return n
}

func (s *igSim) checkCaption(w http.ResponseWriter, caption string) bool {
	switch {
	case utf8.RuneCountInString(caption) > igMaxCaption:
		graphError(w, http.StatusBadRequest, 100, 2207010, fmt.Sprintf("The caption is too long: it must be at most %d characters.", igMaxCaption), false)
	case countSigil(caption, '#') > igMaxHashtags:
		graphError(w, http.StatusBadRequest, 100, 2207010, fmt.Sprintf("The caption has more than %d hashtags.", igMaxHashtags), false)
	case countSigil(caption, '@') > igMaxMentions:
		graphError(w, http.StatusBadRequest, 100, 2207010, fmt.Sprintf("The caption has more than %d mentions.", igMaxMentions), false)
	default:
		return true
	}
	return false
}

func (s *igSim) createContainer(w http.ResponseWriter, r *http.Request, who graphCaller) {
	if !s.owner(w, r, who) {
		return
	}
	if _, _, reset, ok := s.n.Take("containers", who.User, 1, igContainerLimit()); !ok {
		s.g.throttled(w, who.User, reset, 9, "(#9) Application request limit reached: at most 400 containers may be created in 24 hours")
		return
	}
	caption := r.FormValue("caption")
	item, _ := strconv.ParseBool(r.FormValue("is_carousel_item"))
	mediaType := strings.ToUpper(r.FormValue("media_type"))
	c := &graphContainer{Owner: who.User, CarouselItem: item, AltText: r.FormValue("alt_text")}
	if !item {
		if !s.checkCaption(w, caption) {
			return
		}
		c.Text = caption
	}
	if utf8.RuneCountInString(c.AltText) > igMaxAltText {
		graphError(w, http.StatusBadRequest, 100, 0, fmt.Sprintf("(#100) alt_text is longer than %d characters", igMaxAltText), false)
		return
	}
	if !item {
		opts, problem := igOptions(r, mediaType)
		if problem != "" {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) "+problem, false)
			return
		}
		c.Options = opts
	}
	mediaURL := ""
	switch mediaType {
	case "CAROUSEL":
		if item {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) A carousel cannot be a carousel item", false)
			return
		}
		ids, problem := s.g.childContainers(who.User, r.FormValue("children"), 2, 10)
		if problem != "" {
			graphError(w, http.StatusBadRequest, 100, 2207020, "(#100) "+problem, false)
			return
		}
		c.MediaType, c.Children = "CAROUSEL_ALBUM", ids
	case "REELS", "VIDEO", "STORIES":
		if mediaType == "VIDEO" && !item {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) The VIDEO media type is no longer supported for feed posts; use REELS", false)
			return
		}
		mediaURL = r.FormValue("video_url")
		if mediaType == "STORIES" && mediaURL == "" {
			mediaURL = r.FormValue("image_url")
		}
		if mediaURL == "" {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) The parameter video_url is required", false)
			return
		}
		c.MediaType = "VIDEO"
	case "", "IMAGE":
		mediaURL = r.FormValue("image_url")
		if mediaURL == "" {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) The parameter image_url is required", false)
			return
		}
		c.MediaType = "IMAGE"
	default:
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Unsupported media_type "+mediaType, false)
		return
	}
	s.g.newContainer(r.Context(), c, mediaURL)
	WriteJSON(w, http.StatusOK, map[string]any{"id": c.ID})
}

// igMaxAltText bounds a container's alt_text (an assumption: Instagram documents no figure).
const igMaxAltText = 1000

// igOptions reads a top-level container's options: its media type (IMAGE when none is given),
// share_to_feed (reels only) and collaborators (up to three usernames, not on stories), as the
// simulator records them.
func igOptions(r *http.Request, mediaType string) (map[string]any, string) {
	if mediaType == "" {
		mediaType = "IMAGE"
	}
	opts := map[string]any{"media_type": mediaType}
	if v := r.FormValue("share_to_feed"); v != "" {
		if mediaType != "REELS" {
			return nil, "share_to_feed applies to REELS only"
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, "share_to_feed must be true or false"
		}
		opts["share_to_feed"] = b
	}
	if v := r.FormValue("collaborators"); v != "" {
		var names []string
		if err := json.Unmarshal([]byte(v), &names); err != nil {
			return nil, "collaborators must be a JSON array of usernames"
		}
		if len(names) > 3 {
			return nil, "A post can have at most 3 collaborators"
		}
		if mediaType == "STORIES" {
			return nil, "Stories cannot have collaborators"
		}
		opts["collaborators"] = names
	}
	return opts, ""
}

func (s *igSim) object(w http.ResponseWriter, r *http.Request, who graphCaller) {
	id := r.PathValue("id")
	if c, ok := s.g.container(id); ok && c.Owner == who.User {
		status, msg := s.g.containerStatus(c)
		detail := map[string]string{"FINISHED": "Finished: Media has been uploaded and it is complete.", "IN_PROGRESS": "In Progress: Media is still being processed.", "PUBLISHED": "Published: Media has been published.", "EXPIRED": "Expired: The container was not published within 24 hours."}[status]
		if status == "ERROR" {
			detail = "Error: " + msg + " (2207052)"
		}
		WriteJSON(w, http.StatusOK, map[string]any{"id": id, "status_code": status, "status": detail})
		return
	}
	if v, ok := s.n.Store.Get("igmedia:" + id); ok {
		m := v.(*graphMedia)
		if m.Owner == who.User {
			WriteJSON(w, http.StatusOK, map[string]any{"id": id, "caption": m.Text, "timestamp": graphTime(m.Created), "permalink": m.Permalink, "media_type": m.MediaType, "username": m.Handle})
			return
		}
	}
	graphError(w, http.StatusBadRequest, 100, 33, "Unsupported get request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
}

func (s *igSim) publish(w http.ResponseWriter, r *http.Request, who graphCaller) {
	if !s.owner(w, r, who) {
		return
	}
	cid := r.FormValue("creation_id")
	c, ok := s.g.container(cid)
	if cid == "" || !ok || c.Owner != who.User {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) The parameter creation_id is missing or is not a container of this account", false)
		return
	}
	if c.CarouselItem {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) A carousel item cannot be published on its own", false)
		return
	}
	switch status, msg := s.g.containerStatus(c); status {
	case "IN_PROGRESS":
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 9007, Subcode: 2207027, Message: "Media ID is not available", UserMsg: "The media is not ready for publishing, please wait for a moment"})
		return
	case "ERROR":
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 9007, Subcode: 2207032, Message: "Media upload has failed", UserMsg: msg})
		return
	case "EXPIRED":
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 9007, Subcode: 2207008, Message: "The media container has expired", UserMsg: "The container was not published within 24 hours; create a new one"})
		return
	case "PUBLISHED":
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 9007, Subcode: 2207006, Message: "The media has already been published"})
		return
	}
	if _, _, reset, ok := s.n.Take("publish", who.User, 1, igPublishLimit()); !ok {
		s.g.usageHeaders(w, who.User, 100, 100, s.g.regainMinutes(reset))
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 9, Subcode: 2207042, Message: "Application request limit reached", UserMsg: "You have reached the maximum number of posts that can be published via the API in a 24-hour period."})
		return
	}
	if !s.g.markPublished(cid) {
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 9007, Subcode: 2207006, Message: "The media has already been published"})
		return
	}
	id := graphID()
	m := &graphMedia{ID: id, Owner: who.User, Handle: who.Handle, Text: c.Text, MediaType: c.MediaType, Permalink: "https://www.instagram.com/p/" + RandomID(6) + "/", Created: s.n.Sim.Now()}
	s.n.Store.Put("igmedia:"+id, m)
	rec := s.n.PublishFiles(id, who.User, c.Text, s.g.mediaFiles(c))
	s.n.UpdateRecord(rec.ID, func(r *Record) { r.Options, r.AltTexts = c.Options, s.g.altTexts(&c) })
	if s.n.TakeFault(FaultPostThenError) != "" {
		graphError(w, http.StatusInternalServerError, 2, 0, "An unexpected error has occurred. Please retry your request later.", true)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"id": id})
}

func (s *igSim) listMedia(w http.ResponseWriter, r *http.Request, who graphCaller) {
	if !s.owner(w, r, who) {
		return
	}
	s.g.page(w, r, who.User, func(rec Record) map[string]any {
		item := map[string]any{"id": rec.ID, "timestamp": graphTime(rec.CreatedAt)}
		if rec.Text != "" {
			item["caption"] = rec.Text
		}
		if v, ok := s.n.Store.Get("igmedia:" + rec.ID); ok {
			m := v.(*graphMedia)
			item["permalink"], item["media_type"] = m.Permalink, m.MediaType
		}
		return item
	})
}
