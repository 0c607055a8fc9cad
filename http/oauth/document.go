package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/persistence"
)

// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document; the MCP
// authorization spec of 2025-11-25 prefers them to registration): a client whose client_id is
// an https URL publishes its metadata there, and Herald reads it instead of a registration.
//
//   - The URL: https, a path other than "/", no "." or ".." segment, no query, fragment, user
//     name or password, at most 2,048 characters, and it must pass the webhooks' egress rules
//     (a public host on port 443; actors/webhook CheckURL) as written.
//   - The fetch goes through the webhooks' SSRF-safe client (every dialled address checked, no
//     redirects followed), within 5 seconds; the document is at most MaxDocumentBytes of JSON.
//   - Its client_id must equal the URL; redirect_uris follow the rules of registered ones
//     (redirect.go); token_endpoint_auth_method is none or absent (Herald's clients are public,
//     and a document cannot carry a secret).
//   - What was read, or why it was refused, is cached per URL: documentTTL for a document,
//     documentFailTTL for a refusal, at most maxDocuments entries.
//
// Such a client is never stored: grants, codes and connector keys name it by its URL.

// Limits of client ID metadata documents.
const (
	MaxDocumentBytes = 5 << 10
	documentTTL      = 10 * time.Minute
	documentFailTTL  = time.Minute
	maxDocuments     = 1000
	documentTimeout  = 5 * time.Second
	maxClientIDURL   = 2048
)

// isDocumentID reports whether a client_id names a metadata document rather than a registered
// client (whose ids are hcl_…).
func isDocumentID(id string) bool { return strings.HasPrefix(id, "https://") }

// documentCache holds the documents read, and the refusals, by URL.
type documentCache struct {
	now     func() time.Time
	mu      sync.Mutex
	entries map[string]*documentEntry
	fetches *prometheus.CounterVec
}

type documentEntry struct {
	ready   chan struct{} // closed once client or why is set
	client  *persistence.OAuthClient
	why     string
	expires time.Time
}

func newDocumentCache(now func() time.Time) *documentCache {
	c := &documentCache{now: now, entries: map[string]*documentEntry{}}
	c.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_oauth_client_documents_total",
		Help: "Client ID metadata documents fetched, by outcome (accepted, refused: the URL or the document broke a rule; failed: it could not be fetched).",
	}, []string{"outcome"})
	for _, o := range []string{"accepted", "refused", "failed"} {
		c.fetches.WithLabelValues(o)
	}
	return c
}

// get returns the client of a document URL, fetching it (once, however many ask at the same
// time) when it is not cached; why says why it cannot be used.
func (c *documentCache) get(ctx context.Context, id string, fetch func(context.Context) (*persistence.OAuthClient, string, string)) (*persistence.OAuthClient, string) {
	now := c.now()
	c.mu.Lock()
	e := c.entries[id]
	if e != nil {
		select {
		case <-e.ready:
			if !now.Before(e.expires) {
				e = nil
			}
		default: // being fetched: wait for it below
		}
	}
	if e == nil {
		c.evict(now)
		e = &documentEntry{ready: make(chan struct{})}
		c.entries[id] = e
		c.mu.Unlock()
		// Detached from the request: others may be waiting for the same document.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), documentTimeout)
		cl, why, outcome := fetch(fctx)
		cancel()
		c.fetches.WithLabelValues(outcome).Inc()
		e.client, e.why = cl, why
		if cl != nil {
			e.expires = c.now().Add(documentTTL)
		} else {
			e.expires = c.now().Add(documentFailTTL)
		}
		close(e.ready)
		return cl, why
	}
	c.mu.Unlock()
	select {
	case <-e.ready:
		return e.client, e.why
	case <-ctx.Done():
		return nil, "the request ended while the application's metadata document was being read"
	}
}

// evict makes room for one more entry: expired entries go, then, if the cache is still full,
// any entry already read. The caller holds mu.
func (c *documentCache) evict(now time.Time) {
	if len(c.entries) < maxDocuments {
		return
	}
	for k, e := range c.entries {
		select {
		case <-e.ready:
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		default:
		}
	}
	for k, e := range c.entries {
		if len(c.entries) < maxDocuments {
			return
		}
		select {
		case <-e.ready:
			delete(c.entries, k)
		default:
		}
	}
}

