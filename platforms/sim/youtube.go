package sim

// YouTube (YouTube Data API v3 with Google OAuth 2.0): networks.md §7 and §10.7.
//
// Served: Google's OAuth endpoints (GET /o/oauth2/v2/auth with optional PKCE S256 or plain,
// POST /token for the authorization_code and refresh_token grants, POST /revoke); the resumable
// upload of videos.insert (POST /upload/youtube/v3/videos?uploadType=resumable answers 200 with an
// absolute Location session URL on the simulator; PUT to it takes the whole file or chunks with
// Content-Range, answers 308 with Range while incomplete, 201 with the video resource when
// complete, and an empty PUT with "Content-Range: bytes */N" queries the session); GET
// /youtube/v3/videos?part=snippet,status,processingDetails,statistics&id= for processing;
// GET /youtube/v3/channels?part=id,snippet&mine=true for the channel; GET
// /youtube/v3/search?forMine=true&type=video&part=snippet&order=date for looking a video up.
//
// Behaviour: access tokens live 1 h and answer 401 authError "Invalid Credentials" once expired
// or revoked; refresh tokens are not rotated and a dead one answers 400 invalid_grant; a refresh
// token is only issued when the consent asked for access_type=offline. Quota is counted per
// project (the simulator has one OAuth client) per Pacific day and resets at midnight
// America/Los_Angeles; an exhausted quota answers 403 quotaExceeded (domain youtube.quota) with
// no rate-limit headers. Two quota models (networks.md §7.3), chosen with SetYouTubeQuotaModel
// or POST /_sim/limits {"platform":"youtube","bucket":"quota_model","limit":0|1,"window":"24h"}:
//
//   - YouTubeUnitPool (default): one pool of 10,000 units (bucket "units"); videos.insert costs
//     1,600 units, search.list 100, every other call 1. Without an override of "units" the insert
//     and search costs scale with Options.LimitScale like the pool, so the number of uploads a
//     day stays six.
//   - YouTubeMethodBuckets: videos.insert and search.list have their own buckets of 100 calls a
//     day ("videos.insert", "search.list"); every other call costs 1 of the 10,000 units.
//
// A channel may upload 100 videos per rolling 24 h (bucket "channel_uploads"; the real number is
// unpublished) and answers 400 uploadLimitExceeded past it. SetYouTubeUnverifiedProject(true)
// locks new uploads to private, as Google does for unaudited API projects. Titles over 100
// characters, descriptions over 5,000 bytes and either containing < or > answer 400
// invalidTitle / invalidDescription. Processing runs for Options.ProcessingDelay (uploadStatus
// "uploaded", processingStatus "processing") and ends "processed"/"succeeded", or
// "failed"/"failed" when the file begins with ProcessingFailureMarker.
//
// Live data (networks.md §7.5): videos.list part=statistics (viewCount, likeCount, commentCount
// from the video's counters; favoriteCount 0; YouTube has no share count), commentThreads.list
// (videoId or id; part snippet and replies, with up to 5 replies inline), comments.list (parentId
// or id) and comments.setModerationStatus (id, moderationStatus published, heldForReview or
// rejected; 50 units; only the video's channel; 204). A rejected comment is left out of the
// video's threads and of its thread's replies (a rejected top-level comment takes its replies
// with it), as YouTube lists only published comments by default; looked up by id, it is still
// found by the channel. And comments.insert (a reply with snippet.parentId, which must be a top-level comment; it
// costs 50 units in the unit pool model and 1 in the per-method model), and commentThreads.insert
// (a top-level comment, the channel's first comment: youtube_comment.go; the same cost). Comment ids look like
// YouTube's (a top-level id, and parent.suffix for replies); an unknown video answers 404
// videoNotFound, an unknown parent 404 parentCommentNotFound.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // the quota day is America/Los_Angeles wherever the simulator runs
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// YouTubeQuotaModel is how the simulated YouTube Data API charges quota (networks.md §7.3).
type YouTubeQuotaModel int

const (
	// YouTubeUnitPool charges every call to one daily pool of 10,000 units: videos.insert costs
	// 1,600 units, search.list 100 and every other call 1.
	YouTubeUnitPool YouTubeQuotaModel = iota
	// YouTubeMethodBuckets gives videos.insert and search.list their own buckets of 100 calls a
	// day and charges every other call 1 unit of 10,000.
	YouTubeMethodBuckets
)

// YouTube's quota buckets, for SetLimit and POST /_sim/limits.
const (
	YouTubeBucketUnits          = "units"
	YouTubeBucketInsert         = "videos.insert"
	YouTubeBucketSearch         = "search.list"
	YouTubeBucketChannelUploads = "channel_uploads"
)

// Settings of the simulated YouTube kept as limit overrides, so that POST /_sim/limits reaches
// them too and Reset keeps them.
const (
	ytBucketModel      = "quota_model"
	ytBucketUnverified = "unverified_project"
)

const (
	ytUnitsPerDay        = 10000
	ytInsertUnits        = 1600
	ytSearchUnits        = 100
	ytCommentInsertUnits = 50
	ytMaxCommentChars    = 10000
	ytMethodPerDay       = 100
	ytChannelUploads     = 100
	ytQuotaWindow        = 25 * time.Hour // longer than any Pacific day: the day itself keys the counter
	ytCodeTTL            = 5 * time.Minute
	ytChunkGranule       = 256 << 10
	ytMaxUploadBytes     = 1 << 30 // what the simulator keeps in memory; YouTube takes 256 GB
	ytMaxTitleChars      = 100
	ytMaxDescBytes       = 5000
	ytSearchSnippetCh    = 160
)

var ytPacific = ytLoadPacific()

func ytLoadPacific() *time.Location {
	if loc, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return loc
	}
	return time.FixedZone("PST", -8*3600)
}

// YouTubeQuotaReset is when YouTube's daily quota next resets after t: midnight Pacific time.
func YouTubeQuotaReset(t time.Time) time.Time {
	lt := t.In(ytPacific)
	y, m, d := lt.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, ytPacific)
}

// SetYouTubeQuotaModel selects the quota model of the simulated YouTube.
func (s *Sim) SetYouTubeQuotaModel(m YouTubeQuotaModel) {
	s.SetLimit(platforms.YouTube, ytBucketModel, Limit{Count: int(m), Window: 24 * time.Hour})
}

