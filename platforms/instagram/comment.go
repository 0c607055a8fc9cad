package instagram

// First comments (networks.md §5.2): the professional account comments on its media with
// POST /{ig-media-id}/comments (message) and finds the comment again on GET
// /{ig-media-id}/comments. A comment has no link of its own: its URL is the media's.

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/graph"
)

var _ platforms.FirstCommenter = (*Adapter)(nil)

func checkComment(on platforms.Publication, text string) error {
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return invalid("a comment needs text")
	case n > platforms.CommentMax(platforms.Instagram):
		return invalid("the comment is %d characters; Instagram allows %d", n, platforms.CommentMax(platforms.Instagram))
	case on.ID == "" || strings.ContainsAny(on.ID, "/?#"):
		return &platforms.Error{Platform: platforms.Instagram, Kind: platforms.Permanent, Message: fmt.Sprintf("%q is not an Instagram media id", on.ID), Err: platforms.ErrNotFound}
	}
	return nil
}

// PublishComment comments text on the account's media. A 5xx or a lost answer is Unknown
// (LookupComment resolves it).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	if err := checkComment(on, text); err != nil {
		return platforms.Result{}, err
	}
	id, resp, err := a.client.Comment(ctx, a.api(c, "/"+url.PathEscape(on.ID)+"/comments"), c.AccessToken, text)
	if err != nil {
		return platforms.Result{}, err
	}
	return platforms.Result{Publication: platforms.Publication{ID: id, URL: on.URL}, Rate: resp.Rate}, nil
}

// LookupComment reads the media's comments for the account's with exactly this text, created at
// or after since.
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	if err := checkComment(on, text); err != nil {
		return platforms.Publication{}, false, err
	}
	id, found, err := a.client.FindComment(ctx, a.api(c, "/"+url.PathEscape(on.ID)+"/comments"), c.AccessToken, graph.CommentFields{Text: "text", Time: "timestamp", Username: true}, c.UserID, c.Handle, text, since)
	if err != nil || !found {
		return platforms.Publication{}, false, err
	}
	return platforms.Publication{ID: id, URL: on.URL}, true, nil
}
