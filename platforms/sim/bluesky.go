package sim

// Bluesky: networks.md §2 and §10.2, the app-password session model.
//
// Served on the PDS (XRPC under /xrpc/): com.atproto.server.createSession, refreshSession,
// deleteSession, getSession and getServiceAuth; com.atproto.identity.resolveHandle;
// com.atproto.repo.uploadBlob, createRecord (collection app.bsky.feed.post) and listRecords. The
// video service (video.bsky.app in production, the same prefix here): app.bsky.video.uploadVideo,
// getJobStatus and getUploadLimits, authenticated with service tokens from getServiceAuth.
//
// Behaviour: createSession takes any handle with an app password of the form xxxx-xxxx-xxxx-xxxx
// and refuses others with 401 AuthenticationRequired; access tokens live 2 h and then answer
// 400 ExpiredToken; refresh tokens rotate and the old one keeps working for 2 h; repo writes cost
// points per DID (5,000 per hour and 35,000 per day, a create costs 3) and every XRPC answer
// carries RateLimit-Limit/-Remaining/-Reset (epoch seconds) and RateLimit-Policy; an exhausted
// budget answers 429 RateLimitExceeded; records over 300 graphemes or 3,000 bytes, facets that are
// not UTF-8 byte ranges of the text, more than 4 images, images over 1,000,000 bytes and blobs
// over 50 MB answer 400. A link card (app.bsky.embed.external) needs uri, title and description,
// and its thumb must be an image blob of the repo of at most 1,000,000 bytes (an unknown blob
// answers 400 BlobNotFound); the record's embed is kept whole in Record.Options["embed"]. Videos sent to the video service are "processed" for
// Options.ProcessingDelay and then stored on the PDS as a blob; a video whose bytes were already
// processed for the account answers 409 already_exists with the earlier job, as the real service
// does. DIDs are did:plc: identifiers derived from the handle; accounts created through
// Sim.NewAccount use the core's numeric user id as their DID, which createRecord and listRecords
// accept the same way.
//
// Engagement: a like is an app.bsky.feed.like record {subject:{uri,cid}, createdAt} created with
// createRecord (3 write points) and removed with deleteRecord (1 point); a post's viewer.like in
// getPosts and getPostThread is the caller's like record. A thread's hidden replies are the
// hiddenReplies of the root's app.bsky.feed.threadgate record (rkey = the post's rkey), written
// with putRecord (3 points to create, 2 to update; at most 300 URIs) and read with getRecord
// (400 RecordNotFound when there is none); getPostThread leaves hidden replies out.
// chat.bsky.convo.listConvos lists the caller's conversations, newest message first.
//
// Live data (networks.md §2.5), answered by the PDS as if proxied to the AppView and the chat
// service: app.bsky.feed.getPosts (likeCount, replyCount, repostCount, quoteCount from the post's
// counters; Bluesky has no views) and app.bsky.feed.getPostThread (the post with its replies,
// nested; an unknown post answers 400 NotFound). A post record with reply.root and reply.parent
// strong references (uri and cid of existing posts; the parent must belong to the root's thread)
// is a reply: it is recorded as a reply and a comment of the thread, not as a publication, unless
// it answers one of the account's own posts (a thread's next part, a first comment): that is a
// publication with reply_to, and a reply of the thread by the account.
// Comments added through the admin API are reply records in the commenter's repo. Direct messages
// (chat.bsky.convo.getMessages, sendMessage and getConvoForMembers) need the header
// "atproto-proxy: did:web:api.bsky.chat#bsky_chat"; a conversation the caller is not a member of
// answers 400 InvalidRequest "Convo not found"; messages are text only (at most 1,000 graphemes
// and 10,000 bytes).

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// Bluesky's default limits (networks.md §2.3). The video quotas are unpublished; the simulator
// assumes 25 videos and 10 GB per account per day.
var (
	bskyLimitIP          = Limit{Count: 3000, Window: 5 * time.Minute}
	bskyLimitWritesHour  = Limit{Count: 5000, Window: time.Hour}
	bskyLimitWritesDay   = Limit{Count: 35000, Window: 24 * time.Hour}
	bskyLimitSession5Min = Limit{Count: 30, Window: 5 * time.Minute}
	bskyLimitSessionDay  = Limit{Count: 300, Window: 24 * time.Hour}
	bskyLimitVideos      = Limit{Count: 25, Window: 24 * time.Hour}
	bskyLimitVideoBytes  = Limit{Count: 10_000_000_000, Window: 24 * time.Hour}
)

// Bluesky's size limits (networks.md §2.2).
const (
	bskyMaxGraphemes  = 300
	bskyMaxTextBytes  = 3000
	bskyMaxImages     = 4
	bskyMaxImageBytes = 1_000_000
	bskyMaxVideoBytes = 100_000_000
	bskyMaxBlobBytes  = 52_428_800
	bskyCreateCost    = 3
	bskyPostNSID      = "app.bsky.feed.post"
	bskyLikeNSID      = "app.bsky.feed.like"
	bskyGateNSID      = "app.bsky.feed.threadgate"
	bskyUpdateCost    = 2
	bskyDeleteCost    = 1
	bskyMaxHidden     = 300 // app.bsky.feed.threadgate hiddenReplies maxLength
)

var bskyAppPassword = regexp.MustCompile(`^[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}$`)

var bskyHandle = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

func init() { register(platforms.Bluesky, registerBluesky) }

type bskySim struct{ n *Network }

// bskyRecord is a record in a repo.
type bskyRecord struct {
	did, collection, rkey, uri, cid string
	value                           json.RawMessage
}

// bskyServiceToken is a token from getServiceAuth.
type bskyServiceToken struct {
	did, aud, lxm string
	exp           time.Time
}

// bskyJob is a video processing job.
type bskyJob struct {
	id, did, blobID string
	readyAt         time.Time
	failed          bool
}

func registerBluesky(n *Network) {
	n.Tokens.RotateRefresh = true
	n.Tokens.RefreshGrace = 2 * time.Hour
	b := &bskySim{n: n}
	n.RateLimited = b.rateLimited

	n.Mux.HandleFunc("POST /xrpc/com.atproto.server.createSession", b.limited(b.createSession))
	n.Mux.HandleFunc("POST /xrpc/com.atproto.server.refreshSession", b.limited(b.refreshSession))
	n.Mux.HandleFunc("POST /xrpc/com.atproto.server.deleteSession", b.limited(b.deleteSession))
	n.Mux.HandleFunc("GET /xrpc/com.atproto.server.getSession", b.limited(b.authed(b.getSession)))
	n.Mux.HandleFunc("GET /xrpc/com.atproto.server.getServiceAuth", b.limited(b.authed(b.getServiceAuth)))
	n.Mux.HandleFunc("GET /xrpc/com.atproto.identity.resolveHandle", b.limited(b.resolveHandle))
	n.Mux.HandleFunc("POST /xrpc/com.atproto.repo.uploadBlob", b.limited(b.authed(b.uploadBlob)))
	n.Mux.HandleFunc("POST /xrpc/com.atproto.repo.createRecord", b.limited(b.authed(b.createRecord)))
	n.Mux.HandleFunc("GET /xrpc/com.atproto.repo.listRecords", b.limited(b.listRecords))
	n.Mux.HandleFunc("GET /xrpc/com.atproto.repo.getRecord", b.limited(b.getRecord))
	n.Mux.HandleFunc("POST /xrpc/com.atproto.repo.putRecord", b.limited(b.authed(b.putRecord)))
	n.Mux.HandleFunc("POST /xrpc/com.atproto.repo.deleteRecord", b.limited(b.authed(b.deleteRecord)))
	n.Mux.HandleFunc("GET /xrpc/app.bsky.video.getUploadLimits", b.getUploadLimits)
	n.Mux.HandleFunc("POST /xrpc/app.bsky.video.uploadVideo", b.uploadVideo)
	n.Mux.HandleFunc("GET /xrpc/app.bsky.video.getJobStatus", b.getJobStatus)

	n.Live = LiveHooks{Metrics: true, NewComment: b.newComment, PeerID: b.peerID,
		NewConversation: func(string, string) string { return b.tid() }, NewMessageID: b.tid}
	n.Mux.HandleFunc("GET /xrpc/app.bsky.feed.getPosts", b.limited(b.authed(b.getPosts)))
	n.Mux.HandleFunc("GET /xrpc/app.bsky.feed.getPostThread", b.limited(b.authed(b.getPostThread)))
	n.Mux.HandleFunc("GET /xrpc/chat.bsky.convo.getMessages", b.limited(b.authed(b.chat(b.getMessages))))
	n.Mux.HandleFunc("POST /xrpc/chat.bsky.convo.sendMessage", b.limited(b.authed(b.chat(b.sendMessage))))
	n.Mux.HandleFunc("GET /xrpc/chat.bsky.convo.getConvoForMembers", b.limited(b.authed(b.chat(b.getConvoForMembers))))
	n.Mux.HandleFunc("GET /xrpc/chat.bsky.convo.listConvos", b.limited(b.authed(b.chat(b.listConvos))))
}

