package sim

// TikTok (Login Kit OAuth v2, Content Posting API, Display API): networks.md §9 and §10.9.
//
// Served: the consent page GET /v2/auth/authorize/ (the www host; optional PKCE S256, whose
// challenge may be base64url or hex, as TikTok's desktop flow computes it), POST /v2/oauth/token/
// (authorization_code with code_verifier, refresh_token; every refresh returns a new refresh token
// and retires the old one), POST /v2/oauth/revoke/, GET /v2/user/info/, POST
// /v2/post/publish/creator_info/query/, POST /v2/post/publish/video/init/ (FILE_UPLOAD answers an
// absolute upload_url on the simulator; PULL_FROM_URL fetches video_url with Options.HTTPClient),
// POST /v2/post/publish/content/init/ (photo posts: tiktok_photo.go), PUT <upload_url>
// (Content-Range chunks, answering 206 and 201 for the last one), POST
// /v2/post/publish/status/fetch/, and POST /v2/video/list/ for looking a post up.
//
// Behaviour: every answer is the envelope {"data":…,"error":{"code":"ok","message":"","log_id"}};
// access tokens live 24 h and answer 401 access_token_invalid once expired or revoked; per-token
// one-minute windows limit video/init to 6 ("video_init"), status/fetch to 30 ("status_fetch"),
// creator_info to 20 ("creator_info", an assumption) and the Display API to 600 ("display"),
// answering 429 rate_limit_exceeded without headers; a creator may post 15 videos per 24 h
// ("daily_posts"; TikTok does not publish the number) and then gets 403 spam_risk_too_many_posts.
// The chunk rules of the media transfer guide apply: files under 5 MB in one chunk, chunks of 5 to
// 64 MB, total_chunk_count = floor(video_size/chunk_size), the last chunk taking the remainder (at
// most 128 MB), sent in order. After the last chunk the post is processing (PROCESSING_UPLOAD, or
// PROCESSING_DOWNLOAD for PULL_FROM_URL) for Options.ProcessingDelay, then PUBLISH_COMPLETE; its
// publicaly_available_post_id appears after a further moderation delay (SetTikTokModerationDelay;
// default Options.ProcessingDelay), when it is also listed by /v2/video/list/. A video whose bytes
// begin with ProcessingFailureMarker ends FAILED (file_format_check_failed) and is not published.
//
// By default the client is audited: creator_info offers PUBLIC_TO_EVERYONE, MUTUAL_FOLLOW_FRIENDS,
// FOLLOWER_OF_CREATOR and SELF_ONLY. SetTikTokAudited(false) models an unaudited client: only
// SELF_ONLY is offered, and any other privacy_level answers 403
// unaudited_client_can_only_post_to_private_accounts.
//
// Live data (networks.md §9.5): POST /v2/video/query/?fields=… {"filters":{"video_ids":[…]}} (at
// most 20 ids; the Display API window) answers the caller's published videos among them, with
// view_count, like_count, comment_count and share_count from the post's counters, which
// /v2/video/list/ reports too.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/heraldhq/herald/platforms"
)

// TikTok's default limits (networks.md §9.3; creator_info and the daily cap are assumptions).
var (
	ttLimitInit       = Limit{Count: 6, Window: time.Minute}
	ttLimitStatus     = Limit{Count: 30, Window: time.Minute}
	ttLimitCreator    = Limit{Count: 20, Window: time.Minute}
	ttLimitDisplay    = Limit{Count: 600, Window: time.Minute}
	ttLimitDailyPosts = Limit{Count: 15, Window: 24 * time.Hour}
)

const (
	ttCodeTTL       = 10 * time.Minute
	ttMinChunk      = 5 << 20
	ttMaxChunk      = 64 << 20
	ttMaxFinalChunk = 128 << 20
	ttMaxChunks     = 1000
	ttMaxVideo      = 1 << 30 // what the simulator keeps in memory; TikTok takes 4 GB
	ttMaxCaption    = 2200    // UTF-16 code units
	// Settings kept as limit overrides (see SetTikTokAudited, SetTikTokModerationDelay).
	ttBucketUnaudited  = "unaudited"
	ttBucketModeration = "moderation_delay"
)

