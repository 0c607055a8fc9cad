package accountlink

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/platforms"
)

// Errors of the browser flow. Each names what happened in words the person in the browser can
// act on; the HTTP layer turns them into a plain page.
var (
	// ErrBadState means the state is missing, malformed, signed with another key, altered, or
	// unknown to this server.
	ErrBadState = errors.New("connect: the connection link is not valid")
	// ErrExpired means the state is older than StateTTL.
	ErrExpired = errors.New("connect: the connection link has expired")
	// ErrUsed means a callback already presented this state (a reload or a replay).
	ErrUsed = errors.New("connect: the connection link was already used")
	// ErrDenied means the person refused consent on the network's page.
	ErrDenied = errors.New("connect: consent was refused on the network")
	// ErrNoCode means the network came back with neither a code nor an error.
	ErrNoCode = errors.New("connect: the network sent no authorization code")
	// ErrOtherUser means the browser is signed in to Herald as another user than the one who
	// asked for the link: a forwarded link connects nothing.
	ErrOtherUser = errors.New("connect: the connection link belongs to another Herald user")
)

// Errors of starting a connection or adding an account.
var (
	// ErrNotBrowser means the platform does not connect through a browser redirect (Bluesky
	// connects with credentials the user brings, and so does X on a server without an X app:
	// herald accounts add).
	ErrNotBrowser = errors.New("connect: the platform does not connect through the browser")
	// ErrNotConfigured means this server has no OAuth client for the platform.
	ErrNotConfigured = errors.New("connect: no OAuth client is configured for the platform")
	// ErrNoIdentity means the network's answer did not say which network user was connected, so
	// the account could not be told apart from the user's others.
	ErrNoIdentity = errors.New("connect: the network did not say which account was connected")
	// ErrInvalid means input of an account command was refused.
	ErrInvalid = errors.New("connect: invalid input")
	// ErrUnknownUser means no Herald user has the e-mail given to an account command.
	ErrUnknownUser = errors.New("connect: no user with this e-mail")
)

// NetworkError is an error the network reported on the callback instead of a code (other than a
// refusal of consent).
type NetworkError struct {
	Platform    platforms.Platform
	Code        string
	Description string
}

func (e *NetworkError) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("connect: %s answered %s: %s", e.Platform, e.Code, e.Description)
	}
	return fmt.Sprintf("connect: %s answered %s", e.Platform, e.Code)
}

// ExchangeError means the network did not trade the code (or the credentials given to an account
// command) for a working account. Err is the adapter's classified *platforms.Error.
type ExchangeError struct {
	Platform platforms.Platform
	Err      error
}

func (e *ExchangeError) Error() string {
	return fmt.Sprintf("connect: %s refused the connection: %s", e.Platform, Message(e.Err))
}

func (e *ExchangeError) Unwrap() error { return e.Err }

// Refused reports whether the network itself refused (the code, the credentials) rather than
// failing to answer: a refusal will happen again, a transient failure may not.
func (e *ExchangeError) Refused() bool {
	switch platforms.KindOf(e.Err) {
	case platforms.Permanent, platforms.AuthExpired, platforms.Invalid:
		return true
	}
	return false
}

// Message is the safe, human-readable message of a network error: the network's own message
// when the adapter classified the error, else its text.
func Message(err error) string {
	var pe *platforms.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return pe.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
