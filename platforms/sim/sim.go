// Package sim simulates the nine social networks on loopback: their endpoints, OAuth, token
// lifetimes, rate limits with each network's own signals, expired-token errors in each network's
// own shape, asynchronous media processing, latency and fault knobs, and a record of what was
// published. Herald's tests, its sandbox mode and its bench suite run the real adapters against it.
//
// One listener serves all nine networks, each under its own path prefix (see Prefix): an adapter's
// base URL is the simulator's address plus that prefix, and every real API path follows it
// unchanged, so that /x/2/tweets is X's POST /2/tweets. Upload URLs the simulator hands out are
// absolute and point back at itself.
//
// The admin API under /_sim is what tests and tools drive:
//
//	GET  /_sim/publications?platform=P  what was published: {"data":[{id, platform, account, text, media_sha256, created_at, reply_to?, comment_on?}]}
//	POST /_sim/faults                   {"platform","fault","count"}: the next count API calls to that network fail that way
//	GET  /_sim/faults                   the random faults' rate, kinds and spared pairs, and how many of each were drawn
//	PUT  /_sim/faults                   {"rate"}: changes the random faults' rate (0 stops them)
//	POST /_sim/reset                    clears publications, faults and counters
//	POST /_sim/accounts                 {"platform","handle"}: a network user with fresh tokens (credentials JSON)
//	GET  /_sim/revocations              tokens revoked through the networks' revoke endpoints
//	POST /_sim/consent                  {"platform","deny":true}: the next consent page refuses;
//	                                    {"platform","member"}: it signs in that member (members.go)
//	POST /_sim/limits                   {"platform","bucket","limit","window"}: overrides one rate limit
//	GET  /_sim/requests?platform=P      the API calls received (method, path, selected headers)
//	GET  /_sim/publication?platform=P&id=ID  one publication's page, for a person (view.go)
//
// The live-data admin routes (comments, direct messages, metrics, and the replies and messages
// sent) are described in live.go.
package sim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Fault kinds accepted by POST /_sim/faults.
const (
	FaultError5xx      = "error_5xx"
	FaultTimeout       = "timeout"
	FaultRateLimit     = "rate_limit"
	FaultExpireTokens  = "expire_tokens"
	FaultPostThenError = "post_then_error"
)

// ProcessingFailureMarker makes asynchronous media processing fail on the networks that process
// media (X videos and GIFs, Bluesky videos, LinkedIn videos) when a file's bytes begin with it, so
// that tests can reach the "failed" state of each network's processing machine.
const ProcessingFailureMarker = "herald-sim:fail-processing"

// ClientID and ClientSecret are the OAuth client credentials every simulated network accepts.
const (
	ClientID     = "herald-sim-client"
	ClientSecret = "herald-sim-secret"
)

// Prefix returns the path prefix under which a network is served, for example "/x".
func Prefix(p platforms.Platform) string {
	if p == platforms.X {
		return "/x"
	}
	return "/" + string(p)
}

// Options configure a simulator.
type Options struct {
	// Now is the clock for token lifetimes, rate windows and processing delays (default time.Now).
	Now func() time.Time
	// Latency is added to every network API call (not to the admin API).
	Latency time.Duration
	// LimitScale multiplies every default rate limit count (0 means 1). The window stays the
	// same, so 0.01 makes X's 100 posts per 15 minutes into 1.
	LimitScale float64
	// ProcessingDelay is how long asynchronous media processing takes (default 20ms).
	ProcessingDelay time.Duration
	// TimeoutHold is how long a "timeout" fault holds a request before dropping the connection
	// (default 30s, or until the client gives up).
	TimeoutHold time.Duration
	// FaultReset is when a limit refused by the rate_limit fault resets, from the refusal
	// (default one minute).
	FaultReset time.Duration
	// FaultRate makes each API call (OAuth endpoints spared) fail with this probability, with a
	// fault drawn at random from FaultKinds (default every per-call kind: error_5xx, timeout,
	// rate_limit and post_then_error). A drawn post_then_error waits for the network's next call
	// that creates a post. Faults queued through InjectFault go first. `herald sim --fault-rate`.
	FaultRate  float64
	FaultKinds []string
	// FaultSpare lists "network:kind" pairs never drawn at random, for example
	// "youtube:rate_limit": YouTube's only rate answer is its daily quota, which lasts until
	// midnight Pacific time, so a random one stops a network's publishing for the day.
	FaultSpare []string
	// FaultSeed seeds the random faults (0: a random seed), so that a run can be replayed as far
	// as the order of concurrent calls allows.
	FaultSeed uint64
	// HTTPClient fetches media by URL for the networks that pull it (Instagram, Threads,
	// TikTok PULL_FROM_URL, Pinterest image_url).
	HTTPClient *http.Client
	// AskMember makes a consent page that names no member show a select of the network's
	// simulated members (members.go) instead of signing in DefaultMember at once.
	AskMember bool
}

