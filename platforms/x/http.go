package x

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// defaultRateWindow is assumed when a 429 says nothing about its reset: X's windows are 15 minutes.
const defaultRateWindow = 15 * time.Minute

// apiError is the union of X's error bodies: v2 problem JSON, v1.1-style errors, and OAuth errors.
type apiError struct {
	Title  string `json:"title"`
	Type   string `json:"type"`
	Detail string `json:"detail"`
	Errors []struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	} `json:"errors"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// message and code extract what X said from an error body.
func (e apiError) message() string {
	var parts []string
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	} else if e.Title != "" {
		parts = append(parts, e.Title)
	}
	for _, m := range e.Errors {
		if m.Message != "" && m.Message != e.Detail {
			parts = append(parts, m.Message)
		}
	}
	if e.ErrorDescription != "" {
		parts = append(parts, e.ErrorDescription)
	} else if e.Error != "" {
		parts = append(parts, e.Error)
	}
	return strings.Join(parts, "; ")
}

func (e apiError) code() string {
	for _, m := range e.Errors {
		if c := strings.Trim(string(m.Code), `"`); c != "" {
			return c
		}
	}
	if e.Error != "" {
		return e.Error
	}
	if i := strings.LastIndex(e.Type, "/problems/"); i >= 0 {
		return e.Type[i+len("/problems/"):]
	}
	return ""
}

// classify turns a non-2xx answer into a classified error: 401 AuthExpired (X has no distinct
// "expired" code: refresh once, then reconnect), 429 RateLimited with the reset X announced, 5xx
// Transient (Unknown on the post-creating call), any other status Permanent with X's message.
func classify(r *platforms.Answer, create bool) *platforms.Error {
	var body apiError
	_ = json.Unmarshal(r.Body, &body)
	msg := body.message()
	if msg == "" {
		msg = strings.TrimSpace(http.StatusText(r.Status))
	}
	e := &platforms.Error{Platform: platforms.X, Status: r.Status, Code: body.code(), Message: msg}
	switch {
	case r.Status == http.StatusUnauthorized:
		e.Kind = platforms.AuthExpired
	case r.Status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = rateReset(r.Header)
	case r.Status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message = "X answered " + strconv.Itoa(r.Status) + " to the post; it may exist: " + msg
	case r.Status >= 500:
		e.Kind = platforms.Transient
	default:
		e.Kind = platforms.Permanent
	}
	return e
}

// rateReset is when a 429 lifts: the latest reset among the windows X reports exhausted (the
// 15-minute x-rate-limit-* window and the 24-hour x-user-limit-24hour-* / x-app-limit-24hour-*
// windows), else the 15-minute reset, else 15 minutes from now.
func rateReset(h http.Header) time.Time {
	var reset time.Time
	for _, p := range []string{"x-rate-limit", "x-user-limit-24hour", "x-app-limit-24hour"} {
		if t, ok := epoch(h.Get(p + "-reset")); ok && h.Get(p+"-remaining") == "0" && t.After(reset) {
			reset = t
		}
	}
	if !reset.IsZero() {
		return reset
	}
	if t, ok := epoch(h.Get("x-rate-limit-reset")); ok {
		return t
	}
	return time.Now().Add(defaultRateWindow)
}

func epoch(v string) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// rateInfo reads the x-rate-limit-* headers of an answer.
func rateInfo(h http.Header) platforms.RateInfo {
	limit, err1 := strconv.Atoi(h.Get("x-rate-limit-limit"))
	remaining, err2 := strconv.Atoi(h.Get("x-rate-limit-remaining"))
	reset, ok := epoch(h.Get("x-rate-limit-reset"))
	if err1 != nil || err2 != nil || !ok {
		return platforms.RateInfo{}
	}
	return platforms.RateInfo{Limit: limit, Remaining: remaining, Reset: reset, Known: true}
}

// errorBody reports a 2xx answer that carries only errors (X's partial-error shape without data).
func errorBody(r *platforms.Answer) *platforms.Error {
	var body apiError
	if json.Unmarshal(r.Body, &body) != nil || (len(body.Errors) == 0 && body.Detail == "" && body.Error == "") {
		return nil
	}
	return &platforms.Error{Platform: platforms.X, Kind: platforms.Permanent, Status: r.Status, Code: body.code(), Message: body.message()}
}