// bskyError writes an XRPC error.
func bskyError(w http.ResponseWriter, status int, name, message string) {
	WriteJSON(w, status, map[string]string{"error": name, "message": message})
}

// bskySetRate writes the RateLimit-* headers of a window.
func bskySetRate(w http.ResponseWriter, limit, remaining int, reset time.Time, window time.Duration) {
	w.Header().Set("RateLimit-Limit", strconv.Itoa(limit))
	w.Header().Set("RateLimit-Remaining", strconv.Itoa(max(remaining, 0)))
	w.Header().Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	w.Header().Set("RateLimit-Policy", fmt.Sprintf("%d;w=%d", limit, int(window/time.Second)))
}

// rateLimited answers Bluesky's 429 RateLimitExceeded with the RateLimit-* headers.
func (b *bskySim) rateLimited(w http.ResponseWriter, r *http.Request, reset time.Time) {
	if w.Header().Get("RateLimit-Limit") == "" {
		w.Header().Set("RateLimit-Limit", strconv.Itoa(bskyLimitIP.Count))
		w.Header().Set("RateLimit-Policy", fmt.Sprintf("%d;w=%d", bskyLimitIP.Count, int(bskyLimitIP.Window/time.Second)))
	}
	w.Header().Set("RateLimit-Remaining", "0")
	w.Header().Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	bskyError(w, http.StatusTooManyRequests, "RateLimitExceeded", "Rate Limit Exceeded")
}

// limited applies the PDS's per-IP request limit and sets its headers.
func (b *bskySim) limited(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ip := r.RemoteAddr
		if i := strings.LastIndex(ip, ":"); i > 0 {
			ip = ip[:i]
		}
		limit, remaining, reset, ok := b.n.Take("ip", ip, 1, bskyLimitIP)
		bskySetRate(w, limit, remaining, reset, bskyLimitIP.Window)
		if !ok {
			b.rateLimited(w, r, reset)
			return
		}
		h(w, r)
	}
}

// bskyAccount is the caller of an authenticated endpoint: its DID and handle.
type bskyAccount struct{ did, handle string }

// authed checks the access token: missing → 401 AuthenticationRequired; expired → 400
// ExpiredToken; revoked → 400 ExpiredToken "Token has been revoked"; unknown → 400 InvalidToken.
func (b *bskySim) authed(h func(w http.ResponseWriter, r *http.Request, a bskyAccount)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(tok) == "" {
			bskyError(w, http.StatusUnauthorized, "AuthenticationRequired", "Authentication Required")
			return
		}
		did, handle, state := b.n.Tokens.Check(strings.TrimSpace(tok))
		switch state {
		case TokenExpired:
			bskyError(w, http.StatusBadRequest, "ExpiredToken", "Token has expired")
			return
		case TokenRevoked:
			bskyError(w, http.StatusBadRequest, "ExpiredToken", "Token has been revoked")
			return
		case TokenUnknown:
			bskyError(w, http.StatusBadRequest, "InvalidToken", "Token could not be verified")
			return
		}
		h(w, r, bskyAccount{did: did, handle: handle})
	}
}

// did is the did:plc identifier of a handle.
func (b *bskySim) did(handle string) string {
	sum := sha256.Sum256([]byte("bluesky/" + strings.ToLower(handle)))
	return "did:plc:" + strings.ToLower(base32.StdEncoding.EncodeToString(sum[:15]))
}

func (b *bskySim) sessionBody(c platforms.Credentials) map[string]any {
	return map[string]any{
		"accessJwt": c.AccessToken, "refreshJwt": c.RefreshToken, "handle": c.Handle, "did": c.UserID,
		"didDoc": map[string]any{
			"@context":    []string{"https://www.w3.org/ns/did/v1"},
			"id":          c.UserID,
			"alsoKnownAs": []string{"at://" + c.Handle},
			"service": []map[string]string{{
				"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": b.n.BaseURL(),
			}},
		},
		"email": c.Handle + "@example.com", "emailConfirmed": true, "active": true,
	}
}

