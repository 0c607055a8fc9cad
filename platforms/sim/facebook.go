package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Facebook Pages (networks.md §4, §10.4), served under /facebook with an optional /vNN.N prefix:
//
//	GET    /dialog/oauth               consent page (www.facebook.com)
//	GET    /oauth/access_token         code → short-lived user token; grant_type=fb_exchange_token → 60-day user token
//	GET    /me                         the token's user or Page
//	GET    /{user-id|me}/accounts      the user's Pages (id, name, access_token: a Page token that does not expire)
//	DELETE /{user-id|me}/permissions   de-authorizes the app: revokes the user token and its Page tokens
//	POST   /{page-id}/feed             message, attached_media[i]={"media_fbid":…} → {"id":"{page}_{post}"}
//	GET    /{page-id}/feed             since, until, limit, after → {data:[{id,message,created_time}],paging}
//	POST   /{page-id}/photos           multipart source or url; published=false for attached_media → {"id","post_id"}
//	POST   /{page-id}/videos           multipart source or file_url; description (graph-video host) → {"id"}
//	GET    /{id}                       a post or a video (status.video_status)
//	POST   /{post-id}/comments         message → {"id":"{post}_{comment}"}: the Page's comment
//	GET    /{post-id}/comments         id, message, created_time, from (graph_comment.go)
//
// The simulated user "h" (login_hint) manages one Page named "h" whose id is UserID(h), so that
// NewAccount(facebook, h) gives that Page's token; the simulated member MemberPages manages two
// Pages (members.go), and the field instagram_business_account (of GET /{page-id}, and of each
// Page of /me/accounts when fields names it; instagram_business_account{id,username} adds the
// username) names each one's linked Instagram professional account, which publishes on this host
// with the Page's token (facebook_instagram.go). Page tokens do not expire (the expire_tokens fault
// still expires them); a post whose text repeats the Page's previous text-only post within ten
// minutes is refused with code 506. Calls spend a Pages business-use-case budget (4,800 per 24 h
// per Page) answered with code 80001. attached_media takes the Page's own unpublished photos,
// each once, in the order given (the record keeps that order); Meta documents no count for it, so
// the simulator enforces none (Herald sends at most 10).
func init() { register(platforms.Facebook, registerFacebook) }

// fbMaxText is the longest post message.
const fbMaxText = 63206

type fbSim struct {
	n     *Network
	g     *graphAPI
	users *TokenStore
}

// fbPhoto is an uploaded, unpublished photo waiting to be attached to a feed post.
type fbPhoto struct {
	Owner, SHA string
	Used       bool
	// Alt is the photo's alt_text_custom.
	Alt string
}

// fbReelUpload is a reel's or a video story's upload session (upload_phase=start): its bytes
// arrive at the rupload host, and finish publishes it.
type fbReelUpload struct {
	Owner, Kind string // kind: reel or story
	SHA         string
	Done        bool
}

// fbVideo is an uploaded video.
type fbVideo struct {
	Owner   string
	ReadyAt time.Time
}

func registerFacebook(n *Network) {
	// Page tokens obtained from a long-lived user token do not expire.
	n.Tokens.AccessTTL = 100 * 365 * 24 * time.Hour
	users := newTokenStore(n.Sim, platforms.Facebook)
	users.scope = "facebook-user"
	users.AccessTTL, users.RefreshTTL = 60*24*time.Hour, 0
	g := newGraphAPI(n, "pages", 80001, "(#80001) There have been too many calls to this Page account. Wait a bit and try again. For more info, please refer to https://developers.facebook.com/docs/graph-api/overview/rate-limiting.", Limit{Count: 4800, Window: 24 * time.Hour})
	g.users = users
	f := &fbSim{n: n, g: g, users: users}
	g.handle("GET /dialog/oauth", g.consent)
	g.handle("GET /oauth/access_token", f.token)
	g.api("GET /me", f.me)
	g.api("GET /{id}", f.object)
	g.api("GET /{id}/accounts", f.accounts)
	g.api("DELETE /{id}/permissions", f.deletePermissions)
	g.api("POST /{id}/feed", f.postFeed)
	g.api("GET /{id}/feed", f.getFeed)
	g.api("POST /{id}/photos", f.postPhoto)
	g.api("POST /{id}/videos", f.postVideo)
	g.api("POST /{id}/video_reels", f.videoSession("reel"))
	g.api("POST /{id}/video_stories", f.videoSession("story"))
	g.api("POST /{id}/photo_stories", f.photoStory)
	g.comments(false, "message", "created_time", 8000)
	g.api("POST /video-upload/{version}/{video_id}", f.rupload)
	f.serveInstagram()
}

