package sim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// graphAPI is what the Facebook, Instagram and Threads simulators share: the Graph API dialect.
//
//   - Paths take an optional version prefix (/v25.0, /v1.0: any /vNN.N); unknown paths answer
//     Graph error 100.
//   - Every API call checks its access token (Authorization: Bearer or OAuth, or access_token in
//     the query or form) and answers an invalid, expired or revoked one with the Graph envelope,
//     code 190 (subcodes 463 expired, 458 revoked) and HTTP 400.
//   - Every API call spends one unit of the caller's call budget and of the app's hourly budget,
//     reported as percentages in X-Business-Use-Case-Usage and X-App-Usage; an exhausted budget (and
//     the rate_limit fault) answers HTTP 400 with the network's throttling code and
//     estimated_time_to_regain_access in minutes.
//   - OAuth codes are single-use and live ten minutes; consent pages auto-approve the user named by
//     login_hint (default "sim-user") unless a denial is pending.
//   - Media containers (Instagram, Threads) fetch their image_url/video_url over HTTP with
//     Options.HTTPClient, hash the bytes, are IN_PROGRESS for Options.ProcessingDelay, then FINISHED
//     (ERROR when the fetch failed, EXPIRED after 24 hours).
type graphAPI struct {
	n *Network
	// mux holds the network's routes without the version prefix.
	mux *http.ServeMux
	// usageType is the "type" reported in X-Business-Use-Case-Usage.
	usageType string
	// throttleCode and throttleMsg answer an exhausted budget.
	throttleCode int
	throttleMsg  string
	// calls is the per-account call budget.
	calls Limit
	// users, when set, holds a second kind of token checked after n.Tokens (Facebook user tokens).
	users *TokenStore
	// checkImage, when set, judges the file an IMAGE container fetched; its error fails the
	// container (Instagram takes only JPEG).
	checkImage func(File) error
	// handlers are the API routes' handlers by pattern. A route reads its handler here at each
	// call, so that a network can wrap one registered by shared code (Facebook's object and
	// comments routes also serve the Instagram accounts linked to its Pages), and another network
	// can call it (facebook_instagram.go). Written only while the simulator is built.
	handlers map[string]graphHandler
}

// graphHandler serves an API call of the caller who.
type graphHandler func(w http.ResponseWriter, r *http.Request, who graphCaller)

// appCalls is the app-level hourly budget reported in X-App-Usage (200 calls per hour per daily
// active user; the simulator assumes 100 users).
func appCalls() Limit { return Limit{Count: 20000, Window: time.Hour} }

// graphCaller is the owner of the access token of an API call.
type graphCaller struct {
	User, Handle, Token string
	// UserToken is true for a Facebook user token (as opposed to a Page token).
	UserToken bool
}

type graphVersionKey struct{}

// graphHostKey holds the network that serves a call (its host), for the links the answer names
// (paging.next): the Instagram handlers also answer on Facebook's host.
type graphHostKey struct{}

func newGraphAPI(n *Network, usageType string, throttleCode int, throttleMsg string, calls Limit) *graphAPI {
	g := &graphAPI{n: n, mux: http.NewServeMux(), usageType: usageType, throttleCode: throttleCode, throttleMsg: throttleMsg, calls: calls,
		handlers: map[string]graphHandler{}}
	n.graph = g
	n.Mux.HandleFunc("/", g.serve)
	n.RateLimited = g.rateLimited
	return g
}

// splitVersion separates a leading /vNN.N from a path.
func splitVersion(p string) (version, rest string) {
	if len(p) < 5 || p[0] != '/' || p[1] != 'v' {
		return "", p
	}
	i, digits, dot := 2, 0, false
	for ; i < len(p) && p[i] != '/'; i++ {
		switch c := p[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && digits > 0:
			dot = true
		default:
			return "", p
		}
	}
	if !dot || p[i-1] == '.' {
		return "", p
	}
	rest = p[i:]
	if rest == "" {
		rest = "/"
	}
	return p[1:i], rest
}