func (b *bskySim) createSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Identifier string `json:"identifier"`
		Password   string `json:"password"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.Identifier == "" {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input must have the properties \"identifier\", \"password\"")
		return
	}
	handle := strings.ToLower(strings.TrimPrefix(req.Identifier, "@"))
	switch {
	case strings.HasPrefix(handle, "did:"):
		v, ok := b.n.Store.Get("bsky-handle:" + handle)
		if !ok {
			bskyError(w, http.StatusUnauthorized, "AuthenticationRequired", "Invalid identifier or password")
			return
		}
		handle = v.(string)
	case strings.Contains(handle, "@"):
		// An email address: the simulator's accounts are <local part>.bsky.social.
		handle = handle[:strings.Index(handle, "@")] + ".bsky.social"
	}
	if !bskyHandle.MatchString(handle) || !bskyAppPassword.MatchString(req.Password) {
		bskyError(w, http.StatusUnauthorized, "AuthenticationRequired", "Invalid identifier or password")
		return
	}
	did := b.did(handle)
	for _, l := range []struct {
		bucket string
		def    Limit
	}{{"create_session", bskyLimitSession5Min}, {"create_session_day", bskyLimitSessionDay}} {
		limit, remaining, reset, ok := b.n.Take(l.bucket, did, 1, l.def)
		if !ok {
			bskySetRate(w, limit, remaining, reset, l.def.Window)
			b.rateLimited(w, r, reset)
			return
		}
	}
	b.n.Store.Put("bsky-handle:"+did, handle)
	WriteJSON(w, http.StatusOK, b.sessionBody(b.n.Tokens.Issue(did, handle)))
}

func bskyBearer(r *http.Request) string {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(tok)
}

func (b *bskySim) refreshSession(w http.ResponseWriter, r *http.Request) {
	c, ok := b.n.Tokens.Refresh(bskyBearer(r))
	if !ok {
		bskyError(w, http.StatusBadRequest, "ExpiredToken", "Token has expired")
		return
	}
	WriteJSON(w, http.StatusOK, b.sessionBody(c))
}

func (b *bskySim) deleteSession(w http.ResponseWriter, r *http.Request) {
	if !b.n.Tokens.Revoke(bskyBearer(r)) {
		bskyError(w, http.StatusBadRequest, "InvalidToken", "Token could not be verified")
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (b *bskySim) getSession(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	WriteJSON(w, http.StatusOK, map[string]any{"handle": a.handle, "did": a.did, "email": a.handle + "@example.com", "emailConfirmed": true, "active": true})
}

func (b *bskySim) getServiceAuth(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	q := r.URL.Query()
	aud := q.Get("aud")
	if !strings.HasPrefix(aud, "did:") {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "aud must be a DID")
		return
	}
	now := b.n.Sim.Now()
	exp := now.Add(time.Minute)
	if v := q.Get("exp"); v != "" {
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil {
			bskyError(w, http.StatusBadRequest, "InvalidRequest", "exp must be an integer")
			return
		}
		exp = time.Unix(int64(sec), 0)
		if exp.After(now.Add(time.Hour)) {
			bskyError(w, http.StatusBadRequest, "BadExpiration", "expiration is more than one hour in the future")
			return
		}
	}
	tok := "sim_svc_" + RandomID(16)
	b.n.Store.Put("bsky-svc:"+tok, &bskyServiceToken{did: a.did, aud: aud, lxm: q.Get("lxm"), exp: exp})
	WriteJSON(w, http.StatusOK, map[string]string{"token": tok})
}

func (b *bskySim) resolveHandle(w http.ResponseWriter, r *http.Request) {
	h := strings.ToLower(r.URL.Query().Get("handle"))
	if !bskyHandle.MatchString(h) {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: handle must be a valid handle")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"did": b.did(h)})
}

// bskyCID is a CIDv1 (base32, sha2-256) of data with the given multicodec (0x55 raw, 0x71
// dag-cbor).
func bskyCID(codec byte, data []byte) string {
	sum := sha256.Sum256(data)
	raw := append([]byte{0x01, codec, 0x12, 0x20}, sum[:]...)
	return "b" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw))
}

func bskyBlobRef(cid, mime string, size int) map[string]any {
	return map[string]any{"$type": "blob", "ref": map[string]string{"$link": cid}, "mimeType": mime, "size": size}
}

func (b *bskySim) uploadBlob(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	data, err := io.ReadAll(io.LimitReader(r.Body, bskyMaxBlobBytes+1))
	if err != nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "could not read the body")
		return
	}
	if len(data) > bskyMaxBlobBytes {
		bskyError(w, http.StatusBadRequest, "BlobTooLarge", fmt.Sprintf("This file is too large. The maximum size is %d bytes.", bskyMaxBlobBytes))
		return
	}
	mime := r.Header.Get("Content-Type")
	if mime == "" || mime == "*/*" {
		mime = http.DetectContentType(data)
	}
	cid := bskyCID(0x55, data)
	b.n.Store.PutBlob(&Blob{ID: a.did + "/" + cid, ContentType: mime, Data: data, Ready: true, Owner: a.did})
	WriteJSON(w, http.StatusOK, map[string]any{"blob": bskyBlobRef(cid, mime, len(data))})
}

// blob returns a repo's blob that is ready to be referenced (a video job's blob once the job
// completed).
func (b *bskySim) blob(did, cid string) (*Blob, bool) {
	id := did + "/" + cid
	ready := false
	if !b.n.Store.Update(id, func(x *Blob) { ready = x.Ready }) {
		return nil, false
	}
	if !ready {
		v, ok := b.n.Store.Get("bsky-blobjob:" + id)
		if !ok {
			return nil, false
		}
		if state, _ := b.jobState(v.(*bskyJob)); state != "JOB_STATE_COMPLETED" {
			return nil, false
		}
		b.n.Store.Update(id, func(x *Blob) { x.Ready = true })
	}
	bl, ok := b.n.Store.Blob(id)
	return bl, ok
}

// bskyPostRecord is the part of an app.bsky.feed.post record the simulator validates.
type bskyPostRecord struct {
	Type      string  `json:"$type"`
	Text      *string `json:"text"`
	CreatedAt string  `json:"createdAt"`
	Facets    []struct {
		Index struct {
			ByteStart *int `json:"byteStart"`
			ByteEnd   *int `json:"byteEnd"`
		} `json:"index"`
		Features []map[string]any `json:"features"`
	} `json:"facets"`
	Embed json.RawMessage `json:"embed"`
	Reply *struct {
		Root   bskyStrongRef `json:"root"`
		Parent bskyStrongRef `json:"parent"`
	} `json:"reply"`
	Langs  []string `json:"langs"`
	Labels *struct {
		Type   string `json:"$type"`
		Values []struct {
			Val string `json:"val"`
		} `json:"values"`
	} `json:"labels"`
}

// bskySelfLabels are the self-labels the app offers for a post's content.
var bskySelfLabels = []string{"sexual", "nudity", "porn", "graphic-media"}

// options are the record's langs and self-labels, as the simulator records them, and its images'
// alt texts; msg refuses a record whose langs or labels the lexicon refuses.
func (rec bskyPostRecord) options() (opts map[string]any, alts []string, msg string) {
	opts = map[string]any{}
	if len(rec.Langs) > 3 {
		return nil, nil, "Invalid app.bsky.feed.post record: Record/langs must not be longer than 3 elements"
	}
	if len(rec.Langs) > 0 {
		opts["langs"] = rec.Langs
	}
	if l := rec.Labels; l != nil {
		if l.Type != "com.atproto.label.defs#selfLabels" {
			return nil, nil, "Invalid app.bsky.feed.post record: Record/labels must be com.atproto.label.defs#selfLabels"
		}
		var vals []string
		for _, v := range l.Values {
			if !slices.Contains(bskySelfLabels, v.Val) {
				return nil, nil, "Invalid app.bsky.feed.post record: Record/labels has an unknown self-label " + v.Val
			}
			vals = append(vals, v.Val)
		}
		opts["labels"] = vals
	}
	var embed struct {
		Type   string `json:"$type"`
		Images []struct {
			Alt string `json:"alt"`
		} `json:"images"`
		Alt string `json:"alt"`
	}
	if len(rec.Embed) > 0 && json.Unmarshal(rec.Embed, &embed) == nil {
		if embed.Type == "app.bsky.embed.external" {
			// A link card is recorded whole, as the record carries it.
			var card map[string]any
			if json.Unmarshal(rec.Embed, &card) == nil {
				opts["embed"] = card
			}
		}
		for _, img := range embed.Images {
			alts = append(alts, img.Alt)
		}
		if embed.Alt != "" {
			alts = append(alts, embed.Alt)
		}
	}
	if !slices.ContainsFunc(alts, func(a string) bool { return a != "" }) {
		alts = nil
	}
	if len(opts) == 0 {
		opts = nil
	}
	return opts, alts, ""
}

// bskyStrongRef is com.atproto.repo.strongRef.
type bskyStrongRef struct {
	URI string `json:"uri"`
	CID string `json:"cid"`
}

type bskyBlobJSON struct {
	Type string `json:"$type"`
	Ref  struct {
		Link string `json:"$link"`
	} `json:"ref"`
	MimeType string `json:"mimeType"`
	Size     int    `json:"size"`
}

// checkPost validates a post record and returns the SHA-256 of its media, or a message.
func (b *bskySim) checkPost(did string, rec bskyPostRecord) ([]string, string) {
	if rec.Type != bskyPostNSID {
		return nil, "Invalid app.bsky.feed.post record: Record/$type must be app.bsky.feed.post"
	}
	if rec.Text == nil {
		return nil, "Invalid app.bsky.feed.post record: Record must have the property \"text\""
	}
	text := *rec.Text
	if n := platforms.GraphemeCount(text); n > bskyMaxGraphemes {
		return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/text must not be longer than %d graphemes (got %d)", bskyMaxGraphemes, n)
	}
	if len(text) > bskyMaxTextBytes {
		return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/text must not be longer than %d characters", bskyMaxTextBytes)
	}
	if _, err := time.Parse(time.RFC3339, rec.CreatedAt); err != nil {
		return nil, "Invalid app.bsky.feed.post record: Record/createdAt must be an valid atproto datetime (both RFC-3339 and ISO-8601)"
	}
	for i, f := range rec.Facets {
		s, e := f.Index.ByteStart, f.Index.ByteEnd
		if s == nil || e == nil || *s < 0 || *e <= *s || *e > len(text) ||
			(*s < len(text) && !utf8.RuneStart(text[*s])) || (*e < len(text) && !utf8.RuneStart(text[*e])) {
			return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/facets/%d/index must be a UTF-8 byte range of the text", i)
		}
		if len(f.Features) == 0 {
			return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/facets/%d/features must not be empty", i)
		}
		for _, feat := range f.Features {
			switch feat["$type"] {
			case "app.bsky.richtext.facet#link":
				if u, _ := feat["uri"].(string); u == "" {
					return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/facets/%d link must have a uri", i)
				}
			case "app.bsky.richtext.facet#mention":
				if d, _ := feat["did"].(string); !strings.HasPrefix(d, "did:") {
					return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/facets/%d mention must have a did", i)
				}
			case "app.bsky.richtext.facet#tag":
				if tag, _ := feat["tag"].(string); tag == "" || len(tag) > 640 {
					return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/facets/%d tag must have a tag", i)
				}
			}
		}
	}
	if len(rec.Embed) == 0 {
		if text == "" {
			return nil, "Invalid app.bsky.feed.post record: a post without an embed must have text"
		}
		return nil, ""
	}
	var embed struct {
		Type   string `json:"$type"`
		Images []struct {
			Image *bskyBlobJSON `json:"image"`
			Alt   *string       `json:"alt"`
		} `json:"images"`
		Video    *bskyBlobJSON `json:"video"`
		External *struct {
			URI         *string       `json:"uri"`
			Title       *string       `json:"title"`
			Description *string       `json:"description"`
			Thumb       *bskyBlobJSON `json:"thumb"`
		} `json:"external"`
	}
	if err := json.Unmarshal(rec.Embed, &embed); err != nil {
		return nil, "Invalid app.bsky.feed.post record: Record/embed is malformed"
	}
	var shas []string
	switch embed.Type {
	case "app.bsky.embed.images":
		if len(embed.Images) < 1 || len(embed.Images) > bskyMaxImages {
			return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/embed/images must have 1 to %d items", bskyMaxImages)
		}
		for i, img := range embed.Images {
			if img.Image == nil || img.Alt == nil {
				return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/embed/images/%d must have the properties \"image\" and \"alt\"", i)
			}
			bl, ok := b.blob(did, img.Image.Ref.Link)
			if !ok {
				return nil, "Could not find blob: " + img.Image.Ref.Link
			}
			if !strings.HasPrefix(bl.ContentType, "image/") || len(bl.Data) > bskyMaxImageBytes {
				return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/embed/images/%d/image must be an image of at most %d bytes", i, bskyMaxImageBytes)
			}
			shas = append(shas, bl.SHA256())
		}
	case "app.bsky.embed.video":
		if embed.Video == nil {
			return nil, "Invalid app.bsky.feed.post record: Record/embed must have the property \"video\""
		}
		bl, ok := b.blob(did, embed.Video.Ref.Link)
		if !ok {
			return nil, "Could not find blob: " + embed.Video.Ref.Link
		}
		if !strings.HasPrefix(bl.ContentType, "video/") || len(bl.Data) > bskyMaxVideoBytes {
			return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/embed/video must be a video of at most %d bytes", bskyMaxVideoBytes)
		}
		shas = append(shas, bl.SHA256())
	case "app.bsky.embed.external":
		// app.bsky.embed.external#external: uri, title and description required; thumb an
		// image blob of at most 1,000,000 bytes (accept image/*, maxSize 1000000).
		x := embed.External
		if x == nil || x.URI == nil || x.Title == nil || x.Description == nil {
			return nil, "Invalid app.bsky.feed.post record: Record/embed/external must have the properties \"uri\", \"title\" and \"description\""
		}
		if u, err := url.Parse(*x.URI); err != nil || !u.IsAbs() || u.Host == "" {
			return nil, "Invalid app.bsky.feed.post record: Record/embed/external/uri must be a valid uri"
		}
		if x.Thumb != nil {
			bl, ok := b.blob(did, x.Thumb.Ref.Link)
			if !ok {
				return nil, "Could not find blob: " + x.Thumb.Ref.Link
			}
			if !strings.HasPrefix(bl.ContentType, "image/") || len(bl.Data) > bskyMaxImageBytes {
				return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/embed/external/thumb must be an image of at most %d bytes", bskyMaxImageBytes)
			}
		}
	case "app.bsky.embed.record", "app.bsky.embed.recordWithMedia":
	default:
		return nil, fmt.Sprintf("Invalid app.bsky.feed.post record: Record/embed $type %q is not supported", embed.Type)
	}
	return shas, ""
}

// tid returns a new record key: a timestamp identifier (microseconds since the epoch and a clock
// id, base32-sortable), strictly increasing within the simulator.
func (b *bskySim) tid() string {
	v := uint64(b.n.Sim.Now().UnixMicro())<<10 | 0x2a
	b.n.Store.With(func(objects map[string]any) {
		if last, ok := objects["bsky-tid-last"].(uint64); ok && v <= last {
			v = last + 1
		}
		objects["bsky-tid-last"] = v
	})
	const alphabet = "234567abcdefghijklmnopqrstuvwxyz"
	out := make([]byte, 13)
	for i := 12; i >= 0; i-- {
		out[i] = alphabet[v&31]
		v >>= 5
	}
	return string(out)
}

func (b *bskySim) createRecord(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	var req struct {
		Repo       string          `json:"repo"`
		Collection string          `json:"collection"`
		Rkey       string          `json:"rkey"`
		Record     json.RawMessage `json:"record"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input must be a JSON object")
		return
	}
	if req.Repo != a.did && !strings.EqualFold(req.Repo, a.handle) {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input/repo must be the authenticated account")
		return
	}
	if req.Collection == bskyLikeNSID {
		b.createLike(w, r, a, req.Rkey, req.Record)
		return
	}
	if req.Collection != bskyPostNSID {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "the simulator creates only app.bsky.feed.post and app.bsky.feed.like records (a threadgate is written with putRecord)")
		return
	}
	var rec bskyPostRecord
	if err := json.Unmarshal(req.Record, &rec); err != nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input/record must be an object")
		return
	}
	shas, msg := b.checkPost(a.did, rec)
	if msg == "" && rec.Reply != nil {
		msg = b.checkReply(rec.Reply.Root, rec.Reply.Parent)
	}
	opts, alts, optMsg := rec.options()
	if msg == "" {
		msg = optMsg
	}
	if msg != "" {
		name := "InvalidRequest"
		if strings.HasPrefix(msg, "Could not find blob") {
			name = "BlobNotFound"
		}
		bskyError(w, http.StatusBadRequest, name, msg)
		return
	}
	limit, remaining, reset, ok := b.n.Take("writes", a.did, bskyCreateCost, bskyLimitWritesHour)
	bskySetRate(w, limit, remaining, reset, bskyLimitWritesHour.Window)
	if ok {
		var dl, dr int
		var dreset time.Time
		if dl, dr, dreset, ok = b.n.Take("writes_day", a.did, bskyCreateCost, bskyLimitWritesDay); !ok {
			bskySetRate(w, dl, dr, dreset, bskyLimitWritesDay.Window)
			reset = dreset
		}
	}
	if !ok {
		b.rateLimited(w, r, reset)
		return
	}
	rkey := req.Rkey
	if rkey == "" {
		rkey = b.tid()
	}
	uri := "at://" + a.did + "/" + req.Collection + "/" + rkey
	cid := bskyCID(0x71, req.Record)
	key := "bsky-record:" + a.did + "/" + req.Collection + "/" + rkey
	exists := false
	b.n.Store.With(func(objects map[string]any) {
		if _, exists = objects[key]; !exists {
			objects[key] = &bskyRecord{did: a.did, collection: req.Collection, rkey: rkey, uri: uri, cid: cid, value: append(json.RawMessage(nil), req.Record...)}
		}
	})
	if exists {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Record already exists at "+uri)
		return
	}
	if rec.Reply != nil && b.selfReply(uri, cid, a, *rec.Text, shas, opts, alts, rec.Reply.Root.URI, rec.Reply.Parent.URI) {
		// a thread's next part or a first comment: a post of the account (bluesky_thread.go)
	} else if rec.Reply != nil {
		parent := rec.Reply.Parent.URI
		if parent == rec.Reply.Root.URI {
			parent = ""
		}
		b.n.RecordReply(Comment{ID: uri, CID: cid, PostID: rec.Reply.Root.URI, ParentID: parent, Author: a.handle, AuthorID: a.did, Text: *rec.Text}, shas)
	} else {
		b.n.PublishWith(uri, a.did, *rec.Text, shas, opts, alts)
	}
	if b.n.TakeFault(FaultPostThenError) != "" {
		bskyError(w, http.StatusInternalServerError, "InternalServerError", "Internal Server Error")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{
		"uri": uri, "cid": cid, "validationStatus": "valid",
		"commit": map[string]string{"cid": bskyCID(0x71, []byte(uri+cid)), "rev": b.tid()},
	})
}

