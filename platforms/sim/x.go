package sim

// X (twitter_x): networks.md §1 and §10.1.
//
// Engagement: POST /2/users/{id}/likes {"tweet_id"} and DELETE /2/users/{id}/likes/{tweet_id}
// (→ {"data":{"liked":bool}}, both idempotent, as X's are; {id} must be the caller), GET
// /2/tweets/{id}/liking_users (100 a page), PUT /2/tweets/{id}/hidden {"hidden":bool} (→
// {"data":{"hidden":bool}}; only a reply in a conversation the caller started; 403 otherwise),
// and GET /2/dm_events: every message of the caller's conversations, newest first, with
// expansions=sender_id,participant_ids. X's v2 API has no field that says a reply is hidden, and
// the simulator, like X, keeps hidden replies in the recent search.
//
// Served: the OAuth 2.0 endpoints (GET /i/oauth2/authorize with PKCE S256 or plain, POST
// /2/oauth2/token for authorization_code and refresh_token grants, POST /2/oauth2/revoke), GET
// /2/users/me, POST /2/tweets, the media upload v2 endpoints (POST /2/media/upload/initialize,
// /{id}/append, /{id}/finalize, GET /2/media/upload?command=STATUS, and POST /2/media/upload for
// simple uploads and the legacy command=INIT|APPEND|FINALIZE form), and GET /2/users/{id}/tweets
// for looking a post up. Live data (networks.md §1.5): GET /2/tweets?ids= with public_metrics
// (impression_count, like_count, reply_count, retweet_count from the post's counters),
// GET /2/tweets/search/recent?query=conversation_id:ID for a post's comments (the last 7 days),
// replies through POST /2/tweets with reply.in_reply_to_tweet_id (recorded as replies, not as
// publications, except a reply to one of the account's own posts: a thread's next part or a first
// comment is a publication with reply_to, on the account's timeline, x_thread.go), and direct
// messages: GET /2/dm_conversations/{id}/dm_events, GET
// /2/dm_conversations/with/{participant_id}/dm_events, POST /2/dm_conversations/{id}/messages and
// POST /2/dm_conversations/with/{participant_id}/messages (one attachment uploaded with a dm_*
// media category). One-to-one conversation ids are the two user ids joined by a dash, smaller
// first, as X forms them. A conversation the caller is not part of answers 404
// resource-not-found (X's exact answer is not documented); a reply to a post or comment the
// simulator does not know answers 403 "deleted or not visible".
//
// Behaviour: access tokens live 2 h and answer 401 problem JSON once expired; refresh tokens are
// single use; every API response carries x-rate-limit-limit/-remaining/-reset (epoch seconds) for
// the endpoint's per-user 15-minute window; an exhausted window answers 429 with
// {"errors":[{"code":88,...}]}; videos and GIFs process asynchronously after finalize; a text over
// 280 weighted characters answers 400 invalid-request; a text identical to the user's previous
// post answers 403 duplicate content.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/heraldhq/herald/platforms"
)

// X's default limits (networks.md §1.3, per user per 15 minutes unless noted).
var (
	xLimitTweets      = Limit{Count: 100, Window: 15 * time.Minute}
	xLimitTweetsApp   = Limit{Count: 10000, Window: 24 * time.Hour}
	xLimitUsersMe     = Limit{Count: 75, Window: 15 * time.Minute}
	xLimitUserTweets  = Limit{Count: 900, Window: 15 * time.Minute}
	xLimitMediaSimple = Limit{Count: 500, Window: 15 * time.Minute}
	xLimitMediaStatus = Limit{Count: 1000, Window: 15 * time.Minute}
	xLimitMediaChunks = Limit{Count: 1875, Window: 15 * time.Minute}
	xLimitLookup      = Limit{Count: 5000, Window: 15 * time.Minute}
	xLimitSearch      = Limit{Count: 300, Window: 15 * time.Minute}
	xLimitDMLookup    = Limit{Count: 15, Window: 15 * time.Minute}
	xLimitDMSend      = Limit{Count: 15, Window: 15 * time.Minute}
	xLimitDMSendDay   = Limit{Count: 1440, Window: 24 * time.Hour}
	xLimitDMSendApp   = Limit{Count: 1440, Window: 24 * time.Hour}
	xLimitLikes       = Limit{Count: 50, Window: 15 * time.Minute}
	xLimitLikesDay    = Limit{Count: 1000, Window: 24 * time.Hour}
	xLimitUnlikes     = Limit{Count: 50, Window: 15 * time.Minute}
	xLimitLikingUsers = Limit{Count: 75, Window: 15 * time.Minute}
	xLimitHide        = Limit{Count: 50, Window: 15 * time.Minute}
)

// X's media limits (networks.md §1.2).
const (
	xMaxImageBytes = 5 << 20
	xMaxGIFBytes   = 15 << 20
	xMaxVideoBytes = 512 << 20
	xMaxSegment    = 5 << 20
	xCodeTTL       = 30 * time.Second
	xTwitterEpoch  = 1288834974657
)

func init() { register(platforms.X, registerX) }

type xSim struct{ n *Network }

// xCode is an authorization code waiting for its exchange.
type xCode struct {
	clientID, redirectURI, challenge, method, scope string
	user, handle                                    string
	expires                                         time.Time
}

// xUpload is a media upload from initialize to processed.
type xUpload struct {
	id, key, owner, mediaType, category string
	total                               int64
	segments                            map[int][]byte
	finalized                           bool
	readyAt                             time.Time
	failed                              bool
	expires                             time.Time
}

func registerX(n *Network) {
	n.Tokens.RotateRefresh = true
	x := &xSim{n: n}
	n.RateLimited = x.rateLimited

	n.Mux.HandleFunc("GET /i/oauth2/authorize", x.authorize)
	n.Mux.HandleFunc("POST /2/oauth2/token", x.token)
	n.Mux.HandleFunc("POST /2/oauth2/revoke", x.revoke)
	n.Mux.HandleFunc("GET /2/users/me", x.api("users_me", xLimitUsersMe, x.me))
	n.Mux.HandleFunc("GET /2/users/{id}/tweets", x.api("user_tweets", xLimitUserTweets, x.userTweets))
	n.Mux.HandleFunc("POST /2/tweets", x.api("tweets", xLimitTweets, x.createTweet))
	n.Mux.HandleFunc("POST /2/media/upload/initialize", x.api("media_chunked", xLimitMediaChunks, x.initialize))
	n.Mux.HandleFunc("POST /2/media/upload/{id}/append", x.api("media_chunked", xLimitMediaChunks, x.appendHandler))
	n.Mux.HandleFunc("POST /2/media/upload/{id}/finalize", x.api("media_chunked", xLimitMediaChunks, x.finalizeHandler))
	n.Mux.HandleFunc("GET /2/media/upload", x.api("media_status", xLimitMediaStatus, x.status))
	n.Mux.HandleFunc("POST /2/media/upload", x.api("media_upload", xLimitMediaSimple, x.simpleUpload))
	n.Mux.HandleFunc("POST /2/media/metadata", x.api("media_metadata", xLimitMediaSimple, x.mediaMetadata))

	n.Live = LiveHooks{Metrics: true, NewComment: x.newComment, PeerID: x.peerID, NewConversation: xConversationID, NewMessageID: x.newID}
	n.Mux.HandleFunc("GET /2/tweets", x.api("tweets_lookup", xLimitLookup, x.lookupTweets))
	n.Mux.HandleFunc("GET /2/tweets/search/recent", x.api("search_recent", xLimitSearch, x.searchRecent))
	n.Mux.HandleFunc("GET /2/dm_conversations/{id}/dm_events", x.api("dm_lookup", xLimitDMLookup, x.dmEvents))
	n.Mux.HandleFunc("GET /2/dm_conversations/with/{participant_id}/dm_events", x.api("dm_lookup", xLimitDMLookup, x.dmEvents))
	n.Mux.HandleFunc("POST /2/dm_conversations/{id}/messages", x.api("dm_send", xLimitDMSend, x.sendDM))
	n.Mux.HandleFunc("POST /2/dm_conversations/with/{participant_id}/messages", x.api("dm_send", xLimitDMSend, x.sendDM))
	n.Mux.HandleFunc("GET /2/dm_events", x.api("dm_lookup", xLimitDMLookup, x.allDMEvents))
	n.Mux.HandleFunc("POST /2/users/{id}/likes", x.api("likes", xLimitLikes, x.like))
	n.Mux.HandleFunc("DELETE /2/users/{id}/likes/{tweet_id}", x.api("unlikes", xLimitUnlikes, x.unlike))
	n.Mux.HandleFunc("GET /2/tweets/{id}/liking_users", x.api("liking_users", xLimitLikingUsers, x.likingUsers))
	n.Mux.HandleFunc("PUT /2/tweets/{id}/hidden", x.api("hide_replies", xLimitHide, x.hide))
}