func (f *fbSim) userID(handle string) string { return f.n.UserID("user:" + handle) }

// token serves GET /oauth/access_token: the code grant and the fb_exchange_token grant.
func (f *fbSim) token(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != ClientID || q.Get("client_secret") != ClientSecret {
		graphError(w, http.StatusBadRequest, 101, 0, "Error validating application. Invalid application ID or client secret.", false)
		return
	}
	if q.Get("grant_type") == "fb_exchange_token" {
		tok := q.Get("fb_exchange_token")
		who, state := f.g.check(tok)
		if state != TokenValid || !who.UserToken {
			graphError(w, http.StatusBadRequest, 190, 0, "Error validating access token: the token to exchange is invalid or expired.", false)
			return
		}
		c := f.users.Issue(who.User, who.Handle)
		WriteJSON(w, http.StatusOK, map[string]any{"access_token": c.AccessToken, "token_type": "bearer", "expires_in": int64(f.users.AccessTTL / time.Second)})
		return
	}
	handle, problem := f.g.takeCode(q.Get("code"), q.Get("redirect_uri"))
	switch problem {
	case "invalid":
		graphError(w, http.StatusBadRequest, 100, 36008, "Invalid verification code format.", false)
		return
	case "used":
		graphError(w, http.StatusBadRequest, 100, 36009, "This authorization code has been used.", false)
		return
	case "expired":
		graphError(w, http.StatusBadRequest, 100, 36007, "This authorization code has expired.", false)
		return
	case "redirect":
		graphError(w, http.StatusBadRequest, 100, 36008, "Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request", false)
		return
	}
	tok, ttl := f.g.issueShort(f.userID(handle), handle)
	WriteJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": int64(ttl / time.Second)})
}

func (f *fbSim) me(w http.ResponseWriter, r *http.Request, who graphCaller) {
	WriteJSON(w, http.StatusOK, map[string]any{"id": who.User, "name": who.Handle})
}

