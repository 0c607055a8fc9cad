package post

import "github.com/heraldhq/herald/persistence"

// Create creates the post; the actor must not exist yet, and the post must pass Validate (else
// the reply is its *InvalidError). The actor takes Post over: the sender
// must not use it afterwards. Reply: *Reply, whose Post is the actor's own state (never changed
// in place, every change builds a new one) and must only be read.
type Create struct {
	Post *persistence.Post
}

// Get reads the post on behalf of a user. Reply: *Reply.
type Get struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// Update changes a draft or scheduled post; nil fields stay as they are. The post as changed must
// pass Validate, else the reply is its *InvalidError and nothing changes. Reply: *Reply.
type Update struct {
	Scope    string // the workspace the request acts in (persistence.Scope); the object must be in it
	Content  *string
	Targets  []persistence.Target // nil: unchanged
	MediaIDs []string             // nil: unchanged
}

// Delete deletes a draft or scheduled post. Reply: *Reply with the deleted post.
type Delete struct {
	Scope string // the workspace the request acts in (persistence.Scope); the object must be in it
}

// Reply carries the post as committed.
type Reply struct {
	Post *persistence.Post
}
