package live

import (
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/persistence"
)

// SnippetRunes is the most characters a snippet keeps of a text.
const SnippetRunes = 100

// Snippet is the start of a text for a list: white space folded to single spaces, at most
// SnippetRunes characters, with "…" when it was cut. It is data, never markup.
func Snippet(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= SnippetRunes {
		return text
	}
	n := 0
	for i := range text {
		if n == SnippetRunes-1 {
			return strings.TrimRight(text[:i], " ") + "…"
		}
		n++
	}
	return text
}

// postSnippet is the snippet of a post's text, empty when the post is gone.
func postSnippet(tx *persistence.Tx, postID string) string {
	c, err := tx.PostContent(postID)
	if err != nil {
		return ""
	}
	return Snippet(c.Content)
}