// accounts lists the user's Page with a fresh Page token.
func (f *fbSim) accounts(w http.ResponseWriter, r *http.Request, who graphCaller) {
	id := r.PathValue("id")
	if !who.UserToken {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Tried accessing nonexisting field (accounts) on node type (Page)", false)
		return
	}
	if id != "me" && id != who.User {
		graphError(w, http.StatusBadRequest, 100, 33, "Unsupported get request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
		return
	}
	managed := f.pagesOf(who.Handle)
	data := make([]any, 0, len(managed))
	for _, pg := range managed {
		c := f.n.Tokens.Issue(pg.ID, pg.Name)
		f.n.Store.With(func(objects map[string]any) {
			pages, _ := objects["fbpages:"+who.User].(map[string]string)
			if pages == nil {
				pages = map[string]string{}
				objects["fbpages:"+who.User] = pages
			}
			pages[pg.ID] = c.AccessToken
		})
		item := map[string]any{
			"id": pg.ID, "name": pg.Name, "access_token": c.AccessToken, "category": "Brand",
			"tasks": []string{"ADVERTISE", "ANALYZE", "CREATE_CONTENT", "MESSAGING", "MODERATE", "MANAGE"},
		}
		if ig, ok := linkedAccount(pg, r.URL.Query().Get("fields"), false); ok {
			item["instagram_business_account"] = ig
		}
		data = append(data, item)
	}
	WriteJSON(w, http.StatusOK, map[string]any{
		"data":   data,
		"paging": map[string]any{"cursors": map[string]string{"before": "MAZDZD", "after": "MAZDZD"}},
	})
}

// pagesOf are the Pages the user with this handle manages: a simulated member's own (members.go),
// or else the one Page named after the user, whose id is UserID(handle).
func (f *fbSim) pagesOf(handle string) []Managed {
	if m := memberOf(platforms.Facebook, handle); m != nil && len(m.Pages) > 0 {
		return m.Pages
	}
	return []Managed{{ID: f.n.UserID(handle), Name: handle}}
}

// linkedAccount is a Page's instagram_business_account as the fields parameter asks for it:
// named in fields (or, when byDefault, with no fields asked), as {id}, with its username too when
// the field expansion instagram_business_account{id,username} names it. ok is false when the
// Page has no linked account or the field was not asked for.
func linkedAccount(pg Managed, fields string, byDefault bool) (map[string]any, bool) {
	const field = "instagram_business_account"
	if pg.Instagram == nil {
		return nil, false
	}
	i := strings.Index(fields, field)
	if i < 0 && !(byDefault && fields == "") {
		return nil, false
	}
	out := map[string]any{"id": pg.Instagram.ID}
	if i < 0 {
		return out, true
	}
	rest := fields[i+len(field):]
	if strings.HasPrefix(rest, "{") {
		if end := strings.IndexByte(rest, '}'); end > 0 {
			for _, sub := range strings.Split(rest[1:end], ",") {
				if strings.TrimSpace(sub) == "username" {
					out["username"] = pg.Instagram.Name
				}
			}
		}
	}
	return out, true
}

// managedPage is the Page id when the caller is that Page or a user who manages it.
func (f *fbSim) managedPage(id string, who graphCaller) (Managed, bool) {
	for _, m := range members[platforms.Facebook] {
		for _, pg := range m.Pages {
			if pg.ID == id && ((!who.UserToken && who.User == id) || (who.UserToken && who.Handle == m.Handle)) {
				return pg, true
			}
		}
	}
	return Managed{}, false
}

// deletePermissions de-authorizes the app for the user: the user token and the Page tokens it
// gave are revoked.
func (f *fbSim) deletePermissions(w http.ResponseWriter, r *http.Request, who graphCaller) {
	id := r.PathValue("id")
	if !who.UserToken {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Tried accessing nonexisting field (permissions) on node type (Page)", false)
		return
	}
	if id != "me" && id != who.User {
		graphError(w, http.StatusBadRequest, 100, 33, "Unsupported delete request. Object with ID '"+id+"' does not exist.", false)
		return
	}
	var pageTokens []string
	f.n.Store.With(func(objects map[string]any) {
		pages, _ := objects["fbpages:"+who.User].(map[string]string)
		for _, t := range pages {
			pageTokens = append(pageTokens, t)
		}
		delete(objects, "fbpages:"+who.User)
	})
	for _, t := range pageTokens {
		f.n.Tokens.Revoke(t)
	}
	f.users.Revoke(who.Token)
	WriteJSON(w, http.StatusOK, map[string]any{"success": true})
}

// pageCaller checks that a Page token of page id is used.
func (f *fbSim) pageCaller(w http.ResponseWriter, id string, who graphCaller) bool {
	if who.UserToken || who.User != id {
		graphError(w, http.StatusForbidden, 200, 0, "(#200) If posting to a page, requires both pages_read_engagement and pages_manage_posts as an admin with sufficient administrative permission", false)
		return false
	}
	return true
}

func checkFBMessage(w http.ResponseWriter, field, msg string) bool {
	if n := utf8.RuneCountInString(msg); n > fbMaxText {
		graphError(w, http.StatusBadRequest, 100, 0, fmt.Sprintf("(#100) Param %s must be at most %d characters long (got %d)", field, fbMaxText, n), false)
		return false
	}
	return true
}

// postThenError applies the post_then_error fault after a post was recorded.
func (f *fbSim) postThenError(w http.ResponseWriter) bool {
	if f.n.TakeFault(FaultPostThenError) == "" {
		return false
	}
	graphError(w, http.StatusInternalServerError, 2, 0, "An unexpected error has occurred. Please retry your request later.", true)
	return true
}

func (f *fbSim) postFeed(w http.ResponseWriter, r *http.Request, who graphCaller) {
	page := r.PathValue("id")
	if !f.pageCaller(w, page, who) {
		return
	}
	msg := r.FormValue("message")
	if !checkFBMessage(w, "message", msg) {
		return
	}
	var ids []string
	for i := 0; ; i++ {
		raw := r.FormValue(fmt.Sprintf("attached_media[%d]", i))
		if raw == "" {
			break
		}
		var am struct {
			MediaFBID string `json:"media_fbid"`
		}
		if err := json.Unmarshal([]byte(raw), &am); err != nil || am.MediaFBID == "" {
			graphError(w, http.StatusBadRequest, 100, 0, fmt.Sprintf("(#100) param attached_media[%d] must be an object with a media_fbid", i), false)
			return
		}
		ids = append(ids, am.MediaFBID)
	}
	if strings.TrimSpace(msg) == "" && len(ids) == 0 && r.FormValue("link") == "" {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Missing message or attachment", false)
		return
	}
	if len(ids) == 0 && f.duplicate(page, msg) {
		graphError(w, http.StatusBadRequest, 506, 0, "(#506) Duplicate status message", false)
		return
	}
	var shas, alts []string
	problem := ""
	f.n.Store.With(func(objects map[string]any) {
		for i, id := range ids {
			p, ok := objects["fbphoto:"+id].(*fbPhoto)
			if !ok || p.Owner != page || p.Used {
				problem = fmt.Sprintf("(#100) param attached_media[%d] has an invalid media_fbid %s", i, id)
				return
			}
		}
		for _, id := range ids {
			p := objects["fbphoto:"+id].(*fbPhoto)
			p.Used = true
			shas = append(shas, p.SHA)
			alts = append(alts, p.Alt)
		}
	})
	link := r.FormValue("link")
	if link != "" && len(ids) > 0 {
		problem = "(#100) A post with attached_media cannot have a link"
	}
	if problem != "" {
		graphError(w, http.StatusBadRequest, 100, 0, problem, false)
		return
	}
	id := page + "_" + graphID()
	opts := map[string]any{"type": "feed"}
	if link != "" {
		opts["link"] = link
	}
	f.n.PublishWith(id, page, msg, shas, opts, nonEmpty(alts))
	if len(ids) == 0 {
		f.n.Store.Put("fblast:"+page, fbLast{Text: msg, At: f.n.Sim.Now()})
	}
	if f.postThenError(w) {
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"id": id})
}