// listRecords serves a repo's records of one collection, newest first (oldest first with
// reverse=true), limit 1-100 (default 50), cursor = the last rkey of the previous page.
func (b *bskySim) listRecords(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	repo, collection := q.Get("repo"), q.Get("collection")
	if repo == "" || collection == "" {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: Params must have the properties \"repo\" and \"collection\"")
		return
	}
	if tok := bskyBearer(r); tok != "" {
		if _, _, state := b.n.Tokens.Check(tok); state == TokenExpired {
			bskyError(w, http.StatusBadRequest, "ExpiredToken", "Token has expired")
			return
		}
	}
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: limit must be between 1 and 100")
			return
		}
		limit = n
	}
	reverse := q.Get("reverse") == "true"
	cursor := q.Get("cursor")
	if !strings.HasPrefix(repo, "did:") {
		if v, ok := b.n.Store.Get("bsky-handle:" + b.did(repo)); ok && v.(string) == strings.ToLower(repo) {
			repo = b.did(repo)
		}
	}
	prefix := "bsky-record:" + repo + "/" + collection + "/"
	var recs []*bskyRecord
	b.n.Store.With(func(objects map[string]any) {
		for k, v := range objects {
			if strings.HasPrefix(k, prefix) {
				recs = append(recs, v.(*bskyRecord))
			}
		}
	})
	sort.Slice(recs, func(i, j int) bool {
		if reverse {
			return recs[i].rkey < recs[j].rkey
		}
		return recs[i].rkey > recs[j].rkey
	})
	out := []map[string]any{}
	next := ""
	for _, rec := range recs {
		if cursor != "" && ((!reverse && rec.rkey >= cursor) || (reverse && rec.rkey <= cursor)) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, map[string]any{"uri": rec.uri, "cid": rec.cid, "value": rec.value})
		next = rec.rkey
	}
	body := map[string]any{"records": out}
	if len(out) == limit {
		body["cursor"] = next
	}
	WriteJSON(w, http.StatusOK, body)
}

