package webhook

import (
	"errors"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// Host is a URL's host as the delivery client and the system's resolver read it: an address
// (Addr valid) or a host name (Name: lower-case ASCII, without a trailing dot).
type Host struct {
	Name string
	Addr netip.Addr
}

// IsAddr reports whether the host is an IP address, however it was spelled.
func (h Host) IsAddr() bool { return h.Addr.IsValid() }

// String is the host's canonical form: the address (IPv6 without brackets) or the name.
func (h Host) String() string {
	if h.IsAddr() {
		return h.Addr.String()
	}
	return h.Name
}

// ErrHost is a host that is neither an IP address nor a host name.
var ErrHost = errors.New("not a valid host")

// ParseHost reads a URL's host (url.URL.Hostname: no port, IPv6 without its brackets) the way
// the client that delivers and the resolver it asks will read it, so that every spelling of an
// address is checked as that address:
//
//   - A host with a colon is an IPv6 literal ([::1], [::ffff:127.0.0.1], [0:0:0:0:0:0:0:1]).
//   - A host with a non-ASCII character is mapped to ASCII by IDNA (UTS #46, the lookup profile
//     net/http applies before it dials): full-width digits and letters become ASCII, and the
//     full-width and ideographic full stops (U+FF0E, U+3002, U+FF61) become dots, so
//     １２７.０.０.１ and 127。0。0。1 are 127.0.0.1. A host IDNA refuses is refused.
//   - The host is lower-cased and one trailing dot dropped (localhost. is localhost; the dot
//     only marks the name as absolute, and resolvers read both alike).
//   - A host whose last label is a number (all decimal digits, or 0x and hex digits) is an IPv4
//     address read as inet_aton(3) reads it, and refused if it is not one: 1 to 4 parts
//     separated by dots, each decimal, octal (a leading 0) or hexadecimal (0x), the last part
//     filling the remaining bytes. 127.1, 0x7f.1, 0177.0.0.1 and 2130706433 are 127.0.0.1.
//     This is also how the WHATWG URL standard, and so browsers, read such hosts.
//
// Anything else is a host name.
func ParseHost(raw string) (Host, error) {
	if raw == "" {
		return Host{}, ErrHost
	}
	if strings.Contains(raw, ":") {
		a, err := netip.ParseAddr(raw)
		if err != nil {
			return Host{}, ErrHost
		}
		return Host{Addr: a}, nil
	}
	h := raw
	if !isASCII(h) {
		var err error
		if h, err = idna.Lookup.ToASCII(h); err != nil {
			return Host{}, ErrHost
		}
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return Host{}, ErrHost
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if endsInNumber(last) {
		a, ok := parseIPv4(h)
		if !ok {
			return Host{}, ErrHost
		}
		return Host{Addr: a}, nil
	}
	return Host{Name: h}, nil
}

// IsLocalName reports whether a host name is localhost or a name under it (RFC 6761: they
// resolve to loopback without asking DNS).
func (h Host) IsLocalName() bool {
	return h.Name == "localhost" || strings.HasSuffix(h.Name, ".localhost")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// endsInNumber reports whether a label is a number as inet_aton reads one: decimal digits, or 0x
// followed by hex digits (possibly none).
func endsInNumber(label string) bool {
	if label == "" {
		return false
	}
	if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
		for i := 2; i < len(label); i++ {
			if !isHex(label[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(label); i++ {
		if label[i] < '0' || label[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseIPv4 reads s as inet_aton(3) does: a, a.b, a.b.c or a.b.c.d, where every part but the last
// is one byte and the last fills the remaining 4, 3, 2 or 1 bytes.
func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, p := range parts {
		v, ok := parseNumber(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
	}
	if vals[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	v := vals[n-1]
	for i := 0; i < n-1; i++ {
		v |= vals[i] << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseNumber reads one part: 0x and hex digits (0x alone is 0), a leading 0 and octal digits,
// or decimal digits. Values above 32 bits are refused.
func parseNumber(p string) (uint64, bool) {
	base := uint64(10)
	switch {
	case p == "":
		return 0, false
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		c := p[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}