var ttAllPrivacy = []string{"PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "FOLLOWER_OF_CREATOR", "SELF_ONLY"}

// SetTikTokAudited chooses whether the simulated TikTok treats the client as audited (every
// privacy level) or unaudited (SELF_ONLY only).
func (s *Sim) SetTikTokAudited(audited bool) {
	c := 1
	if audited {
		c = 0
	}
	s.SetLimit(platforms.TikTok, ttBucketUnaudited, Limit{Count: c, Window: 24 * time.Hour})
}

// TikTokInteractions sets which interactions every simulated TikTok creator has turned off in
// the app (creator_info's comment_disabled, duet_disabled, stitch_disabled); a Direct Post that
// enables one of them is refused, as TikTok refuses it.
func (s *Sim) TikTokInteractions(commentOff, duetOff, stitchOff bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ttOff = [3]bool{commentOff, duetOff, stitchOff}
}

func (s *Sim) ttInteractionsOff() [3]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ttOff
}

// SetTikTokModerationDelay sets how long after processing a TikTok post's public id appears.
func (s *Sim) SetTikTokModerationDelay(d time.Duration) {
	l := Limit{Count: 1, Window: d}
	if d <= 0 {
		l = Limit{Count: 0, Window: time.Nanosecond}
	}
	s.SetLimit(platforms.TikTok, ttBucketModeration, l)
}

// ttOverride returns the limit override stored for a TikTok bucket.
func (s *Sim) ttOverride(bucket string) (Limit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.limits[limitKey{platforms.TikTok, bucket}]
	return l, ok
}

func init() { register(platforms.TikTok, registerTikTok) }

type ttSim struct{ n *Network }

type ttCode struct {
	redirectURI, challenge, method, scope, user, handle string
	expires                                             time.Time
}

// ttPublish is one video/init: its upload and what became of it.
type ttPublish struct {
	id, owner, handle           string
	uploadID, uploadToken       string
	caption, privacy, source    string
	options                     map[string]any
	videoSize, chunkSize        int64
	chunks, chunksIn            int
	data                        []byte
	received                    int64
	done, failed                bool
	failReason                  string
	postID, sha                 string
	created, readyAt, moderated time.Time
}

func registerTikTok(n *Network) {
	n.Tokens.RotateRefresh = true
	t := &ttSim{n: n}
	n.RateLimited = t.rateLimited

	n.Mux.HandleFunc("GET /v2/auth/authorize/", t.authorize)
	n.Mux.HandleFunc("POST /v2/oauth/token/", t.token)
	n.Mux.HandleFunc("POST /v2/oauth/revoke/", t.revoke)
	n.Mux.HandleFunc("GET /v2/user/info/", t.api("display", ttLimitDisplay, t.userInfo))
	n.Mux.HandleFunc("POST /v2/post/publish/creator_info/query/", t.api("creator_info", ttLimitCreator, t.creatorInfo))
	n.Mux.HandleFunc("POST /v2/post/publish/video/init/", t.api("video_init", ttLimitInit, t.initVideo))
	n.Mux.HandleFunc("POST /v2/post/publish/content/init/", t.api("video_init", ttLimitInit, t.initContent))
	n.Mux.HandleFunc("PUT /video/", t.upload)
	n.Mux.HandleFunc("POST /v2/post/publish/status/fetch/", t.api("status_fetch", ttLimitStatus, t.status))
	n.Mux.HandleFunc("POST /v2/video/list/", t.api("display", ttLimitDisplay, t.listVideos))

	n.Live = LiveHooks{Metrics: true}
	n.Mux.HandleFunc("POST /v2/video/query/", t.api("display", ttLimitDisplay, t.queryVideos))
}

// ttUser is the caller of an authenticated endpoint.
type ttUser struct{ id, handle, token string }

// api wraps an endpoint with the token check and its per-token one-minute window.
func (t *ttSim) api(bucket string, def Limit, h func(w http.ResponseWriter, r *http.Request, u ttUser)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		tok = strings.TrimSpace(tok)
		if !ok || tok == "" {
			t.unauthorized(w)
			return
		}
		id, handle, state := t.n.Tokens.Check(tok)
		if state != TokenValid {
			t.unauthorized(w)
			return
		}
		if _, _, reset, ok := t.n.Take(bucket, tok, 1, def); !ok {
			t.rateLimited(w, r, reset)
			return
		}
		h(w, r, ttUser{id: id, handle: handle, token: tok})
	}
}