func (g *graphAPI) serve(w http.ResponseWriter, r *http.Request) {
	version, rest := splitVersion(r.URL.Path)
	if version == "" {
		version = "v25.0"
	}
	ctx := context.WithValue(context.WithValue(r.Context(), graphVersionKey{}, version), graphHostKey{}, g.n)
	r2 := r.Clone(ctx)
	u := *r.URL
	u.Path, u.RawPath = rest, ""
	r2.URL = &u
	if _, pattern := g.mux.Handler(r2); pattern == "" {
		graphError(w, http.StatusBadRequest, 100, 33, fmt.Sprintf("Unsupported %s request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", strings.ToLower(r.Method), strings.Trim(rest, "/")), false)
		return
	}
	g.mux.ServeHTTP(w, r2)
}

func graphVersion(r *http.Request) string {
	if v, ok := r.Context().Value(graphVersionKey{}).(string); ok {
		return v
	}
	return "v25.0"
}

// graphBase is the base URL of the network serving r (n's when r did not come through serve).
func graphBase(r *http.Request, n *Network) string {
	if host, ok := r.Context().Value(graphHostKey{}).(*Network); ok {
		return host.BaseURL()
	}
	return n.BaseURL()
}

// handle registers a route without token checks (consent pages, token endpoints).
func (g *graphAPI) handle(pattern string, h http.HandlerFunc) { g.mux.HandleFunc(pattern, h) }

// api registers a route that needs a valid access token and spends the caller's call budget.
func (g *graphAPI) api(pattern string, h graphHandler) {
	g.handlers[pattern] = h
	g.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		tok := graphToken(r)
		if tok == "" {
			graphError(w, http.StatusBadRequest, 104, 0, "An access token is required to request this resource.", false)
			return
		}
		who, state := g.check(tok)
		switch state {
		case TokenUnknown:
			graphError(w, http.StatusBadRequest, 190, 0, "Invalid OAuth access token - Cannot parse access token", false)
			return
		case TokenExpired:
			graphError(w, http.StatusBadRequest, 190, 463, "Error validating access token: Session has expired. The current time is "+g.n.Sim.Now().UTC().Format(time.RFC1123)+".", false)
			return
		case TokenRevoked:
			graphError(w, http.StatusBadRequest, 190, 458, "Error validating access token: The user has not authorized application "+ClientID+".", false)
			return
		}
		if !g.spend(w, r, who.User) {
			return
		}
		g.handlers[pattern](w, r, who)
	})
}

// spend takes one call from the caller's and the app's budgets and reports the usage headers. It
// answers the throttling error and returns false when a budget is exhausted.
func (g *graphAPI) spend(w http.ResponseWriter, r *http.Request, user string) bool {
	appLimit, appLeft, appReset, ok := g.n.Take("app_calls", "app", 1, appCalls())
	if !ok {
		g.throttled(w, user, appReset, 4, "(#4) Application request limit reached")
		return false
	}
	limit, left, reset, ok := g.n.Take("calls", user, 1, g.calls)
	if !ok {
		g.throttled(w, user, reset, g.throttleCode, g.throttleMsg)
		return false
	}
	g.usageHeaders(w, user, percent(appLimit, appLeft), percent(limit, left), 0)
	return true
}

func percent(limit, left int) int {
	if limit <= 0 {
		return 100
	}
	return int(math.Ceil(float64(limit-left) * 100 / float64(limit)))
}

// usageHeaders sets X-App-Usage and X-Business-Use-Case-Usage.
func (g *graphAPI) usageHeaders(w http.ResponseWriter, user string, appPct, bucPct, regainMinutes int) {
	app, _ := json.Marshal(map[string]int{"call_count": appPct, "total_cputime": appPct / 2, "total_time": appPct / 2})
	w.Header().Set("X-App-Usage", string(app))
	if user == "" {
		user = "0"
	}
	buc, _ := json.Marshal(map[string][]map[string]any{user: {{
		"type": g.usageType, "call_count": bucPct, "total_cputime": bucPct / 2, "total_time": bucPct / 2, "estimated_time_to_regain_access": regainMinutes,
	}}})
	w.Header().Set("X-Business-Use-Case-Usage", string(buc))
}

