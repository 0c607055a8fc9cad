package youtube

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	_ "time/tzdata" // the quota day is America/Los_Angeles wherever Herald runs

	"github.com/heraldhq/herald/platforms"
)

// googleError is Google's JSON error, and the OAuth endpoints' {error, error_description}.
type googleError struct {
	Error json.RawMessage `json:"error"`
	// ErrorDescription is set by the OAuth endpoints.
	ErrorDescription string `json:"error_description"`
}

type googleAPIError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Errors  []struct {
		Domain  string `json:"domain"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"errors"`
}

// parseError extracts the reason (or OAuth error code) and the message of an error body.
func parseError(body []byte) (reason, message string) {
	var ge googleError
	if json.Unmarshal(body, &ge) != nil || len(ge.Error) == 0 {
		return "", ""
	}
	var oauthCode string
	if json.Unmarshal(ge.Error, &oauthCode) == nil {
		return oauthCode, ge.ErrorDescription
	}
	var api googleAPIError
	if json.Unmarshal(ge.Error, &api) != nil {
		return "", ""
	}
	message = api.Message
	for _, e := range api.Errors {
		if e.Reason != "" {
			reason = e.Reason
			if message == "" {
				message = e.Message
			}
			break
		}
	}
	if reason == "" {
		reason = api.Status
	}
	return reason, message
}

// classify turns a non-2xx answer into a classified error: 401 (authError "Invalid Credentials")
// AuthExpired; quotaExceeded and dailyLimitExceeded RateLimited until the next midnight Pacific
// time; the per-user throttles (rateLimitExceeded, userRateLimitExceeded, 429) RateLimited for a
// short while; uploadLimitExceeded RateLimited for 24 hours; 5xx (backendError) Transient, or
// Unknown on the video-creating call; any other status Permanent with Google's message.
func classify(r *platforms.Answer, create bool) *platforms.Error {
	reason, msg := parseError(r.Body)
	if msg == "" {
		msg = strings.TrimSpace(http.StatusText(r.Status))
	}
	e := &platforms.Error{Platform: platforms.YouTube, Status: r.Status, Code: reason, Message: msg}
	switch {
	case r.Status == http.StatusUnauthorized:
		e.Kind = platforms.AuthExpired
	case reason == "quotaExceeded" || reason == "dailyLimitExceeded":
		e.Kind = platforms.RateLimited
		e.ResetAt = QuotaReset(time.Now())
	case reason == "uploadLimitExceeded":
		e.Kind = platforms.RateLimited
		e.ResetAt = time.Now().Add(24 * time.Hour)
	case reason == "rateLimitExceeded" || reason == "userRateLimitExceeded" || r.Status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = retryAfter(r.Header, time.Now().Add(100*time.Second))
	case r.Status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message = "YouTube answered " + strconv.Itoa(r.Status) + " to the last chunk of the video; the video may exist: " + msg
	case r.Status >= 500:
		e.Kind = platforms.Transient
	default:
		e.Kind = platforms.Permanent
	}
	return e
}

// retryAfter reads a Retry-After header in seconds, else def.
func retryAfter(h http.Header, def time.Time) time.Time {
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && n >= 0 {
		return time.Now().Add(time.Duration(n) * time.Second)
	}
	return def
}

var pacific = loadPacific()

func loadPacific() *time.Location {
	if loc, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return loc
	}
	return time.FixedZone("PST", -8*3600)
}

// QuotaReset is when YouTube's daily quota next resets after t: midnight Pacific time.
func QuotaReset(t time.Time) time.Time {
	lt := t.In(pacific)
	y, m, d := lt.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, pacific)
}

// invalidBody is the error for a 2xx answer that does not say what it should.
func invalidBody(status int, what string, create bool) *platforms.Error {
	if create {
		return &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Unknown, Status: status,
			Message: "YouTube's answer to the last chunk of the video is not the video resource (" + what + "); the video may exist"}
	}
	return &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Transient, Status: status,
		Message: "YouTube's answer is not what the API documents: " + what}
}
