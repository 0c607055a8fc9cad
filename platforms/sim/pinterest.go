package sim

// Pinterest (API v5): networks.md §8 and §10.8.
//
// Served: the consent page GET /oauth/ (the www host), POST /v5/oauth/token with HTTP Basic
// client authentication (authorization_code and refresh_token grants; every refresh returns a new
// refresh token and retires the old one), GET /v5/user_account, GET and POST /v5/boards, POST
// /v5/pins (media_source image_url, image_base64, multiple_image_urls with 2–5 items, video_id),
// GET /v5/pins (the caller's Pins, newest first, paged by bookmark) and GET /v5/pins/{pin_id},
// POST /v5/media (a video upload: media_id, upload_url and upload_parameters), the upload_url
// itself (POST /media-upload/, an S3-style multipart form with every upload parameter and the
// file, answering 204), and GET /v5/media/{media_id} (registered → processing → succeeded |
// failed).
//
// Behaviour: access tokens live 30 days and answer 401 {"code":2,"message":"Authentication
// failed.","status":"failure"} once expired or revoked; refresh tokens live 60 days from each
// refresh. Every user has a board ("Herald", created on first use). The simulator models Standard
// access: 100 requests per second per user ("requests") plus per-minute category limits per user,
// org_write (POST /v5/pins, POST /v5/media, POST /v5/boards; "org_write", 100/min) and org_read
// (the GETs; "org_read", 1,000/min) — the category numbers are not published and are assumptions;
// Trial access is SetLimit(platforms.Pinterest, "requests", Limit{Count: 1000, Window: 24 *
// time.Hour}). A refused call answers 429 {"code":8,"message":…} without headers (networks.md:
// v5's rate headers are unconfirmed). image_url (and each carousel item) is fetched with
// Options.HTTPClient and hashed: an unreachable URL or a body that is not an image answers 400.
// Titles over 100 characters, descriptions over 800, links over 2,048 and alt text over 500
// answer 400; a board of another user 403 code 29; a video Pin whose media is not "succeeded" 400.
// A video whose bytes begin with ProcessingFailureMarker ends "failed".
//
// Live data (networks.md §8.5): GET /v5/pins/{pin_id}/analytics?start_date&end_date&metric_types
// [&app_types&split_field] (category org_analytics, 300/min per user, an assumption) answers
// {"all":{"lifetime_metrics","summary_metrics","daily_metrics"}} for the caller's own Pins with
// IMPRESSION, SAVE, TOTAL_COMMENTS and TOTAL_REACTIONS from the Pin's counters (views, shares,
// comments, likes) and every other documented metric type as 0; the counters count on the end
// date. start_date more than 90 days back or after end_date answers 400; a Pin that does not
// exist 404 code 50; another user's Pin 403 code 29.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Pinterest's default limits (networks.md §8.3, Standard access; category numbers assumed).
var (
	pinLimitRequests = Limit{Count: 100, Window: time.Second}
	pinLimitWrite    = Limit{Count: 100, Window: time.Minute}
	pinLimitRead     = Limit{Count: 1000, Window: time.Minute}
	// pinLimitAnalytics is the org_analytics category (Standard access, per user; an assumption).
	pinLimitAnalytics = Limit{Count: 300, Window: time.Minute}
)

const (
	pinCodeTTL       = 10 * time.Minute
	pinMaxTitle      = 100
	pinMaxDesc       = 800
	pinMaxLink       = 2048
	pinMaxAlt        = 500
	pinMaxImageBytes = 32 << 20
	pinMaxVideoBytes = 1 << 30 // what the simulator keeps in memory; Pinterest takes 2 GB
)

func init() { register(platforms.Pinterest, registerPinterest) }

type pinSim struct{ n *Network }

type pinCode struct {
	redirectURI, scope, user, handle string
	expires                          time.Time
}

type pinBoard struct {
	id, owner, ownerName, name, desc, privacy string
	created                                   time.Time
}

type pinPin struct {
	id, owner, ownerName, boardID   string
	title, desc, link, alt, kind    string
	shas, imageURLs                 []string
	mediaID                         string
	created                         time.Time
	coverURL                        string
	coverKeyFrame                   float64
	hasCoverKeyFrame, fromBase64Img bool
}

type pinMedia struct {
	id, owner, key, signature string
	uploaded, failed          bool
	sha                       string
	readyAt                   time.Time
}

