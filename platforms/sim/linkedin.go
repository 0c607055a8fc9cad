package sim

// LinkedIn: networks.md §3 and §10.3.
//
// Served: OAuth (GET /oauth/v2/authorization, POST /oauth/v2/accessToken for the
// authorization_code and refresh_token grants, POST /oauth/v2/revoke), GET /v2/userinfo (OpenID
// Connect), and the versioned REST API: POST /rest/posts (201, empty body, the post's URN in
// x-restli-id), GET /rest/posts?q=author (the author finder, newest first), GET
// /rest/posts/{urn}, POST /rest/images?action=initializeUpload and the PUT to its uploadUrl, GET
// /rest/images/{urn}, POST /rest/videos?action=initializeUpload, the PUTs of its
// uploadInstructions (each answers an ETag), POST /rest/videos?action=finalizeUpload, and GET
// /rest/videos/{urn} (PROCESSING, then AVAILABLE or PROCESSING_FAILED), a post's comments,
// POST and GET /rest/socialActions/{urn}/comments (linkedin_comment.go), and the Documents API
// (linkedin_document.go).
//
// Behaviour: every /rest call needs LinkedIn-Version (missing → 400 VERSION_MISSING; not a month
// among the last twelve of the simulator's clock → 426 NONEXISTENT_VERSION) and
// X-Restli-Protocol-Version: 2.0.0 (else 400); access tokens live 60 days and then answer 401
// serviceErrorCode 65600 (65601 once revoked); refresh tokens keep their fixed 365-day lifetime
// and are not rotated; daily per-member limits reset at 00:00 UTC and answer 429 without any
// rate-limit header; commentary over 3,000 characters answers 422; a post may carry one image,
// one video, or 2-20 images (multiImage), never a video still processing, or alone an article
// (content.article: an http(s) source and a title, a description, a thumbnail image of the author
// that is AVAILABLE; kept in Record.Options["article"] with the thumbnail's SHA-256). The consent
// page signs in a simulated member (members.go: DefaultMember, or MemberOrgAdmin who administers
// two organisations; login_hint names the member) or redirects with error=access_denied after
// Sim.Deny. GET /rest/organizationAcls?q=roleAssignee lists the organisations the member
// administers, GET /rest/organizations/{id} names one; a post, upload or finder's author is the
// member or one of those organisations (else 403 ACCESS_DENIED), and an organisation's post is
// recorded as the organisation's, with its author among the record's options. Commentary is
// "little text": the simulator records and
// measures it with its backslash escapes removed.

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

// LinkedIn's daily limits are unpublished (networks.md §3.3); these defaults follow the 150 posts
// a day integrators report and generous call counts for the rest.
var (
	liLimitPosts    = Limit{Count: 150, Window: 24 * time.Hour}
	liLimitCalls    = Limit{Count: 100000, Window: 24 * time.Hour}
	liLimitUserinfo = Limit{Count: 500, Window: 24 * time.Hour}
)

const (
	liMaxCommentary = 3000
	liMaxImages     = 20
	liMaxImageBytes = 36_152_320
	liMaxVideoBytes = 500 << 20
	liPartSize      = 4 << 20
	liCodeTTL       = 30 * time.Minute
)

var liVersionPattern = regexp.MustCompile(`^(\d{4})(\d{2})(\.\d{2})?$`)

func init() { register(platforms.LinkedIn, registerLinkedIn) }

type liSim struct{ n *Network }

type liCode struct {
	redirectURI, challenge, method string
	user, handle                   string
	expires                        time.Time
}

// liPost is a created post as the finder serves it.
type liPost struct {
	urn, author, commentary string
	visibility, lifecycle   string
	content                 json.RawMessage
	created                 time.Time
}

// liAsset is an image or video upload.
type liAsset struct {
	urn, id, owner, kind string // kind: "image", "video" or "document"
	status               string // WAITING_UPLOAD, PROCESSING, AVAILABLE, PROCESSING_FAILED
	size                 int64
	parts                map[int][]byte
	etags                map[int]string
	readyAt              time.Time
	failed               bool
}

