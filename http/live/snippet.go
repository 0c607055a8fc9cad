package live

import (
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// SnippetRunes is the most characters a snippet keeps of a text.
const SnippetRunes = 100

// Snippet is the start of a text for a list, at most SnippetRunes characters
// (platforms.Excerpt, as the dashboard's lists cut a text).
func Snippet(text string) string { return platforms.Excerpt(text, SnippetRunes) }

// postSnippet is the snippet of a post's text, empty when the post is gone.
func postSnippet(tx *persistence.Tx, postID string) string {
	c, err := tx.PostContent(postID)
	if err != nil {
		return ""
	}
	return Snippet(c.Content)
}