func registerPinterest(n *Network) {
	n.Tokens.RotateRefresh = true
	p := &pinSim{n: n}
	n.RateLimited = p.rateLimited

	n.Mux.HandleFunc("GET /oauth/", p.authorize)
	n.Mux.HandleFunc("POST /v5/oauth/token", p.token)
	n.Mux.HandleFunc("GET /v5/user_account", p.api("org_read", pinLimitRead, p.userAccount))
	n.Mux.HandleFunc("GET /v5/boards", p.api("org_read", pinLimitRead, p.listBoards))
	n.Mux.HandleFunc("POST /v5/boards", p.api("org_write", pinLimitWrite, p.createBoard))
	n.Mux.HandleFunc("POST /v5/pins", p.api("org_write", pinLimitWrite, p.createPin))
	n.Mux.HandleFunc("GET /v5/pins", p.api("org_read", pinLimitRead, p.listPins))
	n.Mux.HandleFunc("GET /v5/pins/{pin_id}", p.api("org_read", pinLimitRead, p.getPin))
	n.Mux.HandleFunc("POST /v5/media", p.api("org_write", pinLimitWrite, p.registerMedia))
	n.Mux.HandleFunc("GET /v5/media/{media_id}", p.api("org_read", pinLimitRead, p.mediaStatus))
	n.Mux.HandleFunc("POST /media-upload/", p.upload)

	n.Live = LiveHooks{Metrics: true}
	n.Mux.HandleFunc("GET /v5/pins/{pin_id}/analytics", p.api("org_analytics", pinLimitAnalytics, p.pinAnalytics))
}

// pinUser is the caller of an authenticated endpoint.
type pinUser struct{ id, handle string }

// api wraps an endpoint with the token check, the universal per-user limit and the endpoint's
// category limit.
func (p *pinSim) api(category string, def Limit, h func(w http.ResponseWriter, r *http.Request, u pinUser)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			p.unauthorized(w)
			return
		}
		id, handle, state := p.n.Tokens.Check(strings.TrimSpace(tok))
		if state != TokenValid {
			p.unauthorized(w)
			return
		}
		if _, _, reset, ok := p.n.Take("requests", id, 1, pinLimitRequests); !ok {
			p.rateLimited(w, r, reset)
			return
		}
		if _, _, reset, ok := p.n.Take(category, id, 1, def); !ok {
			p.rateLimited(w, r, reset)
			return
		}
		h(w, r, pinUser{id: id, handle: handle})
	}
}

// pinError writes Pinterest's error body.
func pinError(w http.ResponseWriter, status, code int, message string) {
	WriteJSON(w, status, map[string]any{"code": code, "message": message})
}

func (p *pinSim) rateLimited(w http.ResponseWriter, _ *http.Request, _ time.Time) {
	pinError(w, http.StatusTooManyRequests, 8, "You have exceeded your rate limit. Try again later.")
}

func (p *pinSim) unauthorized(w http.ResponseWriter) {
	WriteJSON(w, http.StatusUnauthorized, map[string]any{"code": 2, "message": "Authentication failed.", "status": "failure"})
}