func registerLinkedIn(n *Network) {
	li := &liSim{n: n}
	n.RateLimited = li.rateLimited

	n.Mux.HandleFunc("GET /oauth/v2/authorization", li.authorize)
	n.Mux.HandleFunc("POST /oauth/v2/accessToken", li.accessToken)
	n.Mux.HandleFunc("POST /oauth/v2/revoke", li.revoke)
	n.Mux.HandleFunc("GET /v2/userinfo", li.authed(li.userinfo))
	n.Mux.HandleFunc("GET /rest/organizationAcls", li.rest(li.organizationAcls))
	n.Mux.HandleFunc("GET /rest/organizations/{id}", li.rest(li.organization))
	n.Mux.HandleFunc("POST /rest/posts", li.rest(li.createPost))
	n.Mux.HandleFunc("GET /rest/posts", li.rest(li.findPosts))
	n.Mux.HandleFunc("GET /rest/posts/{urn}", li.rest(li.getPost))
	n.Mux.HandleFunc("POST /rest/images", li.rest(li.imagesAction))
	n.Mux.HandleFunc("GET /rest/images/{urn}", li.rest(li.getAsset("image")))
	n.Mux.HandleFunc("POST /rest/videos", li.rest(li.videosAction))
	n.Mux.HandleFunc("GET /rest/videos/{urn}", li.rest(li.getAsset("video")))
	n.Mux.HandleFunc("PUT /dms-uploads/images/{id}", li.authed(li.putImage))
	li.registerDocuments()
	n.Mux.HandleFunc("PUT /dms-uploads/videos/{id}/parts/{part}", li.putVideoPart)
	li.registerComments()
}

// liError writes LinkedIn's REST error body.
func liError(w http.ResponseWriter, status, serviceCode int, code, message string) {
	body := map[string]any{"status": status, "message": message}
	if serviceCode != 0 {
		body["serviceErrorCode"] = serviceCode
	}
	if code != "" {
		body["code"] = code
	}
	WriteJSON(w, status, body)
}

// rateLimited answers LinkedIn's 429: a REST error body and no rate-limit headers at all.
func (li *liSim) rateLimited(w http.ResponseWriter, r *http.Request, _ time.Time) {
	liError(w, http.StatusTooManyRequests, 101, "TOO_MANY_REQUESTS", "Resource level throttle MEMBER DAY limit for calls to this resource is reached.")
}

// liNextMidnight is when LinkedIn's daily counters reset: the next 00:00 UTC.
func liNextMidnight(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
}

// take spends one call of a member's daily budget; the counters are keyed by the UTC day so that
// they reset at midnight.
func (li *liSim) take(bucket, user string, def Limit) bool {
	day := li.n.Sim.Now().UTC().Format("2006-01-02")
	_, _, _, ok := li.n.Take(bucket, user+"@"+day, 1, def)
	return ok
}

type liMember struct{ id, name string }

func (m liMember) urn() string { return "urn:li:person:" + m.id }

// may reports whether the member may post, upload and read as urn: themselves, or an
// organisation they administer (members.go).
func (m liMember) may(urn string) bool {
	if urn == m.urn() {
		return true
	}
	id, ok := strings.CutPrefix(urn, "urn:li:organization:")
	return ok && administers(m.name, id)
}

// authed checks the access token: 401 serviceErrorCode 65600 for expired or unknown tokens,
// 65601 for revoked ones.
func (li *liSim) authed(h func(w http.ResponseWriter, r *http.Request, m liMember)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		id, name, state := li.n.Tokens.Check(strings.TrimSpace(tok))
		switch state {
		case TokenRevoked:
			liError(w, http.StatusUnauthorized, 65601, "REVOKED_ACCESS_TOKEN", "The token used in the request has been revoked by the user")
			return
		case TokenExpired, TokenUnknown:
			liError(w, http.StatusUnauthorized, 65600, "INVALID_ACCESS_TOKEN", "Invalid access token")
			return
		}
		h(w, r, liMember{id: id, name: name})
	}
}

// versionActive reports whether a LinkedIn-Version (YYYYMM or YYYYMM.RR) is one of the twelve
// monthly versions up to the current month.
func (li *liSim) versionActive(v string) bool {
	m := liVersionPattern.FindStringSubmatch(v)
	if m == nil {
		return false
	}
	year, _ := strconv.Atoi(m[1])
	month, _ := strconv.Atoi(m[2])
	if month < 1 || month > 12 {
		return false
	}
	now := li.n.Sim.Now().UTC()
	age := (now.Year()*12 + int(now.Month()) - 1) - (year*12 + month - 1)
	return age >= 0 && age < 12
}

