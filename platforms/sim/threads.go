package sim

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Threads (networks.md §6, §10.6), served under /threads for both graph.threads.net and
// graph.threads.com (and the threads.com consent page), Graph paths with an optional /vNN.N prefix:
//
//	GET  /oauth/authorize                       consent page
//	POST /oauth/access_token                    code → {access_token (1 h), user_id}
//	GET  /access_token?grant_type=th_exchange_token      → 60-day token
//	GET  /refresh_access_token?grant_type=th_refresh_token → a new 60-day token (token ≥ 24 h old)
//	GET  /me                                    {id, username}
//	POST /{user-id}/threads                     container: media_type TEXT|IMAGE|VIDEO|CAROUSEL, text,
//	                                            image_url, video_url, is_carousel_item, children,
//	                                            reply_to_id (a reply to that post),
//	                                            link_attachment (TEXT only; kept in Record.Options)
//	GET  /{id}                                  container: status, error_message; post: text, timestamp, permalink
//	POST /{user-id}/threads_publish             creation_id → {"id"}
//	GET  /{user-id}/threads                     the profile's posts (not its replies): id, text, timestamp, permalink
//	GET  /{media-id}/replies                    the post's replies: id, text, timestamp, permalink, username,
//	                                            replied_to, is_reply_owned_by_me
//	GET  /{user-id}/threads_publishing_limit    quota_usage, config, reply_quota_usage, reply_config
//
// Text over 500 characters (emoji counted in UTF-8 bytes) or with more than 5 links is refused;
// carousels take 2 to 20 items; media containers fetch their URL (unreachable → ERROR). Buckets:
// "publish" (250 per 24 h at threads_publish; exhausted → code 9, an assumption), "replies" (1,000
// replies per 24 h at threads_publish of a reply, in place of "publish"; code 9), "calls" (4,800
// per 24 h → code 4).
func init() { register(platforms.Threads, registerThreads) }

const (
	thMaxText  = 500
	thMaxLinks = 5
)

type thSim struct {
	n *Network
	g *graphAPI
}

func thPublishLimit() Limit { return Limit{Count: 250, Window: 24 * time.Hour} }

func registerThreads(n *Network) {
	g := newGraphAPI(n, "threads", 4, "(#4) Application request limit reached", Limit{Count: 4800, Window: 24 * time.Hour})
	s := &thSim{n: n, g: g}
	g.handle("GET /oauth/authorize", g.consent)
	g.handle("POST /oauth/access_token", s.codeToken)
	g.handle("GET /access_token", func(w http.ResponseWriter, r *http.Request) { g.exchangeShort(w, r, "th_exchange_token") })
	g.handle("GET /refresh_access_token", func(w http.ResponseWriter, r *http.Request) { g.refreshLongLived(w, r, "th_refresh_token") })
	g.api("GET /me", func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		WriteJSON(w, http.StatusOK, map[string]any{"id": who.User, "username": who.Handle})
	})
	g.api("GET /{id}", s.object)
	g.api("POST /{id}/threads", s.createContainer)
	g.api("GET /{id}/threads", s.list)
	g.api("POST /{id}/threads_publish", s.publish)
	g.api("GET /{id}/replies", s.replies)
	g.api("GET /{id}/threads_publishing_limit", func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		if s.owner(w, r, who) {
			g.publishQuota(w, who.User, thPublishLimit(), s.replyQuota(who.User))
		}
	})
}

// threadsLength counts text as Threads documents it: emoji count as their UTF-8 bytes.
func threadsLength(text string) int {
	n := 0
	for _, r := range text {
		if isEmojiRune(r) {
			n += utf8.RuneLen(r)
		} else {
			n++
		}
	}
	return n
}

// isEmojiRune reports whether a rune belongs to the emoji blocks (pictographs, dingbats,
// regional indicators, skin tones) or is an emoji joiner, keycap, variation selector or tag.
func isEmojiRune(r rune) bool {
	switch {
	case r >= 0x1F000 && r <= 0x1FAFF, r >= 0x2600 && r <= 0x27BF, r >= 0x2300 && r <= 0x23FF,
		r >= 0x2B00 && r <= 0x2BFF, r >= 0xE0020 && r <= 0xE007F:
		return true
	case r == 0x200D, r == 0xFE0F, r == 0x20E3, r == 0x00A9, r == 0x00AE, r == 0x203C, r == 0x2049, r == 0x2122, r == 0x2139:
		return true
	}
	return false
}