// SetYouTubeUnverifiedProject makes the simulated YouTube treat the OAuth client as an unaudited
// API project: every new upload is locked to private.
func (s *Sim) SetYouTubeUnverifiedProject(on bool) {
	c := 0
	if on {
		c = 1
	}
	s.SetLimit(platforms.YouTube, ytBucketUnverified, Limit{Count: c, Window: 24 * time.Hour})
}

// ytOverride returns the limit override stored for a YouTube bucket.
func (s *Sim) ytOverride(bucket string) (Limit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.limits[limitKey{platforms.YouTube, bucket}]
	return l, ok
}

func init() { register(platforms.YouTube, registerYouTube) }

type ytSim struct{ n *Network }

// ytCode is an authorization code waiting for its exchange.
type ytCode struct {
	redirectURI, challenge, method, scope string
	user, handle                          string
	offline                               bool
	expires                               time.Time
}

// ytSession is a resumable upload session.
type ytSession struct {
	owner, handle     string
	title, desc       string
	privacy, category string
	tags              []string
	options           map[string]any
	contentType       string
	total             int64
	data              []byte
	videoID           string // set once the upload completed
}

// ytVideo is an uploaded video.
type ytVideo struct {
	id, channel, channelTitle string
	title, desc               string
	privacy, category         string
	tags                      []string
	sha                       string
	failed                    bool
	published, readyAt        time.Time
}

func registerYouTube(n *Network) {
	y := &ytSim{n: n}
	n.RateLimited = y.rateLimited

	n.Mux.HandleFunc("GET /o/oauth2/v2/auth", y.authorize)
	n.Mux.HandleFunc("POST /token", y.token)
	n.Mux.HandleFunc("POST /revoke", y.revoke)
	n.Mux.HandleFunc("POST /upload/youtube/v3/videos", y.api("insert", y.startUpload))
	n.Mux.HandleFunc("PUT /upload/youtube/v3/videos", y.putUpload)
	n.Mux.HandleFunc("GET /youtube/v3/videos", y.api("list", y.listVideos))
	n.Mux.HandleFunc("GET /youtube/v3/channels", y.api("list", y.channels))
	n.Mux.HandleFunc("GET /youtube/v3/videoCategories", y.api("list", y.videoCategories))
	n.Mux.HandleFunc("GET /youtube/v3/playlists", y.api("list", y.playlists))
	n.Mux.HandleFunc("POST /youtube/v3/playlistItems", y.api("insert_item", y.insertPlaylistItem))
	n.Mux.HandleFunc("GET /youtube/v3/search", y.api("search", y.search))

	n.Live = LiveHooks{Metrics: true, NewComment: y.newComment}
	n.Mux.HandleFunc("GET /youtube/v3/commentThreads", y.api("list", y.commentThreads))
	n.Mux.HandleFunc("GET /youtube/v3/comments", y.api("list", y.listComments))
	n.Mux.HandleFunc("POST /youtube/v3/comments", y.api("comment_insert", y.insertComment))
	n.Mux.HandleFunc("POST /youtube/v3/commentThreads", y.api("comment_insert", y.insertThread))
	n.Mux.HandleFunc("POST /youtube/v3/comments/setModerationStatus", y.api("moderate", y.setModerationStatus))
}

// ytUser is the caller of an authenticated endpoint.
type ytUser struct{ id, handle string }

// api wraps an endpoint with the token check and the project's daily quota. kind is "insert",
// "search" or "list".
func (y *ytSim) api(kind string, h func(w http.ResponseWriter, r *http.Request, u ytUser)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			y.unauthorized(w)
			return
		}
		id, handle, state := y.n.Tokens.Check(strings.TrimSpace(tok))
		if state != TokenValid {
			y.unauthorized(w)
			return
		}
		if !y.spend(w, r, kind) {
			return
		}
		h(w, r, ytUser{id: id, handle: handle})
	}
}

// spend charges the call to the project's quota of the current Pacific day and answers 403
// quotaExceeded when it is spent.
func (y *ytSim) spend(w http.ResponseWriter, r *http.Request, kind string) bool {
	s := y.n.Sim
	now := s.Now()
	project := "project/" + now.In(ytPacific).Format("2006-01-02")
	model := YouTubeUnitPool
	if l, ok := s.ytOverride(ytBucketModel); ok {
		model = YouTubeQuotaModel(l.Count)
	}
	bucket, cost, def := YouTubeBucketUnits, 1, Limit{Count: ytUnitsPerDay, Window: ytQuotaWindow}
	switch {
	case model == YouTubeMethodBuckets && kind == "insert":
		bucket, def = YouTubeBucketInsert, Limit{Count: ytMethodPerDay, Window: ytQuotaWindow}
	case model == YouTubeMethodBuckets && kind == "search":
		bucket, def = YouTubeBucketSearch, Limit{Count: ytMethodPerDay, Window: ytQuotaWindow}
	case kind == "insert":
		cost = y.scaledCost(ytInsertUnits)
	case kind == "search":
		cost = y.scaledCost(ytSearchUnits)
	case (kind == "comment_insert" || kind == "moderate" || kind == "insert_item") && model == YouTubeUnitPool:
		cost = y.scaledCost(ytCommentInsertUnits)
	}
	if _, _, _, ok := y.n.Take(bucket, project, cost, def); !ok {
		y.rateLimited(w, r, YouTubeQuotaReset(now))
		return false
	}
	return true
}

// scaledCost scales a unit cost like the default pool, so that Options.LimitScale keeps the
// number of calls a day; an explicit pool size keeps the documented costs.
func (y *ytSim) scaledCost(units int) int {
	if _, ok := y.n.Sim.ytOverride(YouTubeBucketUnits); ok {
		return units
	}
	return int(math.Max(1, math.Floor(float64(units)*y.n.Sim.opts.LimitScale)))
}

// rateLimited answers YouTube's quota error: 403 quotaExceeded, no headers (the quota resets at
// midnight Pacific time).
func (y *ytSim) rateLimited(w http.ResponseWriter, _ *http.Request, _ time.Time) {
	ytError(w, http.StatusForbidden, "youtube.quota", "quotaExceeded",
		"The request cannot be completed because you have exceeded your <a href=\"/youtube/v3/getting-started#quota\">quota</a>.")
}

func (y *ytSim) unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code":    401,
		"message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
		"errors": []map[string]any{{
			"message": "Invalid Credentials", "domain": "global", "reason": "authError",
			"location": "Authorization", "locationType": "header",
		}},
		"status": "UNAUTHENTICATED",
	}})
}

