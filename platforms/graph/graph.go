// Package graph is the HTTP client the Facebook, Instagram and Threads adapters share. All three
// speak Meta's Graph API dialect: versioned paths, form-encoded parameters, the error envelope
// {"error":{"message","type","code","error_subcode","fbtrace_id","is_transient"}}, usage
// percentages in the X-App-Usage and X-Business-Use-Case-Usage headers, and media containers that
// are created, polled until FINISHED and then published.
//
// The package turns every answer into either a decoded value or a *platforms.Error classified by
// Kind: code 190 is AuthExpired; the throttling codes 4, 9, 17, 32, 341, 613 and 80001-80009 are
// RateLimited with ResetAt taken from estimated_time_to_regain_access; is_transient and codes 1
// and 2 are Transient; everything else the network refuses is Permanent with its message. A call
// marked as creating the post answers Unknown instead of Transient whenever the post may exist: a
// 5xx, a connection lost after the request was written, or an unreadable 2xx body.
package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// DefaultRateLimitWait is the reset assumed when a throttled answer does not say when access
// returns (Graph platform limits roll over one hour).
const DefaultRateLimitWait = time.Hour

// maxBody bounds how much of an answer is read.
const maxBody = 8 << 20

// DefaultHTTPClient returns the client adapters use when the configuration has none: bounded
// dialing, TLS handshakes and waits for response headers, but no overall deadline, so that large
// uploads are not cut short (the caller's context bounds the whole call).
func DefaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: t}
}

// Client makes Graph API calls for one platform.
type Client struct {
	Platform platforms.Platform
	HTTP     *http.Client
}

// Call is one Graph API request.
type Call struct {
	Method string
	// URL is absolute; Params are added to its query for GET and DELETE and sent as a form body
	// for POST unless Body is set.
	URL    string
	Params url.Values
	// Token is sent as "Authorization: Bearer <token>" when not empty.
	Token string
	// Body and ContentType replace the form body (multipart uploads).
	Body        io.Reader
	ContentType string
	// ContentLength is the length of Body when known (0 or less: unknown, sent chunked).
	ContentLength int64
	// Create marks the call that creates the post: failures after which the post may exist are
	// Unknown rather than Transient.
	Create bool
	// Header are further request headers (an upload host's own, such as offset and file_size).
	Header http.Header
}

// Response is a successful answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Rate   platforms.RateInfo
}

