package pinterest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// defaultRateWindow is assumed when a 429 says nothing about its reset: Pinterest's category
// limits are per minute.
const defaultRateWindow = time.Minute

// apiError is Pinterest's error body {"code": <int>, "message": "…"}.
type apiError struct {
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// parseError extracts Pinterest's code and message; ok is false when the body is not an error.
func parseError(body []byte) (code, message string, ok bool) {
	var e apiError
	if json.Unmarshal(body, &e) != nil || (len(e.Code) == 0 && e.Message == "") {
		return "", "", false
	}
	return strings.Trim(string(e.Code), `"`), e.Message, true
}

// classify turns a non-2xx answer into a classified error: 401 (code 2 "Authentication failed.")
// AuthExpired; 429 RateLimited with the reset the headers give, else a minute from now; 5xx
// Transient, or Unknown on the Pin-creating call; any other status Permanent with Pinterest's
// message.
func classify(r *platforms.Answer, create bool) *platforms.Error {
	code, msg, _ := parseError(r.Body)
	if msg == "" {
		msg = strings.TrimSpace(http.StatusText(r.Status))
	}
	e := &platforms.Error{Platform: platforms.Pinterest, Status: r.Status, Code: code, Message: msg}
	switch {
	case r.Status == http.StatusUnauthorized:
		e.Kind = platforms.AuthExpired
	case r.Status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = rateReset(r.Header)
	case r.Status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message = "Pinterest answered " + strconv.Itoa(r.Status) + " to the Pin; it may exist: " + msg
	case r.Status >= 500:
		e.Kind = platforms.Transient
	default:
		e.Kind = platforms.Permanent
	}
	return e
}

// rateInfo reads the X-RateLimit-* headers where Pinterest sends them.
func rateInfo(h http.Header) platforms.RateInfo {
	limit, err1 := strconv.Atoi(firstValue(h.Get("X-RateLimit-Limit")))
	remaining, err2 := strconv.Atoi(firstValue(h.Get("X-RateLimit-Remaining")))
	if err1 != nil || err2 != nil {
		return platforms.RateInfo{}
	}
	ri := platforms.RateInfo{Limit: limit, Remaining: remaining, Known: true}
	if t, ok := resetHeader(h.Get("X-RateLimit-Reset")); ok {
		ri.Reset = t
	}
	return ri
}

// firstValue is the first number of a header such as "100, 100;w=1".
func firstValue(v string) string {
	v, _, _ = strings.Cut(v, ",")
	v, _, _ = strings.Cut(v, ";")
	return strings.TrimSpace(v)
}

// rateReset is when a 429 lifts: Retry-After, else X-RateLimit-Reset, else a minute from now.
func rateReset(h http.Header) time.Time {
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && n >= 0 {
		return time.Now().Add(time.Duration(n) * time.Second)
	}
	if t, ok := resetHeader(h.Get("X-RateLimit-Reset")); ok {
		return t
	}
	return time.Now().Add(defaultRateWindow)
}

// resetHeader reads a reset given as epoch seconds or as seconds from now.
func resetHeader(v string) (time.Time, bool) {
	n, err := strconv.ParseInt(firstValue(v), 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, false
	}
	if n > 1_000_000_000 {
		return time.Unix(n, 0), true
	}
	return time.Now().Add(time.Duration(n) * time.Second), true
}

// invalidBody is the error for a 2xx answer that does not say what it should.
func invalidBody(status int, what string, create bool) *platforms.Error {
	if create {
		return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Unknown, Status: status,
			Message: "Pinterest's answer to the Pin is not a Pin (" + what + "); it may exist"}
	}
	return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Transient, Status: status,
		Message: "Pinterest's answer is not what the API documents: " + what}
}
