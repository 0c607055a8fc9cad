package post

import "github.com/heraldhq/herald/persistence"

// Create creates the post; the actor must not exist yet. The actor takes Post over: the sender
// must not use it afterwards. Reply: *Reply, whose Post is the actor's own state (never changed
// in place, every change builds a new one) and must only be read.
type Create struct {
	Post *persistence.Post
}

// Get reads the post on behalf of a user. Reply: *Reply.
type Get struct {
	UserID string
}

// Update changes a draft or scheduled post; nil fields stay as they are. Reply: *Reply.
type Update struct {
	UserID   string
	Content  *string
	Targets  []persistence.Target // nil: unchanged
	MediaIDs []string             // nil: unchanged
}

// Delete deletes a draft or scheduled post. Reply: *Reply with the deleted post.
type Delete struct {
	UserID string
}

// Reply carries the post as committed.
type Reply struct {
	Post *persistence.Post
}