type fbLast struct {
	Text string
	At   time.Time
}

// duplicate reports whether msg repeats the Page's previous text-only post of the last ten minutes.
func (f *fbSim) duplicate(page, msg string) bool {
	v, ok := f.n.Store.Get("fblast:" + page)
	if !ok {
		return false
	}
	last := v.(fbLast)
	return last.Text == msg && f.n.Sim.Now().Sub(last.At) < 10*time.Minute
}

func (f *fbSim) getFeed(w http.ResponseWriter, r *http.Request, who graphCaller) {
	page := r.PathValue("id")
	if !who.UserToken && who.User != page {
		graphError(w, http.StatusBadRequest, 100, 33, "Unsupported get request. Object with ID '"+page+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
		return
	}
	f.g.page(w, r, page, func(rec Record) map[string]any {
		item := map[string]any{"id": rec.ID, "created_time": graphTime(rec.CreatedAt)}
		if rec.Text != "" {
			item["message"] = rec.Text
		}
		return item
	})
}

// upload reads the media of a photo or video call: the multipart "source" file, or the URL in
// urlField fetched over HTTP. It answers the error itself and returns ok=false on failure.
func (f *fbSim) upload(w http.ResponseWriter, r *http.Request, urlField string, image bool) (sha string, ok bool) {
	file, _, err := r.FormFile("source")
	switch {
	case err == nil:
		defer func() { _ = file.Close() }()
		data, err := io.ReadAll(io.LimitReader(file, 1<<31))
		if err != nil || len(data) == 0 {
			graphError(w, http.StatusBadRequest, 324, 0, "(#324) Requires upload file: the file is empty or unreadable", false)
			return "", false
		}
		if image && !strings.HasPrefix(http.DetectContentType(data), "image/") {
			graphError(w, http.StatusBadRequest, 324, 0, "(#324) Missing or invalid image file", false)
			return "", false
		}
		b := &Blob{Data: data}
		return b.SHA256(), true
	case !errors.Is(err, http.ErrMissingFile) && !errors.Is(err, http.ErrNotMultipart):
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) invalid multipart upload: "+err.Error(), false)
		return "", false
	}
	raw := r.FormValue(urlField)
	if raw == "" {
		graphError(w, http.StatusBadRequest, 324, 0, "(#324) Requires upload file", false)
		return "", false
	}
	sha, err = f.g.fetchMedia(r.Context(), raw)
	if err != nil {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) "+err.Error(), false)
		return "", false
	}
	return sha, true
}

