package oauth

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/actors/webhook"
)

// Redirect URIs, as registered and as requested (RFC 8252 for native applications):
//
//   - https to a host name or an IP address, any port;
//   - http on loopback only (127.0.0.1, [::1], localhost), and a registered loopback URI matches
//     a request on any port (RFC 8252 7.3: the client listens on whatever port is free);
//   - a private-use scheme (RFC 8252 7.1), in reverse-domain form (com.example.app:/cb) or a
//     single-label application scheme (cursor://anysphere.cursor-retrieval/…), never one that a
//     browser or the system gives another meaning (javascript:, data:, file:, ftp:, mailto: …).
//
// A host is parsed and checked as a host name (letters, digits and hyphens in dot-separated
// labels: no wildcard, no percent-encoding) or an IP address; no URI has a user name, a password
// or a fragment. Only what passes these checks reaches the consent page's Content-Security-Policy
// (formAction).

// maxRedirectURI caps one redirect URI's length.
const maxRedirectURI = 2000

// deniedSchemes are schemes that are never a private-use redirect: the web's own, and those a
// browser or the system runs, reads or hands to another program.
var deniedSchemes = map[string]bool{
	"javascript": true, "vbscript": true, "data": true, "blob": true, "file": true, "filesystem": true,
	"about": true, "view-source": true, "ftp": true, "ws": true, "wss": true, "mailto": true, "tel": true,
	"sms": true, "jar": true, "urn": true, "gopher": true, "intent": true, "content": true, "http": true,
	"https": true,
}

// redirect is a redirect URI that passed the checks.
type redirect struct {
	u        *url.URL
	loopback bool   // http on a loopback host
	private  bool   // a private-use scheme
	host     string // the host as checked (lower case, IPv6 without brackets); "" for none
}

// parseRedirect checks a redirect URI; on refusal it returns why.
func parseRedirect(raw string) (*redirect, string) {
	q := strconv.Quote(raw)
	if len(raw) > maxRedirectURI {
		return nil, "redirect_uris: a URI is longer than " + strconv.Itoa(maxRedirectURI) + " characters"
	}
	if raw == "" || strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, " \t\r\n\\") {
		return nil, "redirect_uris: " + q + " is not an absolute URI"
	}
	if strings.Contains(raw, "#") {
		return nil, "redirect_uris: " + q + " has a fragment"
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, "redirect_uris: " + q + " is not an absolute URI"
	}
	if u.User != nil {
		return nil, "redirect_uris: " + q + " has a user name or password"
	}
	r := &redirect{u: u}
	if u.Host != "" {
		h, why := checkHost(u)
		if why != "" {
			return nil, "redirect_uris: " + q + " " + why
		}
		r.host = h
	}
	switch u.Scheme {
	case "https":
		if r.host == "" {
			return nil, "redirect_uris: " + q + " has no host"
		}
		return r, ""
	case "http":
		switch r.host {
		case "127.0.0.1", "::1", "localhost":
			r.loopback = true
			return r, ""
		}
		return nil, "redirect_uris: " + q + " is plain http to a host other than loopback (127.0.0.1, [::1], localhost); use https"
	}
	if !validScheme(u.Scheme) || deniedSchemes[u.Scheme] {
		return nil, "redirect_uris: " + q + " must be https, http on loopback, or an application's own scheme (com.example.app:/callback)"
	}
	r.private = true
	return r, ""
}

// checkHost checks a URI's host and port; it returns the host as checked, or why it is refused.
func checkHost(u *url.URL) (string, string) {
	written := u.Hostname()
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return "", "has an invalid port"
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", "has an invalid port"
	}
	if strings.Contains(written, "%") {
		return "", "has an IPv6 zone or an escaped host"
	}
	h, err := webhook.ParseHost(written)
	if err != nil {
		return "", "has an invalid host"
	}
	if h.IsAddr() {
		if written != h.String() || h.Addr.Zone() != "" {
			return "", "has an IP address not in its usual notation"
		}
		return h.String(), ""
	}
	// ParseHost lower-cases and maps to ASCII; what is left must be a host name as DNS knows it.
	if written != h.Name || !hostName(h.Name) {
		return "", "has a host that is not a host name (letters, digits, hyphens and dots, in lower case)"
	}
	return h.Name, ""
}

// hostName reports whether s is a host name: dot-separated labels of 1 to 63 letters, digits
// and hyphens, neither starting nor ending with a hyphen, 253 characters at most.
func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// validScheme reports whether s is a URI scheme (RFC 3986 3.1) as url.Parse leaves it: lower
// case, a letter then letters, digits, "+", "-" or ".".
func validScheme(s string) bool {
	if s == "" || len(s) > 100 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// checkRedirectURI returns why a redirect URI cannot be registered, or "".
func checkRedirectURI(raw string) string {
	_, why := parseRedirect(raw)
	return why
}

// redirectMatches reports whether a requested redirect URI matches a registered one: the same
// string, or, for loopback http, the same URI on another port (RFC 8252 7.3).
func redirectMatches(registered, requested string) bool {
	if registered == requested {
		return true
	}
	reg, why := parseRedirect(registered)
	if why != "" || !reg.loopback {
		return false
	}
	req, why := parseRedirect(requested)
	if why != "" || !req.loopback {
		return false
	}
	return reg.host == req.host && reg.u.Hostname() == req.u.Hostname() && reg.u.EscapedPath() == req.u.EscapedPath() &&
		reg.u.RawQuery == req.u.RawQuery && !req.u.ForceQuery && !reg.u.ForceQuery
}

// formAction is the CSP source that lets the consent form's redirect reach a checked redirect
// URI: scheme://host[:port] for http and https, scheme: for a private-use scheme. It is built
// only from the checked parts, and refused ("") if anything but those parts would reach the
// header.
func (r *redirect) formAction() string {
	var src string
	switch {
	case r.private:
		src = r.u.Scheme + ":"
	default:
		host := r.host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		src = r.u.Scheme + "://" + host
		if p := r.u.Port(); p != "" {
			src += ":" + p
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("+-.:/[]", c) >= 0) {
			return ""
		}
	}
	return src
}

// display is where the consent page says the user returns: the host (and port) of an http or
// https URI, the scheme and host of an application's own.
func (r *redirect) display() string {
	if r.private {
		if r.host != "" {
			return "the application at " + r.u.Scheme + "://" + r.u.Host
		}
		return "the application at " + r.u.Scheme + ":"
	}
	return r.u.Host
}