// rest wraps a versioned /rest endpoint: the LinkedIn-Version and X-Restli-Protocol-Version
// headers, the token, and the member's daily call budget.
func (li *liSim) rest(h func(w http.ResponseWriter, r *http.Request, m liMember)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("LinkedIn-Version")
		switch {
		case v == "":
			liError(w, http.StatusBadRequest, 0, "VERSION_MISSING", "A version must be present. Please specify a version by adding the LinkedIn-Version header.")
			return
		case !li.versionActive(v):
			liError(w, http.StatusUpgradeRequired, 0, "NONEXISTENT_VERSION", "Requested version "+v+" is not active")
			return
		case r.Header.Get("X-Restli-Protocol-Version") != "2.0.0":
			liError(w, http.StatusBadRequest, 0, "", "X-Restli-Protocol-Version must be 2.0.0")
			return
		}
		li.authed(func(w http.ResponseWriter, r *http.Request, m liMember) {
			if !li.take("calls", m.id, liLimitCalls) {
				li.rateLimited(w, r, liNextMidnight(li.n.Sim.Now()))
				return
			}
			h(w, r, m)
		})(w, r)
	}
}

func (li *liSim) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case err != nil || redirect.Scheme == "" || redirect.Host == "":
		http.Error(w, "invalid redirect_uri", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	case q.Get("client_id") != ClientID:
		http.Error(w, "invalid client_id", http.StatusBadRequest)
		return
	case q.Get("scope") == "":
		http.Error(w, "scope is required", http.StatusBadRequest)
		return
	}
	method := q.Get("code_challenge_method")
	if q.Get("code_challenge") != "" && method != "S256" {
		http.Error(w, "code_challenge_method must be S256", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	if s := q.Get("state"); s != "" {
		back.Set("state", s)
	}
	if li.n.TakeDenial() {
		back.Set("error", "access_denied")
		back.Set("error_description", "The member declined to authorize the application.")
		redirect.RawQuery = back.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
		return
	}
	handle, shown := li.n.consentMember(w, r)
	if shown {
		return
	}
	code := RandomID(24)
	li.n.Store.Put("li-code:"+code, &liCode{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), method: method,
		user: li.n.UserID(handle), handle: handle, expires: li.n.Sim.Now().Add(liCodeTTL)})
	back.Set("code", code)
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func liOAuthError(w http.ResponseWriter, status int, code, description string) {
	WriteJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// client checks the client credentials of an OAuth call (form fields or Basic auth).
func (li *liSim) client(w http.ResponseWriter, r *http.Request) bool {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != ClientID || secret != ClientSecret {
		liOAuthError(w, http.StatusUnauthorized, "invalid_client", "Client authentication failed")
		return false
	}
	return true
}

func (li *liSim) accessToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		liOAuthError(w, http.StatusBadRequest, "invalid_request", "malformed form body")
		return
	}
	if !li.client(w, r) {
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		var c *liCode
		li.n.Store.With(func(objects map[string]any) {
			if v, ok := objects["li-code:"+code].(*liCode); ok {
				c = v
				delete(objects, "li-code:"+code)
			}
		})
		if c == nil || !li.n.Sim.Now().Before(c.expires) || c.redirectURI != r.PostForm.Get("redirect_uri") ||
			(c.challenge != "" && !xPKCEMatches(c.method, c.challenge, r.PostForm.Get("code_verifier"))) {
			liOAuthError(w, http.StatusBadRequest, "invalid_request", "Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired.")
			return
		}
		li.writeTokens(w, li.n.Tokens.Issue(c.user, c.handle))
	case "refresh_token":
		c, ok := li.n.Tokens.Refresh(r.PostForm.Get("refresh_token"))
		if !ok {
			liOAuthError(w, http.StatusBadRequest, "invalid_request", "The provided refresh token is invalid, expired or revoked")
			return
		}
		li.writeTokens(w, c)
	default:
		liOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

func (li *liSim) writeTokens(w http.ResponseWriter, c platforms.Credentials) {
	now := li.n.Sim.Now()
	body := map[string]any{
		"access_token": c.AccessToken,
		"expires_in":   int64(c.ExpiresAt.Sub(now) / time.Second),
		"scope":        "email,openid,profile,w_member_social",
		"token_type":   "Bearer",
	}
	if c.RefreshToken != "" {
		body["refresh_token"] = c.RefreshToken
		body["refresh_token_expires_in"] = int64(c.RefreshExpiresAt.Sub(now) / time.Second)
	}
	WriteJSON(w, http.StatusOK, body)
}

func (li *liSim) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		liOAuthError(w, http.StatusBadRequest, "invalid_request", "malformed form body")
		return
	}
	if !li.client(w, r) {
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		liOAuthError(w, http.StatusBadRequest, "invalid_request", "token is required")
		return
	}
	if _, _, state := li.n.Tokens.Check(tok); state != TokenRevoked {
		li.n.Tokens.Revoke(tok)
	}
	w.WriteHeader(http.StatusOK)
}

