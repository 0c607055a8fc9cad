package auth

import "strings"

// The OAuth scopes (the spec's Authentication, item 9). An API key carries none: it has full
// access for its owner. An OAuth access token carries the scopes its owner approved; a /v1 route
// needs its own scope (http/api/routes.go) or the umbrella of its class: service:read for a read,
// service:write for a write.
const (
	ScopeMeRead        = "me:read"
	ScopeAccountsRead  = "accounts:read"
	ScopeAccountsWrite = "accounts:write"
	ScopePostsRead     = "posts:read"
	ScopePostsWrite    = "posts:write"
	ScopeMediaWrite    = "media:write"
	ScopeJobsRead      = "jobs:read"
	ScopeWebhooksRead  = "webhooks:read"
	ScopeWebhooksWrite = "webhooks:write"
	ScopeServiceRead   = "service:read"
	ScopeServiceWrite  = "service:write"
)

// Scopes are the eleven scopes, in the order the metadata documents list them.
var Scopes = []string{
	ScopeMeRead, ScopeAccountsRead, ScopeAccountsWrite, ScopePostsRead, ScopePostsWrite, ScopeMediaWrite,
	ScopeJobsRead, ScopeWebhooksRead, ScopeWebhooksWrite, ScopeServiceRead, ScopeServiceWrite,
}

// ScopeDescriptions say what each scope allows, in plain words (the consent page, the OpenAPI
// document).
var ScopeDescriptions = map[string]string{
	ScopeMeRead:        "See your profile and plan",
	ScopeAccountsRead:  "See your connected social accounts",
	ScopeAccountsWrite: "Connect and disconnect social accounts",
	ScopePostsRead:     "See your posts and their events",
	ScopePostsWrite:    "Create, edit, delete, schedule and publish posts",
	ScopeMediaWrite:    "Upload media and see your uploads",
	ScopeJobsRead:      "See publish jobs and follow their progress",
	ScopeWebhooksRead:  "See your webhooks and their deliveries",
	ScopeWebhooksWrite: "Create, change and delete webhooks",
	ScopeServiceRead:   "Read everything in your Herald account, analytics and inbox included",
	ScopeServiceWrite:  "Change everything in your Herald account: posts, accounts, media, webhooks, inbox replies",
}

// KnownScope reports whether s is one of the eleven scopes.
func KnownScope(s string) bool { _, ok := ScopeDescriptions[s]; return ok }

// ParseScopes splits a space-separated scope parameter into a set in the order of Scopes; ok is
// false when one is unknown.
func ParseScopes(s string) (scopes []string, ok bool) {
	seen := map[string]bool{}
	for _, f := range strings.Fields(s) {
		if !KnownScope(f) {
			return nil, false
		}
		seen[f] = true
	}
	// A scope is a set (RFC 6749 §3.3): kept in the order of Scopes, so that a grant reads the
	// same whatever order the client asked in.
	for _, sc := range Scopes {
		if seen[sc] {
			scopes = append(scopes, sc)
		}
	}
	return scopes, true
}

// Allows reports whether the principal may call a route that needs scope (its own scope, "" for
// routes only the umbrella covers) in the class write or read. An API key without scopes may call
// everything; a key limited to scopes is held to them as an OAuth token is.
func (p *Principal) Allows(scope string, write bool) bool {
	if !p.limited() {
		return true
	}
	umbrella := ScopeServiceRead
	if write {
		umbrella = ScopeServiceWrite
	}
	for _, s := range p.scopes() {
		if s == umbrella || (scope != "" && s == scope) {
			return true
		}
	}
	return false
}

// OAuth reports whether the principal authenticated with an OAuth access token.
func (p *Principal) OAuth() bool { return p.Resource != "" }