// Do makes the call and decodes a successful JSON answer into out (when not nil). Every failure is
// a *platforms.Error.
func (c *Client) Do(ctx context.Context, call Call, out any) (Response, error) {
	req, err := c.request(ctx, call)
	if err != nil {
		return Response{}, err
	}
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			wrote.Store(true)
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	hc := c.HTTP
	if hc == nil {
		hc = DefaultHTTPClient()
	}
	if err := platforms.Gate(ctx); err != nil {
		return Response{}, c.transportError(call, false, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Response{}, c.transportError(call, wrote.Load(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return Response{}, c.transportError(call, true, err)
	}
	now := time.Now()
	rate, _ := ParseUsage(resp.Header, now)
	if e := Classify(c.Platform, resp.StatusCode, resp.Header, body, call.Create, now); e != nil {
		return Response{}, e
	}
	r := Response{Status: resp.StatusCode, Header: resp.Header, Body: body, Rate: rate}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return Response{}, garbage(c.Platform, resp.StatusCode, call, err)
		}
	}
	return r, nil
}

func (c *Client) request(ctx context.Context, call Call) (*http.Request, error) {
	u := call.URL
	var body io.Reader
	contentType := call.ContentType
	switch {
	case call.Body != nil:
		body = call.Body
		if len(call.Params) > 0 {
			u = addQuery(u, call.Params)
		}
	case call.Method == http.MethodPost && len(call.Params) > 0:
		body = strings.NewReader(call.Params.Encode())
		contentType = "application/x-www-form-urlencoded"
	case len(call.Params) > 0:
		u = addQuery(u, call.Params)
	}
	req, err := http.NewRequestWithContext(ctx, call.Method, u, body)
	if err != nil {
		return nil, &platforms.Error{Platform: c.Platform, Kind: platforms.Permanent, Message: "cannot build the request: " + redact(err.Error()), Err: err}
	}
	if call.Body != nil && call.ContentLength > 0 {
		req.ContentLength = call.ContentLength
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if call.Token != "" {
		req.Header.Set("Authorization", "Bearer "+call.Token)
	}
	for k, v := range call.Header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	return req, nil
}

func addQuery(u string, params url.Values) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + params.Encode()
}

// transportError classifies a failure to get an answer. A post-creating call whose request was
// written may have created the post: Unknown. Anything else is Transient.
func (c *Client) transportError(call Call, wrote bool, err error) *platforms.Error {
	kind := platforms.Transient
	msg := "connection failed before the request was sent"
	if wrote {
		msg = "connection lost after the request was sent"
		if call.Create {
			kind = platforms.Unknown
			msg += "; the post may exist"
		}
	}
	var ue *url.Error
	detail := err
	if errors.As(err, &ue) {
		detail = ue.Err
	}
	return &platforms.Error{Platform: c.Platform, Kind: kind, Message: fmt.Sprintf("%s %s: %s: %s", call.Method, pathOf(call.URL), msg, redact(detail.Error())), Err: err}
}

func garbage(p platforms.Platform, status int, call Call, err error) *platforms.Error {
	kind := platforms.Transient
	msg := "unreadable answer"
	if call.Create {
		kind = platforms.Unknown
		msg = "unreadable answer to the post-creating call; the post may exist"
	}
	return &platforms.Error{Platform: p, Kind: kind, Status: status, Message: fmt.Sprintf("%s %s: %s", call.Method, pathOf(call.URL), msg), Err: err}
}

// Garbage classifies a 2xx answer that decoded but lacks what it must carry (an id).
func Garbage(p platforms.Platform, status int, create bool, what string) *platforms.Error {
	kind := platforms.Transient
	if create {
		kind = platforms.Unknown
		what += "; the post may exist"
	}
	return &platforms.Error{Platform: p, Kind: kind, Status: status, Message: what}
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	return u.Path
}

// redact replaces the values of secret query parameters in text that may contain a URL.
func redact(s string) string {
	for _, key := range []string{"access_token=", "fb_exchange_token=", "client_secret=", "code="} {
		var b strings.Builder
		rest := s
		for {
			i := strings.Index(rest, key)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			j := i + len(key)
			b.WriteString(rest[:j])
			k := j
			for k < len(rest) && rest[k] != '&' && rest[k] != ' ' && rest[k] != '"' {
				k++
			}
			if k > j {
				b.WriteString("REDACTED")
			}
			rest = rest[k:]
		}
		s = b.String()
	}
	return s
}

// Envelope is the Graph error object. Instagram's token host answers in an older shape
// ({"error_type","code","error_message"}), which Parse folds into the same fields.
type Envelope struct {
	Message     string `json:"message"`
	Type        string `json:"type"`
	Code        int    `json:"code"`
	Subcode     int    `json:"error_subcode"`
	UserTitle   string `json:"error_user_title"`
	UserMsg     string `json:"error_user_msg"`
	FBTraceID   string `json:"fbtrace_id"`
	IsTransient bool   `json:"is_transient"`
}

// ParseError extracts the error envelope from a body, reporting whether there was one.
func ParseError(body []byte) (Envelope, bool) {
	var raw struct {
		Error        json.RawMessage `json:"error"`
		ErrorType    string          `json:"error_type"`
		ErrorMessage string          `json:"error_message"`
		Code         json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Envelope{}, false
	}
	if len(raw.Error) > 0 && string(raw.Error) != "null" {
		var e Envelope
		if err := json.Unmarshal(raw.Error, &e); err == nil {
			return e, true
		}
		var s string
		if err := json.Unmarshal(raw.Error, &s); err == nil {
			return Envelope{Message: s}, true
		}
		return Envelope{Message: "unreadable error"}, true
	}
	if raw.ErrorType != "" || raw.ErrorMessage != "" {
		e := Envelope{Type: raw.ErrorType, Message: raw.ErrorMessage}
		_ = json.Unmarshal(raw.Code, &e.Code)
		return e, true
	}
	return Envelope{}, false
}

// throttleCodes are the Graph codes that mean a rate limit was reached: 4 application, 9 publishing
// quota (Instagram 2207042), 17 user, 32 Page, 341 application limit, 613 custom, 80001-80009
// business use case (Pages, Instagram, ...).
func isThrottle(code int) bool {
	switch code {
	case 4, 9, 17, 32, 341, 613:
		return true
	}
	return code >= 80000 && code <= 80099
}

// Classify turns an answer into a classified error, or nil when it is a success (2xx without an
// error envelope). create marks the post-creating call.
func Classify(p platforms.Platform, status int, h http.Header, body []byte, create bool, now time.Time) *platforms.Error {
	env, hasEnv := ParseError(body)
	if status >= 200 && status < 300 && !hasEnv {
		return nil
	}
	e := &platforms.Error{Platform: p, Status: status}
	if hasEnv {
		e.Message = env.Message
		if env.UserMsg != "" && env.UserMsg != env.Message {
			e.Message += ": " + env.UserMsg
		}
		if env.Code != 0 {
			e.Code = strconv.Itoa(env.Code)
		}
		if env.Subcode != 0 {
			e.Message += fmt.Sprintf(" (code %d, subcode %d)", env.Code, env.Subcode)
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(http.StatusText(status))
	}
	switch {
	case hasEnv && (env.Code == 190 || env.Code == 102):
		e.Kind = platforms.AuthExpired
	case hasEnv && isThrottle(env.Code), status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		_, reset := ParseUsage(h, now)
		if reset.IsZero() {
			reset = now.Add(DefaultRateLimitWait)
		}
		e.ResetAt = reset
	case status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message += "; the post may exist"
	case status >= 500:
		e.Kind = platforms.Transient
	case hasEnv && env.Subcode == 2207027:
		// Instagram: the container is not ready yet; nothing was published.
		e.Kind = platforms.Transient
	case hasEnv && (env.IsTransient || env.Code == 1 || env.Code == 2):
		e.Kind = platforms.Transient
		if create && status >= 200 && status < 300 {
			e.Kind = platforms.Unknown
		}
	case !hasEnv && status == http.StatusUnauthorized:
		e.Kind = platforms.AuthExpired
	default:
		// 4xx content and permission errors, duplicates (506), and 2xx bodies carrying an error.
		e.Kind = platforms.Permanent
	}
	return e
}

// ParseUsage reads X-App-Usage and X-Business-Use-Case-Usage. Graph reports usage as percentages,
// so the RateInfo has Limit 100 and Remaining 100 minus the highest percentage reported. reset is
// when the throttled caller regains access (estimated_time_to_regain_access, in minutes), zero when
// not said; it is also the RateInfo's Reset.
func ParseUsage(h http.Header, now time.Time) (info platforms.RateInfo, reset time.Time) {
	highest, regain, known := 0.0, 0.0, false
	note := func(m map[string]json.RawMessage) {
		for k, v := range m {
			var f float64
			if json.Unmarshal(v, &f) != nil {
				continue
			}
			switch k {
			case "call_count", "total_cputime", "total_time", "acc_id_util_pct":
				known = true
				highest = math.Max(highest, f)
			case "estimated_time_to_regain_access":
				regain = math.Max(regain, f)
			}
		}
	}
	if v := h.Get("X-App-Usage"); v != "" {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(v), &m) == nil {
			note(m)
		}
	}
	if v := h.Get("X-Business-Use-Case-Usage"); v != "" {
		var m map[string][]map[string]json.RawMessage
		if json.Unmarshal([]byte(v), &m) == nil {
			for _, list := range m {
				for _, entry := range list {
					note(entry)
				}
			}
		}
	}
	if regain > 0 {
		reset = now.Add(time.Duration(regain * float64(time.Minute)))
	}
	if !known {
		return platforms.RateInfo{Reset: reset, Known: !reset.IsZero()}, reset
	}
	remaining := 100 - int(math.Ceil(highest))
	if remaining < 0 {
		remaining = 0
	}
	return platforms.RateInfo{Limit: 100, Remaining: remaining, Reset: reset, Known: true}, reset
}

// ID is a Graph id, which some endpoints send as a JSON number and others as a string.
type ID string

// UnmarshalJSON accepts a string or a number.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ID(s)
		return nil
	}
	if string(b) == "null" {
		*id = ""
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("graph id: %w", err)
	}
	*id = ID(n.String())
	return nil
}

// ParseTime reads a Graph timestamp ("2006-01-02T15:04:05+0000", or RFC 3339).
func ParseTime(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02T15:04:05-0700", s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}

// Token is a token endpoint's answer.
type Token struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	UserID      ID     `json:"user_id"`
}

// Expiry is when a token answered at now expires; zero when the answer said nothing.
func (t Token) Expiry(now time.Time) time.Time {
	if t.ExpiresIn <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(t.ExpiresIn) * time.Second).UTC()
}

// ReconnectError turns a failed token refresh into the error the account actor acts on: an
// expired, revoked or unusable token cannot be refreshed any more, so the account must be
// reconnected (Permanent); transient failures stay retryable.
func ReconnectError(err error) error {
	var e *platforms.Error
	if !errors.As(err, &e) {
		return err
	}
	if e.Kind == platforms.AuthExpired || e.Kind == platforms.Permanent {
		c := *e
		c.Kind = platforms.Permanent
		c.Message = "the token can no longer be refreshed, reconnect the account: " + e.Message
		return &c
	}
	return err
}