// Record is one post the simulator created.
type Record struct {
	ID          string   `json:"id"`
	Platform    string   `json:"platform"`
	Account     string   `json:"account"`
	Text        string   `json:"text"`
	MediaSHA256 []string `json:"media_sha256"`
	// MediaTypes and MediaSizes are the type (sniffed from the bytes) and size of each file, for
	// the networks that fetch media by URL and check what they get (Instagram, Threads).
	MediaTypes []string  `json:"media_types,omitempty"`
	MediaSizes []int64   `json:"media_sizes,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// Options are the network-side fields of the post the handler read besides its text and
	// media (a YouTube title and privacy, a TikTok privacy level, a Pinterest board, X reply
	// settings...), by the network's own names; AltTexts the alt text of each media, in order.
	Options  map[string]any `json:"options,omitempty"`
	AltTexts []string       `json:"alt_texts,omitempty"`
	// ReplyTo is the id of the post a reply answers: every part of a thread after the first, and
	// every reply of an account to its own post on X, Bluesky and Threads (a first comment there).
	// A reply is a post of the account, listed where the network lists its posts.
	ReplyTo string `json:"reply_to,omitempty"`
	// CommentOn is the id of the post a comment was made on, on the networks where the account
	// comments its own post (LinkedIn, Instagram, Facebook, YouTube). A comment is not a post:
	// the networks' post listings leave it out.
	CommentOn string `json:"comment_on,omitempty"`
}

// File is a media file a network received.
type File struct {
	SHA256 string
	Type   string
	Size   int64
}

// RequestLog is one API call the simulator received.
type RequestLog struct {
	Platform string            `json:"platform"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Headers  map[string]string `json:"headers,omitempty"`
	At       time.Time         `json:"at"`
}

// Revocation is one token revoked at a network.
type Revocation struct {
	Platform string    `json:"platform"`
	Account  string    `json:"account"`
	At       time.Time `json:"at"`
}

// Sim is a running simulator of the nine networks. It is safe for concurrent use.
type Sim struct {
	opts     Options
	mux      *http.ServeMux
	networks map[platforms.Platform]*Network

	mu      sync.Mutex
	records []Record
	// last is each account's newest publication (platform | account), for the duplicate checks
	// that every post makes.
	last        map[string]Record
	faults      map[platforms.Platform][]string
	revocations []Revocation
	requests    []RequestLog
	deny        map[platforms.Platform]bool
	limits      map[limitKey]Limit
	counters    map[counterKey]*window
	live        *liveState
	// rnd draws the random faults at faultRate (Options.FaultRate, or SetFaultRate); injected
	// counts them by kind.
	rnd       *mrand.Rand
	faultRate float64
	injected  map[string]int
	// ttOff are the interactions every simulated TikTok creator turned off (comment, duet,
	// stitch: TikTokInteractions).
	ttOff [3]bool

	baseURL string
}

// Network is one simulated network: the core services its handlers use.
type Network struct {
	Sim      *Sim
	Platform platforms.Platform
	Mux      *http.ServeMux
	Tokens   *TokenStore
	Store    *Store
	// RateLimited, when set by the network's file, answers a call refused by the rate_limit fault
	// or by an exhausted budget in the network's own shape (status, body, headers). reset is when
	// the limit resets.
	RateLimited func(w http.ResponseWriter, r *http.Request, reset time.Time)
	// Live connects the network to the simulator's live data (see live.go).
	Live LiveHooks
	// graph is the network's Graph API dialect (Facebook, Instagram, Threads), nil elsewhere.
	graph *graphAPI
}

