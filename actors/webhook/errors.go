package webhook

import (
	"errors"
	"fmt"
)

// ErrNotFound means there is no subscription with this id.
var ErrNotFound = errors.New("webhook not found")

// ErrForbidden means the subscription belongs to another user, or to another workspace of its user.
var ErrForbidden = errors.New("webhook belongs to another user or workspace")

// ErrExists means a Create reached a subscription that already exists.
var ErrExists = errors.New("webhook already exists")

// LimitError refuses a subscription beyond the per-user maximum.
type LimitError struct{ Max int }

func (e *LimitError) Error() string {
	return fmt.Sprintf("a user can have at most %d webhook subscriptions; delete one first", e.Max)
}

// ErrInactive means the subscription is turned off: nothing is sent to it until it is turned on.
var ErrInactive = errors.New("webhook is turned off")

// ErrDeliveryNotFound means the subscription has no delivery with this id (or it was pruned).
var ErrDeliveryNotFound = errors.New("delivery not found")