// regainMinutes is the estimated_time_to_regain_access of a limit resetting at reset.
func (g *graphAPI) regainMinutes(reset time.Time) int {
	m := int(math.Ceil(reset.Sub(g.n.Sim.Now()).Minutes()))
	if m < 1 {
		m = 1
	}
	return m
}

// throttled answers a throttling error in the Graph shape.
func (g *graphAPI) throttled(w http.ResponseWriter, user string, reset time.Time, code int, msg string) {
	g.usageHeaders(w, user, 100, 100, g.regainMinutes(reset))
	graphError(w, http.StatusBadRequest, code, 0, msg, true)
}

// rateLimited is the network's RateLimited responder (the rate_limit fault).
func (g *graphAPI) rateLimited(w http.ResponseWriter, r *http.Request, reset time.Time) {
	who, _ := g.check(graphToken(r))
	g.throttled(w, who.User, reset, g.throttleCode, g.throttleMsg)
}

// check finds whose token this is: n.Tokens, then users, then short-lived tokens.
func (g *graphAPI) check(tok string) (graphCaller, TokenState) {
	if tok == "" {
		return graphCaller{}, TokenUnknown
	}
	if user, handle, state := g.n.Tokens.Check(tok); state != TokenUnknown {
		return graphCaller{User: user, Handle: handle, Token: tok}, state
	}
	if g.users != nil {
		if user, handle, state := g.users.Check(tok); state != TokenUnknown {
			return graphCaller{User: user, Handle: handle, Token: tok, UserToken: true}, state
		}
	}
	if st, ok := g.short(tok); ok {
		if !g.n.Sim.Now().Before(st.Expires) {
			return graphCaller{User: st.User, Handle: st.Handle, Token: tok, UserToken: g.users != nil}, TokenExpired
		}
		return graphCaller{User: st.User, Handle: st.Handle, Token: tok, UserToken: g.users != nil}, TokenValid
	}
	return graphCaller{}, TokenUnknown
}

// graphToken reads the access token from the Authorization header or the access_token parameter.
func graphToken(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		for _, scheme := range []string{"Bearer ", "OAuth "} {
			if len(h) > len(scheme) && strings.EqualFold(h[:len(scheme)], scheme) {
				return strings.TrimSpace(h[len(scheme):])
			}
		}
	}
	return r.FormValue("access_token")
}

// graphErrorBody is the Graph error object.
type graphErrorBody struct {
	Message     string `json:"message"`
	Type        string `json:"type"`
	Code        int    `json:"code"`
	Subcode     int    `json:"error_subcode,omitempty"`
	UserMsg     string `json:"error_user_msg,omitempty"`
	IsTransient bool   `json:"is_transient"`
	FBTraceID   string `json:"fbtrace_id"`
}

// graphError writes the Graph error envelope.
func graphError(w http.ResponseWriter, status, code, subcode int, msg string, transient bool) {
	writeGraphError(w, status, graphErrorBody{Message: msg, Type: "OAuthException", Code: code, Subcode: subcode, IsTransient: transient})
}

func writeGraphError(w http.ResponseWriter, status int, e graphErrorBody) {
	if e.Type == "" {
		e.Type = "OAuthException"
	}
	e.FBTraceID = "A" + RandomID(10)
	if e.Code == 190 {
		w.Header().Set("WWW-Authenticate", `OAuth "Facebook Platform" "invalid_token" "`+strings.ReplaceAll(e.Message, `"`, `'`)+`"`)
	}
	WriteJSON(w, status, map[string]any{"error": e})
}

