package instagram

// First comments (networks.md §5.2): the professional account comments on its media with
// POST /{ig-media-id}/comments (message) and finds the comment again on GET
// /{ig-media-id}/comments. A comment has no link of its own: its URL is the media's.

import (
	"context"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/graph"
)

var _ platforms.FirstCommenter = (*Adapter)(nil)

// firstComments are the account's comments on its own medias (graph.FirstComments).
func (a *Adapter) firstComments() graph.FirstComments {
	return graph.FirstComments{Platform: platforms.Instagram, Client: a.client, Noun: "media", Fields: graph.CommentFields{Text: "text", Time: "timestamp", Username: true}}
}

// PublishComment comments text on the account's media. A 5xx or a lost answer is Unknown
// (LookupComment resolves it).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	return a.firstComments().Publish(ctx, func(path string) string { return a.api(c, path) }, c, on, text)
}

// LookupComment reads the media's comments for the account's with exactly this text, created at
// or after since.
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	return a.firstComments().Lookup(ctx, func(path string) string { return a.api(c, path) }, c, on, text, since)
}