// xUser is the caller of an authenticated endpoint.
type xUser struct{ id, handle string }

// api wraps an endpoint with X's token check and its per-user rate window, and sets the
// x-rate-limit-* headers on every answer.
func (x *xSim) api(bucket string, def Limit, h func(w http.ResponseWriter, r *http.Request, u xUser)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			x.unauthorized(w)
			return
		}
		id, handle, state := x.n.Tokens.Check(strings.TrimSpace(tok))
		if state != TokenValid {
			x.unauthorized(w)
			return
		}
		limit, remaining, reset, allowed := x.n.Take(bucket, id, 1, def)
		w.Header().Set("x-rate-limit-limit", strconv.Itoa(limit))
		w.Header().Set("x-rate-limit-remaining", strconv.Itoa(max(remaining, 0)))
		w.Header().Set("x-rate-limit-reset", strconv.FormatInt(reset.Unix(), 10))
		if !allowed {
			x.rateLimited(w, r, reset)
			return
		}
		x.n.Store.Put("x-handle:"+id, handle)
		h(w, r, xUser{id: id, handle: handle})
	}
}

// rateLimited answers X's 429: code 88 and the x-rate-limit-* headers with nothing remaining.
func (x *xSim) rateLimited(w http.ResponseWriter, r *http.Request, reset time.Time) {
	if w.Header().Get("x-rate-limit-limit") == "" {
		w.Header().Set("x-rate-limit-limit", strconv.Itoa(xDefaultLimit(r).Count))
	}
	w.Header().Set("x-rate-limit-remaining", "0")
	w.Header().Set("x-rate-limit-reset", strconv.FormatInt(reset.Unix(), 10))
	WriteJSON(w, http.StatusTooManyRequests, map[string]any{
		"errors": []map[string]any{{"code": 88, "message": "Rate limit exceeded"}},
	})
}

// xDefaultLimit is the documented limit of the endpoint r calls, for the rate_limit fault.
func xDefaultLimit(r *http.Request) Limit {
	p := r.URL.Path
	switch {
	case p == "/2/tweets" && r.Method == http.MethodGet:
		return xLimitLookup
	case p == "/2/tweets/search/recent":
		return xLimitSearch
	case p == "/2/dm_events":
		return xLimitDMLookup
	case strings.HasSuffix(p, "/liking_users"):
		return xLimitLikingUsers
	case strings.HasSuffix(p, "/hidden"):
		return xLimitHide
	case strings.Contains(p, "/likes") && r.Method == http.MethodDelete:
		return xLimitUnlikes
	case strings.Contains(p, "/likes"):
		return xLimitLikes
	case strings.HasPrefix(p, "/2/dm_conversations/") && r.Method == http.MethodGet:
		return xLimitDMLookup
	case strings.HasPrefix(p, "/2/dm_conversations/"):
		return xLimitDMSend
	case p == "/2/tweets":
		return xLimitTweets
	case p == "/2/users/me":
		return xLimitUsersMe
	case strings.HasPrefix(p, "/2/users/"):
		return xLimitUserTweets
	case p == "/2/media/upload" && r.Method == http.MethodGet:
		return xLimitMediaStatus
	case p == "/2/media/upload":
		return xLimitMediaSimple
	case strings.HasPrefix(p, "/2/media/upload/"):
		return xLimitMediaChunks
	}
	return xLimitTweets
}

func (x *xSim) unauthorized(w http.ResponseWriter) {
	xProblem(w, http.StatusUnauthorized, "about:blank", "Unauthorized", "Unauthorized")
}

// xProblem writes X's v2 problem JSON.
func xProblem(w http.ResponseWriter, status int, typ, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": title, "type": typ, "status": status, "detail": detail})
}

// xInvalid writes X's 400 invalid-request problem with the offending parameter's message.
func xInvalid(w http.ResponseWriter, param, message string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]any{{"parameters": map[string][]string{param: {}}, "message": message}},
		"title":  "Invalid Request", "detail": "One or more parameters to your request was invalid.",
		"type": "https://api.x.com/2/problems/invalid-request",
	})
}

// xOAuthError writes the token endpoint's error shape.
func xOAuthError(w http.ResponseWriter, status int, code, description string) {
	WriteJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// authorize is the consent page: it approves at once (or refuses when a denial is pending) and
// redirects to redirect_uri with code and state. login_hint names the simulated user
// (default "sim-user").
func (x *xSim) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || redirect.Host == "" {
		http.Error(w, "invalid redirect_uri", http.StatusBadRequest)
		return
	}
	switch {
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case q.Get("client_id") == "":
		http.Error(w, "client_id is required", http.StatusBadRequest)
		return
	case q.Get("state") == "" || len(q.Get("state")) > 500:
		http.Error(w, "state is required (up to 500 characters)", http.StatusBadRequest)
		return
	case q.Get("code_challenge") == "":
		http.Error(w, "code_challenge is required (PKCE)", http.StatusBadRequest)
		return
	}
	method := q.Get("code_challenge_method")
	if method == "" {
		method = "plain"
	}
	if method != "S256" && method != "plain" {
		http.Error(w, "code_challenge_method must be S256 or plain", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	if x.n.TakeDenial() {
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
	x.n.Store.Put("x-code:"+code, &xCode{
		clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		method: method, scope: q.Get("scope"), user: x.n.UserID(handle), handle: handle,
		expires: x.n.Sim.Now().Add(xCodeTTL),
	})
	back.Set("code", code)
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// xClient reads the client id (and secret) from Basic auth or the form.
func xClient(r *http.Request) (id, secret string, basic bool) {
	if u, p, ok := r.BasicAuth(); ok {
		return u, p, true
	}
	return r.PostForm.Get("client_id"), "", false
}

func (x *xSim) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		xOAuthError(w, http.StatusBadRequest, "invalid_request", "Malformed request body.")
		return
	}
	clientID, secret, basic := xClient(r)
	if clientID == "" {
		xOAuthError(w, http.StatusBadRequest, "invalid_request", "Missing required parameter [client_id].")
		return
	}
	if basic && clientID == ClientID && secret != ClientSecret {
		xOAuthError(w, http.StatusUnauthorized, "unauthorized_client", "Missing valid authorization header")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		x.exchange(w, r, clientID)
	case "refresh_token":
		c, ok := x.n.Tokens.Refresh(r.PostForm.Get("refresh_token"))
		if !ok {
			xOAuthError(w, http.StatusBadRequest, "invalid_request", "Value passed for the token was invalid.")
			return
		}
		x.writeTokens(w, c, "tweet.read tweet.write users.read media.write offline.access")
	default:
		xOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "Unsupported grant type.")
	}
}

func (x *xSim) exchange(w http.ResponseWriter, r *http.Request, clientID string) {
	code := r.PostForm.Get("code")
	var c *xCode
	x.n.Store.With(func(objects map[string]any) {
		if v, ok := objects["x-code:"+code].(*xCode); ok {
			c = v
			delete(objects, "x-code:"+code)
		}
	})
	invalid := "Value passed for the authorization code was invalid."
	if c == nil || !x.n.Sim.Now().Before(c.expires) || c.clientID != clientID || c.redirectURI != r.PostForm.Get("redirect_uri") {
		xOAuthError(w, http.StatusBadRequest, "invalid_request", invalid)
		return
	}
	if !xPKCEMatches(c.method, c.challenge, r.PostForm.Get("code_verifier")) {
		xOAuthError(w, http.StatusBadRequest, "invalid_request", invalid)
		return
	}
	creds := x.n.Tokens.Issue(c.user, c.handle)
	if !strings.Contains(" "+c.scope+" ", " offline.access ") {
		creds.RefreshToken = ""
	}
	x.writeTokens(w, creds, c.scope)
}

// xPKCEMatches checks a PKCE verifier against its challenge (RFC 7636).
func xPKCEMatches(method, challenge, verifier string) bool {
	if verifier == "" {
		return false
	}
	if method == "S256" {
		sum := sha256.Sum256([]byte(verifier))
		return base64.RawURLEncoding.EncodeToString(sum[:]) == challenge
	}
	return verifier == challenge
}

func (x *xSim) writeTokens(w http.ResponseWriter, c platforms.Credentials, scope string) {
	body := map[string]any{
		"token_type":   "bearer",
		"expires_in":   int(x.n.Tokens.AccessTTL / time.Second),
		"access_token": c.AccessToken,
		"scope":        scope,
	}
	if c.RefreshToken != "" {
		body["refresh_token"] = c.RefreshToken
	}
	WriteJSON(w, http.StatusOK, body)
}

// revoke revokes an access or refresh token; like RFC 7009 it answers 200 for a token it does not
// know or that is already revoked.
func (x *xSim) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		xOAuthError(w, http.StatusBadRequest, "invalid_request", "Malformed request body.")
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		xOAuthError(w, http.StatusBadRequest, "invalid_request", "Missing required parameter [token].")
		return
	}
	if _, _, state := x.n.Tokens.Check(tok); state != TokenRevoked {
		x.n.Tokens.Revoke(tok)
	}
	WriteJSON(w, http.StatusOK, map[string]bool{"revoked": true})
}