// graphID returns a numeric Graph id.
func graphID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])%9_000_000_000_000_000+1_000_000_000_000_000, 10)
}

// graphTime formats a time as the Graph API does.
func graphTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05+0000") }

// parseGraphTime reads a since/until parameter: Unix seconds or a date-time.
func parseGraphTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), true
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05-0700", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// --- OAuth ---

type graphCode struct {
	Handle, Redirect string
	Expires          time.Time
	Used             bool
}

type shortToken struct {
	User, Handle string
	Expires      time.Time
}

// consent is the consent page: it redirects to redirect_uri with a code, or with
// error=access_denied when a denial is pending.
func (g *graphAPI) consent(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != ClientID {
		http.Error(w, "Invalid App ID: the provided app ID does not look like a valid app ID.", http.StatusBadRequest)
		return
	}
	target, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || !target.IsAbs() {
		http.Error(w, "URL blocked: the redirect_uri is not an absolute URL.", http.StatusBadRequest)
		return
	}
	if rt := q.Get("response_type"); rt != "" && rt != "code" {
		http.Error(w, "unsupported response_type", http.StatusBadRequest)
		return
	}
	v := target.Query()
	denied := g.n.TakeDenial()
	handle := ""
	if !denied {
		var shown bool
		if handle, shown = g.n.consentMember(w, r); shown {
			return
		}
	}
	if denied {
		v.Set("error", "access_denied")
		v.Set("error_reason", "user_denied")
		v.Set("error_description", "Permissions error")
	} else {
		code := "AQ" + RandomID(24)
		g.n.Store.Put("code:"+code, &graphCode{Handle: handle, Redirect: target.String(), Expires: g.n.Sim.Now().Add(10 * time.Minute)})
		v.Set("code", code)
	}
	if s := q.Get("state"); s != "" {
		v.Set("state", s)
	}
	target.RawQuery = v.Encode()
	http.Redirect(w, r, target.String(), http.StatusFound)
}

// takeCode redeems an authorization code: problem is "" on success, else "invalid", "used",
// "expired" or "redirect".
func (g *graphAPI) takeCode(code, redirect string) (handle, problem string) {
	now := g.n.Sim.Now()
	g.n.Store.With(func(objects map[string]any) {
		c, ok := objects["code:"+code].(*graphCode)
		switch {
		case !ok || code == "":
			problem = "invalid"
		case c.Used:
			problem = "used"
		case !now.Before(c.Expires):
			problem = "expired"
		case c.Redirect != redirect:
			problem = "redirect"
		default:
			c.Used = true
			handle = c.Handle
		}
	})
	return handle, problem
}

// issueShort creates a short-lived (one hour) token.
func (g *graphAPI) issueShort(user, handle string) (string, time.Duration) {
	tok := "sim_st_" + RandomID(16)
	g.n.Store.Put("short:"+tok, &shortToken{User: user, Handle: handle, Expires: g.n.Sim.Now().Add(time.Hour)})
	return tok, time.Hour
}

func (g *graphAPI) short(tok string) (shortToken, bool) {
	v, ok := g.n.Store.Get("short:" + tok)
	if !ok {
		return shortToken{}, false
	}
	st := v.(*shortToken)
	return *st, true
}

// noteIssued remembers when a long-lived token was issued (refresh needs it 24 h old).
func (g *graphAPI) noteIssued(tok string) { g.n.Store.Put("issued:"+tok, g.n.Sim.Now()) }

// tokenAge is how old a token is, when the simulator issued it through its endpoints.
func (g *graphAPI) tokenAge(tok string) (time.Duration, bool) {
	v, ok := g.n.Store.Get("issued:" + tok)
	if !ok {
		return 0, false
	}
	return g.n.Sim.Now().Sub(v.(time.Time)), true
}