// authorize is the consent page on www.pinterest.com/oauth/: it approves at once (or refuses when
// a denial is pending) and redirects with code and state. login_hint names the simulated user
// (a simulator convenience; default "sim-user").
func (p *pinSim) authorize(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/oauth/" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("client_id") != ClientID:
		http.Error(w, "invalid client_id", http.StatusBadRequest)
		return
	case err != nil || redirect.Scheme == "" || redirect.Host == "":
		http.Error(w, "invalid redirect_uri", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	if s := q.Get("state"); s != "" {
		back.Set("state", s)
	}
	if p.n.TakeDenial() {
		back.Set("error", "access_denied")
		redirect.RawQuery = back.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
		return
	}
	handle := q.Get("login_hint")
	if handle == "" {
		handle = "sim-user"
	}
	code := RandomID(20)
	p.n.Store.Put("pin-code:"+code, &pinCode{redirectURI: q.Get("redirect_uri"), scope: q.Get("scope"),
		user: p.n.UserID(handle), handle: handle, expires: p.n.Sim.Now().Add(pinCodeTTL)})
	back.Set("code", code)
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// token is POST /v5/oauth/token with the client's Basic credentials.
func (p *pinSim) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != ClientID || secret != ClientSecret {
		WriteJSON(w, http.StatusUnauthorized, map[string]any{"code": 2, "message": "Authentication failed.", "status": "failure"})
		return
	}
	if err := r.ParseForm(); err != nil {
		pinError(w, http.StatusBadRequest, 1, "Invalid request body.")
		return
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "authorization_code":
		code := r.PostForm.Get("code")
		var c *pinCode
		p.n.Store.With(func(objects map[string]any) {
			if v, ok := objects["pin-code:"+code].(*pinCode); ok {
				c = v
				delete(objects, "pin-code:"+code)
			}
		})
		if c == nil || !p.n.Sim.Now().Before(c.expires) || c.redirectURI != r.PostForm.Get("redirect_uri") {
			pinError(w, http.StatusBadRequest, 1, "Invalid authorization code or redirect_uri.")
			return
		}
		p.writeTokens(w, p.n.Tokens.Issue(c.user, c.handle), gt, c.scope)
	case "refresh_token":
		c, ok := p.n.Tokens.Refresh(r.PostForm.Get("refresh_token"))
		if !ok {
			pinError(w, http.StatusBadRequest, 1, "Invalid refresh token.")
			return
		}
		p.writeTokens(w, c, gt, r.PostForm.Get("scope"))
	default:
		pinError(w, http.StatusBadRequest, 1, "Unsupported grant_type: "+gt)
	}
}

func (p *pinSim) writeTokens(w http.ResponseWriter, c platforms.Credentials, grant, scope string) {
	if scope == "" {
		scope = "boards:read,boards:write,pins:read,pins:write,user_accounts:read"
	}
	now := p.n.Sim.Now()
	WriteJSON(w, http.StatusOK, map[string]any{
		"access_token":             c.AccessToken,
		"refresh_token":            c.RefreshToken,
		"response_type":            grant,
		"token_type":               "bearer",
		"expires_in":               int(c.ExpiresAt.Sub(now) / time.Second),
		"refresh_token_expires_in": int(c.RefreshExpiresAt.Sub(now) / time.Second),
		"refresh_token_expires_at": c.RefreshExpiresAt.Unix(),
		"scope":                    scope,
	})
}

// ensureBoard returns the user's default board, creating it on first use.
func (p *pinSim) ensureBoard(u pinUser) *pinBoard {
	id := p.n.UserID("board:" + u.id)
	var b *pinBoard
	p.n.Store.With(func(objects map[string]any) {
		if v, ok := objects["pin-board:"+id].(*pinBoard); ok {
			b = v
			return
		}
		b = &pinBoard{id: id, owner: u.id, ownerName: u.handle, name: "Herald", privacy: "PUBLIC", created: p.n.Sim.Now().UTC()}
		objects["pin-board:"+id] = b
		// A second board, created a moment later, so that a choice of board is a real choice.
		id2 := p.n.UserID("board-ideas:" + u.id)
		objects["pin-board:"+id2] = &pinBoard{id: id2, owner: u.id, ownerName: u.handle, name: "Ideas", privacy: "PUBLIC", created: b.created.Add(time.Second)}
	})
	return b
}

func (p *pinSim) boardJSON(b *pinBoard) map[string]any {
	return map[string]any{
		"id": b.id, "name": b.name, "description": b.desc, "privacy": b.privacy,
		"owner": map[string]string{"username": b.ownerName}, "created_at": b.created.Format("2006-01-02T15:04:05"),
		"board_pins_modified_at": b.created.Format("2006-01-02T15:04:05"),
	}
}

func (p *pinSim) userAccount(w http.ResponseWriter, _ *http.Request, u pinUser) {
	p.ensureBoard(u)
	boards, pins := 0, 0
	p.n.Store.With(func(objects map[string]any) {
		for _, v := range objects {
			switch o := v.(type) {
			case *pinBoard:
				if o.owner == u.id {
					boards++
				}
			case *pinPin:
				if o.owner == u.id {
					pins++
				}
			}
		}
	})
	WriteJSON(w, http.StatusOK, map[string]any{
		"account_type": "BUSINESS", "id": u.id, "username": u.handle, "business_name": u.handle,
		"profile_image": "https://i.pinimg.com/600x600_R/sim/" + u.id + ".jpg", "website_url": "",
		"board_count": boards, "pin_count": pins, "follower_count": 0, "following_count": 0, "monthly_views": 0,
	})
}

// pinPage reads page_size and bookmark.
func pinPage(r *http.Request, def, maxSize int) (size, offset int, ok bool) {
	size = def
	if s := r.URL.Query().Get("page_size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxSize {
			return 0, 0, false
		}
		size = n
	}
	if b := r.URL.Query().Get("bookmark"); b != "" {
		raw, err := base64.RawURLEncoding.DecodeString(b)
		if err != nil {
			return 0, 0, false
		}
		n, err := strconv.Atoi(string(raw))
		if err != nil || n < 0 {
			return 0, 0, false
		}
		offset = n
	}
	return size, offset, true
}

