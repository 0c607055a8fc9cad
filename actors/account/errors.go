package account

import "errors"

// ErrNotFound means there is no account with this id.
var ErrNotFound = errors.New("account not found")

// ErrForbidden means the account belongs to another user, or to another workspace of its user.
var ErrForbidden = errors.New("account belongs to another user or workspace")

// ErrNoMediaStorage fails a post with media on a Herald that stores none (Deps.Media).
var ErrNoMediaStorage = errors.New("this Herald has no media storage configured")

// ErrExists means a Create reached an account that exists.
var ErrExists = errors.New("account already exists")

// errUntrusted comes back from a call that was not made: the node no longer trusts its lease of
// the account's shard (Deps.Fence), so another node may own the account by now.
var errUntrusted = errors.New("this node no longer trusts its lease of the account's shard")

// errGated stops a request in the middle of a call (platforms.WithGate) once the node no longer
// trusts its lease of the account's shard. It is not errUntrusted: requests of the call may have
// been sent before it, so the adapter's answer (a request that could not be sent) stands, and
// the call's outcome is handled as any other failure's.
var errGated = errors.New("not sent: this node no longer trusts its lease of the account's shard")