func (x *xSim) me(w http.ResponseWriter, r *http.Request, u xUser) {
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]string{"id": u.id, "name": u.handle, "username": u.handle}})
}

// newID returns a snowflake-like numeric id (milliseconds since X's epoch, then 22 random bits)
// from the simulator's clock.
func (x *xSim) newID() string {
	ms := max(x.n.Sim.Now().UnixMilli()-xTwitterEpoch, 1)
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatUint(uint64(ms)<<22|uint64(binary.BigEndian.Uint32(b[:])&(1<<22-1)), 10)
}

func (x *xSim) createTweet(w http.ResponseWriter, r *http.Request, u xUser) {
	var req struct {
		Text  *string `json:"text"`
		Media *struct {
			MediaIDs []string `json:"media_ids"`
		} `json:"media"`
		Reply *struct {
			InReplyToTweetID string `json:"in_reply_to_tweet_id"`
		} `json:"reply"`
		ReplySettings string `json:"reply_settings"`
		Poll          *struct {
			Options         []string `json:"options"`
			DurationMinutes int      `json:"duration_minutes"`
		} `json:"poll"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		xInvalid(w, "body", "Request body is not valid JSON: "+err.Error())
		return
	}
	opts := map[string]any{}
	switch req.ReplySettings {
	case "":
	case "following", "mentionedUsers", "subscribers", "verified":
		opts["reply_settings"] = req.ReplySettings
	default:
		xInvalid(w, "reply_settings", "reply_settings must be one of [following, mentionedUsers, subscribers, verified]")
		return
	}
	if p := req.Poll; p != nil {
		if len(p.Options) < 2 || len(p.Options) > 4 || p.DurationMinutes < 5 || p.DurationMinutes > 10080 {
			xInvalid(w, "poll", "poll must have 2 to 4 options and a duration of 5 to 10080 minutes")
			return
		}
		for _, o := range p.Options {
			if n := utf8.RuneCountInString(o); n < 1 || n > 25 {
				xInvalid(w, "poll.options", "each poll option is 1 to 25 characters")
				return
			}
		}
		if req.Media != nil {
			xInvalid(w, "poll", "A Tweet with a poll cannot have media.")
			return
		}
		opts["poll"] = map[string]any{"options": p.Options, "duration_minutes": p.DurationMinutes}
	}
	var replyTo *xTweet
	if req.Reply != nil {
		t, ok := x.tweet(req.Reply.InReplyToTweetID)
		if !ok {
			xProblem(w, http.StatusForbidden, "about:blank", "Forbidden", "You attempted to reply to a Tweet that is deleted or not visible to you.")
			return
		}
		replyTo = &t
	}
	text := ""
	if req.Text != nil {
		text = *req.Text
	}
	var ids []string
	if req.Media != nil {
		ids = req.Media.MediaIDs
		if len(ids) < 1 || len(ids) > 4 {
			xInvalid(w, "media.media_ids", fmt.Sprintf("media.media_ids must have 1 to 4 items, got %d", len(ids)))
			return
		}
	}
	if text == "" && len(ids) == 0 {
		xInvalid(w, "text", "Request must contain text or media.")
		return
	}
	if n := xWeightedLength(text); n > 280 {
		xInvalid(w, "text", fmt.Sprintf("text is too long: weighted length %d exceeds 280", n))
		return
	}
	shas, msg := x.mediaForTweet(ids, u.id)
	if msg != "" {
		xInvalid(w, "media.media_ids", msg)
		return
	}
	if rec, ok := x.n.Sim.LastPublication(platforms.X, u.id); ok && replyTo == nil && rec.Text == text && text != "" {
		xProblem(w, http.StatusForbidden, "about:blank", "Forbidden", "You are not allowed to create a Tweet with duplicate content.")
		return
	}
	limit, remaining, reset, ok := x.n.Take("tweets_app", "app", 1, xLimitTweetsApp)
	w.Header().Set("x-app-limit-24hour-limit", strconv.Itoa(limit))
	w.Header().Set("x-app-limit-24hour-remaining", strconv.Itoa(max(remaining, 0)))
	w.Header().Set("x-app-limit-24hour-reset", strconv.FormatInt(reset.Unix(), 10))
	if !ok {
		x.rateLimited(w, r, reset)
		return
	}
	id := x.newID()
	if replyTo != nil && x.selfReply(id, u, text, shas, ids, *replyTo) {
		// a thread's next part or a first comment: a post of the account (x_thread.go)
	} else if replyTo != nil {
		parent := replyTo.id
		if parent == replyTo.conversation {
			parent = ""
		}
		x.n.RecordReply(Comment{ID: id, PostID: replyTo.conversation, ParentID: parent, Author: u.handle, AuthorID: u.id, Text: text}, shas)
	} else {
		var alts []string
		for _, m := range ids {
			if v, ok := x.n.Store.Get("x-alt:" + m); ok {
				alts = append(alts, v.(string))
			} else {
				alts = append(alts, "")
			}
		}
		if !slices.ContainsFunc(alts, func(a string) bool { return a != "" }) {
			alts = nil
		}
		if len(opts) == 0 {
			opts = nil
		}
		x.n.PublishWith(id, u.id, text, shas, opts, alts)
	}
	if x.n.TakeFault(FaultPostThenError) != "" {
		xProblem(w, http.StatusServiceUnavailable, "about:blank", "Service Unavailable", "Service Unavailable")
		return
	}
	WriteJSON(w, http.StatusCreated, map[string]any{"data": map[string]any{"id": id, "text": text, "edit_history_tweet_ids": []string{id}}})
}

// xNewestFirst reverses records (oldest first, as Publications lists them) in place.
func xNewestFirst(recs []Record) []Record {
	for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
		recs[i], recs[j] = recs[j], recs[i]
	}
	return recs
}

// mediaForTweet checks the media ids of a new post and returns their SHA-256, or a message.
func (x *xSim) mediaForTweet(ids []string, owner string) ([]string, string) {
	var shas []string
	videos := 0
	for _, id := range ids {
		up := x.upload(id)
		if up == nil || up.owner != owner {
			return nil, fmt.Sprintf("media id %s not found", id)
		}
		state, _ := x.processing(up)
		switch state {
		case "succeeded":
		case "failed":
			return nil, fmt.Sprintf("media id %s failed processing", id)
		default:
			return nil, fmt.Sprintf("media id %s is not ready: processing is %s", id, state)
		}
		if up.category != "tweet_image" {
			videos++
		}
		b, ok := x.n.Store.Blob("x-media:" + id)
		if !ok {
			return nil, fmt.Sprintf("media id %s not found", id)
		}
		shas = append(shas, b.SHA256())
	}
	if videos > 0 && len(ids) > 1 {
		return nil, "a post takes up to 4 images, or 1 GIF, or 1 video"
	}
	return shas, ""
}

func (x *xSim) upload(id string) *xUpload {
	var up *xUpload
	x.n.Store.With(func(objects map[string]any) {
		if v, ok := objects["x-upload:"+id].(*xUpload); ok {
			up = v
		}
	})
	return up
}

// processing reports the processing state of an upload and the seconds until it should be
// checked again.
func (x *xSim) processing(up *xUpload) (state string, progress int) {
	var s string
	p := 0
	x.n.Store.With(func(map[string]any) {
		now := x.n.Sim.Now()
		switch {
		case !up.finalized:
			s = "pending"
		case up.failed && !now.Before(up.readyAt):
			s = "failed"
		case !now.Before(up.readyAt):
			s, p = "succeeded", 100
		default:
			s, p = "in_progress", 50
		}
	})
	if s == "succeeded" {
		x.n.Store.Update("x-media:"+up.id, func(b *Blob) { b.Ready = true })
	}
	return s, p
}

// xCategory checks media_type against media_category and returns the category to use.
func xCategory(mediaType, category string) (string, string) {
	switch mediaType {
	case "image/jpeg", "image/png", "image/webp", "image/bmp", "image/pjpeg", "image/tiff":
		if category == "" {
			category = "tweet_image"
		}
	case "image/gif":
		if category == "" {
			category = "tweet_gif"
		}
	case "video/mp4", "video/quicktime", "video/webm", "video/mp2t":
		if category == "" {
			category = "tweet_video"
		}
	default:
		return "", fmt.Sprintf("media_type %q is not supported", mediaType)
	}
	switch category {
	case "tweet_image", "tweet_gif", "tweet_video", "amplify_video", "dm_image", "dm_gif", "dm_video":
	default:
		return "", fmt.Sprintf("media_category %q is not supported", category)
	}
	return category, ""
}

func xMaxBytes(category string) int64 {
	switch category {
	case "tweet_gif", "dm_gif":
		return xMaxGIFBytes
	case "tweet_video", "amplify_video", "dm_video":
		return xMaxVideoBytes
	}
	return xMaxImageBytes
}

// startUpload creates an upload session and returns it, or an error message.
func (x *xSim) startUpload(owner, mediaType, category string, total int64) (*xUpload, string) {
	category, msg := xCategory(mediaType, category)
	if msg != "" {
		return nil, msg
	}
	if total <= 0 {
		return nil, "total_bytes must be positive"
	}
	if total > xMaxBytes(category) {
		return nil, fmt.Sprintf("total_bytes %d exceeds the %d bytes allowed for %s", total, xMaxBytes(category), category)
	}
	id := x.newID()
	prefix := "3_"
	switch category {
	case "tweet_video", "amplify_video", "dm_video":
		prefix = "7_"
	case "tweet_gif", "dm_gif":
		prefix = "16_"
	}
	up := &xUpload{id: id, key: prefix + id, owner: owner, mediaType: mediaType, category: category, total: total,
		segments: map[int][]byte{}, expires: x.n.Sim.Now().Add(24 * time.Hour)}
	x.n.Store.Put("x-upload:"+id, up)
	return up, ""
}

func (x *xSim) initialize(w http.ResponseWriter, r *http.Request, u xUser) {
	var req struct {
		MediaType     string `json:"media_type"`
		TotalBytes    int64  `json:"total_bytes"`
		MediaCategory string `json:"media_category"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		xInvalid(w, "body", "Request body is not valid JSON: "+err.Error())
		return
	}
	up, msg := x.startUpload(u.id, req.MediaType, req.MediaCategory, req.TotalBytes)
	if msg != "" {
		xInvalid(w, "media_type", msg)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": up.id, "media_key": up.key, "expires_after_secs": 1295999}})
}

// appendSegment stores one chunk; it returns a message when the chunk is refused.
func (x *xSim) appendSegment(owner, id string, index int, data []byte) string {
	up := x.upload(id)
	if up == nil || up.owner != owner {
		return fmt.Sprintf("media id %s not found", id)
	}
	if index < 0 || index > 999 {
		return "segment_index must be between 0 and 999"
	}
	if len(data) == 0 || len(data) > xMaxSegment {
		return fmt.Sprintf("a segment must have 1 to %d bytes", xMaxSegment)
	}
	msg := ""
	x.n.Store.With(func(map[string]any) {
		if up.finalized {
			msg = "media is already finalized"
			return
		}
		var sum int64
		for i, s := range up.segments {
			if i != index {
				sum += int64(len(s))
			}
		}
		if sum+int64(len(data)) > up.total {
			msg = "segments exceed total_bytes"
			return
		}
		up.segments[index] = data
	})
	return msg
}

// xReadSegment reads segment_index and the chunk from a multipart form or a JSON body (base64).
func xReadSegment(r *http.Request) (index int, data []byte, err error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var req struct {
			SegmentIndex int    `json:"segment_index"`
			Media        string `json:"media"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 2*xMaxSegment)).Decode(&req); err != nil {
			return 0, nil, err
		}
		data, err := base64.StdEncoding.DecodeString(req.Media)
		return req.SegmentIndex, data, err
	}
	if err := r.ParseMultipartForm(2 * xMaxSegment); err != nil {
		if err := r.ParseForm(); err != nil {
			return 0, nil, err
		}
	}
	index, err = strconv.Atoi(r.FormValue("segment_index"))
	if err != nil {
		return 0, nil, errors.New("segment_index is required")
	}
	data, err = xFormMedia(r)
	return index, data, err
}

// xFormMedia reads the "media" file part, or the base64 "media_data" field.
func xFormMedia(r *http.Request) ([]byte, error) {
	if r.MultipartForm != nil {
		if fh := r.MultipartForm.File["media"]; len(fh) > 0 {
			f, err := fh[0].Open()
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return io.ReadAll(f)
		}
	}
	if v := r.FormValue("media"); v != "" {
		return []byte(v), nil
	}
	if v := r.FormValue("media_data"); v != "" {
		return base64.StdEncoding.DecodeString(v)
	}
	return nil, errors.New("media is required")
}

func (x *xSim) appendHandler(w http.ResponseWriter, r *http.Request, u xUser) {
	index, data, err := xReadSegment(r)
	if err != nil {
		xInvalid(w, "media", err.Error())
		return
	}
	if msg := x.appendSegment(u.id, r.PathValue("id"), index, data); msg != "" {
		xInvalid(w, "media", msg)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"expires_at": x.n.Sim.Now().Add(24 * time.Hour).Unix()}})
}

// finalize assembles the segments and starts processing; it returns the response data or a
// message.
func (x *xSim) finalize(owner, id string) (map[string]any, string) {
	up := x.upload(id)
	if up == nil || up.owner != owner {
		return nil, fmt.Sprintf("media id %s not found", id)
	}
	msg := ""
	var data []byte
	x.n.Store.With(func(map[string]any) {
		if up.finalized {
			msg = "media is already finalized"
			return
		}
		idx := make([]int, 0, len(up.segments))
		for i := range up.segments {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for k, i := range idx {
			if k != i {
				msg = fmt.Sprintf("segment %d is missing", k)
				return
			}
			data = append(data, up.segments[i]...)
		}
		if int64(len(data)) != up.total {
			msg = "Segments do not add up to provided total file size."
		}
	})
	if msg != "" {
		return nil, msg
	}
	// The blob is stored before the upload counts as finalized, so that a finalized upload always
	// has its bytes.
	x.n.Store.PutBlob(&Blob{ID: "x-media:" + id, ContentType: up.mediaType, Data: data, Owner: owner})
	readyAt := x.n.Sim.Now()
	if up.category != "tweet_image" && up.category != "dm_image" {
		readyAt = readyAt.Add(x.n.Sim.Options().ProcessingDelay)
	}
	x.n.Store.With(func(map[string]any) {
		up.finalized = true
		up.segments = nil
		up.readyAt = readyAt
		up.failed = bytes.HasPrefix(data, []byte(ProcessingFailureMarker))
	})
	out := map[string]any{"id": up.id, "media_key": up.key, "size": up.total, "expires_after_secs": 86400}
	if readyAt.After(x.n.Sim.Now()) {
		out["processing_info"] = map[string]any{"state": "pending", "check_after_secs": 1}
	} else {
		x.processing(up)
	}
	return out, ""
}

func (x *xSim) finalizeHandler(w http.ResponseWriter, r *http.Request, u xUser) {
	data, msg := x.finalize(u.id, r.PathValue("id"))
	if msg != "" {
		xInvalid(w, "media_id", msg)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"data": data})
}

func (x *xSim) status(w http.ResponseWriter, r *http.Request, u xUser) {
	q := r.URL.Query()
	if c := q.Get("command"); c != "" && c != "STATUS" {
		xInvalid(w, "command", "command must be STATUS")
		return
	}
	id := q.Get("media_id")
	up := x.upload(id)
	if up == nil || up.owner != u.id {
		xProblem(w, http.StatusNotFound, "https://api.x.com/2/problems/resource-not-found", "Not Found Error", "Could not find media with id: ["+id+"].")
		return
	}
	state, progress := x.processing(up)
	info := map[string]any{"state": state, "progress_percent": progress}
	switch state {
	case "pending", "in_progress":
		info["check_after_secs"] = 1
	case "failed":
		info["error"] = map[string]any{"code": 1, "name": "InvalidMedia", "message": "Unsupported video format"}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": up.id, "media_key": up.key, "processing_info": info}})
}

// simpleUpload is POST /2/media/upload: a one-shot upload (multipart "media" or "media_data"
// with media_category), or the legacy command=INIT|APPEND|FINALIZE form of the chunked upload.
func (x *xSim) simpleUpload(w http.ResponseWriter, r *http.Request, u xUser) {
	if err := r.ParseMultipartForm(2 * xMaxGIFBytes); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		xInvalid(w, "media", "malformed multipart body: "+err.Error())
		return
	}
	if r.MultipartForm == nil {
		if err := r.ParseForm(); err != nil {
			xInvalid(w, "media", "malformed form body")
			return
		}
	}
	switch r.FormValue("command") {
	case "INIT":
		total, _ := strconv.ParseInt(r.FormValue("total_bytes"), 10, 64)
		up, msg := x.startUpload(u.id, r.FormValue("media_type"), r.FormValue("media_category"), total)
		if msg != "" {
			xInvalid(w, "media_type", msg)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": up.id, "media_key": up.key, "expires_after_secs": 1295999}})
	case "APPEND":
		index, err := strconv.Atoi(r.FormValue("segment_index"))
		if err != nil {
			xInvalid(w, "segment_index", "segment_index is required")
			return
		}
		data, err := xFormMedia(r)
		if err != nil {
			xInvalid(w, "media", err.Error())
			return
		}
		if msg := x.appendSegment(u.id, r.FormValue("media_id"), index, data); msg != "" {
			xInvalid(w, "media", msg)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case "FINALIZE":
		data, msg := x.finalize(u.id, r.FormValue("media_id"))
		if msg != "" {
			xInvalid(w, "media_id", msg)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"data": data})
	case "":
		data, err := xFormMedia(r)
		if err != nil {
			xInvalid(w, "media", err.Error())
			return
		}
		mediaType := r.FormValue("media_type")
		if mediaType == "" {
			mediaType = http.DetectContentType(data)
		}
		up, msg := x.startUpload(u.id, mediaType, r.FormValue("media_category"), int64(len(data)))
		if msg == "" {
			msg = x.appendSegment(u.id, up.id, 0, data)
		}
		var out map[string]any
		if msg == "" {
			out, msg = x.finalize(u.id, up.id)
		}
		if msg != "" {
			xInvalid(w, "media", msg)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"data": out})
	default:
		xInvalid(w, "command", "command must be INIT, APPEND or FINALIZE")
	}
}

// userTweets is GET /2/users/{id}/tweets: the user's posts, newest first, from the simulator's
// records (start_time, end_time, max_results 5-100, pagination_token, tweet.fields=created_at,
// and for the user's replies conversation_id, in_reply_to_user_id and referenced_tweets;
// exclude=replies leaves them out).
func (x *xSim) userTweets(w http.ResponseWriter, r *http.Request, _ xUser) {
	q := r.URL.Query()
	var start, end time.Time
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"start_time", &start}, {"end_time", &end}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				xInvalid(w, p.name, fmt.Sprintf("Invalid %s: %q is not RFC 3339", p.name, v))
				return
			}
			*p.t = t
		}
	}
	maxResults := 10
	if v := q.Get("max_results"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 5 || n > 100 {
			xInvalid(w, "max_results", "max_results must be between 5 and 100")
			return
		}
		maxResults = n
	}
	offset := 0
	if v := q.Get("pagination_token"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "p"))
		if err != nil || n < 0 {
			xInvalid(w, "pagination_token", "invalid pagination_token")
			return
		}
		offset = n
	}
	fields := "," + q.Get("tweet.fields") + ","
	noReplies := xFields(q.Get("exclude"))["replies"]
	asked := xFields(q.Get("tweet.fields"))
	var mine []Record
	for _, rec := range xNewestFirst(x.n.Sim.Publications(platforms.X)) {
		if rec.Account != r.PathValue("id") || (!start.IsZero() && rec.CreatedAt.Before(start)) || (!end.IsZero() && !rec.CreatedAt.Before(end)) {
			continue
		}
		if noReplies && rec.ReplyTo != "" {
			continue
		}
		mine = append(mine, rec)
	}
	meta := map[string]any{"result_count": 0}
	body := map[string]any{"meta": meta}
	if offset < len(mine) {
		page := mine[offset:min(offset+maxResults, len(mine))]
		data := make([]map[string]any, 0, len(page))
		for _, rec := range page {
			t := map[string]any{"id": rec.ID, "text": rec.Text, "edit_history_tweet_ids": []string{rec.ID}}
			if strings.Contains(fields, ",created_at,") {
				t["created_at"] = rec.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")
			}
			if strings.Contains(fields, ",author_id,") {
				t["author_id"] = rec.Account
			}
			x.replyFields(t, rec, asked)
			data = append(data, t)
		}
		body["data"] = data
		meta["result_count"] = len(page)
		meta["newest_id"] = page[0].ID
		meta["oldest_id"] = page[len(page)-1].ID
		if offset+maxResults < len(mine) {
			meta["next_token"] = "p" + strconv.Itoa(offset+maxResults)
		}
	}
	WriteJSON(w, http.StatusOK, body)
}

// xURL matches the http(s) URLs that X counts as 23 characters each.
var xURL = regexp.MustCompile(`https?://[^\s]+`)

// xWeightedLength is a post's length as X counts it (twitter-text v3 weights): each http(s) URL
// counts 23; an emoji sequence counts 2; otherwise code points in 0-4351, 8192-8205, 8208-8223
// and 8242-8247 count 1 and all others 2. (The adapter in platforms/x counts the same way.)
func xWeightedLength(s string) int {
	n, pos := 0, 0
	for _, loc := range xURL.FindAllStringIndex(s, -1) {
		u := strings.TrimRight(s[loc[0]:loc[1]], ".,;:!?'\")]}")
		n += xWeightText(s[pos:loc[0]]) + 23
		pos = loc[0] + len(u)
	}
	return n + xWeightText(s[pos:])
}

func xWeightText(s string) int {
	if platforms.IsASCII(s) {
		return len(s) // every ASCII code point weighs 1, and no ASCII grapheme is an emoji
	}
	n := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		runes := g.Runes()
		if len(runes) > 1 && xIsEmojiSequence(runes) {
			n += 2
			continue
		}
		for _, r := range runes {
			n += xRuneWeight(r)
		}
	}
	return n
}

func xRuneWeight(r rune) int {
	switch {
	case r >= 0 && r <= 4351, r >= 8192 && r <= 8205, r >= 8208 && r <= 8223, r >= 8242 && r <= 8247:
		return 1
	}
	return 2
}

func xIsEmojiSequence(runes []rune) bool {
	if runes[0] >= 0x1F000 {
		return true
	}
	for _, r := range runes[1:] {
		switch {
		case r == 0x200D, r == 0xFE0F, r == 0x20E3, r >= 0x1F3FB && r <= 0x1F3FF, r >= 0xE0020 && r <= 0xE007F:
			return true
		}
	}
	return false
}

// xTweet is a post or a comment as the read endpoints show it.
type xTweet struct {
	id, text, author     string
	conversation, parent string // parent: the tweet replied to ("" for a post)
	inReplyToUser        string
	created              time.Time
	mediaSHA             []string
	isComment, byAccount bool
	handleOfAuthor       string
}

// handle is the username of an X user id, when the simulator saw it.
func (x *xSim) handle(id string) string {
	if v, ok := x.n.Store.Get("x-handle:" + id); ok {
		return v.(string)
	}
	return "user" + id
}

// tweet finds a post or a comment by id.
func (x *xSim) tweet(id string) (xTweet, bool) {
	if id == "" {
		return xTweet{}, false
	}
	if rec, ok := x.n.Post(id); ok {
		t := xTweet{id: rec.ID, text: rec.Text, author: rec.Account, conversation: rec.ID, created: rec.CreatedAt, mediaSHA: rec.MediaSHA256, handleOfAuthor: x.handle(rec.Account)}
		if rec.ReplyTo != "" {
			t.conversation, t.parent, t.inReplyToUser = x.n.ThreadRoot(rec.ID), rec.ReplyTo, rec.Account
		}
		return t, true
	}
	c, ok := x.n.Comment(id)
	if !ok {
		return xTweet{}, false
	}
	return x.commentTweet(c), true
}

func (x *xSim) commentTweet(c Comment) xTweet {
	t := xTweet{id: c.ID, text: c.Text, author: c.AuthorID, conversation: c.PostID, parent: c.PostID, created: c.CreatedAt,
		mediaSHA: c.MediaSHA256, isComment: true, byAccount: c.ByAccount, handleOfAuthor: c.Author}
	if c.ParentID != "" {
		t.parent = c.ParentID
		if p, ok := x.n.Comment(c.ParentID); ok {
			t.inReplyToUser = p.AuthorID
		}
	} else if rec, ok := x.n.Post(c.PostID); ok {
		t.inReplyToUser = rec.Account
	}
	return t
}

// newComment gives a comment added through the admin API a post id and its author's user id.
func (x *xSim) newComment(c *Comment, _ Record, _ *Comment) error {
	c.ID = x.newID()
	c.AuthorID = x.peerID(c.Author)
	return nil
}

// peerID is the user id of a handle (a numeric id stays as it is).
func (x *xSim) peerID(peer string) string {
	peer = strings.TrimPrefix(peer, "@")
	if _, err := strconv.ParseUint(peer, 10, 64); err == nil {
		return peer
	}
	id := x.n.UserID(peer)
	x.n.Store.Put("x-handle:"+id, peer)
	return id
}

// xConversationID is the id of a one-to-one conversation: both user ids, smaller first.
func xConversationID(a, b string) string {
	if len(b) < len(a) || (len(b) == len(a) && b < a) {
		a, b = b, a
	}
	return a + "-" + b
}

// xFields parses a comma-separated fields parameter.
func xFields(v string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out[f] = true
		}
	}
	return out
}

func xTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// tweetJSON renders a post with the requested tweet.fields.
func (x *xSim) tweetJSON(t xTweet, fields map[string]bool, viewer string) map[string]any {
	out := map[string]any{"id": t.id, "text": t.text, "edit_history_tweet_ids": []string{t.id}}
	if fields["author_id"] {
		out["author_id"] = t.author
	}
	if fields["created_at"] {
		out["created_at"] = xTime(t.created)
	}
	if fields["conversation_id"] {
		out["conversation_id"] = t.conversation
	}
	if t.parent != "" {
		if fields["in_reply_to_user_id"] && t.inReplyToUser != "" {
			out["in_reply_to_user_id"] = t.inReplyToUser
		}
		if fields["referenced_tweets"] {
			out["referenced_tweets"] = []map[string]string{{"type": "replied_to", "id": t.parent}}
		}
	}
	c := x.n.Counters(t.id)
	if fields["public_metrics"] {
		out["public_metrics"] = map[string]int64{
			"retweet_count": c.Shares, "reply_count": c.Comments, "like_count": c.Likes,
			"quote_count": 0, "bookmark_count": 0, "impression_count": c.Views,
		}
	}
	if fields["non_public_metrics"] && t.author == viewer {
		out["non_public_metrics"] = map[string]int64{"impression_count": c.Views, "url_link_clicks": 0, "user_profile_clicks": 0}
	}
	return out
}