func (li *liSim) userinfo(w http.ResponseWriter, r *http.Request, m liMember) {
	if !li.take("userinfo", m.id, liLimitUserinfo) {
		li.rateLimited(w, r, liNextMidnight(li.n.Sim.Now()))
		return
	}
	first, last, _ := strings.Cut(m.name, " ")
	WriteJSON(w, http.StatusOK, map[string]any{
		"sub": m.id, "name": m.name, "given_name": first, "family_name": last,
		"picture": "https://media.licdn.com/sim/" + m.id + ".jpg", "locale": map[string]string{"country": "US", "language": "en"},
		"email": m.name + "@example.com", "email_verified": true,
	})
}

// liUnescape removes the backslash escapes of LinkedIn's little text format.
func liUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// liPostID is a random 19-digit id for a post URN.
func liPostID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatUint(7_000_000_000_000_000_000+binary.BigEndian.Uint64(b[:])%1_000_000_000_000_000_000, 10)
}

func (li *liSim) asset(kind, urn string) *liAsset {
	var a *liAsset
	li.n.Store.With(func(objects map[string]any) {
		if v, ok := objects["li-asset:"+urn].(*liAsset); ok && v.kind == kind {
			a = v
		}
	})
	return a
}

// assetStatus is an asset's status now (video processing finishes at readyAt).
func (li *liSim) assetStatus(a *liAsset) string {
	s := ""
	li.n.Store.With(func(map[string]any) {
		if a.status == "PROCESSING" && !li.n.Sim.Now().Before(a.readyAt) {
			a.status = "AVAILABLE"
			if a.failed {
				a.status = "PROCESSING_FAILED"
			}
		}
		s = a.status
	})
	return s
}

// liAltTexts are the alt texts of a post's content (media or multiImage), nil when it has none.
func liAltTexts(raw json.RawMessage) []string {
	var content struct {
		Media *struct {
			AltText string `json:"altText"`
		} `json:"media"`
		MultiImage *struct {
			Images []struct {
				AltText string `json:"altText"`
			} `json:"images"`
		} `json:"multiImage"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &content) != nil {
		return nil
	}
	var alts []string
	if content.Media != nil {
		alts = append(alts, content.Media.AltText)
	}
	if content.MultiImage != nil {
		for _, img := range content.MultiImage.Images {
			alts = append(alts, img.AltText)
		}
	}
	for _, a := range alts {
		if a != "" {
			return alts
		}
	}
	return nil
}

func (li *liSim) createPost(w http.ResponseWriter, r *http.Request, m liMember) {
	var req struct {
		Author       string  `json:"author"`
		Commentary   *string `json:"commentary"`
		Visibility   string  `json:"visibility"`
		Distribution *struct {
			FeedDistribution string `json:"feedDistribution"`
		} `json:"distribution"`
		LifecycleState string          `json:"lifecycleState"`
		Content        json.RawMessage `json:"content"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		liError(w, http.StatusBadRequest, 100, "", "Unable to parse the request body: "+err.Error())
		return
	}
	if !m.may(req.Author) {
		liError(w, http.StatusForbidden, 100, "ACCESS_DENIED", "Not enough permissions to access: partnerApiPostsExternal.CREATE.NO_VERSION for author "+req.Author)
		return
	}
	commentary := ""
	if req.Commentary != nil {
		commentary = *req.Commentary
	}
	text := liUnescape(commentary)
	switch {
	case utf8.RuneCountInString(text) > liMaxCommentary:
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", fmt.Sprintf("/commentary :: length %d exceeds the maximum allowed length of %d", utf8.RuneCountInString(text), liMaxCommentary))
		return
	case req.Visibility != "PUBLIC" && req.Visibility != "CONNECTIONS" && req.Visibility != "LOGGED_IN":
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", "/visibility :: field is required and must be PUBLIC, CONNECTIONS or LOGGED_IN")
		return
	case req.Distribution == nil || (req.Distribution.FeedDistribution != "MAIN_FEED" && req.Distribution.FeedDistribution != "NONE"):
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", "/distribution/feedDistribution :: field is required")
		return
	case req.LifecycleState != "PUBLISHED":
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", "/lifecycleState :: must be PUBLISHED")
		return
	}
	shas, status, msg := li.contentMedia(m, req.Content)
	if msg != "" {
		liError(w, status, 0, "", msg)
		return
	}
	article, status, msg := li.liArticle(m, req.Content)
	if msg != "" {
		liError(w, status, 0, "", msg)
		return
	}
	options := map[string]any{"visibility": req.Visibility}
	if title, isDoc := liDocumentTitle(req.Content); isDoc {
		if title == "" {
			liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", "/content/media/title :: a document post requires a title")
			return
		}
		options["document_title"] = title
	}
	if text == "" && len(shas) == 0 && article == nil {
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", "/commentary :: a post needs commentary or content")
		return
	}
	if !li.take("posts", m.id, liLimitPosts) {
		li.rateLimited(w, r, liNextMidnight(li.n.Sim.Now()))
		return
	}
	urn := "urn:li:share:" + liPostID()
	li.n.Store.Put("li-post:"+urn, &liPost{urn: urn, author: req.Author, commentary: commentary, visibility: req.Visibility,
		lifecycle: req.LifecycleState, content: append(json.RawMessage(nil), req.Content...), created: li.n.Sim.Now()})
	account := m.id
	if org, ok := strings.CutPrefix(req.Author, "urn:li:organization:"); ok {
		// An organisation's post is the organisation's: its record names it, and its author.
		account, options["author"] = org, req.Author
	}
	if article != nil {
		options["article"] = article
	}
	li.n.PublishWith(urn, account, text, shas, options, liAltTexts(req.Content))
	if li.n.TakeFault(FaultPostThenError) != "" {
		liError(w, http.StatusInternalServerError, 0, "", "Internal Server Error")
		return
	}
	w.Header().Set("x-restli-id", urn)
	w.Header().Set("Location", "/rest/posts/"+url.PathEscape(urn))
	w.WriteHeader(http.StatusCreated)
}