// refreshLongLived serves Instagram's and Threads' refresh_access_token: the token itself is
// refreshed into a new 60-day token. As documented, a token must be at least 24 hours old; unlike
// the networks, the simulator also refreshes an expired (but not revoked) token, so that the
// expire_tokens fault exercises the refresh-and-retry path.
func (g *graphAPI) refreshLongLived(w http.ResponseWriter, r *http.Request, grant string) {
	if got := r.URL.Query().Get("grant_type"); got != grant {
		graphError(w, http.StatusBadRequest, 100, 0, "Unsupported grant_type: want "+grant, false)
		return
	}
	tok := graphToken(r)
	user, handle, state := g.n.Tokens.Check(tok)
	switch state {
	case TokenUnknown, TokenRevoked:
		graphError(w, http.StatusBadRequest, 190, 0, "Invalid OAuth access token - Cannot parse access token", false)
		return
	case TokenValid:
		if age, ok := g.tokenAge(tok); ok && age < 24*time.Hour {
			graphError(w, http.StatusBadRequest, 100, 0, "The access token is too new to be refreshed: it must be at least 24 hours old.", false)
			return
		}
	}
	c := g.n.Tokens.Issue(user, handle)
	g.noteIssued(c.AccessToken)
	WriteJSON(w, http.StatusOK, map[string]any{"access_token": c.AccessToken, "token_type": "bearer", "expires_in": int64(g.n.Tokens.AccessTTL / time.Second)})
}

// exchangeShort serves the ig_exchange_token / th_exchange_token grant.
func (g *graphAPI) exchangeShort(w http.ResponseWriter, r *http.Request, grant string) {
	q := r.URL.Query()
	if q.Get("grant_type") != grant {
		graphError(w, http.StatusBadRequest, 100, 0, "Unsupported grant_type: want "+grant, false)
		return
	}
	if q.Get("client_secret") != ClientSecret {
		graphError(w, http.StatusBadRequest, 101, 0, "Error validating client secret.", false)
		return
	}
	st, ok := g.short(graphToken(r))
	if !ok || !g.n.Sim.Now().Before(st.Expires) {
		graphError(w, http.StatusBadRequest, 190, 0, "Invalid OAuth access token - Cannot parse access token", false)
		return
	}
	c := g.n.Tokens.Issue(st.User, st.Handle)
	g.noteIssued(c.AccessToken)
	WriteJSON(w, http.StatusOK, map[string]any{"access_token": c.AccessToken, "token_type": "bearer", "expires_in": int64(g.n.Tokens.AccessTTL / time.Second)})
}

// --- containers (Instagram, Threads) ---

// graphContainer is an Instagram or Threads media container.
type graphContainer struct {
	ID, Owner, MediaType, Text string
	CarouselItem               bool
	Children                   []string
	SHA                        string
	// File is what was fetched from the media URL.
	File             File
	Created, ReadyAt time.Time
	// Err is set when processing failed (the media could not be fetched).
	Err       string
	Published bool
	// Options are the container's parameters the network keeps besides its media and caption
	// (media_type, share_to_feed, collaborators, reply_control, topic_tag...); AltText its alt_text.
	Options map[string]any
	AltText string
}

// altTexts are a published container's alt texts (its children's for a carousel); nil when none
// was given.
func (g *graphAPI) altTexts(c *graphContainer) []string {
	var alts []string
	if len(c.Children) == 0 {
		alts = []string{c.AltText}
	}
	for _, id := range c.Children {
		if ch, ok := g.container(id); ok {
			alts = append(alts, ch.AltText)
		}
	}
	for _, a := range alts {
		if a != "" {
			return alts
		}
	}
	return nil
}

// graphMedia is a published Instagram or Threads post.
type graphMedia struct {
	ID, Owner, Handle, Text, MediaType, Permalink string
	Created                                       time.Time
}

// fetchMedia downloads a media URL with the simulator's HTTP client and hashes it.
func (g *graphAPI) fetchMedia(ctx context.Context, raw string) (string, error) {
	f, err := g.fetchFile(ctx, raw)
	return f.SHA256, err
}