// xIncludeUsers is the includes.users expansion of author_id.
func (x *xSim) includeUsers(tweets []xTweet) []map[string]string {
	seen := map[string]bool{}
	var users []map[string]string
	for _, t := range tweets {
		if seen[t.author] {
			continue
		}
		seen[t.author] = true
		h := t.handleOfAuthor
		if h == "" {
			h = x.handle(t.author)
		}
		users = append(users, map[string]string{"id": t.author, "name": h, "username": h})
	}
	return users
}

// xNotFound is the partial error of a lookup that did not find a resource.
func xNotFound(resource, parameter, id string) map[string]string {
	return map[string]string{
		"value": id, "detail": fmt.Sprintf("Could not find %s with %s: [%s].", resource, parameter, id), "title": "Not Found Error",
		"resource_type": resource, "parameter": parameter, "resource_id": id, "type": "https://api.x.com/2/problems/resource-not-found",
	}
}

// lookupTweets is GET /2/tweets?ids=…&tweet.fields=…: posts and comments by id, with a partial
// not-found error for each id the simulator does not know.
func (x *xSim) lookupTweets(w http.ResponseWriter, r *http.Request, u xUser) {
	q := r.URL.Query()
	raw := strings.TrimSpace(q.Get("ids"))
	if raw == "" {
		xInvalid(w, "ids", "The `ids` query parameter can not be empty")
		return
	}
	ids := strings.Split(raw, ",")
	if len(ids) > 100 {
		xInvalid(w, "ids", fmt.Sprintf("The number of values in the `ids` query parameter list [%d] is not between 1 and 100", len(ids)))
		return
	}
	fields := xFields(q.Get("tweet.fields"))
	var found []xTweet
	data := []map[string]any{}
	errs := []map[string]string{}
	for _, id := range ids {
		id = strings.TrimSpace(id)
		t, ok := x.tweet(id)
		if !ok {
			errs = append(errs, xNotFound("tweet", "ids", id))
			continue
		}
		found = append(found, t)
		data = append(data, x.tweetJSON(t, fields, u.id))
	}
	body := map[string]any{}
	if len(data) > 0 {
		body["data"] = data
	}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	if xFields(q.Get("expansions"))["author_id"] && len(found) > 0 {
		body["includes"] = map[string]any{"users": x.includeUsers(found)}
	}
	WriteJSON(w, http.StatusOK, body)
}