func pinBookmark(end, total int) any {
	if end >= total {
		return nil
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
}

func (p *pinSim) listBoards(w http.ResponseWriter, r *http.Request, u pinUser) {
	p.ensureBoard(u)
	size, offset, ok := pinPage(r, 25, 250)
	if !ok {
		pinError(w, http.StatusBadRequest, 1, "Invalid page_size or bookmark.")
		return
	}
	var boards []*pinBoard
	p.n.Store.With(func(objects map[string]any) {
		for _, v := range objects {
			if b, ok := v.(*pinBoard); ok && b.owner == u.id {
				boards = append(boards, b)
			}
		}
	})
	sort.Slice(boards, func(i, j int) bool {
		if !boards[i].created.Equal(boards[j].created) {
			return boards[i].created.Before(boards[j].created)
		}
		return boards[i].id < boards[j].id
	})
	end := min(offset+size, len(boards))
	items := []any{}
	for _, b := range boards[min(offset, len(boards)):end] {
		items = append(items, p.boardJSON(b))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": items, "bookmark": pinBookmark(end, len(boards))})
}

func (p *pinSim) createBoard(w http.ResponseWriter, r *http.Request, u pinUser) {
	var req struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Privacy     string `json:"privacy"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || strings.TrimSpace(req.Name) == "" {
		pinError(w, http.StatusBadRequest, 1, "Invalid request: name is required.")
		return
	}
	if req.Privacy == "" {
		req.Privacy = "PUBLIC"
	}
	b := &pinBoard{id: p.n.UserID("board:" + u.id + "/" + RandomID(8)), owner: u.id, ownerName: u.handle, name: req.Name,
		desc: req.Description, privacy: req.Privacy, created: p.n.Sim.Now().UTC()}
	p.n.Store.Put("pin-board:"+b.id, b)
	WriteJSON(w, http.StatusCreated, p.boardJSON(b))
}

// pinFetched is one fetched image.
type pinFetched struct{ sha, url string }

// fetchImage downloads an image URL the way Pinterest does for image_url Pins.
func (p *pinSim) fetchImage(ctx context.Context, raw string) (pinFetched, string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return pinFetched{}, "Invalid image url: " + raw
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return pinFetched{}, "Invalid image url: " + raw
	}
	resp, err := p.n.Sim.Options().HTTPClient.Do(req)
	if err != nil {
		return pinFetched{}, "Sorry, we could not fetch the image from " + raw
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, pinMaxImageBytes+1))
	switch {
	case err != nil || resp.StatusCode < 200 || resp.StatusCode > 299:
		return pinFetched{}, fmt.Sprintf("Sorry, we could not fetch the image from %s (HTTP %d)", raw, resp.StatusCode)
	case len(data) > pinMaxImageBytes:
		return pinFetched{}, "The image at " + raw + " is too large."
	case !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") && !strings.HasPrefix(http.DetectContentType(data), "image/"):
		return pinFetched{}, "The file at " + raw + " is not an image."
	}
	sum := sha256.Sum256(data)
	return pinFetched{sha: hex.EncodeToString(sum[:]), url: raw}, ""
}

// pinCreate is the body of POST /v5/pins.
type pinCreate struct {
	BoardID     string `json:"board_id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Link        string `json:"link"`
	AltText     string `json:"alt_text"`
	MediaSource struct {
		SourceType             string   `json:"source_type"`
		URL                    string   `json:"url"`
		ContentType            string   `json:"content_type"`
		Data                   string   `json:"data"`
		MediaID                string   `json:"media_id"`
		CoverImageURL          string   `json:"cover_image_url"`
		CoverImageKeyFrameTime *float64 `json:"cover_image_key_frame_time"`
		Items                  []struct {
			URL string `json:"url"`
		} `json:"items"`
	} `json:"media_source"`
}

func (p *pinSim) createPin(w http.ResponseWriter, r *http.Request, u pinUser) {
	var req pinCreate
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		pinError(w, http.StatusBadRequest, 1, "Invalid request body: "+err.Error())
		return
	}
	switch {
	case req.BoardID == "":
		pinError(w, http.StatusBadRequest, 1, "Invalid request: board_id is required.")
		return
	case utf8.RuneCountInString(req.Title) > pinMaxTitle:
		pinError(w, http.StatusBadRequest, 1, fmt.Sprintf("Invalid request: title is %d characters; the limit is %d.", utf8.RuneCountInString(req.Title), pinMaxTitle))
		return
	case utf8.RuneCountInString(req.Description) > pinMaxDesc:
		pinError(w, http.StatusBadRequest, 1, fmt.Sprintf("Invalid request: description is %d characters; the limit is %d.", utf8.RuneCountInString(req.Description), pinMaxDesc))
		return
	case len(req.Link) > pinMaxLink:
		pinError(w, http.StatusBadRequest, 1, fmt.Sprintf("Invalid request: link is longer than %d characters.", pinMaxLink))
		return
	case utf8.RuneCountInString(req.AltText) > pinMaxAlt:
		pinError(w, http.StatusBadRequest, 1, fmt.Sprintf("Invalid request: alt_text is longer than %d characters.", pinMaxAlt))
		return
	}
	p.ensureBoard(u)
	v, _ := p.n.Store.Get("pin-board:" + req.BoardID)
	board, _ := v.(*pinBoard)
	if board == nil {
		pinError(w, http.StatusNotFound, 40, "Board not found.")
		return
	}
	if board.owner != u.id {
		pinError(w, http.StatusForbidden, 29, "You are not permitted to access that resource.")
		return
	}
	pin := &pinPin{owner: u.id, ownerName: u.handle, boardID: board.id, title: req.Title, desc: req.Description, link: req.Link, alt: req.AltText}
	ms := req.MediaSource
	switch ms.SourceType {
	case "image_url":
		f, problem := p.fetchImage(r.Context(), ms.URL)
		if problem != "" {
			pinError(w, http.StatusBadRequest, 1, problem)
			return
		}
		pin.kind, pin.shas, pin.imageURLs = "image", []string{f.sha}, []string{f.url}
	case "image_base64":
		if ms.ContentType != "image/jpeg" && ms.ContentType != "image/png" {
			pinError(w, http.StatusBadRequest, 1, "Invalid request: content_type must be image/jpeg or image/png.")
			return
		}
		data, err := base64.StdEncoding.DecodeString(ms.Data)
		if err != nil || len(data) == 0 {
			pinError(w, http.StatusBadRequest, 1, "Invalid request: data is not base64.")
			return
		}
		sum := sha256.Sum256(data)
		pin.kind, pin.shas, pin.fromBase64Img = "image", []string{hex.EncodeToString(sum[:])}, true
	case "multiple_image_urls":
		if len(ms.Items) < 2 || len(ms.Items) > 5 {
			pinError(w, http.StatusBadRequest, 1, fmt.Sprintf("Invalid request: a carousel has 2 to 5 images, not %d.", len(ms.Items)))
			return
		}
		pin.kind = "multiple_images"
		for _, it := range ms.Items {
			f, problem := p.fetchImage(r.Context(), it.URL)
			if problem != "" {
				pinError(w, http.StatusBadRequest, 1, problem)
				return
			}
			pin.shas, pin.imageURLs = append(pin.shas, f.sha), append(pin.imageURLs, f.url)
		}
	case "video_id":
		var m pinMedia
		found := false
		p.n.Store.With(func(objects map[string]any) {
			if v, ok := objects["pin-media:"+ms.MediaID].(*pinMedia); ok {
				m, found = *v, true
			}
		})
		switch {
		case !found || m.owner != u.id:
			pinError(w, http.StatusNotFound, 4161, "Media not found.")
			return
		case !m.uploaded || p.n.Sim.Now().Before(m.readyAt):
			pinError(w, http.StatusBadRequest, 4163, "The video upload is not finished processing yet.")
			return
		case m.failed:
			pinError(w, http.StatusBadRequest, 4164, "The video upload failed.")
			return
		case ms.CoverImageURL == "" && ms.CoverImageKeyFrameTime == nil:
			pinError(w, http.StatusBadRequest, 1, "Invalid request: a video Pin needs cover_image_url or cover_image_key_frame_time.")
			return
		}
		pin.kind, pin.shas, pin.mediaID, pin.coverURL = "video", []string{m.sha}, m.id, ms.CoverImageURL
		if ms.CoverImageKeyFrameTime != nil {
			pin.coverKeyFrame, pin.hasCoverKeyFrame = *ms.CoverImageKeyFrameTime, true
		}
	case "":
		pinError(w, http.StatusBadRequest, 1, "Invalid request: media_source is required (Pins need an image or a video).")
		return
	default:
		pinError(w, http.StatusBadRequest, 1, "The simulator does not take media_source "+ms.SourceType+".")
		return
	}
	fault := p.n.TakeFault(FaultPostThenError) != ""
	pin.id = p.newPinID()
	pin.created = p.n.Sim.Now().UTC()
	p.n.Store.Put("pin-pin:"+pin.id, pin)
	opts := map[string]any{"board_id": pin.boardID}
	if pin.title != "" {
		opts["title"] = pin.title
	}
	if pin.link != "" {
		opts["link"] = pin.link
	}
	var alts []string
	if pin.alt != "" {
		alts = []string{pin.alt}
	}
	p.n.PublishWith(pin.id, u.id, pin.desc, pin.shas, opts, alts)
	if fault {
		pinError(w, http.StatusInternalServerError, 0, "Something went wrong on our end. Sorry about that.")
		return
	}
	WriteJSON(w, http.StatusCreated, p.pinJSON(pin))
}

// newPinID returns an 18-digit Pin id.
func (p *pinSim) newPinID() string {
	id := p.n.UserID("pin:" + RandomID(16))
	for len(id) < 18 {
		id += strconv.Itoa(len(id) % 10)
	}
	return id[:18]
}

func (p *pinSim) pinJSON(pin *pinPin) map[string]any {
	media := map[string]any{"media_type": pin.kind}
	switch pin.kind {
	case "image":
		src := "https://i.pinimg.com/originals/sim/" + pin.id + ".jpg"
		if len(pin.imageURLs) > 0 {
			src = pin.imageURLs[0]
		}
		media["images"] = map[string]any{"originals": map[string]any{"url": src, "width": 1000, "height": 1500}}
	case "multiple_images":
		var items []any
		for _, u := range pin.imageURLs {
			items = append(items, map[string]any{"media_type": "image", "images": map[string]any{"originals": map[string]any{"url": u}}})
		}
		media["items"] = items
	case "video":
		media["cover_image_url"] = pin.coverURL
		media["video_url"] = "https://v.pinimg.com/videos/sim/" + pin.mediaID + ".mp4"
	}
	creative := map[string]string{"image": "REGULAR", "multiple_images": "CAROUSEL", "video": "VIDEO"}[pin.kind]
	return map[string]any{
		"id": pin.id, "created_at": pin.created.Format("2006-01-02T15:04:05"), "link": pinNullable(pin.link),
		"title": pin.title, "description": pin.desc, "alt_text": pinNullable(pin.alt), "dominant_color": "#6E7874",
		"board_id": pin.boardID, "board_section_id": nil, "board_owner": map[string]string{"username": pin.ownerName},
		"is_owner": true, "is_standard": true, "has_been_promoted": false, "parent_pin_id": nil, "note": "",
		"creative_type": creative, "media": media,
	}
}

// pinNullable renders an empty string as JSON null, as Pinterest does for unset optional fields.
func pinNullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// listPins is GET /v5/pins: the caller's Pins, newest first.
func (p *pinSim) listPins(w http.ResponseWriter, r *http.Request, u pinUser) {
	size, offset, ok := pinPage(r, 25, 250)
	if !ok {
		pinError(w, http.StatusBadRequest, 1, "Invalid page_size or bookmark.")
		return
	}
	var pins []*pinPin
	p.n.Store.With(func(objects map[string]any) {
		for _, v := range objects {
			if pin, ok := v.(*pinPin); ok && pin.owner == u.id {
				pins = append(pins, pin)
			}
		}
	})
	sort.Slice(pins, func(i, j int) bool {
		if !pins[i].created.Equal(pins[j].created) {
			return pins[i].created.After(pins[j].created)
		}
		return pins[i].id > pins[j].id
	})
	end := min(offset+size, len(pins))
	items := []any{}
	for _, pin := range pins[min(offset, len(pins)):end] {
		items = append(items, p.pinJSON(pin))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": items, "bookmark": pinBookmark(end, len(pins))})
}

func (p *pinSim) getPin(w http.ResponseWriter, r *http.Request, u pinUser) {
	v, _ := p.n.Store.Get("pin-pin:" + r.PathValue("pin_id"))
	pin, _ := v.(*pinPin)
	if pin == nil {
		pinError(w, http.StatusNotFound, 50, "Pin not found.")
		return
	}
	WriteJSON(w, http.StatusOK, p.pinJSON(pin))
}

// registerMedia is POST /v5/media {"media_type":"video"}: an upload slot on the simulator's
// S3-style upload URL.
func (p *pinSim) registerMedia(w http.ResponseWriter, r *http.Request, u pinUser) {
	var req struct {
		MediaType string `json:"media_type"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.MediaType != "video" {
		pinError(w, http.StatusBadRequest, 1, "Invalid request: media_type must be video.")
		return
	}
	m := &pinMedia{id: p.n.UserID("media:" + RandomID(16)), owner: u.id, signature: RandomID(32)}
	m.key = "uploads/" + RandomID(4) + "/" + m.id
	p.n.Store.Put("pin-media:"+m.id, m)
	p.n.Store.Put("pin-media-key:"+m.key, m)
	now := p.n.Sim.Now().UTC()
	policy := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`{"expiration":%q,"conditions":[{"bucket":"pinterest-media-upload"},{"key":%q}]}`, now.Add(time.Hour).Format(time.RFC3339), m.key)))
	WriteJSON(w, http.StatusCreated, map[string]any{
		"media_id": m.id, "media_type": "video", "upload_url": p.n.BaseURL() + "/media-upload/",
		"upload_parameters": map[string]string{
			"x-amz-date":           now.Format("20060102T150405Z"),
			"x-amz-signature":      m.signature,
			"x-amz-security-token": RandomID(24),
			"x-amz-algorithm":      "AWS4-HMAC-SHA256",
			"key":                  m.key,
			"policy":               policy,
			"x-amz-credential":     "ASIASIM/" + now.Format("20060102") + "/us-east-1/s3/aws4_request",
			"Content-Type":         "multipart/form-data",
		},
	})
}

// pinS3Error writes an S3-style XML error.
func pinS3Error(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message><RequestId>%s</RequestId></Error>", code, message, RandomID(8))
}

// upload is the upload_url: an S3 POST with the upload parameters as form fields and the file
// last. It answers 204 and starts processing.
func (p *pinSim) upload(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		pinS3Error(w, http.StatusPreconditionFailed, "PreconditionFailed", "Bucket POST must be of the enclosure-type multipart/form-data")
		return
	}
	fields := map[string]string{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			pinS3Error(w, http.StatusBadRequest, "InvalidArgument", "POST requires exactly one file upload per request.")
			return
		}
		if err != nil {
			pinS3Error(w, http.StatusBadRequest, "MalformedPOSTRequest", "The body of your POST request is not well-formed multipart/form-data.")
			return
		}
		if part.FormName() != "file" {
			v, _ := io.ReadAll(io.LimitReader(part, 64<<10))
			fields[part.FormName()] = string(v)
			continue
		}
		v, _ := p.n.Store.Get("pin-media-key:" + fields["key"])
		m, _ := v.(*pinMedia)
		if m == nil || fields["x-amz-signature"] != m.signature || fields["policy"] == "" {
			pinS3Error(w, http.StatusForbidden, "AccessDenied", "Invalid according to Policy: Policy Condition failed")
			return
		}
		h := sha256.New()
		head := make([]byte, len(ProcessingFailureMarker))
		n, _ := io.ReadFull(part, head)
		h.Write(head[:n])
		size, err := io.Copy(h, io.LimitReader(part, pinMaxVideoBytes+1))
		if err != nil {
			return // the client went away
		}
		if size+int64(n) > pinMaxVideoBytes {
			pinS3Error(w, http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size")
			return
		}
		if size+int64(n) == 0 {
			pinS3Error(w, http.StatusBadRequest, "InvalidArgument", "The file is empty.")
			return
		}
		p.n.Store.With(func(map[string]any) {
			m.uploaded = true
			m.failed = bytes.Equal(head[:n], []byte(ProcessingFailureMarker))
			m.sha = hex.EncodeToString(h.Sum(nil))
			m.readyAt = p.n.Sim.Now().Add(p.n.Sim.opts.ProcessingDelay)
		})
		w.WriteHeader(http.StatusNoContent)
		return
	}
}

// mediaStatus is GET /v5/media/{media_id}.
func (p *pinSim) mediaStatus(w http.ResponseWriter, r *http.Request, u pinUser) {
	v, _ := p.n.Store.Get("pin-media:" + r.PathValue("media_id"))
	m, _ := v.(*pinMedia)
	if m == nil || m.owner != u.id {
		pinError(w, http.StatusNotFound, 4161, "Media not found.")
		return
	}
	status := "registered"
	p.n.Store.With(func(map[string]any) {
		switch {
		case !m.uploaded:
		case p.n.Sim.Now().Before(m.readyAt):
			status = "processing"
		case m.failed:
			status = "failed"
		default:
			status = "succeeded"
		}
	})
	WriteJSON(w, http.StatusOK, map[string]any{"media_id": m.id, "media_type": "video", "status": status})
}

// pinMetricTypes are the Pin analytics metric types the simulator knows (networks.md §8.5).
var pinMetricTypes = map[string]bool{
	"IMPRESSION": true, "SAVE": true, "PIN_CLICK": true, "OUTBOUND_CLICK": true, "TOTAL_COMMENTS": true,
	"TOTAL_REACTIONS": true, "SAVE_RATE": true, "VIDEO_MRC_VIEW": true, "VIDEO_START": true,
	"VIDEO_AVG_WATCH_TIME": true, "VIDEO_V50_WATCH_TIME": true, "QUARTILE_95_PERCENT_VIEW": true,
	"OUTBOUND_CLICK_RATE": true, "PIN_CLICK_RATE": true, "ENGAGEMENT": true, "ENGAGEMENT_RATE": true,
}

// pinAnalytics is GET /v5/pins/{pin_id}/analytics.
func (p *pinSim) pinAnalytics(w http.ResponseWriter, r *http.Request, u pinUser) {
	q := r.URL.Query()
	start, err1 := time.Parse("2006-01-02", q.Get("start_date"))
	end, err2 := time.Parse("2006-01-02", q.Get("end_date"))
	if err1 != nil || err2 != nil {
		pinError(w, http.StatusBadRequest, 1, "start_date and end_date are required (YYYY-MM-DD).")
		return
	}
	now := p.n.Sim.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch {
	case start.Before(today.AddDate(0, 0, -90)):
		pinError(w, http.StatusBadRequest, 1, "start_date cannot be more than 90 days ago.")
		return
	case end.Before(start):
		pinError(w, http.StatusBadRequest, 1, "end_date cannot be before start_date.")
		return
	}
	var metrics []string
	for _, m := range strings.Split(q.Get("metric_types"), ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if !pinMetricTypes[m] {
			pinError(w, http.StatusBadRequest, 1, fmt.Sprintf("Invalid metric_types value: %s.", m))
			return
		}
		metrics = append(metrics, m)
	}
	if len(metrics) == 0 {
		pinError(w, http.StatusBadRequest, 1, "metric_types is required.")
		return
	}
	if at := q.Get("app_types"); at != "" && at != "ALL" && at != "MOBILE" && at != "TABLET" && at != "WEB" {
		pinError(w, http.StatusBadRequest, 1, "Invalid app_types value.")
		return
	}
	v, _ := p.n.Store.Get("pin-pin:" + r.PathValue("pin_id"))
	pin, _ := v.(*pinPin)
	switch {
	case pin == nil:
		pinError(w, http.StatusNotFound, 50, "Pin not found.")
		return
	case pin.owner != u.id:
		pinError(w, http.StatusForbidden, 29, "You are not permitted to access that resource.")
		return
	}
	c := p.n.Counters(pin.id)
	values := map[string]int64{"IMPRESSION": c.Views, "SAVE": c.Shares, "TOTAL_COMMENTS": c.Comments, "TOTAL_REACTIONS": c.Likes}
	totals := func(zero bool) map[string]any {
		out := map[string]any{}
		for _, m := range metrics {
			out[m] = int64(0)
			if !zero {
				out[m] = values[m]
			}
		}
		return out
	}
	created := pin.created.UTC()
	first, last := start, end
	if day := time.Date(created.Year(), created.Month(), created.Day(), 0, 0, 0, 0, time.UTC); day.After(first) {
		first = day
	}
	if today.Before(last) {
		last = today
	}
	daily := []any{}
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		daily = append(daily, map[string]any{"date": d.Format("2006-01-02"), "data_status": "READY", "metrics": totals(!d.Equal(last))})
	}
	summary := totals(true)
	if len(daily) > 0 {
		summary = totals(false)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"all": map[string]any{
		"daily_metrics": daily, "summary_metrics": summary, "lifetime_metrics": totals(false),
	}})
}