// contentMedia checks a post's content (media: one image or video; multiImage: 2-20 images) and
// returns the SHA-256 of its files, or a status and message.
func (li *liSim) contentMedia(m liMember, raw json.RawMessage) ([]string, int, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, 0, ""
	}
	var content struct {
		Media *struct {
			ID string `json:"id"`
		} `json:"media"`
		MultiImage *struct {
			Images []struct {
				ID string `json:"id"`
			} `json:"images"`
		} `json:"multiImage"`
	}
	if err := json.Unmarshal(raw, &content); err != nil {
		return nil, http.StatusBadRequest, "/content :: malformed"
	}
	var ids []string
	switch {
	case content.Media != nil && content.MultiImage != nil:
		return nil, http.StatusBadRequest, "/content :: only one of media and multiImage"
	case content.Media != nil:
		ids = []string{content.Media.ID}
	case content.MultiImage != nil:
		if n := len(content.MultiImage.Images); n < 2 || n > liMaxImages {
			return nil, http.StatusUnprocessableEntity, fmt.Sprintf("/content/multiImage/images :: must have 2 to %d images, got %d", liMaxImages, n)
		}
		for _, img := range content.MultiImage.Images {
			if !strings.HasPrefix(img.ID, "urn:li:image:") {
				return nil, http.StatusBadRequest, "/content/multiImage/images :: only images, got " + img.ID
			}
			ids = append(ids, img.ID)
		}
	default:
		return nil, 0, ""
	}
	var shas []string
	for _, id := range ids {
		kind := "image"
		switch {
		case strings.HasPrefix(id, "urn:li:video:"):
			kind = "video"
		case strings.HasPrefix(id, "urn:li:document:"):
			kind = "document"
		}
		a := li.asset(kind, id)
		if a == nil || !m.may(a.owner) {
			return nil, http.StatusBadRequest, "/content/media/id :: " + id + " does not exist or is not owned by the author"
		}
		if st := li.assetStatus(a); st != "AVAILABLE" {
			return nil, http.StatusUnprocessableEntity, fmt.Sprintf("/content/media/id :: %s is %s, not AVAILABLE", id, st)
		}
		b, ok := li.n.Store.Blob("li-asset:" + id)
		if !ok {
			return nil, http.StatusBadRequest, "/content/media/id :: " + id + " has no content"
		}
		shas = append(shas, b.SHA256())
	}
	return shas, 0, ""
}

func (li *liSim) postJSON(p *liPost) map[string]any {
	ms := p.created.UnixMilli()
	out := map[string]any{
		"id": p.urn, "author": p.author, "commentary": p.commentary, "visibility": p.visibility, "lifecycleState": p.lifecycle,
		"createdAt": ms, "publishedAt": ms, "lastModifiedAt": ms, "isReshareDisabledByAuthor": false,
		"distribution": map[string]any{"feedDistribution": "MAIN_FEED", "targetEntities": []any{}, "thirdPartyDistributionChannels": []any{}},
	}
	if len(p.content) > 0 {
		out["content"] = p.content
	}
	return out
}

