package platforms

import (
	"context"
	"time"
)

// Threader is implemented by the adapters of networks that publish threads, a chain of the
// account's own replies under its post (X, Bluesky, Threads). Herald publishes a thread one part
// at a time, recording each part as an attempt before its call, so that a crash never publishes a
// part twice: a part whose outcome is unknown is resolved with LookupReply before the chain goes
// on.
type Threader interface {
	// PublishReply publishes p as the account's reply to parent in the thread root begins (root
	// and parent are the same publication for the second part). p is checked by Validate.
	PublishReply(ctx context.Context, c Credentials, root, parent Publication, p Post) (Result, error)
	// LookupReply looks for the account's reply to parent with p's text, created at or after
	// since. found is false when the network has none.
	LookupReply(ctx context.Context, c Credentials, root, parent Publication, p Post, since time.Time) (pub Publication, found bool, err error)
}

// FirstCommenter is implemented by the adapters of networks where the account can comment on its
// own post (LinkedIn, Instagram, Facebook, YouTube, X, Bluesky, Threads; on the last three the
// comment is the account's reply to its post). Herald publishes a target's first comment as its
// own step once the post exists; a failed comment never undoes the post.
type FirstCommenter interface {
	// PublishComment comments text on the publication on.
	PublishComment(ctx context.Context, c Credentials, on Publication, text string) (Result, error)
	// LookupComment looks for the account's comment on on with this text, created at or after
	// since. found is false when the network has none.
	LookupComment(ctx context.Context, c Credentials, on Publication, text string, since time.Time) (pub Publication, found bool, err error)
}

// MaxThreadParts bounds a thread: the post and its follow-up parts together.
const MaxThreadParts = 25

// HasThreads reports whether Herald publishes threads on p.
func (p Platform) HasThreads() bool { return p == X || p == Bluesky || p == Threads }

// CommentMax is the longest first comment (in characters as the network counts them) the network
// takes; 0 when Herald publishes no first comment there (Pinterest and TikTok offer no comment
// call). On X, Bluesky and Threads the comment is a reply, held to the network's post length.
func CommentMax(p Platform) int {
	switch p {
	case LinkedIn:
		return 1250
	case Instagram:
		return 2200
	case Facebook:
		return 8000
	case YouTube:
		return 10000
	case X:
		return 280
	case Bluesky:
		return 300
	case Threads:
		return 500
	}
	return 0
}