// ttLogID is a TikTok-style log id.
func ttLogID(now time.Time) string {
	return now.UTC().Format("20060102150405") + strings.ToUpper(RandomID(10))
}

// reply writes TikTok's envelope.
func (t *ttSim) reply(w http.ResponseWriter, status int, data any, code, message string) {
	if data == nil {
		data = map[string]any{}
	}
	WriteJSON(w, status, map[string]any{
		"data":  data,
		"error": map[string]string{"code": code, "message": message, "log_id": ttLogID(t.n.Sim.Now())},
	})
}

func (t *ttSim) ok(w http.ResponseWriter, data any) { t.reply(w, http.StatusOK, data, "ok", "") }

func (t *ttSim) rateLimited(w http.ResponseWriter, _ *http.Request, _ time.Time) {
	t.reply(w, http.StatusTooManyRequests, nil, "rate_limit_exceeded", "The API rate limit was exceeded. Please try again later.")
}

func (t *ttSim) unauthorized(w http.ResponseWriter) {
	t.reply(w, http.StatusUnauthorized, nil, "access_token_invalid", "The access token is invalid or not found in the request.")
}

func (t *ttSim) invalidParams(w http.ResponseWriter, message string) {
	t.reply(w, http.StatusBadRequest, nil, "invalid_params", message)
}

// oauthError writes the OAuth endpoints' error shape.
func (t *ttSim) oauthError(w http.ResponseWriter, code, description string) {
	WriteJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": description, "log_id": ttLogID(t.n.Sim.Now())})
}

// authorize is the consent page on www.tiktok.com: it approves at once (or refuses when a denial
// is pending) and redirects with code, scopes and state. login_hint names the simulated user (a
// simulator convenience; default "sim-user").
func (t *ttSim) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("client_key") != ClientID:
		http.Error(w, "client_key is invalid", http.StatusBadRequest)
		return
	case err != nil || redirect.Scheme == "" || redirect.Host == "":
		http.Error(w, "redirect_uri is invalid", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	fail := func(code, desc string) {
		back.Set("error", code)
		back.Set("error_description", desc)
		redirect.RawQuery = back.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
	}
	method := q.Get("code_challenge_method")
	switch {
	case q.Get("response_type") != "code":
		fail("invalid_request", "response_type must be code")
		return
	case q.Get("scope") == "":
		fail("invalid_scope", "scope is required")
		return
	case q.Get("code_challenge") != "" && method != "S256":
		fail("invalid_request", "code_challenge_method must be S256")
		return
	}
	if t.n.TakeDenial() {
		fail("access_denied", "The user denied the authorization.")
		return
	}
	handle := q.Get("login_hint")
	if handle == "" {
		handle = "sim-user"
	}
	code := RandomID(24)
	t.n.Store.Put("tt-code:"+code, &ttCode{
		redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), method: method, scope: q.Get("scope"),
		user: t.n.UserID(handle), handle: handle, expires: t.n.Sim.Now().Add(ttCodeTTL),
	})
	back.Set("code", code)
	back.Set("scopes", q.Get("scope"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// ttPKCE checks a verifier against an S256 challenge given base64url (RFC 7636) or hex (TikTok's
// desktop flow).
func ttPKCE(challenge, verifier string) bool {
	if verifier == "" {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return challenge == base64.RawURLEncoding.EncodeToString(sum[:]) || strings.EqualFold(challenge, hex.EncodeToString(sum[:]))
}

// token is POST /v2/oauth/token/ (form: client_key, client_secret, grant_type, …).
func (t *ttSim) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		t.oauthError(w, "invalid_request", "The request parameters are malformed.")
		return
	}
	if r.PostForm.Get("client_key") != ClientID || r.PostForm.Get("client_secret") != ClientSecret {
		t.oauthError(w, "invalid_client", "Client key or secret is incorrect.")
		return
	}
	var creds platforms.Credentials
	scope := "user.info.basic,video.publish,video.list"
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		var c *ttCode
		t.n.Store.With(func(objects map[string]any) {
			if v, ok := objects["tt-code:"+code].(*ttCode); ok {
				c = v
				delete(objects, "tt-code:"+code)
			}
		})
		switch {
		case c == nil || !t.n.Sim.Now().Before(c.expires):
			t.oauthError(w, "invalid_grant", "Authorization code is expired.")
			return
		case c.redirectURI != r.PostForm.Get("redirect_uri"):
			t.oauthError(w, "invalid_request", "The redirect_uri does not match.")
			return
		case c.challenge != "" && !ttPKCE(c.challenge, r.PostForm.Get("code_verifier")):
			t.oauthError(w, "invalid_request", "Code verifier or code challenge is invalid.")
			return
		}
		creds, scope = t.n.Tokens.Issue(c.user, c.handle), c.scope
	case "refresh_token":
		c, ok := t.n.Tokens.Refresh(r.PostForm.Get("refresh_token"))
		if !ok {
			t.oauthError(w, "invalid_grant", "Refresh token is invalid or expired.")
			return
		}
		creds = c
	default:
		t.oauthError(w, "invalid_request", "grant_type is invalid.")
		return
	}
	now := t.n.Sim.Now()
	WriteJSON(w, http.StatusOK, map[string]any{
		"access_token": creds.AccessToken, "expires_in": int(creds.ExpiresAt.Sub(now) / time.Second),
		"open_id": creds.UserID, "refresh_token": creds.RefreshToken,
		"refresh_expires_in": int(creds.RefreshExpiresAt.Sub(now) / time.Second),
		"scope":              scope, "token_type": "Bearer",
	})
}