// threadsLinks counts distinct http(s):// and www. words.
func threadsLinks(text string) int {
	seen := map[string]bool{}
	for _, w := range strings.Fields(text) {
		lw := strings.ToLower(w)
		if strings.HasPrefix(lw, "http://") || strings.HasPrefix(lw, "https://") || strings.HasPrefix(lw, "www.") {
			seen[strings.TrimRight(lw, ".,;:!?)]}'\"")] = true
		}
	}
	return len(seen)
}

func (s *thSim) codeToken(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("client_id") != ClientID || r.PostFormValue("client_secret") != ClientSecret {
		graphError(w, http.StatusBadRequest, 101, 0, "Error validating application. Invalid application ID or client secret.", false)
		return
	}
	if r.PostFormValue("grant_type") != "authorization_code" {
		graphError(w, http.StatusBadRequest, 100, 0, "Unsupported grant_type", false)
		return
	}
	handle, problem := s.g.takeCode(r.PostFormValue("code"), r.PostFormValue("redirect_uri"))
	switch problem {
	case "used":
		graphError(w, http.StatusBadRequest, 100, 36009, "This authorization code has been used.", false)
		return
	case "expired":
		graphError(w, http.StatusBadRequest, 100, 36007, "This authorization code has expired.", false)
		return
	case "redirect":
		graphError(w, http.StatusBadRequest, 100, 36008, "Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request", false)
		return
	case "invalid":
		graphError(w, http.StatusBadRequest, 100, 36008, "Invalid verification code format.", false)
		return
	}
	user := s.n.UserID(handle)
	tok, _ := s.g.issueShort(user, handle)
	WriteJSON(w, http.StatusOK, map[string]any{"access_token": tok, "user_id": user})
}

func (s *thSim) owner(w http.ResponseWriter, r *http.Request, who graphCaller) bool {
	id := r.PathValue("id")
	if id != who.User && id != "me" {
		graphError(w, http.StatusBadRequest, 100, 33, "Unsupported request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
		return false
	}
	return true
}

func (s *thSim) createContainer(w http.ResponseWriter, r *http.Request, who graphCaller) {
	if !s.owner(w, r, who) {
		return
	}
	text := r.FormValue("text")
	item, _ := strconv.ParseBool(r.FormValue("is_carousel_item"))
	if n := threadsLength(text); n > thMaxText {
		graphError(w, http.StatusBadRequest, 100, 0, fmt.Sprintf("Param text must be at most %d characters long (got %d; emoji count as their UTF-8 bytes).", thMaxText, n), false)
		return
	}
	if n := threadsLinks(text); n > thMaxLinks {
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 100, Message: "THREADS_API__LINK_LIMIT_EXCEEDED", UserMsg: fmt.Sprintf("A post may contain at most %d links; this one has %d.", thMaxLinks, n)})
		return
	}
	c := &graphContainer{Owner: who.User, CarouselItem: item, AltText: r.FormValue("alt_text")}
	if !item {
		c.Text = text
		opts := map[string]any{}
		switch rc := r.FormValue("reply_control"); rc {
		case "":
		case "everyone", "accounts_you_follow", "mentioned_only", "parent_post_author_only", "followers_only":
			opts["reply_control"] = rc
		default:
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param reply_control must be one of everyone, accounts_you_follow, mentioned_only, parent_post_author_only, followers_only", false)
			return
		}
		if tag := r.FormValue("topic_tag"); tag != "" {
			if utf8.RuneCountInString(tag) > 50 || strings.ContainsAny(tag, ".&") {
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param topic_tag must be 1 to 50 characters without periods or ampersands", false)
				return
			}
			opts["topic_tag"] = tag
		}
		if link := r.FormValue("link_attachment"); link != "" {
			u, err := url.Parse(link)
			switch {
			case strings.ToUpper(r.FormValue("media_type")) != "TEXT":
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param link_attachment is only allowed on TEXT posts", false)
				return
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param link_attachment must be a valid URL", false)
				return
			}
			opts["link_attachment"] = link
		}
		if len(opts) > 0 {
			c.Options = opts
		}
	}
	if utf8.RuneCountInString(c.AltText) > 1000 {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param alt_text must be at most 1000 characters", false)
		return
	}
	mediaURL := ""
	switch mt := strings.ToUpper(r.FormValue("media_type")); mt {
	case "TEXT":
		if item || strings.TrimSpace(text) == "" {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) The parameter text is required for a TEXT post and TEXT cannot be a carousel item", false)
			return
		}
		c.MediaType = "TEXT_POST"
	case "IMAGE":
		mediaURL = r.FormValue("image_url")
		c.MediaType = "IMAGE"
	case "VIDEO":
		mediaURL = r.FormValue("video_url")
		c.MediaType = "VIDEO"
	case "CAROUSEL":
		if item {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) A carousel cannot be a carousel item", false)
			return
		}
		ids, problem := s.g.childContainers(who.User, r.FormValue("children"), 2, 20)
		if problem != "" {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) "+problem, false)
			return
		}
		c.MediaType, c.Children = "CAROUSEL_ALBUM", ids
	default:
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param media_type must be one of TEXT, IMAGE, VIDEO, CAROUSEL", false)
		return
	}
	if (c.MediaType == "IMAGE" || c.MediaType == "VIDEO") && mediaURL == "" {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) The parameter "+strings.ToLower(c.MediaType)+"_url is required", false)
		return
	}
	replyTo := ""
	if !item {
		if replyTo = r.FormValue("reply_to_id"); replyTo != "" && !s.replyable(replyTo) {
			graphError(w, http.StatusBadRequest, 100, 33, "(#100) Param reply_to_id must be the id of an existing Threads post", false)
			return
		}
	}
	s.g.newContainer(r.Context(), c, mediaURL)
	if replyTo != "" {
		s.n.Store.Put("threply:"+c.ID, replyTo)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"id": c.ID})
}