// findPosts is the author finder: GET /rest/posts?q=author&author={urn}&count&start&sortBy.
func (li *liSim) findPosts(w http.ResponseWriter, r *http.Request, m liMember) {
	q := r.URL.Query()
	if q.Get("q") != "author" {
		liError(w, http.StatusBadRequest, 0, "", "q must be author")
		return
	}
	author := q.Get("author")
	if !m.may(author) {
		liError(w, http.StatusForbidden, 100, "ACCESS_DENIED", "Not enough permissions to access: partnerApiPostsExternal.FINDER-author")
		return
	}
	count, start := 10, 0
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			liError(w, http.StatusBadRequest, 0, "", "count must be between 1 and 100")
			return
		}
		count = n
	}
	if v := q.Get("start"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			liError(w, http.StatusBadRequest, 0, "", "start must be a non-negative integer")
			return
		}
		start = n
	}
	var posts []*liPost
	li.n.Store.With(func(objects map[string]any) {
		for k, v := range objects {
			if p, ok := v.(*liPost); ok && strings.HasPrefix(k, "li-post:") && p.author == author {
				posts = append(posts, p)
			}
		}
	})
	sort.Slice(posts, func(i, j int) bool {
		if !posts[i].created.Equal(posts[j].created) {
			return posts[i].created.After(posts[j].created)
		}
		return posts[i].urn > posts[j].urn
	})
	elements := []map[string]any{}
	for i := start; i < len(posts) && i < start+count; i++ {
		elements = append(elements, li.postJSON(posts[i]))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"elements": elements, "paging": map[string]any{"start": start, "count": count, "links": []any{}, "total": len(posts)}})
}

func (li *liSim) getPost(w http.ResponseWriter, r *http.Request, m liMember) {
	v, ok := li.n.Store.Get("li-post:" + r.PathValue("urn"))
	if !ok {
		liError(w, http.StatusNotFound, 0, "", "Not Found")
		return
	}
	WriteJSON(w, http.StatusOK, li.postJSON(v.(*liPost)))
}