func (f *fbSim) postPhoto(w http.ResponseWriter, r *http.Request, who graphCaller) {
	page := r.PathValue("id")
	if !f.pageCaller(w, page, who) {
		return
	}
	msg := r.FormValue("message")
	if msg == "" {
		msg = r.FormValue("caption")
	}
	if !checkFBMessage(w, "message", msg) {
		return
	}
	published := true
	if v := r.FormValue("published"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param published must be a boolean", false)
			return
		}
		published = b
	}
	sha, ok := f.upload(w, r, "url", true)
	if !ok {
		return
	}
	alt := r.FormValue("alt_text_custom")
	if utf8.RuneCountInString(alt) > 1000 {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param alt_text_custom must be at most 1000 characters", false)
		return
	}
	photoID := graphID()
	if !published {
		f.n.Store.Put("fbphoto:"+photoID, &fbPhoto{Owner: page, SHA: sha, Alt: alt})
		WriteJSON(w, http.StatusOK, map[string]any{"id": photoID})
		return
	}
	postID := page + "_" + graphID()
	f.n.PublishWith(postID, page, msg, []string{sha}, map[string]any{"type": "feed"}, nonEmpty([]string{alt}))
	if f.postThenError(w) {
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"id": photoID, "post_id": postID})
}

func (f *fbSim) postVideo(w http.ResponseWriter, r *http.Request, who graphCaller) {
	page := r.PathValue("id")
	if !f.pageCaller(w, page, who) {
		return
	}
	msg := r.FormValue("description")
	if !checkFBMessage(w, "description", msg) {
		return
	}
	sha, ok := f.upload(w, r, "file_url", false)
	if !ok {
		return
	}
	id := graphID()
	f.n.Store.Put("fbvideo:"+id, &fbVideo{Owner: page, ReadyAt: f.n.Sim.Now().Add(f.n.Sim.Options().ProcessingDelay)})
	f.n.Publish(id, page, msg, []string{sha})
	if f.postThenError(w) {
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"id": id})
}

// object serves GET /{id} for posts and videos.
func (f *fbSim) object(w http.ResponseWriter, r *http.Request, who graphCaller) {
	id := r.PathValue("id")
	if v, ok := f.n.Store.Get("fbvideo:" + id); ok {
		vid := v.(*fbVideo)
		status, progress := "ready", 100
		if f.n.Sim.Now().Before(vid.ReadyAt) {
			status, progress = "processing", 50
		}
		WriteJSON(w, http.StatusOK, map[string]any{"id": id, "status": map[string]any{"video_status": status, "processing_progress": progress}})
		return
	}
	if pg, ok := f.managedPage(id, who); ok {
		out := map[string]any{"id": pg.ID, "name": pg.Name}
		if ig, ok := linkedAccount(pg, r.URL.Query().Get("fields"), true); ok {
			out["instagram_business_account"] = ig
		}
		WriteJSON(w, http.StatusOK, out)
		return
	}
	if id == who.User {
		WriteJSON(w, http.StatusOK, map[string]any{"id": who.User, "name": who.Handle})
		return
	}
	for _, rec := range f.n.Sim.Publications(platforms.Facebook) {
		if rec.ID == id {
			WriteJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "message": rec.Text, "created_time": graphTime(rec.CreatedAt)})
			return
		}
	}
	graphError(w, http.StatusBadRequest, 100, 33, "Unsupported get request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
}

// nonEmpty is alts, or nil when none is given.
func nonEmpty(alts []string) []string {
	for _, a := range alts {
		if a != "" {
			return alts
		}
	}
	return nil
}