// revoke is POST /v2/oauth/revoke/ (form: client_key, client_secret, token).
func (t *ttSim) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("token") == "" {
		t.oauthError(w, "invalid_request", "token is required.")
		return
	}
	if r.PostForm.Get("client_key") != ClientID || r.PostForm.Get("client_secret") != ClientSecret {
		t.oauthError(w, "invalid_client", "Client key or secret is incorrect.")
		return
	}
	t.n.Tokens.Revoke(r.PostForm.Get("token"))
	WriteJSON(w, http.StatusOK, map[string]any{})
}

// ttFields reads the fields query parameter of the Display API.
func ttFields(r *http.Request) []string {
	var out []string
	for _, f := range strings.Split(r.URL.Query().Get("fields"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (t *ttSim) userInfo(w http.ResponseWriter, r *http.Request, u ttUser) {
	fields := ttFields(r)
	if len(fields) == 0 {
		t.invalidParams(w, "fields is required.")
		return
	}
	all := map[string]any{
		"open_id": u.id, "union_id": "u" + u.id, "display_name": u.handle, "username": u.handle,
		"avatar_url": "https://p16-sign.tiktokcdn-us.com/sim/" + u.id + ".jpeg", "bio_description": "",
		"is_verified": false, "follower_count": 0, "following_count": 0, "likes_count": 0, "video_count": 0,
	}
	user := map[string]any{}
	for _, f := range fields {
		if v, ok := all[f]; ok {
			user[f] = v
		}
	}
	t.ok(w, map[string]any{"user": user})
}

// privacyOptions are the privacy levels the creator may choose under the current audit mode.
// privacyRefused answers the refusal of a post's privacy level, when content/init refuses it
// (none given, an unaudited client's other than SELF_ONLY, none of the creator's options, branded
// content kept private), and reports whether it did.
func (t *ttSim) privacyRefused(w http.ResponseWriter, level string, branded bool) bool {
	options, audited := t.privacyOptions()
	switch {
	case level == "":
		t.invalidParams(w, "post_info.privacy_level is required.")
	case !audited && level != "SELF_ONLY":
		t.reply(w, http.StatusForbidden, nil, "unaudited_client_can_only_post_to_private_accounts", "Unaudited clients can only post with SELF_ONLY privacy.")
	case !slices.Contains(options, level):
		t.invalidParams(w, "privacy_level_option_mismatch: "+level+" is not among the creator's privacy_level_options.")
	case branded && level == "SELF_ONLY":
		t.invalidParams(w, "Branded content cannot be posted with SELF_ONLY privacy.")
	default:
		return false
	}
	return true
}

func (t *ttSim) privacyOptions() (options []string, audited bool) {
	if l, ok := t.n.Sim.ttOverride(ttBucketUnaudited); ok && l.Count > 0 {
		return []string{"SELF_ONLY"}, false
	}
	return ttAllPrivacy, true
}

func (t *ttSim) creatorInfo(w http.ResponseWriter, _ *http.Request, u ttUser) {
	options, _ := t.privacyOptions()
	off := t.n.Sim.ttInteractionsOff()
	t.ok(w, map[string]any{
		"creator_avatar_url": "https://p16-sign.tiktokcdn-us.com/sim/" + u.id + ".jpeg",
		"creator_username":   u.handle, "creator_nickname": u.handle,
		"privacy_level_options": options, "comment_disabled": off[0], "duet_disabled": off[1], "stitch_disabled": off[2],
		"max_video_post_duration_sec": 600,
	})
}

// ttPostID returns a 19-digit TikTok post id.
func ttPostID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatUint(7_000_000_000_000_000_000+binary.BigEndian.Uint64(b[:])%1_000_000_000_000_000_000, 10)
}

// moderationDelay is how long after processing a post's public id appears.
func (t *ttSim) moderationDelay() time.Duration {
	if l, ok := t.n.Sim.ttOverride(ttBucketModeration); ok {
		if l.Count == 0 {
			return 0
		}
		return l.Window
	}
	return t.n.Sim.opts.ProcessingDelay
}

// initVideo is POST /v2/post/publish/video/init/ (Direct Post).
func (t *ttSim) initVideo(w http.ResponseWriter, r *http.Request, u ttUser) {
	var req struct {
		PostInfo struct {
			Title              string `json:"title"`
			PrivacyLevel       string `json:"privacy_level"`
			DisableDuet        bool   `json:"disable_duet"`
			DisableComment     bool   `json:"disable_comment"`
			DisableStitch      bool   `json:"disable_stitch"`
			BrandContentToggle bool   `json:"brand_content_toggle"`
			BrandOrganicToggle bool   `json:"brand_organic_toggle"`
			IsAIGC             bool   `json:"is_aigc"`
		} `json:"post_info"`
		SourceInfo struct {
			Source          string `json:"source"`
			VideoSize       int64  `json:"video_size"`
			ChunkSize       int64  `json:"chunk_size"`
			TotalChunkCount int    `json:"total_chunk_count"`
			VideoURL        string `json:"video_url"`
		} `json:"source_info"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		t.invalidParams(w, "The request body is not valid JSON.")
		return
	}
	pi, si := req.PostInfo, req.SourceInfo
	if len(utf16.Encode([]rune(pi.Title))) > ttMaxCaption {
		t.invalidParams(w, fmt.Sprintf("The title is longer than %d characters.", ttMaxCaption))
		return
	}
	if t.privacyRefused(w, pi.PrivacyLevel, pi.BrandContentToggle) {
		return
	}
	if off := t.n.Sim.ttInteractionsOff(); (off[0] && !pi.DisableComment) || (off[1] && !pi.DisableDuet) || (off[2] && !pi.DisableStitch) {
		t.invalidParams(w, "An interaction the creator turned off in TikTok is enabled in post_info.")
		return
	}
	pub := &ttPublish{id: "v_pub_file~v2-1." + RandomID(10), owner: u.id, handle: u.handle, caption: pi.Title, privacy: pi.PrivacyLevel, source: si.Source, created: t.n.Sim.Now().UTC(),
		options: map[string]any{"privacy_level": pi.PrivacyLevel, "disable_comment": pi.DisableComment, "disable_duet": pi.DisableDuet, "disable_stitch": pi.DisableStitch,
			"brand_content_toggle": pi.BrandContentToggle, "brand_organic_toggle": pi.BrandOrganicToggle, "is_aigc": pi.IsAIGC}}
	var data []byte
	switch si.Source {
	case "FILE_UPLOAD":
		if problem := ttChunkProblem(si.VideoSize, si.ChunkSize, si.TotalChunkCount); problem != "" {
			t.invalidParams(w, problem)
			return
		}
		pub.videoSize, pub.chunkSize, pub.chunks = si.VideoSize, si.ChunkSize, si.TotalChunkCount
		pub.uploadID, pub.uploadToken = RandomID(12), RandomID(16)
	case "PULL_FROM_URL":
		uu, err := url.Parse(si.VideoURL)
		if err != nil || (uu.Scheme != "http" && uu.Scheme != "https") || uu.Host == "" {
			t.invalidParams(w, "source_info.video_url is not a valid URL.")
			return
		}
		pub.id = "v_pub_url~v2-1." + RandomID(10)
		data = t.fetch(r.Context(), si.VideoURL)
	default:
		t.invalidParams(w, "source_info.source must be FILE_UPLOAD or PULL_FROM_URL.")
		return
	}
	if _, _, _, ok := t.n.Take("daily_posts", u.id, 1, ttLimitDailyPosts); !ok {
		t.reply(w, http.StatusForbidden, nil, "spam_risk_too_many_posts", "The daily post cap of this creator is reached.")
		return
	}
	t.n.Store.Put("tt-pub:"+pub.id, pub)
	out := map[string]any{"publish_id": pub.id}
	if si.Source == "FILE_UPLOAD" {
		t.n.Store.Put("tt-upload:"+pub.uploadID, pub)
		out["upload_url"] = t.n.BaseURL() + "/video/?upload_id=" + pub.uploadID + "&upload_token=" + pub.uploadToken
		t.ok(w, out)
		return
	}
	// PULL_FROM_URL: this call creates the post.
	fault := t.n.TakeFault(FaultPostThenError) != ""
	if data == nil {
		t.n.Store.With(func(map[string]any) {
			pub.done, pub.failed, pub.failReason = true, true, "video_pull_failed"
			pub.readyAt = t.n.Sim.Now()
		})
	} else {
		t.finish(pub, data)
	}
	if fault {
		t.reply(w, http.StatusInternalServerError, nil, "internal_error", "Something went wrong. Please try again later.")
		return
	}
	t.ok(w, out)
}

// ttChunkProblem checks FILE_UPLOAD's chunk rules (media transfer guide).
func ttChunkProblem(size, chunk int64, count int) string {
	switch {
	case size <= 0:
		return "source_info.video_size must be positive."
	case size > ttMaxVideo:
		return fmt.Sprintf("The simulator keeps videos up to %d bytes.", ttMaxVideo)
	case chunk <= 0 || count < 1 || count > ttMaxChunks:
		return "source_info.chunk_size and total_chunk_count are required (1 to 1000 chunks)."
	case size < ttMinChunk && (chunk != size || count != 1):
		return "A video under 5 MB is uploaded whole: chunk_size = video_size, total_chunk_count = 1."
	case size >= ttMinChunk && (chunk < ttMinChunk || chunk > ttMaxChunk):
		return "chunk_size must be between 5 MB and 64 MB."
	case size > ttMaxChunk && count == 1:
		return "A video over 64 MB must be uploaded in chunks."
	case int64(count) != size/chunk:
		return fmt.Sprintf("total_chunk_count must be floor(video_size / chunk_size) = %d.", size/chunk)
	case size-int64(count-1)*chunk > ttMaxFinalChunk:
		return "The last chunk may not exceed 128 MB."
	}
	return ""
}

// fetch downloads a PULL_FROM_URL video; nil when it cannot.
func (t *ttSim) fetch(ctx context.Context, raw string) []byte {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil
	}
	resp, err := t.n.Sim.Options().HTTPClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, ttMaxVideo+1))
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 || len(data) == 0 || len(data) > ttMaxVideo {
		return nil
	}
	return data
}

// finish ends an upload: the post processes, then is published (recorded) unless its file fails.
func (t *ttSim) finish(pub *ttPublish, data []byte) {
	sum := sha256.Sum256(data)
	now := t.n.Sim.Now()
	failed := bytes.HasPrefix(data, []byte(ProcessingFailureMarker))
	t.n.Store.With(func(map[string]any) {
		pub.done, pub.data, pub.received = true, nil, int64(len(data))
		pub.sha = hex.EncodeToString(sum[:])
		pub.readyAt = now.Add(t.n.Sim.opts.ProcessingDelay)
		pub.moderated = pub.readyAt.Add(t.moderationDelay())
		if failed {
			pub.failed, pub.failReason = true, "file_format_check_failed"
			return
		}
		pub.postID = ttPostID()
	})
	if !failed {
		t.n.PublishWith(pub.postID, pub.owner, pub.caption, []string{pub.sha}, pub.options, nil)
	}
}

// ttContentRange parses "bytes first-last/total".
func ttContentRange(h string) (first, last, total int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(spec, "/")
	a, b, found2 := strings.Cut(rng, "-")
	if !found || !found2 {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	first, err1 = strconv.ParseInt(a, 10, 64)
	last, err2 = strconv.ParseInt(b, 10, 64)
	total, err3 = strconv.ParseInt(tot, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || first < 0 || last < first {
		return 0, 0, 0, false
	}
	return first, last, total, true
}

// upload is PUT <upload_url>: one chunk, in order, with Content-Range.
func (t *ttSim) upload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v, _ := t.n.Store.Get("tt-upload:" + q.Get("upload_id"))
	pub, _ := v.(*ttPublish)
	if pub == nil || pub.uploadToken != q.Get("upload_token") {
		t.reply(w, http.StatusNotFound, nil, "invalid_params", "The upload_url is invalid or expired.")
		return
	}
	switch ct := r.Header.Get("Content-Type"); ct {
	case "video/mp4", "video/quicktime", "video/webm":
	default:
		t.invalidParams(w, "Content-Type must be video/mp4, video/quicktime or video/webm, not "+ct+".")
		return
	}
	first, last, total, ok := ttContentRange(r.Header.Get("Content-Range"))
	if !ok {
		t.invalidParams(w, "Content-Range must be bytes {first}-{last}/{total}.")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, ttMaxFinalChunk+1))
	if err != nil {
		return // the client went away mid-chunk
	}
	var problem string
	var complete bool
	var data []byte
	t.n.Store.With(func(map[string]any) {
		index := pub.chunksIn
		want := pub.chunkSize
		if index == pub.chunks-1 {
			want = pub.videoSize - int64(pub.chunks-1)*pub.chunkSize
		}
		switch {
		case pub.done || index >= pub.chunks:
			problem = "The upload is already complete."
		case total != pub.videoSize:
			problem = fmt.Sprintf("The Content-Range total %d is not video_size %d.", total, pub.videoSize)
		case first != pub.received:
			problem = fmt.Sprintf("Chunks are uploaded in order: the next chunk starts at byte %d.", pub.received)
		case int64(len(body)) != last-first+1 || int64(len(body)) != want:
			problem = fmt.Sprintf("Chunk %d must be %d bytes (Content-Range and body), not %d.", index+1, want, len(body))
		default:
			pub.data = append(pub.data, body...)
			pub.received += int64(len(body))
			pub.chunksIn++
			if pub.chunksIn == pub.chunks {
				complete, data = true, pub.data
			}
		}
	})
	if problem != "" {
		t.reply(w, http.StatusBadRequest, nil, "invalid_file_upload", problem)
		return
	}
	if !complete {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, total))
		w.WriteHeader(http.StatusPartialContent)
		return
	}
	fault := t.n.TakeFault(FaultPostThenError) != ""
	t.finish(pub, data)
	if fault {
		t.reply(w, http.StatusInternalServerError, nil, "internal_error", "Something went wrong. Please try again later.")
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// status is POST /v2/post/publish/status/fetch/.
func (t *ttSim) status(w http.ResponseWriter, r *http.Request, u ttUser) {
	var req struct {
		PublishID string `json:"publish_id"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.PublishID == "" {
		t.invalidParams(w, "publish_id is required.")
		return
	}
	v, _ := t.n.Store.Get("tt-pub:" + req.PublishID)
	pub, _ := v.(*ttPublish)
	if pub == nil || pub.owner != u.id {
		t.invalidParams(w, "publish_id does not exist.")
		return
	}
	now := t.n.Sim.Now()
	data := map[string]any{}
	t.n.Store.With(func(map[string]any) {
		processing := "PROCESSING_UPLOAD"
		if pub.source == "PULL_FROM_URL" {
			processing = "PROCESSING_DOWNLOAD"
			data["downloaded_bytes"] = pub.received
		} else {
			data["uploaded_bytes"] = pub.received
		}
		ids := []json.Number{}
		switch {
		case !pub.done || now.Before(pub.readyAt):
			data["status"] = processing
		case pub.failed:
			data["status"], data["fail_reason"] = "FAILED", pub.failReason
		default:
			data["status"] = "PUBLISH_COMPLETE"
			if !now.Before(pub.moderated) {
				ids = append(ids, json.Number(pub.postID))
			}
		}
		data["publicaly_available_post_id"] = ids
	})
	t.ok(w, data)
}

// listVideos is POST /v2/video/list/?fields=…: the caller's published (moderated) videos, newest
// first; the cursor is an offset.
func (t *ttSim) listVideos(w http.ResponseWriter, r *http.Request, u ttUser) {
	fields := ttFields(r)
	if len(fields) == 0 {
		t.invalidParams(w, "fields is required.")
		return
	}
	var req struct {
		Cursor   int64 `json:"cursor"`
		MaxCount int   `json:"max_count"`
	}
	if r.ContentLength != 0 {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil && err != io.EOF {
			t.invalidParams(w, "The request body is not valid JSON.")
			return
		}
	}
	if req.MaxCount == 0 {
		req.MaxCount = 10
	}
	if req.MaxCount < 1 || req.MaxCount > 20 || req.Cursor < 0 {
		t.invalidParams(w, "max_count must be 1 to 20 and cursor not negative.")
		return
	}
	now := t.n.Sim.Now()
	mine := t.published(u.id, now)
	sort.Slice(mine, func(i, j int) bool {
		if !mine[i].created.Equal(mine[j].created) {
			return mine[i].created.After(mine[j].created)
		}
		return mine[i].id > mine[j].id
	})
	start := int(min(req.Cursor, int64(len(mine))))
	end := min(start+req.MaxCount, len(mine))
	videos := []any{}
	for _, v := range mine[start:end] {
		videos = append(videos, t.videoObject(v, fields, u))
	}
	t.ok(w, map[string]any{"videos": videos, "cursor": end, "has_more": end < len(mine)})
}

// ttListed is a published video as the Display API lists it.
type ttListed struct {
	id, caption string
	created     time.Time
}

// published lists a creator's published (moderated) videos, in no particular order.
func (t *ttSim) published(owner string, now time.Time) []ttListed {
	var mine []ttListed
	t.n.Store.With(func(objects map[string]any) {
		for k, v := range objects {
			pub, ok := v.(*ttPublish)
			if !ok || !strings.HasPrefix(k, "tt-pub:") || pub.owner != owner || !pub.done || pub.failed || now.Before(pub.moderated) {
				continue
			}
			mine = append(mine, ttListed{id: pub.postID, caption: pub.caption, created: pub.created})
		}
	})
	return mine
}

// videoObject renders the Display API's video object with the requested fields.
func (t *ttSim) videoObject(v ttListed, fields []string, u ttUser) map[string]any {
	title := v.caption
	if r := []rune(title); len(r) > 150 {
		title = string(r[:150])
	}
	c := t.n.Counters(v.id)
	all := map[string]any{
		"id": v.id, "title": title, "video_description": v.caption, "create_time": v.created.Unix(),
		"share_url": "https://www.tiktok.com/@" + u.handle + "/video/" + v.id, "duration": 15, "height": 1920, "width": 1080,
		"cover_image_url": "https://p16-sign.tiktokcdn-us.com/sim/" + v.id + ".jpeg", "embed_link": "https://www.tiktok.com/player/v1/" + v.id,
		"like_count": c.Likes, "comment_count": c.Comments, "share_count": c.Shares, "view_count": c.Views,
	}
	video := map[string]any{}
	for _, f := range fields {
		if x, ok := all[f]; ok {
			video[f] = x
		}
	}
	return video
}

// queryVideos is POST /v2/video/query/?fields=… {"filters":{"video_ids":[…]}}: the caller's
// published videos among the ids (at most 20).
func (t *ttSim) queryVideos(w http.ResponseWriter, r *http.Request, u ttUser) {
	fields := ttFields(r)
	if len(fields) == 0 {
		t.invalidParams(w, "fields is required.")
		return
	}
	var req struct {
		Filters struct {
			VideoIDs []string `json:"video_ids"`
		} `json:"filters"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		t.invalidParams(w, "The request body is not valid JSON.")
		return
	}
	ids := req.Filters.VideoIDs
	if len(ids) < 1 || len(ids) > 20 {
		t.invalidParams(w, "filters.video_ids must have 1 to 20 ids.")
		return
	}
	byID := map[string]ttListed{}
	for _, v := range t.published(u.id, t.n.Sim.Now()) {
		byID[v.id] = v
	}
	videos := []any{}
	for _, id := range ids {
		if v, ok := byID[id]; ok {
			videos = append(videos, t.videoObject(v, fields, u))
		}
	}
	t.ok(w, map[string]any{"videos": videos, "cursor": 0, "has_more": false})
}