// registrations are filled by each network's file in init.
var registrations = map[platforms.Platform]func(n *Network){}

func register(p platforms.Platform, fn func(n *Network)) { registrations[p] = fn }

// New builds a simulator. Networks whose handlers are registered are served.
func New(opts Options) *Sim {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LimitScale == 0 {
		opts.LimitScale = 1
	}
	if opts.ProcessingDelay == 0 {
		opts.ProcessingDelay = 20 * time.Millisecond
	}
	if opts.TimeoutHold == 0 {
		opts.TimeoutHold = 30 * time.Second
	}
	if opts.FaultReset <= 0 {
		opts.FaultReset = time.Minute
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	if len(opts.FaultKinds) == 0 {
		opts.FaultKinds = RandomFaultKinds
	}
	seed := opts.FaultSeed
	if seed == 0 {
		seed = mrand.Uint64()
	}
	s := &Sim{
		rnd:       mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		faultRate: opts.FaultRate,
		injected:  map[string]int{},
		opts:      opts,
		mux:       http.NewServeMux(),
		networks:  map[platforms.Platform]*Network{},
		faults:    map[platforms.Platform][]string{},
		deny:      map[platforms.Platform]bool{},
		limits:    map[limitKey]Limit{},
		counters:  map[counterKey]*window{},
		live:      newLiveState(),
	}
	for _, p := range platforms.All {
		fn, ok := registrations[p]
		if !ok {
			continue
		}
		n := &Network{Sim: s, Platform: p, Mux: http.NewServeMux(), Tokens: newTokenStore(s, p), Store: newStore()}
		fn(n)
		s.networks[p] = n
		prefix := Prefix(p)
		s.mux.Handle(prefix+"/", http.StripPrefix(prefix, s.apiMiddleware(n)))
	}
	s.adminRoutes()
	s.viewRoutes()
	s.liveRoutes()
	return s
}

// Handler serves the nine networks and the admin API.
func (s *Sim) Handler() http.Handler { return s.mux }

// Now is the simulator's clock.
func (s *Sim) Now() time.Time { return s.opts.Now() }

// Options returns the options the simulator runs with.
func (s *Sim) Options() Options { return s.opts }

// SetBaseURL tells the simulator the absolute URL it is reachable at, for the upload URLs it hands
// out. Serve and Start set it; a caller using Handler with its own listener sets it itself.
func (s *Sim) SetBaseURL(u string) {
	s.mu.Lock()
	s.baseURL = strings.TrimRight(u, "/")
	s.mu.Unlock()
}

// BaseURL is the absolute URL of the simulator, for example http://127.0.0.1:8081.
func (s *Sim) BaseURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseURL
}

// AdapterConfig is the adapter configuration that points platform p at this simulator.
func (s *Sim) AdapterConfig(p platforms.Platform) platforms.Config { return ConfigFor(s.BaseURL(), p) }

// ConfigFor is the adapter configuration that points platform p at a simulator listening at
// baseURL (for example one started by `herald sim`). Instagram's GraphURL is the simulated
// Facebook, which serves the Instagram accounts linked to its Pages (facebook_instagram.go).
func ConfigFor(baseURL string, p platforms.Platform) platforms.Config {
	base := strings.TrimRight(baseURL, "/") + Prefix(p)
	cfg := platforms.Config{BaseURL: base, AuthURL: base, UploadURL: base, ClientID: ClientID, ClientSecret: ClientSecret, PollInterval: 10 * time.Millisecond}
	if p == platforms.Instagram {
		cfg.GraphURL = strings.TrimRight(baseURL, "/") + Prefix(platforms.Facebook)
	}
	return cfg
}

// Server is a simulator listening on a TCP address.
type Server struct {
	*Sim
	srv *http.Server
	ln  net.Listener
}