// fetchFile downloads a media URL and describes it: hash, type sniffed from its first bytes
// (http.DetectContentType), size.
func (g *graphAPI) fetchFile(ctx context.Context, raw string) (File, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return File{}, fmt.Errorf("the media URI %q is not a valid http(s) URL", raw)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return File{}, fmt.Errorf("the media URI cannot be fetched: %w", err)
	}
	resp, err := g.n.Sim.Options().HTTPClient.Do(req)
	if err != nil {
		return File{}, fmt.Errorf("media download has failed: the media URI could not be reached")
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return File{}, fmt.Errorf("media download has failed: the media URI answered HTTP %d", resp.StatusCode)
	}
	h := sha256.New()
	head := &headWriter{max: 512}
	n, err := io.Copy(io.MultiWriter(h, head), io.LimitReader(resp.Body, 1<<30+1))
	if err != nil {
		return File{}, fmt.Errorf("media download has failed: %v", err)
	}
	if n == 0 || n > 1<<30 {
		return File{}, fmt.Errorf("media download has failed: the media is empty or larger than 1 GB")
	}
	return File{SHA256: hex.EncodeToString(h.Sum(nil)), Type: http.DetectContentType(head.b), Size: n}, nil
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	b   []byte
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// newContainer stores a container, fetching its media when mediaURL is set.
func (g *graphAPI) newContainer(ctx context.Context, c *graphContainer, mediaURL string) {
	now := g.n.Sim.Now()
	c.ID, c.Created = graphID(), now
	delay := g.n.Sim.Options().ProcessingDelay
	switch c.MediaType {
	case "VIDEO", "REELS":
		delay *= 2
	case "TEXT_POST":
		delay = 0
	}
	c.ReadyAt = now.Add(delay)
	if mediaURL != "" {
		f, err := g.fetchFile(ctx, mediaURL)
		if err == nil && c.MediaType == "IMAGE" && g.checkImage != nil {
			err = g.checkImage(f)
		}
		if err != nil {
			c.Err = err.Error()
		}
		c.SHA, c.File = f.SHA256, f
	}
	g.n.Store.Put("container:"+c.ID, c)
}

// container returns a copy of a container.
func (g *graphAPI) container(id string) (graphContainer, bool) {
	var out graphContainer
	var ok bool
	g.n.Store.With(func(objects map[string]any) {
		if c, found := objects["container:"+id].(*graphContainer); found {
			out, ok = *c, true
			out.Children = append([]string(nil), c.Children...)
		}
	})
	return out, ok
}

// containerStatus computes a container's status now: IN_PROGRESS, FINISHED, ERROR, EXPIRED or
// PUBLISHED, with a message for ERROR.
func (g *graphAPI) containerStatus(c graphContainer) (status, msg string) {
	now := g.n.Sim.Now()
	switch {
	case c.Published:
		return "PUBLISHED", ""
	case c.Err != "":
		return "ERROR", c.Err
	case !now.Before(c.Created.Add(24 * time.Hour)):
		return "EXPIRED", ""
	case now.Before(c.ReadyAt):
		return "IN_PROGRESS", ""
	}
	for _, id := range c.Children {
		child, ok := g.container(id)
		if !ok {
			return "ERROR", "a carousel item does not exist"
		}
		switch st, m := g.containerStatus(child); st {
		case "ERROR":
			return "ERROR", "a carousel item failed: " + m
		case "IN_PROGRESS":
			return "IN_PROGRESS", ""
		case "EXPIRED":
			return "EXPIRED", ""
		}
	}
	return "FINISHED", ""
}

// childContainers checks carousel children: they must be the owner's unpublished carousel items.
func (g *graphAPI) childContainers(owner, list string, min, max int) ([]string, string) {
	var ids []string
	for _, id := range strings.Split(list, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) < min || len(ids) > max {
		return nil, fmt.Sprintf("a carousel takes %d to %d children; got %d", min, max, len(ids))
	}
	for _, id := range ids {
		c, ok := g.container(id)
		if !ok || c.Owner != owner || !c.CarouselItem {
			return nil, fmt.Sprintf("the carousel child %s is not a carousel item container of this account", id)
		}
	}
	return ids, ""
}