// serviceToken checks a video-service call's service token for lxm.
func (b *bskySim) serviceToken(w http.ResponseWriter, r *http.Request, lxm string) (*bskyServiceToken, bool) {
	v, ok := b.n.Store.Get("bsky-svc:" + bskyBearer(r))
	if !ok {
		bskyError(w, http.StatusUnauthorized, "AuthMissing", "Authentication Required")
		return nil, false
	}
	t := v.(*bskyServiceToken)
	if !b.n.Sim.Now().Before(t.exp) {
		bskyError(w, http.StatusUnauthorized, "BadJwt", "jwt expired")
		return nil, false
	}
	if t.lxm != lxm || !strings.HasPrefix(t.aud, "did:web:") {
		bskyError(w, http.StatusUnauthorized, "BadJwt", "jwt lexicon method (\"lxm\") does not match: "+lxm)
		return nil, false
	}
	return t, true
}

func (b *bskySim) getUploadLimits(w http.ResponseWriter, r *http.Request) {
	t, ok := b.serviceToken(w, r, "app.bsky.video.getUploadLimits")
	if !ok {
		return
	}
	_, videos, _, _ := b.n.Take("videos", t.did, 0, bskyLimitVideos)
	_, vbytes, _, _ := b.n.Take("video_bytes", t.did, 0, bskyLimitVideoBytes)
	body := map[string]any{"canUpload": videos > 0 && vbytes > 0, "remainingDailyVideos": videos, "remainingDailyBytes": vbytes}
	if videos <= 0 || vbytes <= 0 {
		body["error"] = "daily upload limit reached"
		body["message"] = "You have reached your daily limit for video uploads."
	}
	WriteJSON(w, http.StatusOK, body)
}

// jobState is a job's state and progress.
func (b *bskySim) jobState(j *bskyJob) (string, int) {
	now := b.n.Sim.Now()
	switch {
	case now.Before(j.readyAt):
		return "JOB_STATE_ENCODING", 50
	case j.failed:
		return "JOB_STATE_FAILED", 100
	}
	return "JOB_STATE_COMPLETED", 100
}

func (b *bskySim) jobStatus(j *bskyJob) map[string]any {
	state, progress := b.jobState(j)
	st := map[string]any{"jobId": j.id, "did": j.did, "state": state, "progress": progress}
	switch state {
	case "JOB_STATE_COMPLETED":
		if bl, ok := b.n.Store.Blob(j.blobID); ok {
			b.n.Store.Update(j.blobID, func(x *Blob) { x.Ready = true })
			st["blob"] = bskyBlobRef(strings.TrimPrefix(j.blobID, j.did+"/"), bl.ContentType, len(bl.Data))
		}
	case "JOB_STATE_FAILED":
		st["error"] = "failed to process video"
		st["failureCode"] = "encoding_failure"
		st["message"] = "Video processing failed"
	}
	return st
}

// uploadVideo takes a video for processing (?did=&name=, service token for
// com.atproto.repo.uploadBlob) and answers the job's status at the top level of the body, as the
// video service does (the lexicon wraps it in "jobStatus"; the adapter accepts both).
func (b *bskySim) uploadVideo(w http.ResponseWriter, r *http.Request) {
	t, ok := b.serviceToken(w, r, "com.atproto.repo.uploadBlob")
	if !ok {
		return
	}
	if did := r.URL.Query().Get("did"); did != t.did {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "did does not match the service token")
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, bskyMaxVideoBytes+1))
	if err != nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "could not read the body")
		return
	}
	if len(data) > bskyMaxVideoBytes {
		bskyError(w, http.StatusBadRequest, "file_too_large", fmt.Sprintf("Video is too large: the maximum is %d bytes", bskyMaxVideoBytes))
		return
	}
	if len(data) == 0 {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "empty video")
		return
	}
	mime := r.Header.Get("Content-Type")
	if !strings.HasPrefix(mime, "video/") {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Content-Type must be a video type")
		return
	}
	// Processed videos are stored as MP4 blobs on the PDS; the simulator keeps the bytes as sent.
	cid := bskyCID(0x55, data)
	blobID := t.did + "/" + cid
	if v, ok := b.n.Store.Get("bsky-blobjob:" + blobID); ok {
		if j := v.(*bskyJob); !j.failed {
			st := b.jobStatus(j)
			st["error"], st["message"] = "already_exists", "Video already processed"
			WriteJSON(w, http.StatusConflict, st)
			return
		}
	}
	if _, _, reset, ok := b.n.Take("videos", t.did, 1, bskyLimitVideos); !ok {
		b.rateLimited(w, r, reset)
		return
	}
	if _, _, reset, ok := b.n.Take("video_bytes", t.did, len(data), bskyLimitVideoBytes); !ok {
		b.rateLimited(w, r, reset)
		return
	}
	j := &bskyJob{id: RandomID(12), did: t.did, blobID: blobID, readyAt: b.n.Sim.Now().Add(b.n.Sim.Options().ProcessingDelay),
		failed: bytes.HasPrefix(data, []byte(ProcessingFailureMarker))}
	b.n.Store.PutBlob(&Blob{ID: blobID, ContentType: "video/mp4", Data: data, Owner: t.did})
	b.n.Store.Put("bsky-job:"+j.id, j)
	b.n.Store.Put("bsky-blobjob:"+blobID, j)
	WriteJSON(w, http.StatusOK, map[string]any{"jobId": j.id, "did": j.did, "state": "JOB_STATE_CREATED", "progress": 0})
}

