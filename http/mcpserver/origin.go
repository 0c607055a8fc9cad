package mcpserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Browsers on /mcp. A page whose script calls /mcp (a web-based MCP host) sends an Origin header;
// the transport requires the server to refuse one it does not allow with 403 (DNS rebinding: a
// page that resolved its own name to a loopback address must not reach a local Herald), and
// the browser lets the page read an answer only with CORS headers naming its origin. A request
// without Origin comes from a program (a host's server side, an IDE, the SDK clients) and is not
// a browser's: it passes. Credentials are bearer tokens, never cookies, so an allowed origin
// reaches nothing its script does not already hold a token for.

// LoopbackOrigins are the origins sandbox mode allows besides the configured ones: pages served
// from the developer's own machine, on any port (a local web host, the MCP Inspector's UI).
var LoopbackOrigins = []string{"http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"}

// The transport's request headers a browser's script sends (preflight's allowed headers), and
// the answer's headers it may read (WWW-Authenticate: the 401's and 403's challenge).
const (
	corsMethods       = "GET, POST, DELETE, OPTIONS"
	corsAllowHeaders  = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name, Herald-Workspace"
	corsExposeHeaders = "WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version"
	corsMaxAge        = "7200" // Chromium's ceiling
)

// Origins is the set of browser origins allowed to call /mcp (--cors-origins). The base URL's
// own origin is always allowed; it is read per request, since the base URL may be known only
// once the listener is open.
type Origins struct {
	any     bool
	exact   map[string]bool
	anyPort map[string]bool // scheme://host of entries written scheme://host:*
}

// NewOrigins parses origin entries: "*" (any origin), "scheme://host[:port]" (one origin), or
// "scheme://host:*" (the host on any port). Schemes are http and https; entries carry no path,
// query or credentials.
func NewOrigins(entries []string) (*Origins, error) {
	o := &Origins{exact: map[string]bool{}, anyPort: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case e == "*":
			o.any = true
		case strings.HasSuffix(e, ":*"):
			n, err := normalOrigin(strings.TrimSuffix(e, ":*"))
			if err != nil {
				return nil, fmt.Errorf("origin %q: %w", e, err)
			}
			if withoutPort(n) != n {
				return nil, fmt.Errorf("origin %q: a port and :*", e)
			}
			o.anyPort[n] = true
		default:
			n, err := normalOrigin(e)
			if err != nil {
				return nil, fmt.Errorf("origin %q: %w", e, err)
			}
			o.exact[n] = true
		}
	}
	return o, nil
}

// ParseOrigins parses a comma-separated list of entries (NewOrigins).
func ParseOrigins(list string) (*Origins, error) {
	if strings.TrimSpace(list) == "" {
		return NewOrigins(nil)
	}
	return NewOrigins(strings.Split(list, ","))
}

// normalOrigin is the serialised origin of s (RFC 6454): lower-case scheme and host, the
// default port left out, as browsers send it.
func normalOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("the scheme must be http or https")
	}
	if u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("an origin is scheme://host[:port], nothing more")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host, nil
	}
	return scheme + "://" + host + ":" + port, nil
}

// Allowed reports whether a request's Origin header value may call /mcp, base being the base
// URL (whose origin is always allowed).
func (o *Origins) Allowed(origin, base string) bool {
	if o != nil && o.any {
		return true
	}
	n, err := normalOrigin(origin)
	if err != nil {
		return false // "null" (a sandboxed frame, a file) and anything unparsable
	}
	if b, err := normalOrigin(baseOrigin(base)); err == nil && b == n {
		return true
	}
	if o == nil {
		return false
	}
	return o.exact[n] || o.anyPort[withoutPort(n)]
}

// withoutPort is a normal origin without its port.
func withoutPort(n string) string {
	u, err := url.Parse(n)
	if err != nil {
		return n
	}
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return u.Scheme + "://" + host
}

// baseOrigin cuts the path off a base URL.
func baseOrigin(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// withCORS is the browser part of /mcp in front of next: an Origin that is not allowed is
// refused with 403 before anything else; an allowed one gets the CORS headers on every answer
// (the 401 included, so that the page can read its challenge), and its preflight is answered
// here. Every answer varies by Origin.
func withCORS(origins *Origins, base func() string, refused func(reason string), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin != "" {
			if !origins.Allowed(origin, base()) {
				refused("origin")
				writeJSONRPCError(w, http.StatusForbidden, nil, codeForbidden,
					fmt.Sprintf("Origin %s is not allowed to call this MCP endpoint (--cors-origins)", origin), nil)
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		if r.Method == http.MethodOptions {
			h.Set("Allow", corsMethods)
			if origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", corsMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
				h.Set("Access-Control-Max-Age", corsMaxAge)
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