var xConversationQuery = regexp.MustCompile(`(?:^|\s)conversation_id:(\d+)(?:\s|$)`)

// xPage reads max_results (lo..hi, default def) and a pagination token of the form pN.
func xPage(w http.ResponseWriter, q url.Values, def, lo, hi int) (size, offset int, ok bool) {
	size = def
	if v := q.Get("max_results"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			xInvalid(w, "max_results", fmt.Sprintf("The `max_results` query parameter value [%s] is not between %d and %d", v, lo, hi))
			return 0, 0, false
		}
		size = n
	}
	tok := q.Get("pagination_token")
	if tok == "" {
		tok = q.Get("next_token")
	}
	if tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "p"))
		if err != nil || n < 0 || !strings.HasPrefix(tok, "p") {
			xInvalid(w, "pagination_token", "invalid pagination_token")
			return 0, 0, false
		}
		offset = n
	}
	return size, offset, true
}

// searchRecent is GET /2/tweets/search/recent for the query conversation_id:ID: the comments and
// replies of a post from the last 7 days, newest first.
func (x *xSim) searchRecent(w http.ResponseWriter, r *http.Request, u xUser) {
	q := r.URL.Query()
	m := xConversationQuery.FindStringSubmatch(q.Get("query"))
	if m == nil {
		xInvalid(w, "query", "The simulator's recent search serves conversation_id:<id> queries.")
		return
	}
	size, offset, ok := xPage(w, q, 10, 10, 100)
	if !ok {
		return
	}
	now := x.n.Sim.Now()
	start := now.Add(-7 * 24 * time.Hour)
	if v := q.Get("start_time"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil || t.Before(start.Add(-time.Minute)) {
			xInvalid(w, "start_time", fmt.Sprintf("Invalid 'start_time':'%s'. 'start_time' must be on or after %s", v, start.UTC().Format(time.RFC3339)))
			return
		}
		start = t
	}
	var tweets []xTweet
	comments := x.n.Comments(m[1])
	for i := len(comments) - 1; i >= 0; i-- {
		if c := comments[i]; !c.CreatedAt.Before(start) {
			tweets = append(tweets, x.commentTweet(c))
		}
	}
	meta := map[string]any{"result_count": 0}
	body := map[string]any{"meta": meta}
	if offset < len(tweets) {
		page := tweets[offset:min(offset+size, len(tweets))]
		fields := xFields(q.Get("tweet.fields"))
		data := make([]map[string]any, 0, len(page))
		for _, t := range page {
			data = append(data, x.tweetJSON(t, fields, u.id))
		}
		body["data"] = data
		if xFields(q.Get("expansions"))["author_id"] {
			body["includes"] = map[string]any{"users": x.includeUsers(page)}
		}
		meta["result_count"] = len(page)
		meta["newest_id"] = page[0].id
		meta["oldest_id"] = page[len(page)-1].id
		if offset+size < len(tweets) {
			meta["next_token"] = "p" + strconv.Itoa(offset+size)
		}
	}
	WriteJSON(w, http.StatusOK, body)
}