func (b *bskySim) getJobStatus(w http.ResponseWriter, r *http.Request) {
	v, ok := b.n.Store.Get("bsky-job:" + r.URL.Query().Get("jobId"))
	if !ok {
		bskyError(w, http.StatusNotFound, "NotFound", "job not found")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"jobStatus": b.jobStatus(v.(*bskyJob))})
}

// record returns a stored record by its at:// URI.
func (b *bskySim) record(uri string) (*bskyRecord, bool) {
	rest, ok := strings.CutPrefix(uri, "at://")
	if !ok {
		return nil, false
	}
	v, ok := b.n.Store.Get("bsky-record:" + rest)
	if !ok {
		return nil, false
	}
	rec, ok := v.(*bskyRecord)
	return rec, ok
}

// threadRoot is the URI of the post whose thread uri belongs to: its own for a post, the root of
// its reply reference for a reply.
func (b *bskySim) threadRoot(rec *bskyRecord) string {
	var v struct {
		Reply *struct {
			Root bskyStrongRef `json:"root"`
		} `json:"reply"`
	}
	if json.Unmarshal(rec.value, &v) == nil && v.Reply != nil && v.Reply.Root.URI != "" {
		return v.Reply.Root.URI
	}
	return rec.uri
}

// checkReply validates a reply's strong references: both name existing posts with their cid, the
// root is a thread root and the parent belongs to its thread.
func (b *bskySim) checkReply(root, parent bskyStrongRef) string {
	const prefix = "Invalid app.bsky.feed.post record: "
	if root.URI == "" || root.CID == "" || parent.URI == "" || parent.CID == "" {
		return prefix + "Record/reply/root and Record/reply/parent must be strong references (uri and cid)"
	}
	r, ok := b.record(root.URI)
	if !ok || r.cid != root.CID {
		return prefix + "Record/reply/root must reference an existing post (uri and cid)"
	}
	if b.threadRoot(r) != r.uri {
		return prefix + "Record/reply/root must be the root of its thread"
	}
	p, ok := b.record(parent.URI)
	if !ok || p.cid != parent.CID {
		return prefix + "Record/reply/parent must reference an existing post (uri and cid)"
	}
	if b.threadRoot(p) != root.URI {
		return prefix + "Record/reply/parent must belong to the thread of Record/reply/root"
	}
	return ""
}

// handleOf is the handle of a DID, when the simulator knows it.
func (b *bskySim) handleOf(did string) string {
	if v, ok := b.n.Store.Get("bsky-handle:" + did); ok {
		return v.(string)
	}
	return did
}

// peerID is the DID of a handle (a DID stays as it is).
func (b *bskySim) peerID(peer string) string {
	peer = strings.TrimPrefix(peer, "@")
	if strings.HasPrefix(peer, "did:") {
		return peer
	}
	did := b.did(peer)
	b.n.Store.Put("bsky-handle:"+did, strings.ToLower(peer))
	return did
}

// newComment writes a comment added through the admin API as a reply record in the commenter's
// repo.
func (b *bskySim) newComment(c *Comment, post Record, parent *Comment) error {
	did := b.peerID(c.Author)
	root, ok := b.record(post.ID)
	if !ok {
		return fmt.Errorf("sim: bluesky post %q has no record: %w", post.ID, ErrUnknownPost)
	}
	pref := bskyStrongRef{URI: root.uri, CID: root.cid}
	if parent != nil {
		pref = bskyStrongRef{URI: parent.ID, CID: parent.CID}
	}
	value, _ := json.Marshal(map[string]any{
		"$type": bskyPostNSID, "text": c.Text, "createdAt": c.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		"reply": map[string]any{"root": bskyStrongRef{URI: root.uri, CID: root.cid}, "parent": pref},
	})
	rkey := b.tid()
	uri := "at://" + did + "/" + bskyPostNSID + "/" + rkey
	cid := bskyCID(0x71, value)
	b.n.Store.Put("bsky-record:"+did+"/"+bskyPostNSID+"/"+rkey, &bskyRecord{did: did, collection: bskyPostNSID, rkey: rkey, uri: uri, cid: cid, value: value})
	c.ID, c.CID, c.AuthorID = uri, cid, did
	return nil
}

// postView renders app.bsky.feed.defs#postView with the post's counters.
func (b *bskySim) postView(rec *bskyRecord, viewer string) map[string]any {
	var v struct {
		CreatedAt string `json:"createdAt"`
	}
	_ = json.Unmarshal(rec.value, &v)
	c := b.n.Counters(rec.uri)
	handle := b.handleOf(rec.did)
	viewerState := map[string]any{}
	if like, ok := b.n.LikeOf(viewer, rec.uri); ok && viewer != "" {
		viewerState["like"] = like.Record
	}
	return map[string]any{
		"uri": rec.uri, "cid": rec.cid,
		"author": map[string]any{"did": rec.did, "handle": handle, "displayName": handle, "labels": []any{}},
		"record": rec.value, "replyCount": c.Comments, "repostCount": c.Shares, "likeCount": c.Likes,
		"quoteCount": 0, "bookmarkCount": 0, "indexedAt": v.CreatedAt, "labels": []any{},
		"viewer": viewerState,
	}
}

// getPosts is app.bsky.feed.getPosts?uris=… (at most 25): the posts that exist, in order.
func (b *bskySim) getPosts(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	uris := r.URL.Query()["uris"]
	if len(uris) == 0 || len(uris) > 25 {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: uris must have between 1 and 25 items")
		return
	}
	posts := []any{}
	for _, u := range uris {
		if rec, ok := b.record(u); ok {
			posts = append(posts, b.postView(rec, a.did))
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"posts": posts})
}

// getPostThread is app.bsky.feed.getPostThread?uri=…&depth=…: the post with its replies, nested.
// Replies hidden by the root's threadgate (hiddenReplies) are left out, with what is below them.
func (b *bskySim) getPostThread(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	q := r.URL.Query()
	uri := q.Get("uri")
	if uri == "" {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: Params must have the property \"uri\"")
		return
	}
	depth := 6
	if v := q.Get("depth"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: depth must be between 0 and 1000")
			return
		}
		depth = n
	}
	rec, ok := b.record(uri)
	if !ok {
		bskyError(w, http.StatusBadRequest, "NotFound", "Post not found: "+uri)
		return
	}
	root := b.threadRoot(rec)
	children := map[string][]Comment{}
	comments := b.n.Comments(root)
	for i := len(comments) - 1; i >= 0; i-- { // newest first
		c := comments[i]
		parent := c.ParentID
		if parent == "" {
			parent = c.PostID
		}
		children[parent] = append(children[parent], c)
	}
	var node func(rec *bskyRecord, level int) map[string]any
	node = func(rec *bskyRecord, level int) map[string]any {
		out := map[string]any{"$type": "app.bsky.feed.defs#threadViewPost", "post": b.postView(rec, a.did)}
		if level < depth {
			replies := []any{}
			for _, c := range children[rec.uri] {
				if b.n.IsHidden(c.ID) {
					continue // in the root's threadgate hiddenReplies: left out of the thread
				}
				if child, ok := b.record(c.ID); ok {
					replies = append(replies, node(child, level+1))
				}
			}
			out["replies"] = replies
		}
		return out
	}
	WriteJSON(w, http.StatusOK, map[string]any{"thread": node(rec, 0)})
}