// ytError writes Google's JSON error.
func ytError(w http.ResponseWriter, status int, domain, reason, message string) {
	names := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 500: "INTERNAL", 503: "UNAVAILABLE"}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code":    status,
		"message": message,
		"errors":  []map[string]any{{"message": message, "domain": domain, "reason": reason}},
		"status":  names[status],
	}})
}

// ytOAuthError writes the token endpoint's error shape.
func ytOAuthError(w http.ResponseWriter, status int, code, description string) {
	WriteJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// authorize is Google's consent page: it approves at once (or refuses when a denial is pending)
// and redirects to redirect_uri with code, state and scope. login_hint names the simulated user
// (an e-mail address keeps its local part; default "sim-user").
func (y *ytSim) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != ClientID {
		http.Error(w, "Error 401: invalid_client. The OAuth client was not found.", http.StatusUnauthorized)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || redirect.Host == "" {
		http.Error(w, "Error 400: redirect_uri_mismatch", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	if s := q.Get("state"); s != "" {
		back.Set("state", s)
	}
	fail := func(code string) {
		back.Set("error", code)
		redirect.RawQuery = back.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
	}
	method := q.Get("code_challenge_method")
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type")
		return
	case q.Get("scope") == "":
		fail("invalid_scope")
		return
	case q.Get("code_challenge") != "" && method != "" && method != "S256" && method != "plain":
		fail("invalid_request")
		return
	}
	if y.n.TakeDenial() {
		fail("access_denied")
		return
	}
	if method == "" {
		method = "plain"
	}
	handle := q.Get("login_hint")
	if at := strings.IndexByte(handle, '@'); at > 0 {
		handle = handle[:at]
	}
	if handle == "" {
		handle = "sim-user"
	}
	code := "4/0A" + RandomID(24)
	y.n.Store.Put("yt-code:"+code, &ytCode{
		redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), method: method,
		scope: q.Get("scope"), user: y.n.UserID(handle), handle: handle,
		offline: q.Get("access_type") == "offline", expires: y.n.Sim.Now().Add(ytCodeTTL),
	})
	back.Set("code", code)
	back.Set("scope", q.Get("scope"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// token is POST https://oauth2.googleapis.com/token: client credentials in the form or in Basic
// auth; the authorization_code and refresh_token grants.
func (y *ytSim) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		ytOAuthError(w, http.StatusBadRequest, "invalid_request", "Malformed request body.")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != ClientID || secret != ClientSecret {
		ytOAuthError(w, http.StatusUnauthorized, "invalid_client", "The OAuth client was not found.")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		y.exchange(w, r)
	case "refresh_token":
		c, ok := y.n.Tokens.Refresh(r.PostForm.Get("refresh_token"))
		if !ok {
			ytOAuthError(w, http.StatusBadRequest, "invalid_grant", "Token has been expired or revoked.")
			return
		}
		c.RefreshToken = "" // Google does not rotate refresh tokens
		y.writeTokens(w, c, "https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/youtube.readonly")
	default:
		ytOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+r.PostForm.Get("grant_type"))
	}
}

func (y *ytSim) exchange(w http.ResponseWriter, r *http.Request) {
	code := r.PostForm.Get("code")
	var c *ytCode
	y.n.Store.With(func(objects map[string]any) {
		if v, ok := objects["yt-code:"+code].(*ytCode); ok {
			c = v
			delete(objects, "yt-code:"+code)
		}
	})
	switch {
	case c == nil || !y.n.Sim.Now().Before(c.expires):
		ytOAuthError(w, http.StatusBadRequest, "invalid_grant", "Malformed auth code.")
		return
	case c.redirectURI != r.PostForm.Get("redirect_uri"):
		ytOAuthError(w, http.StatusBadRequest, "redirect_uri_mismatch", "Bad Request")
		return
	case c.challenge != "" && r.PostForm.Get("code_verifier") == "":
		ytOAuthError(w, http.StatusBadRequest, "invalid_grant", "Missing code verifier.")
		return
	case c.challenge != "" && !ytPKCE(c.method, c.challenge, r.PostForm.Get("code_verifier")):
		ytOAuthError(w, http.StatusBadRequest, "invalid_grant", "Invalid code verifier.")
		return
	}
	creds := y.n.Tokens.Issue(c.user, c.handle)
	if !c.offline {
		creds.RefreshToken = ""
	}
	y.writeTokens(w, creds, c.scope)
}

// ytPKCE checks a PKCE verifier against its challenge (RFC 7636).
func ytPKCE(method, challenge, verifier string) bool {
	if method == "S256" {
		sum := sha256.Sum256([]byte(verifier))
		return base64.RawURLEncoding.EncodeToString(sum[:]) == challenge
	}
	return verifier == challenge
}

func (y *ytSim) writeTokens(w http.ResponseWriter, c platforms.Credentials, scope string) {
	body := map[string]any{
		"access_token": c.AccessToken,
		"expires_in":   int(y.n.Tokens.AccessTTL/time.Second) - 1,
		"scope":        scope,
		"token_type":   "Bearer",
	}
	if c.RefreshToken != "" {
		body["refresh_token"] = c.RefreshToken
	}
	WriteJSON(w, http.StatusOK, body)
}

// revoke is POST https://oauth2.googleapis.com/revoke?token=…: it revokes the grant of an access
// or refresh token.
func (y *ytSim) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	if !y.n.Tokens.Revoke(r.Form.Get("token")) {
		ytOAuthError(w, http.StatusBadRequest, "invalid_token", "Token expired or revoked")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{})
}

// startUpload is POST /upload/youtube/v3/videos?uploadType=resumable&part=snippet,status with the
// video resource as JSON: it opens a session and answers 200 with its absolute URL in Location.
func (y *ytSim) startUpload(w http.ResponseWriter, r *http.Request, u ytUser) {
	q := r.URL.Query()
	if q.Get("uploadType") != "resumable" {
		ytError(w, http.StatusBadRequest, "global", "badRequest", "The simulator takes videos.insert as a resumable upload (uploadType=resumable).")
		return
	}
	if q.Get("part") == "" {
		ytError(w, http.StatusBadRequest, "global", "required", "Required parameter: part")
		return
	}
	total, err := strconv.ParseInt(r.Header.Get("X-Upload-Content-Length"), 10, 64)
	if err != nil || total <= 0 {
		ytError(w, http.StatusBadRequest, "global", "badRequest", "X-Upload-Content-Length must give the size of the video in bytes.")
		return
	}
	if total > ytMaxUploadBytes {
		ytError(w, http.StatusBadRequest, "global", "badRequest", fmt.Sprintf("The simulator keeps videos up to %d bytes.", ytMaxUploadBytes))
		return
	}
	ctype := r.Header.Get("X-Upload-Content-Type")
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	if !strings.HasPrefix(ctype, "video/") && ctype != "application/octet-stream" {
		ytError(w, http.StatusBadRequest, "global", "badRequest", fmt.Sprintf("Media type '%s' is not supported. Valid media types: [video/*, application/octet-stream]", ctype))
		return
	}
	var meta struct {
		Snippet struct {
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Tags        []string `json:"tags"`
			CategoryID  string   `json:"categoryId"`
		} `json:"snippet"`
		Status struct {
			PrivacyStatus           string `json:"privacyStatus"`
			SelfDeclaredMadeForKids *bool  `json:"selfDeclaredMadeForKids"`
		} `json:"status"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&meta); err != nil {
		ytError(w, http.StatusBadRequest, "global", "parseError", "This API does not support parsing form-encoded input.")
		return
	}
	title, desc := meta.Snippet.Title, meta.Snippet.Description
	switch {
	case strings.TrimSpace(title) == "":
		ytError(w, http.StatusBadRequest, "youtube.video", "invalidTitle", "The request metadata specifies an invalid or empty video title.")
		return
	case utf8.RuneCountInString(title) > ytMaxTitleChars || strings.ContainsAny(title, "<>"):
		ytError(w, http.StatusBadRequest, "youtube.video", "invalidTitle", "The request metadata specifies an invalid video title: at most 100 characters, without < or >.")
		return
	case len(desc) > ytMaxDescBytes || strings.ContainsAny(desc, "<>"):
		ytError(w, http.StatusBadRequest, "youtube.video", "invalidDescription", "The request metadata specifies an invalid video description: at most 5000 bytes, without < or >.")
		return
	}
	privacy := meta.Status.PrivacyStatus
	switch privacy {
	case "":
		privacy = "public"
	case "public", "unlisted", "private":
	default:
		ytError(w, http.StatusBadRequest, "youtube.video", "invalidVideoMetadata", "The request metadata specifies an invalid privacy status: "+privacy)
		return
	}
	if c := meta.Snippet.CategoryID; c != "" && !slices.ContainsFunc(ytCategories, func(k [2]string) bool { return k[0] == c }) {
		ytError(w, http.StatusBadRequest, "youtube.video", "invalidCategoryId", "The snippet.categoryId property specifies an invalid category ID.")
		return
	}
	if l, ok := y.n.Sim.ytOverride(ytBucketUnverified); ok && l.Count > 0 {
		privacy = "private"
	}
	opts := map[string]any{"title": title, "privacyStatus": privacy, "categoryId": meta.Snippet.CategoryID, "notifySubscribers": q.Get("notifySubscribers") != "false"}
	if meta.Status.SelfDeclaredMadeForKids != nil {
		opts["selfDeclaredMadeForKids"] = *meta.Status.SelfDeclaredMadeForKids
	}
	if len(meta.Snippet.Tags) > 0 {
		opts["tags"] = meta.Snippet.Tags
	}
	if _, _, _, ok := y.n.Take(YouTubeBucketChannelUploads, u.id, 1, Limit{Count: ytChannelUploads, Window: 24 * time.Hour}); !ok {
		ytError(w, http.StatusBadRequest, "youtube.video", "uploadLimitExceeded", "The user has exceeded the number of videos they may upload.")
		return
	}
	id := RandomID(16)
	y.n.Store.Put("yt-session:"+id, &ytSession{
		owner: u.id, handle: u.handle, title: title, desc: desc, privacy: privacy,
		category: meta.Snippet.CategoryID, tags: meta.Snippet.Tags, contentType: ctype, total: total, options: opts,
	})
	w.Header().Set("X-GUploader-UploadID", id)
	w.Header().Set("Location", y.n.BaseURL()+"/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status&upload_id="+id)
	w.WriteHeader(http.StatusOK)
}

// ytRange parses "bytes a-b/N" or "bytes */N".
func ytRange(h string) (first, last, total int64, query bool, err error) {
	spec, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, 0, 0, false, fmt.Errorf("bad Content-Range %q", h)
	}
	rng, tot, ok := strings.Cut(spec, "/")
	if !ok {
		return 0, 0, 0, false, fmt.Errorf("bad Content-Range %q", h)
	}
	if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
		return 0, 0, 0, false, fmt.Errorf("bad Content-Range %q", h)
	}
	if rng == "*" {
		return 0, 0, total, true, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, false, fmt.Errorf("bad Content-Range %q", h)
	}
	if first, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, 0, false, fmt.Errorf("bad Content-Range %q", h)
	}
	if last, err = strconv.ParseInt(b, 10, 64); err != nil || last < first {
		return 0, 0, 0, false, fmt.Errorf("bad Content-Range %q", h)
	}
	return first, last, total, false, nil
}

// putUpload is PUT <session URL>: the whole file, one chunk (Content-Range: bytes a-b/N) or a
// status query (Content-Range: bytes */N). The session URL itself authorizes the upload.
func (y *ytSim) putUpload(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("upload_id")
	v, ok := y.n.Store.Get("yt-session:" + id)
	sess, _ := v.(*ytSession)
	if !ok || sess == nil {
		ytError(w, http.StatusNotFound, "global", "notFound", "The upload session was not found or has expired.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, ytMaxUploadBytes+1))
	if err != nil {
		return // the client went away mid-chunk: keep what the session had
	}
	var first, last, total int64
	query := false
	if h := r.Header.Get("Content-Range"); h != "" {
		if first, last, total, query, err = ytRange(h); err != nil {
			ytError(w, http.StatusBadRequest, "global", "badRequest", "Failed to parse Content-Range header.")
			return
		}
	} else {
		first, last, total = 0, int64(len(body))-1, int64(len(body))
	}
	var (
		video            *ytVideo
		problem, videoID string
		received         int64
		complete         bool
		data             []byte
	)
	y.n.Store.With(func(map[string]any) { // the store's lock guards the session
		switch {
		case sess.videoID != "":
		case total != sess.total:
			problem = fmt.Sprintf("The Content-Range total %d does not match X-Upload-Content-Length %d.", total, sess.total)
		case query:
		case int64(len(body)) != last-first+1:
			problem = "The body does not match the Content-Range header."
		case first > int64(len(sess.data)):
			problem = fmt.Sprintf("The chunk starts at byte %d but the session has %d bytes.", first, len(sess.data))
		case last+1 < total && last+1-first < ytChunkGranule:
			problem = fmt.Sprintf("Invalid request. The number of bytes uploaded is required to be equal or greater than %d, except for the final request (it's recommended to be the exact multiple of %d). The received request contained %d bytes, which does not meet this requirement.", ytChunkGranule, ytChunkGranule, len(body))
		default:
			// A resent chunk may overlap what the session already has: keep the new part only.
			if skip := int64(len(sess.data)) - first; skip < int64(len(body)) {
				sess.data = append(sess.data, body[skip:]...)
			}
		}
		received = int64(len(sess.data))
		complete = problem == "" && sess.videoID == "" && received == sess.total
		if complete {
			sess.videoID = ytVideoID()
			data, sess.data = sess.data, nil
		}
		videoID = sess.videoID
	})
	if problem != "" {
		ytError(w, http.StatusBadRequest, "global", "badRequest", problem)
		return
	}
	if videoID == "" {
		if received > 0 {
			w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", received-1))
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusPermanentRedirect) // 308 Resume Incomplete, no Location
		return
	}
	if complete {
		fault := y.n.TakeFault(FaultPostThenError) != ""
		sum := sha256.Sum256(data)
		now := y.n.Sim.Now().UTC()
		video = &ytVideo{
			id: videoID, channel: sess.owner, channelTitle: sess.handle, title: sess.title, desc: sess.desc,
			privacy: sess.privacy, category: sess.category, tags: sess.tags, sha: hex.EncodeToString(sum[:]),
			failed:    bytes.HasPrefix(data, []byte(ProcessingFailureMarker)),
			published: now, readyAt: now.Add(y.n.Sim.opts.ProcessingDelay),
		}
		y.n.Store.Put("yt-video:"+videoID, video)
		y.n.PublishWith(videoID, sess.owner, sess.desc, []string{video.sha}, sess.options, nil)
		if fault {
			ytError(w, http.StatusServiceUnavailable, "global", "backendError", "Backend Error")
			return
		}
		writeYTJSON(w, http.StatusCreated, y.videoResource(video, []string{"snippet", "status"}, true))
		return
	}
	vv, _ := y.n.Store.Get("yt-video:" + videoID)
	video, _ = vv.(*ytVideo)
	if video == nil {
		ytError(w, http.StatusNotFound, "global", "notFound", "The video was deleted.")
		return
	}
	writeYTJSON(w, http.StatusOK, y.videoResource(video, []string{"snippet", "status"}, true))
}

func writeYTJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ytVideoID returns an 11-character YouTube-style video id.
func ytVideoID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// videoResource renders a video with the requested parts; owner adds processingDetails.
func (y *ytSim) videoResource(v *ytVideo, parts []string, owner bool) map[string]any {
	res := map[string]any{"kind": "youtube#video", "etag": RandomID(8), "id": v.id}
	ready := !y.n.Sim.Now().Before(v.readyAt)
	upload, processing := "uploaded", "processing"
	if ready && v.failed {
		upload, processing = "failed", "failed"
	} else if ready {
		upload, processing = "processed", "succeeded"
	}
	for _, p := range parts {
		switch strings.TrimSpace(p) {
		case "id":
		case "snippet":
			tags := v.tags
			if tags == nil {
				tags = []string{}
			}
			res["snippet"] = map[string]any{
				"publishedAt": v.published.Format(time.RFC3339), "channelId": v.channel, "title": v.title,
				"description": v.desc, "channelTitle": v.channelTitle, "categoryId": v.category, "tags": tags,
			}
		case "status":
			st := map[string]any{"uploadStatus": upload, "privacyStatus": v.privacy, "license": "youtube", "embeddable": true, "publicStatsViewable": true}
			if upload == "failed" {
				st["failureReason"] = "codec"
			}
			res["status"] = st
		case "processingDetails":
			if owner {
				pd := map[string]any{"processingStatus": processing}
				if processing == "processing" {
					pd["processingProgress"] = map[string]any{"partsTotal": "1000", "partsProcessed": "0", "timeLeftMs": strconv.FormatInt(v.readyAt.Sub(y.n.Sim.Now()).Milliseconds(), 10)}
				}
				if processing == "failed" {
					pd["processingFailureReason"] = "streamingFailed"
				}
				res["processingDetails"] = pd
			}
		case "statistics":
			c := y.n.Counters(v.id)
			res["statistics"] = map[string]any{"viewCount": strconv.FormatInt(c.Views, 10), "likeCount": strconv.FormatInt(c.Likes, 10),
				"favoriteCount": "0", "commentCount": strconv.FormatInt(c.Comments, 10)}
		}
	}
	return res
}

// listVideos is GET /youtube/v3/videos?part=…&id=a,b.
func (y *ytSim) listVideos(w http.ResponseWriter, r *http.Request, u ytUser) {
	q := r.URL.Query()
	if q.Get("part") == "" {
		ytError(w, http.StatusBadRequest, "global", "required", "Required parameter: part")
		return
	}
	if q.Get("id") == "" {
		ytError(w, http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "No filter selected. Expected one of: id, myRating, chart")
		return
	}
	parts := strings.Split(q.Get("part"), ",")
	items := []any{}
	for _, id := range strings.Split(q.Get("id"), ",") {
		v, _ := y.n.Store.Get("yt-video:" + strings.TrimSpace(id))
		video, _ := v.(*ytVideo)
		if video == nil || (video.privacy == "private" && video.channel != u.id) {
			continue
		}
		items = append(items, y.videoResource(video, parts, video.channel == u.id))
	}
	writeYTJSON(w, http.StatusOK, map[string]any{
		"kind": "youtube#videoListResponse", "etag": RandomID(8), "items": items,
		"pageInfo": map[string]int{"totalResults": len(items), "resultsPerPage": len(items)},
	})
}

// channels is GET /youtube/v3/channels?part=id,snippet&mine=true.
func (y *ytSim) channels(w http.ResponseWriter, r *http.Request, u ytUser) {
	q := r.URL.Query()
	if q.Get("part") == "" {
		ytError(w, http.StatusBadRequest, "global", "required", "Required parameter: part")
		return
	}
	if q.Get("mine") != "true" && q.Get("id") != u.id {
		ytError(w, http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "The simulator serves channels.list with mine=true.")
		return
	}
	item := map[string]any{"kind": "youtube#channel", "etag": RandomID(8), "id": u.id}
	if strings.Contains(q.Get("part"), "snippet") {
		item["snippet"] = map[string]any{"title": u.handle, "description": "", "customUrl": "@" + strings.ToLower(u.handle), "publishedAt": "2020-01-01T00:00:00Z"}
	}
	writeYTJSON(w, http.StatusOK, map[string]any{
		"kind": "youtube#channelListResponse", "etag": RandomID(8), "items": []any{item},
		"pageInfo": map[string]int{"totalResults": 1, "resultsPerPage": 1},
	})
}

// search is GET /youtube/v3/search?forMine=true&type=video&part=snippet&order=date: the caller's
// videos, newest first, with search's shortened descriptions; pageToken pages on.
func (y *ytSim) search(w http.ResponseWriter, r *http.Request, u ytUser) {
	q := r.URL.Query()
	if q.Get("part") != "snippet" && q.Get("part") != "id" && q.Get("part") != "id,snippet" && q.Get("part") != "snippet,id" {
		ytError(w, http.StatusBadRequest, "global", "invalidParameter", "Required parameter: part (snippet)")
		return
	}
	if q.Get("forMine") != "true" {
		ytError(w, http.StatusBadRequest, "youtube.search", "invalidSearchFilter", "The simulator serves search.list with forMine=true.")
		return
	}
	if q.Get("type") != "video" {
		ytError(w, http.StatusBadRequest, "youtube.search", "invalidSearchFilter", "The request specifies forMine without type=video.")
		return
	}
	size := 5
	if s := q.Get("maxResults"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 50 {
			ytError(w, http.StatusBadRequest, "youtube.parameter", "invalidParameter", "maxResults must be between 0 and 50.")
			return
		}
		size = n
	}
	offset := 0
	if t := q.Get("pageToken"); t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "CA"))
		if err != nil || n < 0 {
			ytError(w, http.StatusBadRequest, "youtube.parameter", "invalidPageToken", "The request specifies an invalid page token.")
			return
		}
		offset = n
	}
	var mine []*ytVideo
	y.n.Store.With(func(objects map[string]any) {
		for k, v := range objects {
			if video, ok := v.(*ytVideo); ok && strings.HasPrefix(k, "yt-video:") && video.channel == u.id {
				mine = append(mine, video)
			}
		}
	})
	sort.Slice(mine, func(i, j int) bool {
		if !mine[i].published.Equal(mine[j].published) {
			return mine[i].published.After(mine[j].published)
		}
		return mine[i].id < mine[j].id
	})
	items := []any{}
	end := min(offset+size, len(mine))
	for _, v := range mine[min(offset, len(mine)):end] {
		desc := v.desc
		if utf8.RuneCountInString(desc) > ytSearchSnippetCh {
			desc = string([]rune(desc)[:ytSearchSnippetCh-3]) + "..."
		}
		items = append(items, map[string]any{
			"kind": "youtube#searchResult", "etag": RandomID(8),
			"id": map[string]string{"kind": "youtube#video", "videoId": v.id},
			"snippet": map[string]any{
				"publishedAt": v.published.Format(time.RFC3339), "channelId": v.channel, "title": v.title,
				"description": desc, "channelTitle": v.channelTitle, "publishTime": v.published.Format(time.RFC3339),
				"liveBroadcastContent": "none",
			},
		})
	}
	resp := map[string]any{
		"kind": "youtube#searchListResponse", "etag": RandomID(8), "regionCode": "US", "items": items,
		"pageInfo": map[string]int{"totalResults": len(mine), "resultsPerPage": size},
	}
	if end < len(mine) {
		resp["nextPageToken"] = "CA" + strconv.Itoa(end)
	}
	writeYTJSON(w, http.StatusOK, resp)
}

// ytCommentID returns a YouTube-style comment id (26 characters).
func ytCommentID() string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return "Ug" + base64.RawURLEncoding.EncodeToString(b) + "4A"
}

// newComment gives a comment added through the admin API a YouTube id; a reply to a reply answers
// the top-level comment, as YouTube threads are one level deep.
func (y *ytSim) newComment(c *Comment, _ Record, parent *Comment) error {
	c.AuthorID = y.n.UserID(c.Author)
	if parent == nil {
		c.ID = ytCommentID()
		return nil
	}
	if parent.ParentID != "" {
		c.ParentID = parent.ParentID
	}
	c.ID = c.ParentID + "." + ytCommentID()
	return nil
}

// video returns a video the caller may see.
func (y *ytSim) video(id string, u ytUser) (*ytVideo, bool) {
	v, _ := y.n.Store.Get("yt-video:" + id)
	video, _ := v.(*ytVideo)
	if video == nil || (video.privacy == "private" && video.channel != u.id) {
		return nil, false
	}
	return video, true
}

// commentResource renders a comment (textFormat html escapes textDisplay).
func (y *ytSim) commentResource(c Comment, plain bool) map[string]any {
	channel := ""
	if v, ok := y.n.Store.Get("yt-video:" + c.PostID); ok {
		channel = v.(*ytVideo).channel
	}
	display := c.Text
	if !plain {
		display = html.EscapeString(c.Text)
	}
	sn := map[string]any{
		"channelId": channel, "videoId": c.PostID, "textDisplay": display, "textOriginal": c.Text,
		"authorDisplayName": c.Author, "authorProfileImageUrl": "https://yt3.ggpht.com/sim/" + c.AuthorID,
		"authorChannelUrl": "http://www.youtube.com/channel/" + c.AuthorID, "authorChannelId": map[string]string{"value": c.AuthorID},
		"canRate": true, "viewerRating": "none", "likeCount": 0,
		"publishedAt": c.CreatedAt.UTC().Format(time.RFC3339), "updatedAt": c.CreatedAt.UTC().Format(time.RFC3339),
	}
	if c.ParentID != "" {
		sn["parentId"] = c.ParentID
	}
	return map[string]any{"kind": "youtube#comment", "etag": RandomID(8), "id": c.ID, "snippet": sn}
}

// ytParts reads the part parameter.
func ytParts(w http.ResponseWriter, r *http.Request, allowed ...string) (map[string]bool, bool) {
	raw := r.URL.Query().Get("part")
	if raw == "" {
		ytError(w, http.StatusBadRequest, "global", "required", "Required parameter: part")
		return nil, false
	}
	parts := map[string]bool{}
	for _, p := range strings.Split(raw, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allowed, p) {
			ytError(w, http.StatusBadRequest, "youtube.part", "unknownPart", fmt.Sprintf("'%s'", p))
			return nil, false
		}
		parts[p] = true
	}
	return parts, true
}

// ytPaging reads maxResults (1..100, default 20) and pageToken (an offset token).
func ytPaging(w http.ResponseWriter, r *http.Request) (size, offset int, ok bool) {
	q := r.URL.Query()
	size = 20
	if s := q.Get("maxResults"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			ytError(w, http.StatusBadRequest, "youtube.parameter", "invalidParameter", "maxResults must be between 1 and 100.")
			return 0, 0, false
		}
		size = n
	}
	if t := q.Get("pageToken"); t != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(t, "QU"))
		if err != nil || n < 0 || !strings.HasPrefix(t, "QU") {
			ytError(w, http.StatusBadRequest, "youtube.parameter", "invalidPageToken", "The request specifies an invalid page token.")
			return 0, 0, false
		}
		offset = n
	}
	return size, offset, true
}

// ytListResponse pages items into a list response of kind.
func ytListResponse(kind string, items []any, size, offset int) map[string]any {
	end := min(offset+size, len(items))
	page := items[min(offset, len(items)):end]
	resp := map[string]any{"kind": kind, "etag": RandomID(8), "items": page,
		"pageInfo": map[string]int{"totalResults": len(page), "resultsPerPage": size}}
	if end < len(items) {
		resp["nextPageToken"] = "QU" + strconv.Itoa(end)
	}
	return resp
}

// commentThreads is commentThreads.list with videoId or id: top-level comments newest first.
func (y *ytSim) commentThreads(w http.ResponseWriter, r *http.Request, u ytUser) {
	parts, ok := ytParts(w, r, "id", "snippet", "replies")
	if !ok {
		return
	}
	size, offset, ok := ytPaging(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	plain := q.Get("textFormat") == "plainText"
	var tops []Comment
	switch {
	case q.Get("videoId") != "":
		video, ok := y.video(q.Get("videoId"), u)
		if !ok {
			ytError(w, http.StatusNotFound, "youtube.commentThread", "videoNotFound", "The video identified by the <code><a href=\"/youtube/v3/docs/commentThreads/list#videoId\">videoId</a></code> parameter could not be found.")
			return
		}
		all := y.n.Comments(video.id)
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].ParentID == "" && !y.n.IsHidden(all[i].ID) {
				tops = append(tops, all[i])
			}
		}
	case q.Get("id") != "":
		for _, id := range strings.Split(q.Get("id"), ",") {
			if c, ok := y.n.Comment(strings.TrimSpace(id)); ok && c.ParentID == "" {
				if _, visible := y.video(c.PostID, u); visible {
					tops = append(tops, c)
				}
			}
		}
	default:
		ytError(w, http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "No filter selected. Expected one of: videoId, id, allThreadsRelatedToChannelId")
		return
	}
	items := make([]any, 0, len(tops))
	for _, c := range tops {
		var replies []Comment
		for _, rc := range y.n.Comments(c.PostID) {
			if rc.ParentID == c.ID && !y.n.IsHidden(rc.ID) {
				replies = append(replies, rc)
			}
		}
		item := map[string]any{"kind": "youtube#commentThread", "etag": RandomID(8), "id": c.ID}
		if parts["snippet"] {
			top := y.commentResource(c, plain)
			item["snippet"] = map[string]any{"channelId": top["snippet"].(map[string]any)["channelId"], "videoId": c.PostID,
				"topLevelComment": top, "canReply": true, "totalReplyCount": len(replies), "isPublic": true}
		}
		if parts["replies"] && len(replies) > 0 {
			inline := []any{}
			for _, rc := range replies[max(0, len(replies)-5):] {
				inline = append(inline, y.commentResource(rc, plain))
			}
			item["replies"] = map[string]any{"comments": inline}
		}
		items = append(items, item)
	}
	writeYTJSON(w, http.StatusOK, ytListResponse("youtube#commentThreadListResponse", items, size, offset))
}

// listComments is comments.list with parentId (the replies of a top-level comment, oldest first)
// or id.
func (y *ytSim) listComments(w http.ResponseWriter, r *http.Request, u ytUser) {
	if _, ok := ytParts(w, r, "id", "snippet"); !ok {
		return
	}
	size, offset, ok := ytPaging(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	plain := q.Get("textFormat") == "plainText"
	var list []Comment
	switch {
	case q.Get("parentId") != "":
		if parent, ok := y.n.Comment(q.Get("parentId")); ok {
			if _, visible := y.video(parent.PostID, u); visible {
				for _, c := range y.n.Comments(parent.PostID) {
					if c.ParentID == parent.ID && !y.n.IsHidden(c.ID) {
						list = append(list, c)
					}
				}
			}
		}
	case q.Get("id") != "":
		for _, id := range strings.Split(q.Get("id"), ",") {
			if c, ok := y.n.Comment(strings.TrimSpace(id)); ok {
				if _, visible := y.video(c.PostID, u); visible {
					list = append(list, c)
				}
			}
		}
	default:
		ytError(w, http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "No filter selected. Expected one of: id, parentId")
		return
	}
	items := make([]any, 0, len(list))
	for _, c := range list {
		items = append(items, y.commentResource(c, plain))
	}
	writeYTJSON(w, http.StatusOK, ytListResponse("youtube#commentListResponse", items, size, offset))
}

// insertComment is comments.insert?part=snippet {"snippet":{"parentId","textOriginal"}}: a reply
// to a top-level comment.
func (y *ytSim) insertComment(w http.ResponseWriter, r *http.Request, u ytUser) {
	if _, ok := ytParts(w, r, "id", "snippet"); !ok {
		return
	}
	var req struct {
		Snippet struct {
			ParentID     string `json:"parentId"`
			TextOriginal string `json:"textOriginal"`
		} `json:"snippet"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		ytError(w, http.StatusBadRequest, "global", "parseError", "Parse Error")
		return
	}
	text := req.Snippet.TextOriginal
	switch {
	case req.Snippet.ParentID == "":
		ytError(w, http.StatusBadRequest, "youtube.comment", "parentIdMissing", "No parent ID was specified; a reply needs snippet.parentId.")
		return
	case strings.TrimSpace(text) == "":
		ytError(w, http.StatusBadRequest, "youtube.comment", "commentTextRequired", "The comment resource that is being inserted must specify a value for the snippet.textOriginal property.")
		return
	case utf8.RuneCountInString(text) > ytMaxCommentChars:
		ytError(w, http.StatusBadRequest, "youtube.comment", "commentTextTooLong", "The comment resource that is being inserted contains too many characters in the snippet.textOriginal property.")
		return
	}
	parent, ok := y.n.Comment(req.Snippet.ParentID)
	if ok {
		_, ok = y.video(parent.PostID, u)
	}
	if !ok {
		ytError(w, http.StatusNotFound, "youtube.comment", "parentCommentNotFound", "The specified parent comment could not be found.")
		return
	}
	if parent.ParentID != "" {
		ytError(w, http.StatusBadRequest, "youtube.comment", "operationNotSupported", "The parent comment must be a top-level comment.")
		return
	}
	c, _ := y.n.RecordReply(Comment{ID: parent.ID + "." + ytCommentID(), PostID: parent.PostID, ParentID: parent.ID, Author: u.handle, AuthorID: u.id, Text: text}, nil)
	if y.n.TakeFault(FaultPostThenError) != "" {
		ytError(w, http.StatusServiceUnavailable, "global", "backendError", "Backend Error")
		return
	}
	writeYTJSON(w, http.StatusOK, y.commentResource(c, false))
}

// setModerationStatus is comments.setModerationStatus?id=…&moderationStatus=…: the video's channel
// publishes or rejects a comment (heldForReview counts as not rejected); 204 No Content.
func (y *ytSim) setModerationStatus(w http.ResponseWriter, r *http.Request, u ytUser) {
	q := r.URL.Query()
	status := q.Get("moderationStatus")
	if status != "published" && status != "heldForReview" && status != "rejected" {
		ytError(w, http.StatusBadRequest, "youtube.parameter", "invalidModerationStatus", "The moderationStatus parameter must be published, heldForReview or rejected.")
		return
	}
	ids := strings.Split(q.Get("id"), ",")
	if q.Get("id") == "" {
		ytError(w, http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "Required parameter: id")
		return
	}
	for _, id := range ids {
		c, ok := y.n.Comment(strings.TrimSpace(id))
		if !ok {
			ytError(w, http.StatusNotFound, "youtube.comment", "commentNotFound", "The comment could not be found.")
			return
		}
		if v, ok := y.video(c.PostID, u); !ok || v.channel != u.id {
			ytError(w, http.StatusForbidden, "youtube.comment", "forbidden", "The comment could not be moderated: the caller does not own the video.")
			return
		}
	}
	for _, id := range ids {
		y.n.SetHidden(strings.TrimSpace(id), status == "rejected")
	}
	w.WriteHeader(http.StatusNoContent)
}

// ytCategories are the video categories the simulator offers every region: id and title (the
// assignable ones of YouTube's US list).
var ytCategories = [][2]string{{"1", "Film & Animation"}, {"10", "Music"}, {"17", "Sports"}, {"20", "Gaming"}, {"22", "People & Blogs"}, {"24", "Entertainment"}, {"27", "Education"}, {"28", "Science & Technology"}}

// videoCategories is GET /youtube/v3/videoCategories?part=snippet&regionCode=….
func (y *ytSim) videoCategories(w http.ResponseWriter, r *http.Request, _ ytUser) {
	if r.URL.Query().Get("regionCode") == "" && r.URL.Query().Get("id") == "" {
		ytError(w, http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "No filter selected. Expected one of: id, regionCode")
		return
	}
	items := []any{}
	for _, c := range ytCategories {
		items = append(items, map[string]any{"kind": "youtube#videoCategory", "id": c[0], "snippet": map[string]any{"title": c[1], "assignable": true, "channelId": "UCBR8-60-B28hp2BmDPdntcQ"}})
	}
	writeYTJSON(w, http.StatusOK, map[string]any{"kind": "youtube#videoCategoryListResponse", "items": items})
}

// ytPlaylists are a channel's playlists: every simulated channel has two.
func (y *ytSim) ytPlaylists(u ytUser) [][2]string {
	return [][2]string{{"PL" + y.n.UserID("playlist-1:"+u.id), "Herald clips"}, {"PL" + y.n.UserID("playlist-2:"+u.id), "Launches"}}
}

// playlists is GET /youtube/v3/playlists?part=snippet&mine=true.
func (y *ytSim) playlists(w http.ResponseWriter, r *http.Request, u ytUser) {
	if r.URL.Query().Get("mine") != "true" {
		ytError(w, http.StatusBadRequest, "youtube.parameter", "missingRequiredParameter", "The simulator lists the channel's own playlists (mine=true).")
		return
	}
	items := []any{}
	for _, p := range y.ytPlaylists(u) {
		items = append(items, map[string]any{"kind": "youtube#playlist", "id": p[0], "snippet": map[string]any{"title": p[1], "channelId": u.id}})
	}
	writeYTJSON(w, http.StatusOK, map[string]any{"kind": "youtube#playlistListResponse", "items": items, "pageInfo": map[string]int{"totalResults": len(items), "resultsPerPage": 50}})
}

// insertPlaylistItem is POST /youtube/v3/playlistItems?part=snippet: adds one of the channel's
// videos to one of its playlists; the video's record gains the playlist.
func (y *ytSim) insertPlaylistItem(w http.ResponseWriter, r *http.Request, u ytUser) {
	var req struct {
		Snippet struct {
			PlaylistID string `json:"playlistId"`
			ResourceID struct {
				Kind    string `json:"kind"`
				VideoID string `json:"videoId"`
			} `json:"resourceId"`
		} `json:"snippet"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		ytError(w, http.StatusBadRequest, "global", "parseError", "Parse Error")
		return
	}
	sn := req.Snippet
	if !slices.ContainsFunc(y.ytPlaylists(u), func(p [2]string) bool { return p[0] == sn.PlaylistID }) {
		ytError(w, http.StatusNotFound, "youtube.playlistItem", "playlistNotFound", "The playlist identified with the request's playlistId parameter cannot be found.")
		return
	}
	vv, _ := y.n.Store.Get("yt-video:" + sn.ResourceID.VideoID)
	v, _ := vv.(*ytVideo)
	if v == nil || v.channel != u.id || sn.ResourceID.Kind != "youtube#video" {
		ytError(w, http.StatusNotFound, "youtube.playlistItem", "videoNotFound", "The video that you are trying to add to the playlist cannot be found.")
		return
	}
	y.n.UpdateRecord(v.id, func(rec *Record) {
		if rec.Options == nil {
			rec.Options = map[string]any{}
		}
		rec.Options["playlistId"] = sn.PlaylistID
	})
	writeYTJSON(w, http.StatusOK, map[string]any{"kind": "youtube#playlistItem", "id": RandomID(12), "snippet": map[string]any{"playlistId": sn.PlaylistID, "resourceId": sn.ResourceID}})
}
