package platforms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Kind classifies a failed network call so that the account actor can decide what to do by type,
// never by matching strings.
type Kind int

const (
	// Transient failures (5xx, connection refused before sending, "is_transient") may be retried
	// with backoff.
	Transient Kind = iota + 1
	// RateLimited means the network refused because a limit was reached; ResetAt says when it
	// resets, when the network said.
	RateLimited
	// AuthExpired means the access token is expired or invalid: refresh, then retry once.
	AuthExpired
	// Permanent failures will fail again the same way (content refused, duplicate, permission
	// missing); the network's message says why.
	Permanent
	// Unknown means the request may have reached the network and the outcome is not known
	// (timeout after sending, an error after the post was created). Never repeat blindly.
	Unknown
	// Invalid means the post breaks the network's content rules; found before any network call.
	Invalid
)

func (k Kind) String() string {
	switch k {
	case Transient:
		return "transient"
	case RateLimited:
		return "rate_limited"
	case AuthExpired:
		return "auth_expired"
	case Permanent:
		return "permanent"
	case Unknown:
		return "unknown_outcome"
	case Invalid:
		return "invalid"
	}
	return "error"
}

// Error is a classified network failure.
type Error struct {
	Kind     Kind
	Platform Platform
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Code is the network's own error code, when it sent one ("88", "190", "ExpiredToken"...).
	Code string
	// Message is the network's message, safe to show to the user.
	Message string
	// ResetAt is when a rate limit resets (RateLimited only; zero when unknown).
	ResetAt time.Time
	Err     error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d): %s", e.Platform, e.Kind, e.Status, msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Platform, e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a classified error; an unclassified error counts as Transient.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Transient
}

// IsRetryable reports whether the same call may be repeated after a backoff.
func IsRetryable(err error) bool { return KindOf(err) == Transient }

// ErrLookupUnsupported is returned by Adapter.Lookup for networks that offer no way to find a
// post after the fact.
var ErrLookupUnsupported = errors.New("platforms: the network offers no post lookup")

// ErrLookupIncomplete is returned by Adapter.Lookup when it read as far back through the account's
// posts as it may (its page bound) without reaching the time it looks from: the post may be
// further back, so it is neither found nor known to be absent, and the attempt is never sent
// again on its strength. An account that publishes much within a few minutes pushes an attempt's
// post past the bound.
var ErrLookupIncomplete = errors.New("platforms: the lookup did not reach back to the attempt")

// LookupIncomplete is the ErrLookupIncomplete of a lookup that read pages pages of p's listing.
func LookupIncomplete(p Platform, pages int) error {
	return &Error{Platform: p, Kind: Permanent, Err: ErrLookupIncomplete,
		Message: fmt.Sprintf("%d pages of the account's posts, newest first, did not reach back to the time of the attempt", pages)}
}

// Errorf builds a classified error.
func Errorf(p Platform, k Kind, status int, format string, args ...any) *Error {
	return &Error{Platform: p, Kind: k, Status: status, Message: fmt.Sprintf(format, args...)}
}

// ErrNotFound is returned by read calls for an object the account cannot see (a comment, a
// conversation).
var ErrNotFound = errors.New("platforms: not found")

// ErrUnconvertible matches the errors of Media.Conform for a file that can never be converted for
// the network (corrupt, not an image, too large to decode); other Conform errors (storage
// unreachable) may pass on a retry.
var ErrUnconvertible = errors.New("platforms: the media cannot be converted")

// ErrNotLiked is returned by Liker.LikeComment when asked to unlike a comment the account has not
// liked; nothing was sent.
var ErrNotLiked = errors.New("platforms: the account has not liked it")

// Garbled classifies a 2xx answer whose body is not what network p sends. On the call that creates
// the post the post probably exists but its id is unknown, so the outcome is Unknown (Lookup
// resolves it); elsewhere the answer is Transient.
func Garbled(p Platform, a *Answer, create bool, err error) *Error {
	kind := Transient
	if create {
		kind = Unknown
	}
	return &Error{Platform: p, Kind: kind, Status: a.Status, Message: fmt.Sprintf("unexpected answer from %s (HTTP %d)", p.Name(), a.Status), Err: err}
}

// Decode parses a 2xx answer of network p into v; a body that does not parse is Garbled.
func Decode(p Platform, a *Answer, v any, create bool) error {
	if err := json.Unmarshal(a.Body, v); err != nil {
		return Garbled(p, a, create, err)
	}
	return nil
}

// Stopped classifies a context that ended between calls to network p (nothing in flight) as
// Transient; any other error is returned as it is.
func Stopped(p Platform, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Platform: p, Kind: Transient, Message: "stopped: " + err.Error(), Err: err}
	}
	return err
}