// bskyChatProxy is the service the chat methods must be proxied to.
const bskyChatProxy = "did:web:api.bsky.chat#bsky_chat"

// chat requires the atproto-proxy header of the chat service, as the PDS does for chat.bsky.*.
func (b *bskySim) chat(h func(w http.ResponseWriter, r *http.Request, a bskyAccount)) func(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	return func(w http.ResponseWriter, r *http.Request, a bskyAccount) {
		if r.Header.Get("atproto-proxy") != bskyChatProxy {
			bskyError(w, http.StatusBadRequest, "InvalidRequest", "chat.bsky methods must be proxied to "+bskyChatProxy+" with the atproto-proxy header")
			return
		}
		h(w, r, a)
	}
}

func bskyConvoNotFound(w http.ResponseWriter) {
	bskyError(w, http.StatusBadRequest, "InvalidRequest", "Convo not found")
}

func (b *bskySim) messageView(m Message) map[string]any {
	return map[string]any{"$type": "chat.bsky.convo.defs#messageView", "id": m.ID, "rev": m.ID, "text": m.Text,
		"sender": map[string]string{"did": m.From}, "sentAt": m.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
}

func (b *bskySim) convoView(c Conversation) map[string]any {
	members := []any{}
	for _, did := range []string{c.Account, c.Peer} {
		members = append(members, map[string]any{"did": did, "handle": b.handleOf(did)})
	}
	rev := ""
	if len(c.Messages) > 0 {
		rev = c.Messages[len(c.Messages)-1].ID
	}
	return map[string]any{"id": c.ID, "rev": rev, "members": members, "muted": false, "unreadCount": 0, "status": "accepted"}
}

// bskyChatPage reads the limit (1 to 100, default 50) and the cursor (an offset) of a chat
// listing; false when it answered a 400.
func bskyChatPage(w http.ResponseWriter, q url.Values) (limit, offset int, ok bool) {
	limit = 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: limit must be between 1 and 100")
			return 0, 0, false
		}
		limit = n
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: invalid cursor")
			return 0, 0, false
		}
		offset = n
	}
	return limit, offset, true
}

// getMessages is chat.bsky.convo.getMessages?convoId=…&limit=…&cursor=…: newest first.
func (b *bskySim) getMessages(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	q := r.URL.Query()
	c, ok := b.n.Conversation(q.Get("convoId"))
	if !ok || !c.Has(a.did) {
		bskyConvoNotFound(w)
		return
	}
	limit, offset, ok := bskyChatPage(w, q)
	if !ok {
		return
	}
	n := len(c.Messages)
	out := []any{}
	end := min(offset+limit, n)
	for i := offset; i < end; i++ {
		out = append(out, b.messageView(c.Messages[n-1-i]))
	}
	body := map[string]any{"messages": out}
	if end < n {
		body["cursor"] = strconv.Itoa(end)
	}
	WriteJSON(w, http.StatusOK, body)
}

// sendMessage is chat.bsky.convo.sendMessage {convoId, message:{text, facets?, embed?}}.
func (b *bskySim) sendMessage(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	var req struct {
		ConvoID string `json:"convoId"`
		Message *struct {
			Text  *string         `json:"text"`
			Embed json.RawMessage `json:"embed"`
		} `json:"message"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Message == nil || req.Message.Text == nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input must have the properties \"convoId\" and \"message\" with \"text\"")
		return
	}
	text := *req.Message.Text
	switch {
	case platforms.GraphemeCount(text) > 1000 || len(text) > 10000:
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input/message/text must not be longer than 1000 graphemes")
		return
	case strings.TrimSpace(text) == "":
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input/message/text must not be empty")
		return
	}
	if len(req.Message.Embed) > 0 {
		var e struct {
			Type string `json:"$type"`
		}
		if json.Unmarshal(req.Message.Embed, &e) != nil || e.Type != "app.bsky.embed.record" {
			bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input/message/embed must be an app.bsky.embed.record")
			return
		}
	}
	c, ok := b.n.Conversation(req.ConvoID)
	if !ok || !c.Has(a.did) {
		bskyConvoNotFound(w)
		return
	}
	m, ok := b.n.AddMessage(c.ID, a.did, text, nil, true)
	if !ok {
		bskyConvoNotFound(w)
		return
	}
	if b.n.TakeFault(FaultPostThenError) != "" {
		bskyError(w, http.StatusInternalServerError, "InternalServerError", "Internal Server Error")
		return
	}
	WriteJSON(w, http.StatusOK, b.messageView(m))
}

// getConvoForMembers is chat.bsky.convo.getConvoForMembers?members=…: the caller's one-to-one
// conversation with one other member, created when there is none.
func (b *bskySim) getConvoForMembers(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	var others []string
	for _, m := range r.URL.Query()["members"] {
		if m != a.did {
			others = append(others, m)
		}
	}
	if len(others) != 1 || !strings.HasPrefix(others[0], "did:") {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: members must name one other account by DID (group conversations are not simulated)")
		return
	}
	c, ok := b.n.ConversationWith(a.did, others[0], "", true)
	if !ok {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: a conversation needs two different accounts")
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"convo": b.convoView(c)})
}

// spendWrites charges cost repo write points to did, answering 429 when they are spent.
func (b *bskySim) spendWrites(w http.ResponseWriter, r *http.Request, did string, cost int) bool {
	limit, remaining, reset, ok := b.n.Take("writes", did, cost, bskyLimitWritesHour)
	bskySetRate(w, limit, remaining, reset, bskyLimitWritesHour.Window)
	if ok {
		var dl, dr int
		var dreset time.Time
		if dl, dr, dreset, ok = b.n.Take("writes_day", did, cost, bskyLimitWritesDay); !ok {
			bskySetRate(w, dl, dr, dreset, bskyLimitWritesDay.Window)
			reset = dreset
		}
	}
	if !ok {
		b.rateLimited(w, r, reset)
	}
	return ok
}

// createLike stores an app.bsky.feed.like record; its subject must be an existing post (uri and
// cid).
func (b *bskySim) createLike(w http.ResponseWriter, r *http.Request, a bskyAccount, rkey string, raw json.RawMessage) {
	var rec struct {
		Type      string         `json:"$type"`
		Subject   *bskyStrongRef `json:"subject"`
		CreatedAt string         `json:"createdAt"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Subject == nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Invalid app.bsky.feed.like record: Record must have the property \"subject\"")
		return
	}
	if _, err := time.Parse(time.RFC3339, rec.CreatedAt); err != nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Invalid app.bsky.feed.like record: Record/createdAt must be an valid atproto datetime")
		return
	}
	subject, ok := b.record(rec.Subject.URI)
	if !ok || subject.cid != rec.Subject.CID || subject.collection != bskyPostNSID {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Invalid app.bsky.feed.like record: Record/subject must reference an existing post (uri and cid)")
		return
	}
	if !b.spendWrites(w, r, a.did, bskyCreateCost) {
		return
	}
	if rkey == "" {
		rkey = b.tid()
	}
	uri := "at://" + a.did + "/" + bskyLikeNSID + "/" + rkey
	cid := bskyCID(0x71, raw)
	b.n.Store.Put("bsky-record:"+a.did+"/"+bskyLikeNSID+"/"+rkey, &bskyRecord{did: a.did, collection: bskyLikeNSID, rkey: rkey, uri: uri, cid: cid, value: append(json.RawMessage(nil), raw...)})
	b.n.SetLike(a.did, subject.uri, uri, true)
	WriteJSON(w, http.StatusOK, map[string]any{"uri": uri, "cid": cid, "validationStatus": "valid",
		"commit": map[string]string{"cid": bskyCID(0x71, []byte(uri+cid)), "rev": b.tid()}})
}