// dmConversation finds the conversation of a DM endpoint: by id (404 when the caller is not in
// it) or with a participant (create makes it when there is none).
func (x *xSim) dmConversation(w http.ResponseWriter, r *http.Request, u xUser, create bool) (Conversation, bool) {
	if pid := r.PathValue("participant_id"); pid != "" {
		if _, err := strconv.ParseUint(pid, 10, 64); err != nil {
			xInvalid(w, "participant_id", fmt.Sprintf("The `participant_id` path parameter value [%s] is not a valid user id", pid))
			return Conversation{}, false
		}
		if pid == u.id {
			xInvalid(w, "participant_id", "You cannot send a direct message to yourself.")
			return Conversation{}, false
		}
		c, ok := x.n.ConversationWith(u.id, pid, "", create)
		if !ok {
			return Conversation{ID: xConversationID(u.id, pid)}, true
		}
		return c, true
	}
	id := r.PathValue("id")
	c, ok := x.n.Conversation(id)
	if !ok || !c.Has(u.id) {
		xProblem(w, http.StatusNotFound, "https://api.x.com/2/problems/resource-not-found", "Not Found Error",
			fmt.Sprintf("Could not find dm_conversation with id: [%s].", id))
		return Conversation{}, false
	}
	return c, true
}

// dmEvents lists a conversation's messages, newest first (dm_event.fields, event_types,
// max_results 1-100, pagination_token).
func (x *xSim) dmEvents(w http.ResponseWriter, r *http.Request, u xUser) {
	c, ok := x.dmConversation(w, r, u, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	size, offset, ok := xPage(w, q, 100, 1, 100)
	if !ok {
		return
	}
	if t := q.Get("event_types"); t != "" && !xFields(t)["MessageCreate"] {
		c.Messages = nil
	}
	fields := xFields(q.Get("dm_event.fields"))
	meta := map[string]any{"result_count": 0}
	body := map[string]any{"meta": meta}
	n := len(c.Messages)
	if offset < n {
		end := min(offset+size, n)
		data := make([]map[string]any, 0, end-offset)
		for i := offset; i < end; i++ {
			m := c.Messages[n-1-i]
			ev := map[string]any{"id": m.ID, "event_type": "MessageCreate", "text": m.Text}
			if fields["sender_id"] {
				ev["sender_id"] = m.From
			}
			if fields["created_at"] {
				ev["created_at"] = xTime(m.CreatedAt)
			}
			if fields["dm_conversation_id"] {
				ev["dm_conversation_id"] = c.ID
			}
			if fields["attachments"] && len(m.MediaSHA256) > 0 {
				keys := make([]string, len(m.MediaSHA256))
				for k, sha := range m.MediaSHA256 {
					keys[k] = "3_" + sha[:16]
				}
				ev["attachments"] = map[string]any{"media_keys": keys}
			}
			data = append(data, ev)
		}
		body["data"] = data
		meta["result_count"] = len(data)
		if end < n {
			meta["next_token"] = "p" + strconv.Itoa(end)
		}
	}
	WriteJSON(w, http.StatusOK, body)
}

// sendDM is POST /2/dm_conversations/{id}/messages and /with/{participant_id}/messages:
// {"text","attachments":[{"media_id"}]} → 201 {"data":{"dm_conversation_id","dm_event_id"}}.
func (x *xSim) sendDM(w http.ResponseWriter, r *http.Request, u xUser) {
	var req struct {
		Text        string `json:"text"`
		Attachments []struct {
			MediaID string `json:"media_id"`
		} `json:"attachments"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		xInvalid(w, "body", "Request body is not valid JSON: "+err.Error())
		return
	}
	switch {
	case req.Text == "" && len(req.Attachments) == 0:
		xInvalid(w, "text", "A message must have text or an attachment.")
		return
	case len(req.Attachments) > 1:
		xInvalid(w, "attachments", "attachments must have at most 1 item")
		return
	case utf8.RuneCountInString(req.Text) > 10000:
		xInvalid(w, "text", "text must be at most 10000 characters")
		return
	}
	var ids []string
	for _, a := range req.Attachments {
		ids = append(ids, a.MediaID)
	}
	shas, msg := x.mediaForTweet(ids, u.id)
	if msg != "" {
		xInvalid(w, "attachments.media_id", msg)
		return
	}
	c, ok := x.dmConversation(w, r, u, true)
	if !ok {
		return
	}
	for _, l := range []struct {
		bucket, user string
		def          Limit
	}{{"dm_send_day", u.id, xLimitDMSendDay}, {"dm_send_app", "app", xLimitDMSendApp}} {
		if _, _, reset, ok := x.n.Take(l.bucket, l.user, 1, l.def); !ok {
			x.rateLimited(w, r, reset)
			return
		}
	}
	m, ok := x.n.AddMessage(c.ID, u.id, req.Text, shas, true)
	if !ok {
		xProblem(w, http.StatusNotFound, "https://api.x.com/2/problems/resource-not-found", "Not Found Error",
			fmt.Sprintf("Could not find dm_conversation with id: [%s].", c.ID))
		return
	}
	if x.n.TakeFault(FaultPostThenError) != "" {
		xProblem(w, http.StatusServiceUnavailable, "about:blank", "Service Unavailable", "Service Unavailable")
		return
	}
	WriteJSON(w, http.StatusCreated, map[string]any{"data": map[string]string{"dm_conversation_id": c.ID, "dm_event_id": m.ID}})
}

// likeTarget checks a like call's {id} (the caller) and tweet id.
func (x *xSim) likeTarget(w http.ResponseWriter, r *http.Request, u xUser, tweetID string) bool {
	if r.PathValue("id") != u.id {
		xProblem(w, http.StatusForbidden, "https://api.x.com/2/problems/client-forbidden", "Forbidden",
			"You are not permitted to perform this action for another user.")
		return false
	}
	if _, ok := x.tweet(tweetID); !ok {
		xProblem(w, http.StatusForbidden, "about:blank", "Forbidden",
			"You cannot like a Tweet that has been deleted or is not visible to you.")
		return false
	}
	return true
}

// like is POST /2/users/{id}/likes {"tweet_id"} → {"data":{"liked":true}}.
func (x *xSim) like(w http.ResponseWriter, r *http.Request, u xUser) {
	var req struct {
		TweetID string `json:"tweet_id"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.TweetID == "" {
		xInvalid(w, "tweet_id", "The `tweet_id` field is required.")
		return
	}
	if !x.likeTarget(w, r, u, req.TweetID) {
		return
	}
	if _, _, reset, ok := x.n.Take("likes_day", u.id, 1, xLimitLikesDay); !ok {
		x.rateLimited(w, r, reset)
		return
	}
	x.n.SetLike(u.id, req.TweetID, "", true)
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]bool{"liked": true}})
}