// Start serves the simulator on addr ("127.0.0.1:0" picks a free port).
func Start(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: listen %s: %w", addr, err)
	}
	s := New(opts)
	s.SetBaseURL("http://" + ln.Addr().String())
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &Server{Sim: s, srv: srv, ln: ln}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// apiMiddleware records the call, adds latency and applies the per-call faults error_5xx, timeout
// and (through the network's RateLimited responder) rate_limit. Handlers of post-creating calls
// apply post_then_error themselves through TakeFault.
func (s *Sim) apiMiddleware(n *Network) http.Handler {
	p, next := n.Platform, n.Mux
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.logRequest(p, r)
		if s.opts.Latency > 0 {
			t := time.NewTimer(s.opts.Latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if isOAuthPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		s.drawFault(p)
		switch s.peekFault(p) {
		case FaultError5xx:
			s.consumeFault(p)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"service unavailable","message":"simulated outage"}`))
			return
		case FaultRateLimit:
			if n.RateLimited != nil {
				s.consumeFault(p)
				n.RateLimited(w, r, s.opts.Now().Add(s.opts.FaultReset))
				return
			}
		case FaultTimeout:
			s.consumeFault(p)
			t := time.NewTimer(s.opts.TimeoutHold)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
				}
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isOAuthPath reports whether a path belongs to a network's OAuth endpoints, which faults spare.
func isOAuthPath(path string) bool {
	lower := strings.ToLower(path)
	for _, s := range []string{"oauth", "/token", "authorize", "/auth", "access_token", "createsession", "refreshsession", "/revoke", "/dialog/"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

func (s *Sim) logRequest(p platforms.Platform, r *http.Request) {
	h := map[string]string{}
	for _, k := range []string{"Authorization", "Content-Type", "LinkedIn-Version", "X-Restli-Protocol-Version", "Atproto-Proxy", "Content-Range"} {
		if v := r.Header.Get(k); v != "" {
			if k == "Authorization" {
				v = "present"
			}
			h[k] = v
		}
	}
	s.mu.Lock()
	if len(s.requests) >= 100000 {
		s.requests = s.requests[len(s.requests)/2:]
	}
	s.requests = append(s.requests, RequestLog{Platform: string(p), Method: r.Method, Path: r.URL.Path, Headers: h, At: s.opts.Now()})
	s.mu.Unlock()
}

// RandomFaultKinds are the faults a call may draw at random: every per-call kind.
var RandomFaultKinds = []string{FaultError5xx, FaultTimeout, FaultRateLimit, FaultPostThenError}

// ParseFaultSpare reads a comma-separated list of "network:kind" pairs (Options.FaultSpare).
func ParseFaultSpare(list string) ([]string, error) {
	var out []string
	for _, pair := range strings.Split(list, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		p, k, _ := strings.Cut(pair, ":")
		if !platforms.Platform(p).Valid() || !slices.Contains(RandomFaultKinds, k) {
			return nil, fmt.Errorf("sim: %q is not network:fault (a network id, and one of %s)", pair, strings.Join(RandomFaultKinds, ", "))
		}
		out = append(out, pair)
	}
	return out, nil
}

// ParseFaultKinds reads a comma-separated list of per-call fault kinds ("" is every one).
func ParseFaultKinds(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return RandomFaultKinds, nil
	}
	var out []string
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		switch k {
		case FaultError5xx, FaultTimeout, FaultRateLimit, FaultPostThenError:
			out = append(out, k)
		default:
			return nil, fmt.Errorf("sim: %q is not a per-call fault (%s)", k, strings.Join(RandomFaultKinds, ", "))
		}
	}
	return out, nil
}

// drawFault queues a random fault for this call of p, with probability faultRate, when
// no fault is queued already.
func (s *Sim) drawFault(p platforms.Platform) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faultRate <= 0 || len(s.faults[p]) > 0 || s.rnd.Float64() >= s.faultRate {
		return
	}
	k := s.opts.FaultKinds[s.rnd.IntN(len(s.opts.FaultKinds))]
	if slices.Contains(s.opts.FaultSpare, string(p)+":"+k) {
		return
	}
	s.faults[p] = append(s.faults[p], k)
	s.injected[k]++
}

// SetFaultRate changes the share of API calls that draw a random fault (0 stops them), for
// example to let a test's load settle. The kinds stay those of Options.FaultKinds (all when it
// is empty).
func (s *Sim) SetFaultRate(rate float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultRate = rate
}

// InjectedFaults counts the random faults drawn so far, by kind.
func (s *Sim) InjectedFaults() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.injected))
	for k, n := range s.injected {
		out[k] = n
	}
	return out
}

func (s *Sim) peekFault(p platforms.Platform) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.faults[p]; len(q) > 0 {
		return q[0]
	}
	return ""
}

func (s *Sim) consumeFault(p platforms.Platform) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.faults[p]; len(q) > 0 {
		s.faults[p] = q[1:]
	}
}

// TakeFault consumes and returns the pending fault of this network if it is one of kinds, else "".
// Endpoint handlers call it for rate_limit (answered in the network's own shape) and, on calls
// that create a post, for post_then_error.
func (n *Network) TakeFault(kinds ...string) string {
	s := n.Sim
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[n.Platform]
	if len(q) == 0 {
		return ""
	}
	for _, k := range kinds {
		if q[0] == k {
			s.faults[n.Platform] = q[1:]
			return k
		}
	}
	return ""
}

// Publish records a created post and returns the record. id is the network's id of the post.
func (n *Network) Publish(id, account, text string, mediaSHA []string) Record {
	if mediaSHA == nil {
		mediaSHA = []string{}
	}
	return n.record(Record{ID: id, Platform: string(n.Platform), Account: account, Text: text, MediaSHA256: mediaSHA, CreatedAt: n.Sim.opts.Now().UTC()})
}

// PublishWith records a created post with the options and alt texts the network received.
func (n *Network) PublishWith(id, account, text string, mediaSHA []string, options map[string]any, alts []string) Record {
	if mediaSHA == nil {
		mediaSHA = []string{}
	}
	return n.record(Record{ID: id, Platform: string(n.Platform), Account: account, Text: text, MediaSHA256: mediaSHA,
		Options: options, AltTexts: alts, CreatedAt: n.Sim.opts.Now().UTC()})
}

// PublishFiles records a created post with the type and size of each file as well as its hash.
func (n *Network) PublishFiles(id, account, text string, files []File) Record {
	rec := Record{ID: id, Platform: string(n.Platform), Account: account, Text: text, MediaSHA256: []string{}, CreatedAt: n.Sim.opts.Now().UTC()}
	for _, f := range files {
		rec.MediaSHA256 = append(rec.MediaSHA256, f.SHA256)
		rec.MediaTypes = append(rec.MediaTypes, f.Type)
		rec.MediaSizes = append(rec.MediaSizes, f.Size)
	}
	return n.record(rec)
}

func (n *Network) record(rec Record) Record {
	n.Sim.mu.Lock()
	n.Sim.records = append(n.Sim.records, rec)
	if n.Sim.last == nil {
		n.Sim.last = map[string]Record{}
	}
	if rec.CommentOn == "" {
		n.Sim.last[string(n.Platform)+"|"+rec.Account] = rec
	}
	n.Sim.mu.Unlock()
	return rec
}

// UpdateRecord changes the record of a publication (a step made after the post was created,
// such as adding a video to a playlist).
func (n *Network) UpdateRecord(id string, fn func(*Record)) {
	n.Sim.mu.Lock()
	defer n.Sim.mu.Unlock()
	for i := range n.Sim.records {
		if r := &n.Sim.records[i]; r.ID == id && r.Platform == string(n.Platform) {
			fn(r)
			if last, ok := n.Sim.last[r.Platform+"|"+r.Account]; ok && last.ID == id {
				n.Sim.last[r.Platform+"|"+r.Account] = *r
			}
		}
	}
}

// LastPublication is the newest post of an account on p, without copying the record.
func (s *Sim) LastPublication(p platforms.Platform, account string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.last[string(p)+"|"+account]
	return r, ok
}

// Publications lists what was published on p ("" for every network), oldest first.
func (s *Sim) Publications(p platforms.Platform) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.records))
	for _, r := range s.records {
		if p == "" || r.Platform == string(p) {
			out = append(out, r)
		}
	}
	return out
}

// Revocations lists the tokens revoked through the networks' revoke endpoints.
func (s *Sim) Revocations() []Revocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Revocation(nil), s.revocations...)
}

// InjectFault makes the next count API calls to p fail with fault. expire_tokens acts at once on
// every access token of p and ignores count.
func (s *Sim) InjectFault(p platforms.Platform, fault string, count int) error {
	if !p.Valid() {
		return fmt.Errorf("sim: unknown platform %q", p)
	}
	switch fault {
	case FaultExpireTokens:
		if n := s.networks[p]; n != nil {
			n.Tokens.ExpireAll()
		}
		return nil
	case FaultError5xx, FaultTimeout, FaultRateLimit, FaultPostThenError:
	default:
		return fmt.Errorf("sim: unknown fault %q", fault)
	}
	if count <= 0 {
		count = 1
	}
	s.mu.Lock()
	for i := 0; i < count; i++ {
		s.faults[p] = append(s.faults[p], fault)
	}
	s.mu.Unlock()
	return nil
}

// Reset clears publications, faults, request logs, revocations, rate counters and live data.
func (s *Sim) Reset() {
	s.mu.Lock()
	s.records = nil
	s.last = nil
	s.faults = map[platforms.Platform][]string{}
	s.requests = nil
	s.revocations = nil
	s.counters = map[counterKey]*window{}
	s.mu.Unlock()
	s.live.reset()
	for _, n := range s.networks {
		n.Store.reset()
	}
}

// Tokens is the token store of network p (nil when p is not simulated).
func (s *Sim) Tokens(p platforms.Platform) *TokenStore {
	if n := s.networks[p]; n != nil {
		return n.Tokens
	}
	return nil
}

// Deny makes the next consent page of p refuse (the user clicked "cancel").
func (s *Sim) Deny(p platforms.Platform) {
	s.mu.Lock()
	s.deny[p] = true
	s.mu.Unlock()
}

// TakeDenial reports and clears a pending refusal of consent on this network.
func (n *Network) TakeDenial() bool {
	n.Sim.mu.Lock()
	defer n.Sim.mu.Unlock()
	d := n.Sim.deny[n.Platform]
	delete(n.Sim.deny, n.Platform)
	return d
}

// NewAccount creates a network user with fresh tokens, as if it had just completed OAuth.
func (s *Sim) NewAccount(p platforms.Platform, handle string) (platforms.Credentials, error) {
	n := s.networks[p]
	if n == nil {
		return platforms.Credentials{}, fmt.Errorf("sim: network %q is not simulated", p)
	}
	return n.Tokens.Issue(n.UserID(handle), handle), nil
}

// UserID derives the network's stable id of a handle (the same handle is the same user). The
// Instagram professional accounts linked to the simulated Pages keep their ids (members.go), so
// that signing in to Instagram as one of them and picking it through a Facebook consent name the
// same account.
func (n *Network) UserID(handle string) string {
	if n.Platform == platforms.Instagram {
		if ig, ok := linkedInstagram(handle); ok {
			return ig.ID
		}
	}
	sum := sha256.Sum256([]byte(string(n.Platform) + "/" + handle))
	return strings.TrimLeft(fmt.Sprint(uint64(sum[0])<<40|uint64(sum[1])<<32|uint64(sum[2])<<24|uint64(sum[3])<<16|uint64(sum[4])<<8|uint64(sum[5])), "0")
}

// BaseURL is this network's absolute base URL on the simulator, for the upload URLs it hands out.
func (n *Network) BaseURL() string { return n.Sim.BaseURL() + Prefix(n.Platform) }

// RandomID returns a random hex id of n bytes.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Sim) adminRoutes() {
	s.mux.HandleFunc("GET /_sim/publications", func(w http.ResponseWriter, r *http.Request) {
		p := platforms.Platform(r.URL.Query().Get("platform"))
		WriteJSON(w, 200, map[string]any{"data": s.Publications(p)})
	})
	s.mux.HandleFunc("POST /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Platform string `json:"platform"`
			Fault    string `json:"fault"`
			Count    int    `json:"count"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			WriteJSON(w, 400, map[string]string{"error": "invalid JSON: " + err.Error()})
			return
		}
		if err := s.InjectFault(platforms.Platform(req.Platform), req.Fault, req.Count); err != nil {
			WriteJSON(w, 400, map[string]string{"error": err.Error()})
			return
		}
		WriteJSON(w, 200, map[string]any{"ok": true})
	})
	s.mux.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		injected := s.InjectedFaults()
		s.mu.Lock()
		out := map[string]any{"rate": s.faultRate, "kinds": s.opts.FaultKinds, "spare": s.opts.FaultSpare, "injected": injected}
		s.mu.Unlock()
		WriteJSON(w, 200, out)
	})
	s.mux.HandleFunc("PUT /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Rate *float64 `json:"rate"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Rate == nil || *req.Rate < 0 || *req.Rate > 1 {
			WriteJSON(w, 400, map[string]string{"error": "want {\"rate\": 0 to 1}"})
			return
		}
		s.SetFaultRate(*req.Rate)
		WriteJSON(w, 200, map[string]any{"ok": true})
	})
	s.mux.HandleFunc("POST /_sim/reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		WriteJSON(w, 200, map[string]any{"ok": true})
	})
	s.mux.HandleFunc("POST /_sim/accounts", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Platform string `json:"platform"`
			Handle   string `json:"handle"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Handle == "" {
			WriteJSON(w, 400, map[string]string{"error": "want {\"platform\",\"handle\"}"})
			return
		}
		c, err := s.NewAccount(platforms.Platform(req.Platform), req.Handle)
		if err != nil {
			WriteJSON(w, 400, map[string]string{"error": err.Error()})
			return
		}
		WriteJSON(w, 200, c)
	})
	s.mux.HandleFunc("GET /_sim/revocations", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, 200, map[string]any{"data": s.Revocations()})
	})
	s.mux.HandleFunc("POST /_sim/consent", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Platform string `json:"platform"`
			Deny     bool   `json:"deny"`
			Member   string `json:"member"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			WriteJSON(w, 400, map[string]string{"error": "invalid JSON"})
			return
		}
		if req.Deny {
			s.Deny(platforms.Platform(req.Platform))
		}
		if req.Member != "" {
			s.SetMember(platforms.Platform(req.Platform), req.Member)
		}
		WriteJSON(w, 200, map[string]any{"ok": true})
	})
	s.mux.HandleFunc("POST /_sim/limits", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Platform string `json:"platform"`
			Bucket   string `json:"bucket"`
			Limit    int    `json:"limit"`
			Window   string `json:"window"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			WriteJSON(w, 400, map[string]string{"error": "invalid JSON"})
			return
		}
		win, err := time.ParseDuration(req.Window)
		if err != nil || win <= 0 || req.Limit < 0 {
			WriteJSON(w, 400, map[string]string{"error": "window must be a positive Go duration and limit >= 0"})
			return
		}
		s.SetLimit(platforms.Platform(req.Platform), req.Bucket, Limit{Count: req.Limit, Window: win})
		WriteJSON(w, 200, map[string]any{"ok": true})
	})
	s.mux.HandleFunc("GET /_sim/requests", func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get("platform")
		s.mu.Lock()
		out := make([]RequestLog, 0)
		for _, l := range s.requests {
			if p == "" || l.Platform == p {
				out = append(out, l)
			}
		}
		s.mu.Unlock()
		WriteJSON(w, 200, map[string]any{"data": out})
	})
	s.mux.HandleFunc("GET /_sim/networks", func(w http.ResponseWriter, r *http.Request) {
		var names []string
		for p := range s.networks {
			names = append(names, string(p))
		}
		sort.Strings(names)
		WriteJSON(w, 200, map[string]any{"data": names})
	})
}
