package post

import (
	"errors"
	"fmt"
)

// ErrNotFound means there is no post with this id.
var ErrNotFound = errors.New("post not found")

// ErrForbidden means the post belongs to another user, or to another workspace of its user.
var ErrForbidden = errors.New("post belongs to another user or workspace")

// ErrExists means a Create reached a post that already exists.
var ErrExists = errors.New("post already exists")

// NotEditableError refuses a change to a post whose status does not allow it.
type NotEditableError struct {
	Op     string // "updated", "deleted"
	Status string
}

func (e *NotEditableError) Error() string {
	if e.Op == "updated" {
		return fmt.Sprintf("a %s post cannot be %s; only draft, scheduled, failed and partial posts can", e.Status, e.Op)
	}
	return fmt.Sprintf("a %s post cannot be %s; only draft and scheduled posts can", e.Status, e.Op)
}