// mediaFiles lists a container's files, children in order.
func (g *graphAPI) mediaFiles(c graphContainer) []File {
	if len(c.Children) == 0 {
		if c.SHA == "" {
			return nil
		}
		return []File{c.File}
	}
	out := make([]File, 0, len(c.Children))
	for _, id := range c.Children {
		if child, ok := g.container(id); ok && child.SHA != "" {
			out = append(out, child.File)
		}
	}
	return out
}

// markPublished flags a container (and its children) as published; false when it already was.
func (g *graphAPI) markPublished(id string) bool {
	ok := false
	g.n.Store.With(func(objects map[string]any) {
		c, found := objects["container:"+id].(*graphContainer)
		if !found || c.Published {
			return
		}
		c.Published, ok = true, true
		for _, child := range c.Children {
			if cc, found := objects["container:"+child].(*graphContainer); found {
				cc.Published = true
			}
		}
	})
	return ok
}

// records lists the account's publications, newest first, created in [since, until). Its replies
// (Threads) and comments (Instagram, Facebook) are not among them: the networks list those on
// their own edges.
func (g *graphAPI) records(account string, since, until time.Time) []Record {
	var out []Record
	for _, rec := range g.n.Sim.Publications(g.n.Platform) {
		if rec.Account != account || rec.ReplyTo != "" || rec.CommentOn != "" {
			continue
		}
		if !since.IsZero() && rec.CreatedAt.Before(since) {
			continue
		}
		if !until.IsZero() && !rec.CreatedAt.Before(until) {
			continue
		}
		out = append(out, rec)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out
}

// page serves a list edge from records: since, until, limit (default 25, at most 100) and an
// offset cursor "after", with paging.next pointing back at the simulator.
func (g *graphAPI) page(w http.ResponseWriter, r *http.Request, account string, item func(Record) map[string]any) {
	q := r.URL.Query()
	since, _ := parseGraphTime(q.Get("since"))
	until, _ := parseGraphTime(q.Get("until"))
	limit := 25
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		limit = min(n, 100)
	}
	offset := 0
	if a := q.Get("after"); a != "" {
		if b, err := hex.DecodeString(a); err == nil {
			offset, _ = strconv.Atoi(string(b))
		}
	}
	recs := g.records(account, since, until)
	if offset > len(recs) {
		offset = len(recs)
	}
	end := min(offset+limit, len(recs))
	data := make([]map[string]any, 0, end-offset)
	for _, rec := range recs[offset:end] {
		data = append(data, item(rec))
	}
	body := map[string]any{"data": data}
	if end < len(recs) {
		next := url.Values{}
		for k, v := range q {
			if k != "access_token" {
				next[k] = v
			}
		}
		cursor := hex.EncodeToString([]byte(strconv.Itoa(end)))
		next.Set("after", cursor)
		body["paging"] = map[string]any{
			"cursors": map[string]string{"after": cursor},
			"next":    graphBase(r, g.n) + "/" + graphVersion(r) + r.URL.Path + "?" + next.Encode(),
		}
	}
	WriteJSON(w, http.StatusOK, body)
}

// publishQuota answers the publishing-limit edge from the "publish" bucket.
func (g *graphAPI) publishQuota(w http.ResponseWriter, user string, def Limit, extra map[string]any) {
	limit, left, _, _ := g.n.Take("publish", user, 0, def)
	entry := map[string]any{"quota_usage": limit - left, "config": map[string]any{"quota_total": limit, "quota_duration": int64(def.Window / time.Second)}}
	for k, v := range extra {
		entry[k] = v
	}
	WriteJSON(w, http.StatusOK, map[string]any{"data": []any{entry}})
}
