package facebook

// First comments (networks.md §4.2): the Page comments on its post (a feed post, a photo or a
// video) with POST /{object-id}/comments (message), which takes pages_manage_engagement, and
// finds the comment again on GET /{object-id}/comments. Its URL is the post's.

import (
	"context"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/graph"
)

var _ platforms.FirstCommenter = (*Adapter)(nil)

// firstComments are the account's comments on its own posts (graph.FirstComments).
func (a *Adapter) firstComments() graph.FirstComments {
	return graph.FirstComments{Platform: platforms.Facebook, Client: a.client, Noun: "post", Fields: graph.CommentFields{Text: "message", Time: "created_time", Order: "reverse_chronological"}}
}

// PublishComment comments text on the account's post. A 5xx or a lost answer is Unknown
// (LookupComment resolves it).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	return a.firstComments().Publish(ctx, a.api, c, on, text)
}

// LookupComment reads the post's comments for the account's with exactly this text, created at
// or after since.
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	return a.firstComments().Lookup(ctx, a.api, c, on, text, since)
}