// videoSession is POST /{page-id}/video_reels and /video_stories: upload_phase=start opens an
// upload (its bytes go to the rupload host's upload_url), upload_phase=finish publishes it: a
// reel (with video_state=PUBLISHED and its description) or a video story.
func (f *fbSim) videoSession(kind string) func(w http.ResponseWriter, r *http.Request, who graphCaller) {
	return func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		page := r.PathValue("id")
		if !f.pageCaller(w, page, who) {
			return
		}
		switch r.FormValue("upload_phase") {
		case "start":
			id := graphID()
			f.n.Store.Put("fbrupload:"+id, &fbReelUpload{Owner: page, Kind: kind})
			WriteJSON(w, http.StatusOK, map[string]any{"video_id": id, "upload_url": f.n.BaseURL() + "/video-upload/" + graphVersion(r) + "/" + id})
		case "finish":
			id := r.FormValue("video_id")
			v, _ := f.n.Store.Get("fbrupload:" + id)
			up, _ := v.(*fbReelUpload)
			switch {
			case up == nil || up.Owner != page || up.Kind != kind:
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param video_id is not an upload of this Page", false)
				return
			case up.SHA == "":
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) The video was not uploaded: send its bytes to upload_url first", false)
				return
			case up.Done:
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) The video was already published", false)
				return
			case kind == "reel" && r.FormValue("video_state") != "PUBLISHED":
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param video_state must be PUBLISHED to publish the reel", false)
				return
			}
			desc := r.FormValue("description")
			if !checkFBMessage(w, "description", desc) {
				return
			}
			up.Done = true
			postID := id
			if kind == "story" {
				postID = page + "_" + graphID()
			}
			f.n.PublishWith(postID, page, desc, []string{up.SHA}, map[string]any{"type": kind}, nil)
			if f.postThenError(w) {
				return
			}
			out := map[string]any{"success": true}
			if kind == "story" {
				out["post_id"] = postID
			}
			WriteJSON(w, http.StatusOK, out)
		default:
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param upload_phase must be start or finish", false)
		}
	}
}

// rupload is POST /video-upload/{version}/{video_id} on the rupload host: the bytes of a reel or
// video story (headers offset and file_size).
func (f *fbSim) rupload(w http.ResponseWriter, r *http.Request, who graphCaller) {
	id := r.PathValue("video_id")
	v, _ := f.n.Store.Get("fbrupload:" + id)
	up, _ := v.(*fbReelUpload)
	if up == nil || !f.pageCaller(w, up.Owner, who) {
		if up == nil {
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) No upload session for this video_id", false)
		}
		return
	}
	size, err := strconv.ParseInt(r.Header.Get("file_size"), 10, 64)
	if err != nil || size <= 0 || r.Header.Get("offset") != "0" {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) The headers offset (0) and file_size are required", false)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, size+1))
	if err != nil || int64(len(data)) != size {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) The body is not file_size bytes", false)
		return
	}
	f.n.Store.With(func(map[string]any) { up.SHA = (&Blob{Data: data}).SHA256() })
	WriteJSON(w, http.StatusOK, map[string]any{"success": true})
}

// photoStory is POST /{page-id}/photo_stories: an unpublished photo of the Page as a story.
func (f *fbSim) photoStory(w http.ResponseWriter, r *http.Request, who graphCaller) {
	page := r.PathValue("id")
	if !f.pageCaller(w, page, who) {
		return
	}
	id := r.FormValue("photo_id")
	var sha string
	f.n.Store.With(func(objects map[string]any) {
		if p, ok := objects["fbphoto:"+id].(*fbPhoto); ok && p.Owner == page && !p.Used {
			p.Used, sha = true, p.SHA
		}
	})
	if sha == "" {
		graphError(w, http.StatusBadRequest, 100, 0, "(#100) Param photo_id must be an unpublished photo of this Page", false)
		return
	}
	postID := page + "_" + graphID()
	f.n.PublishWith(postID, page, "", []string{sha}, map[string]any{"type": "story"}, nil)
	if f.postThenError(w) {
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"success": true, "post_id": postID})
}