// documentClient returns the client a metadata document describes; why is set when it cannot be
// used (shown to the user on the consent page, never redirected to the client).
func (s *Service) documentClient(ctx context.Context, id string) (*persistence.OAuthClient, string) {
	if s.cfg.Egress == nil {
		return nil, "this Herald does not read client ID metadata documents (client_id must be a registered client's)"
	}
	if why := checkDocumentURL(id); why != "" {
		return nil, why
	}
	return s.documents.get(ctx, id, func(ctx context.Context) (*persistence.OAuthClient, string, string) {
		return s.fetchDocument(ctx, id)
	})
}

// checkDocumentURL applies the draft's rules for a client_id URL that need no network.
func checkDocumentURL(id string) string {
	if len(id) > maxClientIDURL {
		return "client_id: the URL is longer than 2048 characters"
	}
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return "client_id: not an https URL"
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(id, "#") {
		return "client_id: the URL must have no user name, password, query or fragment"
	}
	if u.Path == "" || u.Path == "/" {
		return "client_id: the URL must have a path"
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
			return "client_id: the URL's path must not contain . or .. segments"
		}
	}
	return ""
}

// document is what Herald reads of a client ID metadata document.
type document struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientSecret            string   `json:"client_secret"`
}

// fetchDocument reads and checks a document; outcome is its metric label.
func (s *Service) fetchDocument(ctx context.Context, id string) (cl *persistence.OAuthClient, why, outcome string) {
	checked, err := s.cfg.Egress.CheckURL(ctx, id)
	var ue *webhook.URLError
	if errors.As(err, &ue) {
		return nil, "client_id: the URL is not allowed: " + ue.Reason, "refused"
	}
	if err != nil || checked != id {
		return nil, "client_id: the URL is not allowed (write it in its usual form: lower-case host, no default port)", "refused"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, "client_id: not an https URL", "refused"
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "Herald-OAuth")
	resp, err := s.docClient.Do(req)
	if err != nil {
		if errors.Is(err, webhook.ErrBlocked) {
			return nil, "client_id: the URL's address is not allowed (loopback, private or reserved)", "refused"
		}
		s.cfg.Log.Info("oauth: client metadata document not fetched", "client_id", id, "error", err)
		return nil, "Herald could not fetch the application's metadata document; try again shortly", "failed"
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Sprintf("the application's metadata document answered HTTP %d", resp.StatusCode), "failed"
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return nil, "Herald could not read the application's metadata document; try again shortly", "failed"
	}
	if len(body) > MaxDocumentBytes {
		return nil, fmt.Sprintf("the application's metadata document is larger than %d bytes", MaxDocumentBytes), "refused"
	}
	var d document
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, "the application's metadata document is not a JSON object", "refused"
	}
	if why := checkDocument(id, &d); why != "" {
		return nil, "the application's metadata document: " + why, "refused"
	}
	name := d.ClientName
	if name == "" {
		u, _ := url.Parse(id)
		name = u.Hostname()
	}
	return &persistence.OAuthClient{ID: id, Name: name, RedirectURIs: d.RedirectURIs}, "", "accepted"
}

// checkDocument applies the rules to a document's fields.
func checkDocument(id string, d *document) string {
	if d.ClientID != id {
		return "its client_id differs from the URL it was read from"
	}
	if d.ClientSecret != "" {
		return "it carries a client_secret, which a published document must not"
	}
	reg := registration{ClientName: d.ClientName, RedirectURIs: d.RedirectURIs, TokenEndpointAuthMethod: d.TokenEndpointAuthMethod,
		GrantTypes: d.GrantTypes, ResponseTypes: d.ResponseTypes}
	switch d.TokenEndpointAuthMethod {
	case "", "none":
	default:
		return "token_endpoint_auth_method must be none (or absent): Herald's clients are public and use PKCE"
	}
	if oe := checkMetadata(&reg); oe != nil {
		return oe.Description
	}
	d.ClientName, d.RedirectURIs = reg.ClientName, reg.RedirectURIs
	return ""
}