// initOwner reads an initializeUpload request and checks that the owner is the member.
func (li *liSim) initOwner(w http.ResponseWriter, r *http.Request, m liMember) (owner string, size int64, ok bool) {
	var req struct {
		InitializeUploadRequest *struct {
			Owner         string `json:"owner"`
			FileSizeBytes int64  `json:"fileSizeBytes"`
		} `json:"initializeUploadRequest"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.InitializeUploadRequest == nil {
		liError(w, http.StatusBadRequest, 0, "", "/initializeUploadRequest :: field is required")
		return "", 0, false
	}
	if !m.may(req.InitializeUploadRequest.Owner) {
		liError(w, http.StatusForbidden, 100, "ACCESS_DENIED", "Not enough permissions to upload as "+req.InitializeUploadRequest.Owner)
		return "", 0, false
	}
	return req.InitializeUploadRequest.Owner, req.InitializeUploadRequest.FileSizeBytes, true
}

func liAssetID() string { return "D4E10AQ" + strings.ToUpper(RandomID(8)) }

func (li *liSim) imagesAction(w http.ResponseWriter, r *http.Request, m liMember) {
	li.initializeUpload(w, r, m, "image", "images")
}

// initializeUpload answers an initializeUpload action of the Images or Documents API (kind
// "image" or "document", path their upload URLs' folder): an asset of the owner, waiting for its
// bytes at the upload URL it returns.
func (li *liSim) initializeUpload(w http.ResponseWriter, r *http.Request, m liMember, kind, path string) {
	if r.URL.Query().Get("action") != "initializeUpload" {
		liError(w, http.StatusBadRequest, 0, "", "action must be initializeUpload")
		return
	}
	owner, _, ok := li.initOwner(w, r, m)
	if !ok {
		return
	}
	id := liAssetID()
	urn := "urn:li:" + kind + ":" + id
	li.n.Store.Put("li-asset:"+urn, &liAsset{urn: urn, id: id, owner: owner, kind: kind, status: "WAITING_UPLOAD"})
	li.n.Store.Put("li-upload-"+kind+":"+id, urn)
	WriteJSON(w, http.StatusOK, map[string]any{"value": map[string]any{
		"uploadUrlExpiresAt": li.n.Sim.Now().Add(24 * time.Hour).UnixMilli(),
		"uploadUrl":          li.n.BaseURL() + "/dms-uploads/" + path + "/" + id,
		kind:                 urn,
	}})
}

// upload reads the bytes PUT to an upload URL of kind: the asset they are for, and at most max
// of them; false when it answered a refusal.
func (li *liSim) upload(w http.ResponseWriter, r *http.Request, m liMember, kind string, max int) (*liAsset, []byte, bool) {
	v, ok := li.n.Store.Get("li-upload-" + kind + ":" + r.PathValue("id"))
	if !ok {
		liError(w, http.StatusNotFound, 0, "", "upload not found")
		return nil, nil, false
	}
	a := li.asset(kind, v.(string))
	if a == nil || !m.may(a.owner) {
		liError(w, http.StatusForbidden, 0, "", "not the owner of this upload")
		return nil, nil, false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(max)+1))
	if err != nil || len(data) == 0 || len(data) > max {
		liError(w, http.StatusBadRequest, 0, "", fmt.Sprintf("the %s must have 1 to %d bytes", kind, max))
		return nil, nil, false
	}
	return a, data, true
}

func (li *liSim) putImage(w http.ResponseWriter, r *http.Request, m liMember) {
	a, data, ok := li.upload(w, r, m, "image", liMaxImageBytes)
	if !ok {
		return
	}
	li.n.Store.PutBlob(&Blob{ID: "li-asset:" + a.urn, ContentType: r.Header.Get("Content-Type"), Data: data, Ready: true, Owner: a.owner})
	li.n.Store.With(func(map[string]any) { a.status, a.size = "AVAILABLE", int64(len(data)) })
	w.WriteHeader(http.StatusCreated)
}

func (li *liSim) videosAction(w http.ResponseWriter, r *http.Request, m liMember) {
	switch r.URL.Query().Get("action") {
	case "initializeUpload":
		li.initVideo(w, r, m)
	case "finalizeUpload":
		li.finalizeVideo(w, r, m)
	default:
		liError(w, http.StatusBadRequest, 0, "", "action must be initializeUpload or finalizeUpload")
	}
}

func (li *liSim) initVideo(w http.ResponseWriter, r *http.Request, m liMember) {
	owner, size, ok := li.initOwner(w, r, m)
	if !ok {
		return
	}
	if size <= 0 || size > liMaxVideoBytes {
		liError(w, http.StatusBadRequest, 0, "", fmt.Sprintf("/initializeUploadRequest/fileSizeBytes :: must be between 1 and %d", liMaxVideoBytes))
		return
	}
	id := liAssetID()
	urn := "urn:li:video:" + id
	li.n.Store.Put("li-asset:"+urn, &liAsset{urn: urn, id: id, owner: owner, kind: "video", status: "WAITING_UPLOAD", size: size,
		parts: map[int][]byte{}, etags: map[int]string{}})
	li.n.Store.Put("li-upload-video:"+id, urn)
	var instructions []map[string]any
	for i, first := 0, int64(0); first < size; i, first = i+1, first+liPartSize {
		last := min(first+liPartSize, size) - 1
		instructions = append(instructions, map[string]any{
			"uploadUrl": fmt.Sprintf("%s/dms-uploads/videos/%s/parts/%d", li.n.BaseURL(), id, i),
			"firstByte": first, "lastByte": last,
		})
	}
	WriteJSON(w, http.StatusOK, map[string]any{"value": map[string]any{
		"uploadUrlsExpireAt": li.n.Sim.Now().Add(24 * time.Hour).UnixMilli(),
		"video":              urn, "uploadInstructions": instructions, "uploadToken": "", "thumbnailUploadUrl": "",
	}})
}

// putVideoPart takes one part; the upload URL itself authorizes it, as LinkedIn's signed URLs do.
func (li *liSim) putVideoPart(w http.ResponseWriter, r *http.Request) {
	v, ok := li.n.Store.Get("li-upload-video:" + r.PathValue("id"))
	if !ok {
		liError(w, http.StatusNotFound, 0, "", "upload not found")
		return
	}
	a := li.asset("video", v.(string))
	part, err := strconv.Atoi(r.PathValue("part"))
	if a == nil || err != nil || part < 0 || int64(part)*liPartSize >= a.size {
		liError(w, http.StatusNotFound, 0, "", "upload part not found")
		return
	}
	want := min(int64(part+1)*liPartSize, a.size) - int64(part)*liPartSize
	data, err := io.ReadAll(io.LimitReader(r.Body, want+1))
	if err != nil || int64(len(data)) != want {
		liError(w, http.StatusBadRequest, 0, "", fmt.Sprintf("part %d must be exactly %d bytes", part, want))
		return
	}
	etag := "/" + RandomID(12)
	li.n.Store.With(func(map[string]any) {
		a.parts[part] = data
		a.etags[part] = etag
	})
	w.Header().Set("ETag", etag)
	w.WriteHeader(http.StatusOK)
}

func (li *liSim) finalizeVideo(w http.ResponseWriter, r *http.Request, m liMember) {
	var req struct {
		FinalizeUploadRequest *struct {
			Video           string   `json:"video"`
			UploadToken     string   `json:"uploadToken"`
			UploadedPartIDs []string `json:"uploadedPartIds"`
		} `json:"finalizeUploadRequest"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.FinalizeUploadRequest == nil {
		liError(w, http.StatusBadRequest, 0, "", "/finalizeUploadRequest :: field is required")
		return
	}
	f := req.FinalizeUploadRequest
	a := li.asset("video", f.Video)
	if a == nil || !m.may(a.owner) {
		liError(w, http.StatusBadRequest, 0, "", "/finalizeUploadRequest/video :: "+f.Video+" does not exist or is not owned by the member")
		return
	}
	msg := ""
	var data []byte
	li.n.Store.With(func(map[string]any) {
		if a.status != "WAITING_UPLOAD" {
			msg = "the video is already finalized"
			return
		}
		n := int((a.size + liPartSize - 1) / liPartSize)
		if len(f.UploadedPartIDs) != n {
			msg = fmt.Sprintf("uploadedPartIds must list the %d parts' ETags in order", n)
			return
		}
		for i := 0; i < n; i++ {
			if a.etags[i] == "" || a.etags[i] != f.UploadedPartIDs[i] {
				msg = fmt.Sprintf("part %d was not uploaded or its ETag does not match", i)
				return
			}
			data = append(data, a.parts[i]...)
		}
	})
	if msg != "" {
		liError(w, http.StatusBadRequest, 0, "", msg)
		return
	}
	li.n.Store.PutBlob(&Blob{ID: "li-asset:" + a.urn, ContentType: "video/mp4", Data: data, Ready: true, Owner: a.owner})
	li.n.Store.With(func(map[string]any) {
		a.status = "PROCESSING"
		a.readyAt = li.n.Sim.Now().Add(li.n.Sim.Options().ProcessingDelay)
		a.failed = bytes.HasPrefix(data, []byte(ProcessingFailureMarker))
		a.parts = nil
	})
	w.WriteHeader(http.StatusOK)
}

func (li *liSim) getAsset(kind string) func(w http.ResponseWriter, r *http.Request, m liMember) {
	return func(w http.ResponseWriter, r *http.Request, m liMember) {
		a := li.asset(kind, r.PathValue("urn"))
		if a == nil || !m.may(a.owner) {
			liError(w, http.StatusNotFound, 0, "", "Not Found")
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"id": a.urn, "owner": a.owner, "status": li.assetStatus(a)})
	}
}