func (s *thSim) object(w http.ResponseWriter, r *http.Request, who graphCaller) {
	id := r.PathValue("id")
	if c, ok := s.g.container(id); ok && c.Owner == who.User {
		status, msg := s.g.containerStatus(c)
		body := map[string]any{"id": id, "status": status}
		if msg != "" {
			body["error_message"] = "FAILED_DOWNLOADING_VIDEO: " + msg
			if c.MediaType == "IMAGE" {
				body["error_message"] = "FAILED_PROCESSING_IMAGE: " + msg
			}
		}
		WriteJSON(w, http.StatusOK, body)
		return
	}
	if v, ok := s.n.Store.Get("thmedia:" + id); ok {
		m := v.(*graphMedia)
		if m.Owner == who.User {
			WriteJSON(w, http.StatusOK, map[string]any{"id": id, "text": m.Text, "timestamp": graphTime(m.Created), "permalink": m.Permalink, "media_type": m.MediaType, "username": m.Handle})
			return
		}
	}
	graphError(w, http.StatusBadRequest, 100, 33, "Unsupported get request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
}

func (s *thSim) publish(w http.ResponseWriter, r *http.Request, who graphCaller) {
	if !s.owner(w, r, who) {
		return
	}
	cid := r.FormValue("creation_id")
	c, ok := s.g.container(cid)
	if cid == "" || !ok || c.Owner != who.User || c.CarouselItem {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) The parameter creation_id is missing or is not a publishable container of this profile", false)
		return
	}
	switch status, msg := s.g.containerStatus(c); status {
	case "IN_PROGRESS":
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 24, Subcode: 4279009, Message: "The requested resource does not exist", UserMsg: "The media is not ready to be published yet."})
		return
	case "ERROR":
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 100, Message: "The media could not be processed", UserMsg: msg})
		return
	case "EXPIRED", "PUBLISHED":
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 100, Message: "The container is " + strings.ToLower(status) + " and cannot be published"})
		return
	}
	replyTo := s.replyTo(cid)
	if !s.spendPublish(w, who.User, replyTo != "") {
		return
	}
	if !s.g.markPublished(cid) {
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 100, Message: "The container is published and cannot be published again"})
		return
	}
	id := graphID()
	m := &graphMedia{ID: id, Owner: who.User, Handle: who.Handle, Text: c.Text, MediaType: c.MediaType, Permalink: "https://www.threads.com/@" + who.Handle + "/post/" + RandomID(6), Created: s.n.Sim.Now()}
	s.n.Store.Put("thmedia:"+id, m)
	rec := s.n.PublishFiles(id, who.User, c.Text, s.g.mediaFiles(c))
	s.n.UpdateRecord(rec.ID, func(r *Record) { r.Options, r.AltTexts, r.ReplyTo = c.Options, s.g.altTexts(&c), replyTo })
	if s.n.TakeFault(FaultPostThenError) != "" {
		graphError(w, http.StatusInternalServerError, 2, 0, "An unexpected error has occurred. Please retry your request later.", true)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"id": id})
}

func (s *thSim) list(w http.ResponseWriter, r *http.Request, who graphCaller) {
	if !s.owner(w, r, who) {
		return
	}
	s.g.page(w, r, who.User, func(rec Record) map[string]any {
		item := map[string]any{"id": rec.ID, "timestamp": graphTime(rec.CreatedAt)}
		if rec.Text != "" {
			item["text"] = rec.Text
		}
		if v, ok := s.n.Store.Get("thmedia:" + rec.ID); ok {
			m := v.(*graphMedia)
			item["permalink"], item["media_type"] = m.Permalink, m.MediaType
		}
		return item
	})
}
