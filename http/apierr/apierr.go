// Package apierr is Herald's error contract at the HTTP edge: the spec's error body
// {"error":{"code","message","details"?}}, which also carries the RFC 9457 members type, title,
// status and detail, so that one body serves clients of either convention.
package apierr

import (
	"fmt"
	"net/http"
	"strconv"
)

// Error codes, the full set of the spec.
const (
	CodeInvalidAPIKey       = "invalid_api_key"
	CodeAPIKeyRevoked       = "api_key_revoked"
	CodeAPIKeyExpired       = "api_key_expired"
	CodeUnauthorized        = "unauthorized"
	CodeForbidden           = "forbidden"
	CodeNotFound            = "not_found"
	CodeValidation          = "validation_error"
	CodeRateLimitExceeded   = "rate_limit_exceeded"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeLimitExceeded       = "limit_exceeded"
	CodeNotImplemented      = "not_implemented"
	CodeInternal            = "internal_error"
)

// Error is an API error: an HTTP status, a code, a message that is safe to show, and optional
// details.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	// Header holds extra response headers (WWW-Authenticate, Retry-After...).
	Header http.Header
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// StatusCode lets Echo read the status.
func (e *Error) StatusCode() int { return e.Status }

// New builds an error.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns e with details.
func (e *Error) WithDetails(d map[string]any) *Error { e.Details = d; return e }

// WithHeader returns e with a response header.
func (e *Error) WithHeader(k, v string) *Error {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Set(k, v)
	return e
}

// Validation is a 400 validation_error.
func Validation(format string, args ...any) *Error {
	return New(http.StatusBadRequest, CodeValidation, format, args...)
}

// NotFound is a 404 not_found.
func NotFound(what string) *Error {
	return New(http.StatusNotFound, CodeNotFound, "%s not found", what)
}

// Forbidden is a 403 forbidden: an object of another user, or of another workspace of the
// user (the same answer, so that it tells neither apart).
func Forbidden(what string) *Error {
	return New(http.StatusForbidden, CodeForbidden, "%s belongs to another user or workspace", what)
}

// Internal is a 500 internal_error with no detail of the cause.
func Internal() *Error {
	return New(http.StatusInternalServerError, CodeInternal, "internal server error; the request id identifies it in the server logs")
}

// RetryAfterSeconds is the Retry-After of a 503.
const RetryAfterSeconds = 1

// Unavailable is a 503 for a server that cannot answer now (an actor or a network did not answer
// in time, start-up, shutdown). The spec has no code of its own for it, so the code is
// internal_error; the 503 status and the Retry-After header (seconds) tell the client that a
// retry may succeed, and msg says what happened.
func Unavailable(msg string) *Error {
	return New(http.StatusServiceUnavailable, CodeInternal, "%s", msg).WithHeader("Retry-After", strconv.Itoa(RetryAfterSeconds))
}

// Body is the JSON error body.
type Body struct {
	Error  Inner  `json:"error"`
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// Inner is the spec's error object.
type Inner struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Body renders the error.
func (e *Error) Body() Body {
	return Body{
		Error:  Inner{Code: e.Code, Message: e.Message, Details: e.Details},
		Type:   "urn:herald:problem:" + e.Code,
		Title:  http.StatusText(e.Status),
		Status: e.Status,
		Detail: e.Message,
	}
}

// AccountNotYours is the one refusal of a connected account the caller may not use, named by the
// request field that carried it: an unknown id and another user's account answer alike, so that
// the answer does not tell whether the account exists.
func AccountNotYours(field, id string) *Error {
	return Validation("%s: connected account %s does not exist or is not yours", field, id)
}

// MediaNotYours is the one refusal of a media id the caller may not use: unknown, another user's,
// or an upload never confirmed.
func MediaNotYours(field, id string) *Error {
	return Validation("%s: %s is not a confirmed media of yours", field, id)
}