// unlike is DELETE /2/users/{id}/likes/{tweet_id} → {"data":{"liked":false}}, also when the
// caller had not liked it.
func (x *xSim) unlike(w http.ResponseWriter, r *http.Request, u xUser) {
	id := r.PathValue("tweet_id")
	if !x.likeTarget(w, r, u, id) {
		return
	}
	x.n.SetLike(u.id, id, "", false)
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]bool{"liked": false}})
}

// likingUsers is GET /2/tweets/{id}/liking_users: the users who like the post, newest like
// first (max_results 1-100, default 100; pagination_token).
func (x *xSim) likingUsers(w http.ResponseWriter, r *http.Request, _ xUser) {
	id := r.PathValue("id")
	if _, ok := x.tweet(id); !ok {
		WriteJSON(w, http.StatusOK, map[string]any{"errors": []map[string]string{xNotFound("tweet", "id", id)}})
		return
	}
	size, offset, ok := xPage(w, r.URL.Query(), 100, 1, 100)
	if !ok {
		return
	}
	users := x.n.Likers(id)
	slices.Reverse(users)
	meta := map[string]any{"result_count": 0}
	body := map[string]any{"meta": meta}
	if offset < len(users) {
		end := min(offset+size, len(users))
		data := []map[string]string{}
		for _, uid := range users[offset:end] {
			h := x.handle(uid)
			data = append(data, map[string]string{"id": uid, "name": h, "username": h})
		}
		body["data"] = data
		meta["result_count"] = len(data)
		if end < len(users) {
			meta["next_token"] = "p" + strconv.Itoa(end)
		}
	}
	WriteJSON(w, http.StatusOK, body)
}

// hide is PUT /2/tweets/{id}/hidden {"hidden":bool}: only a reply in a conversation the caller
// started.
func (x *xSim) hide(w http.ResponseWriter, r *http.Request, u xUser) {
	var req struct {
		Hidden *bool `json:"hidden"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Hidden == nil {
		xInvalid(w, "hidden", "The `hidden` field is required.")
		return
	}
	id := r.PathValue("id")
	c, ok := x.n.Comment(id)
	if !ok {
		if _, isPost := x.n.Post(id); !isPost {
			xProblem(w, http.StatusNotFound, "https://api.x.com/2/problems/resource-not-found", "Not Found Error",
				fmt.Sprintf("Could not find tweet with id: [%s].", id))
			return
		}
	}
	root, found := x.n.Post(c.PostID)
	if !ok || !found || root.Account != u.id || c.AuthorID == u.id {
		xProblem(w, http.StatusForbidden, "https://api.x.com/2/problems/client-forbidden", "Forbidden",
			"You can only hide or unhide replies to conversations you started.")
		return
	}
	x.n.SetHidden(id, *req.Hidden)
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]bool{"hidden": *req.Hidden}})
}

// allDMEvents is GET /2/dm_events: the messages of every conversation of the caller, newest
// first (dm_event.fields, event_types, max_results 1-100, pagination_token, expansions
// sender_id and participant_ids with user.fields).
func (x *xSim) allDMEvents(w http.ResponseWriter, r *http.Request, u xUser) {
	q := r.URL.Query()
	size, offset, ok := xPage(w, q, 100, 1, 100)
	if !ok {
		return
	}
	type event struct {
		c Conversation
		m Message
	}
	var events []event
	if t := q.Get("event_types"); t == "" || xFields(t)["MessageCreate"] {
		for _, c := range x.n.Sim.Conversations(x.n.Platform, u.id) {
			for _, m := range c.Messages {
				events = append(events, event{c, m})
			}
		}
	}
	sort.SliceStable(events, func(i, j int) bool {
		if !events[i].m.CreatedAt.Equal(events[j].m.CreatedAt) {
			return events[i].m.CreatedAt.After(events[j].m.CreatedAt)
		}
		return events[i].m.ID > events[j].m.ID
	})
	fields := xFields(q.Get("dm_event.fields"))
	expand := xFields(q.Get("expansions"))
	meta := map[string]any{"result_count": 0}
	body := map[string]any{"meta": meta}
	if offset < len(events) {
		end := min(offset+size, len(events))
		data := []map[string]any{}
		users := map[string]bool{}
		var order []string
		addUser := func(id string) {
			if !users[id] {
				users[id] = true
				order = append(order, id)
			}
		}
		for _, e := range events[offset:end] {
			ev := map[string]any{"id": e.m.ID, "event_type": "MessageCreate", "text": e.m.Text}
			if fields["sender_id"] {
				ev["sender_id"] = e.m.From
			}
			if fields["created_at"] {
				ev["created_at"] = xTime(e.m.CreatedAt)
			}
			if fields["dm_conversation_id"] {
				ev["dm_conversation_id"] = e.c.ID
			}
			if fields["participant_ids"] || expand["participant_ids"] {
				ev["participant_ids"] = []string{e.c.Account, e.c.Peer}
			}
			if expand["sender_id"] {
				addUser(e.m.From)
			}
			if expand["participant_ids"] {
				addUser(e.c.Account)
				addUser(e.c.Peer)
			}
			data = append(data, ev)
		}
		body["data"] = data
		if len(order) > 0 {
			list := []map[string]string{}
			for _, id := range order {
				h := x.handle(id)
				list = append(list, map[string]string{"id": id, "name": h, "username": h})
			}
			body["includes"] = map[string]any{"users": list}
		}
		meta["result_count"] = len(data)
		if end < len(events) {
			meta["next_token"] = "p" + strconv.Itoa(end)
		}
	}
	WriteJSON(w, http.StatusOK, body)
}

// mediaMetadata is POST /2/media/metadata: an uploaded media's alt text (at most 1,000
// characters), sent with the media when it is posted.
func (x *xSim) mediaMetadata(w http.ResponseWriter, r *http.Request, u xUser) {
	var req struct {
		ID       string `json:"id"`
		Metadata struct {
			AltText struct {
				Text string `json:"text"`
			} `json:"alt_text"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		xInvalid(w, "body", "Request body is not valid JSON: "+err.Error())
		return
	}
	up := x.upload(req.ID)
	switch {
	case up == nil || up.owner != u.id:
		xInvalid(w, "id", "media id "+req.ID+" not found")
		return
	case utf8.RuneCountInString(req.Metadata.AltText.Text) > 1000:
		xInvalid(w, "metadata.alt_text.text", "alt text is longer than 1000 characters")
		return
	}
	x.n.Store.Put("x-alt:"+req.ID, req.Metadata.AltText.Text)
	WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": req.ID, "associated_metadata": true}})
}