// getRecord is com.atproto.repo.getRecord?repo&collection&rkey → {uri, cid, value}, or 400
// RecordNotFound.
func (b *bskySim) getRecord(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	repo, collection, rkey := q.Get("repo"), q.Get("collection"), q.Get("rkey")
	if repo == "" || collection == "" || rkey == "" {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Error: Params must have the properties \"repo\", \"collection\" and \"rkey\"")
		return
	}
	uri := "at://" + repo + "/" + collection + "/" + rkey
	rec, ok := b.record(uri)
	if !ok {
		bskyError(w, http.StatusBadRequest, "RecordNotFound", "Could not locate record: "+uri)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"uri": rec.uri, "cid": rec.cid, "value": rec.value})
}

// putRecord is com.atproto.repo.putRecord {repo, collection, rkey, record}; the simulator takes
// app.bsky.feed.threadgate records, whose hiddenReplies hide replies of the post's thread.
func (b *bskySim) putRecord(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	var req struct {
		Repo       string          `json:"repo"`
		Collection string          `json:"collection"`
		Rkey       string          `json:"rkey"`
		Record     json.RawMessage `json:"record"`
		SwapRecord *string         `json:"swapRecord"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Rkey == "" {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input must have the properties \"repo\", \"collection\", \"rkey\" and \"record\"")
		return
	}
	if req.Repo != a.did && !strings.EqualFold(req.Repo, a.handle) {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input/repo must be the authenticated account")
		return
	}
	if req.Collection != bskyGateNSID {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "the simulator puts only app.bsky.feed.threadgate records")
		return
	}
	var gate struct {
		Type          string   `json:"$type"`
		Post          string   `json:"post"`
		CreatedAt     string   `json:"createdAt"`
		HiddenReplies []string `json:"hiddenReplies"`
	}
	const prefix = "Invalid app.bsky.feed.threadgate record: "
	if err := json.Unmarshal(req.Record, &gate); err != nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", prefix+"Record must be an object")
		return
	}
	postURI := "at://" + a.did + "/" + bskyPostNSID + "/" + req.Rkey
	switch {
	case gate.Post != postURI:
		bskyError(w, http.StatusBadRequest, "InvalidRequest", prefix+"Record/post must be the post with the threadgate's rkey in the same repo")
		return
	case len(gate.HiddenReplies) > bskyMaxHidden:
		bskyError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf(prefix+"Record/hiddenReplies must not have more than %d elements", bskyMaxHidden))
		return
	}
	if _, err := time.Parse(time.RFC3339, gate.CreatedAt); err != nil {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", prefix+"Record/createdAt must be an valid atproto datetime")
		return
	}
	if _, ok := b.record(postURI); !ok {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", prefix+"Record/post must reference an existing post")
		return
	}
	key := "bsky-record:" + a.did + "/" + bskyGateNSID + "/" + req.Rkey
	old, exists := b.n.Store.Get(key)
	if req.SwapRecord != nil {
		cur := ""
		if exists {
			cur = old.(*bskyRecord).cid
		}
		if cur != *req.SwapRecord {
			bskyError(w, http.StatusBadRequest, "InvalidSwap", "Record was at "+cur)
			return
		}
	}
	cost := bskyCreateCost
	if exists {
		cost = bskyUpdateCost
	}
	if !b.spendWrites(w, r, a.did, cost) {
		return
	}
	uri := "at://" + a.did + "/" + bskyGateNSID + "/" + req.Rkey
	cid := bskyCID(0x71, req.Record)
	b.n.Store.Put(key, &bskyRecord{did: a.did, collection: bskyGateNSID, rkey: req.Rkey, uri: uri, cid: cid, value: append(json.RawMessage(nil), req.Record...)})
	b.syncHidden(postURI, gate.HiddenReplies)
	WriteJSON(w, http.StatusOK, map[string]any{"uri": uri, "cid": cid, "validationStatus": "valid",
		"commit": map[string]string{"cid": bskyCID(0x71, []byte(uri+cid)), "rev": b.tid()}})
}

// syncHidden makes the thread's hidden replies those the threadgate lists.
func (b *bskySim) syncHidden(root string, hidden []string) {
	for _, c := range b.n.Comments(root) {
		b.n.SetHidden(c.ID, slices.Contains(hidden, c.ID))
	}
}

// deleteRecord is com.atproto.repo.deleteRecord {repo, collection, rkey} (1 write point); deleting
// a record that does not exist succeeds, as on a PDS. Deleting a like unlikes; deleting a
// threadgate shows its hidden replies again.
func (b *bskySim) deleteRecord(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	var req struct {
		Repo       string `json:"repo"`
		Collection string `json:"collection"`
		Rkey       string `json:"rkey"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Collection == "" || req.Rkey == "" {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input must have the properties \"repo\", \"collection\" and \"rkey\"")
		return
	}
	if req.Repo != a.did && !strings.EqualFold(req.Repo, a.handle) {
		bskyError(w, http.StatusBadRequest, "InvalidRequest", "Input/repo must be the authenticated account")
		return
	}
	if !b.spendWrites(w, r, a.did, bskyDeleteCost) {
		return
	}
	key := "bsky-record:" + a.did + "/" + req.Collection + "/" + req.Rkey
	v, ok := b.n.Store.Get(key)
	if ok {
		rec := v.(*bskyRecord)
		b.n.Store.With(func(objects map[string]any) { delete(objects, key) })
		switch rec.collection {
		case bskyLikeNSID:
			var like struct {
				Subject bskyStrongRef `json:"subject"`
			}
			_ = json.Unmarshal(rec.value, &like)
			if cur, liked := b.n.LikeOf(a.did, like.Subject.URI); liked && cur.Record == rec.uri {
				b.n.SetLike(a.did, like.Subject.URI, "", false)
			}
		case bskyGateNSID:
			b.syncHidden("at://"+a.did+"/"+bskyPostNSID+"/"+req.Rkey, nil)
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"commit": map[string]string{"cid": bskyCID(0x71, []byte(key)), "rev": b.tid()}})
}

// listConvos is chat.bsky.convo.listConvos?limit=&cursor=: the caller's conversations with a
// message, newest message first, each with its lastMessage.
func (b *bskySim) listConvos(w http.ResponseWriter, r *http.Request, a bskyAccount) {
	q := r.URL.Query()
	limit, offset, ok := bskyChatPage(w, q)
	if !ok {
		return
	}
	var convos []Conversation
	for _, c := range b.n.Sim.Conversations(b.n.Platform, a.did) {
		if len(c.Messages) > 0 {
			convos = append(convos, c)
		}
	}
	sort.SliceStable(convos, func(i, j int) bool {
		return convos[i].Messages[len(convos[i].Messages)-1].CreatedAt.After(convos[j].Messages[len(convos[j].Messages)-1].CreatedAt)
	})
	out := []any{}
	end := min(offset+limit, len(convos))
	for i := offset; i < end; i++ {
		v := b.convoView(convos[i])
		v["lastMessage"] = b.messageView(convos[i].Messages[len(convos[i].Messages)-1])
		out = append(out, v)
	}
	body := map[string]any{"convos": out}
	if end < len(convos) {
		body["cursor"] = strconv.Itoa(end)
	}
	WriteJSON(w, http.StatusOK, body)
}