// organizationAcls is GET /rest/organizationAcls?q=roleAssignee: the organisations the member
// holds a role in, filtered by role and state when given.
func (li *liSim) organizationAcls(w http.ResponseWriter, r *http.Request, m liMember) {
	q := r.URL.Query()
	if q.Get("q") != "roleAssignee" {
		liError(w, http.StatusBadRequest, 0, "", "q must be roleAssignee")
		return
	}
	elements := []any{}
	if mem := memberOf(platforms.LinkedIn, m.name); mem != nil {
		for _, o := range mem.Organizations {
			if (q.Get("role") != "" && q.Get("role") != "ADMINISTRATOR") || (q.Get("state") != "" && q.Get("state") != "APPROVED") {
				continue
			}
			elements = append(elements, map[string]any{
				"organization": "urn:li:organization:" + o.ID, "roleAssignee": m.urn(), "role": "ADMINISTRATOR", "state": "APPROVED",
			})
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"elements": elements, "paging": map[string]any{"count": len(elements), "start": 0, "total": len(elements)}})
}

// organization is GET /rest/organizations/{id}: an organisation's name.
func (li *liSim) organization(w http.ResponseWriter, r *http.Request, m liMember) {
	id := r.PathValue("id")
	for _, mem := range members[platforms.LinkedIn] {
		for _, o := range mem.Organizations {
			if o.ID == id {
				WriteJSON(w, http.StatusOK, map[string]any{"id": json.Number(o.ID), "localizedName": o.Name, "vanityName": strings.ToLower(strings.Fields(o.Name)[0])})
				return
			}
		}
	}
	liError(w, http.StatusNotFound, 0, "", "Organization "+id+" not found")
}
