package account

import "errors"

// ErrNotFound means there is no account with this id.
var ErrNotFound = errors.New("account not found")

// ErrForbidden means the account belongs to another user.
var ErrForbidden = errors.New("account belongs to another user")

// ErrExists means a Create reached an account that exists.
var ErrExists = errors.New("account already exists")
