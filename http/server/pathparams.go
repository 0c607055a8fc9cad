package server

import (
	"net/url"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
)

// MaxPathParam is the longest path parameter (decoded, in bytes) a route accepts. Herald's ids
// are 36-character UUIDs; the networks' ids (a Bluesky at:// URI, a YouTube comment id) are far
// shorter than this.
const MaxPathParam = 512

// Path parameters are percent-decoded once, here, for every route, so that a handler reads the
// value the client meant: a Bluesky comment id sent as at%3A%2F%2Fdid%3Aplc%3A… (as every HTTP
// client must send it) reaches its handler as at://did:plc:….
//
// Go's server keeps two forms of the path: URL.Path, decoded, and URL.RawPath, the form the
// client sent, set only when it differs from Path's default encoding. Echo routes on RawPath when
// it is set and on Path otherwise, and does not decode parameters, so a handler would get an
// encoded value in the first case and a decoded one in the second; decoding it again would turn
// a literal %25 into % and then decode what follows it. escapedPath (before routing) makes Echo
// always route on the escaped form — so %2F inside a parameter never splits the path — and
// decodePathParams (after routing) decodes every parameter exactly once.

// escapedPath sets URL.RawPath to the escaped form of the path when Go left it empty. A RawPath
// that is set is kept as it is, even when it is not a valid encoding (Go's server refuses such a
// request line itself; a request built in process may still carry one), so that
// decodePathParams refuses it.
func escapedPath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if u := c.Request().URL; u.RawPath == "" {
			u.RawPath = u.EscapedPath()
		}
		return next(c)
	}
}

// decodePathParams decodes the route's parameters once and refuses, with 400 validation_error,
// a parameter that is not valid percent-encoding, is not UTF-8, holds a control character (%00,
// a line break...) or is longer than MaxPathParam. Nothing else runs for a refused request.
func decodePathParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		values := c.PathValues()
		if len(values) == 0 {
			return next(c)
		}
		decoded := make(echo.PathValues, len(values))
		for i, p := range values {
			v, err := url.PathUnescape(p.Value)
			if err != nil {
				return apierr.Validation("%s: invalid percent-encoding in the path (a %% must be followed by two hexadecimal digits; send a literal %% as %%25)", p.Name)
			}
			if err := checkPathParam(v); err != "" {
				return apierr.Validation("%s: %s", p.Name, err)
			}
			decoded[i] = echo.PathValue{Name: p.Name, Value: v}
		}
		c.SetPathValues(decoded)
		return next(c)
	}
}

// checkPathParam says what is wrong with a decoded parameter, or "".
func checkPathParam(v string) string {
	if len(v) > MaxPathParam {
		return "too long (at most 512 bytes once decoded)"
	}
	if !utf8.ValidString(v) {
		return "not valid UTF-8 once decoded"
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return "contains a control character (such as %00 or a line break)"
		}
	}
	return ""
}
