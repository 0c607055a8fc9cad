package persistence

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

var searchContents = []string{
	"plain text",
	`quotes " and backslashes \ inside`,
	"HTML <b>bold</b> & more",
	"Été à Paris: ÉTÉ, Straße",
	"line\nbreak\ttab",
	"separators \u2028 and \u2029",
	"invalid \xff utf-8",
	"",
	"ends with a backslash \\",
}

// storedContent reads the content of a stored post as decoding the whole record does, from
// the appender's encoding and encoding/json's alike.
func TestStoredContentMatchesDecode(t *testing.T) {
	t.Parallel()
	for _, c := range searchContents {
		p := &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: uuid.NewString(), Content: c, Status: PostDraft,
			CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
		viaAppender, err := Encode(p)
		require.NoError(t, err)
		viaJSON, err := json.Marshal(p)
		require.NoError(t, err)
		for _, raw := range [][]byte{viaAppender, viaJSON} {
			var want Post
			require.NoError(t, Decode(raw, &want))
			got, ok := storedContent(raw)
			require.True(t, ok, "%q", c)
			require.Equal(t, want.Content, string(got), "%q", c)
		}
	}
	// A record that does not begin as a post does is left to the decoder.
	for _, raw := range []string{`{"user_id":"u","id":"x","content":"c"}`, `{"id":"x"}`, `{"id":"a\"b","user_id":"u","content":"c"}`, `{"id":"x","user_id":"u","content":"unterminated`} {
		_, ok := storedContent([]byte(raw))
		require.False(t, ok, raw)
	}
}

// A search finds what strings.ToLower on the decoded content finds.
func TestSearchMatchesLowerCasedContent(t *testing.T) { EachStore(t, searchMatchesLowerCasedContent) }

func searchMatchesLowerCasedContent(t *testing.T, s *Store) {
	user := uuid.NewString()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		for _, c := range searchContents {
			p := &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: c, Status: PostDraft}
			if err := tx.PutPost(p, nil); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, q := range []string{"TEXT", "\" and back", `\`, "<B>", "& more", "été", "ÉTÉ", "straße", "\n", "\u2028", "\ufffd", "nothing like it", "Plain Text"} {
		want := 0
		for _, c := range searchContents {
			if strings.Contains(strings.ToLower(c), strings.ToLower(q)) {
				want++
			}
		}
		// "invalid \xff" is stored (and decoded) with U+FFFD in place of the byte.
		if q == "\ufffd" {
			want = 1
		}
		require.NoError(t, s.View(func(tx *Tx) error {
			page, total, err := tx.ListPosts(PostFilter{Scope: user, Search: q, Limit: 100})
			require.NoError(t, err)
			require.Equal(t, want, total, "%q", q)
			require.Len(t, page, want, "%q", q)
			for _, p := range page {
				require.Contains(t, strings.ToLower(p.Content), strings.ToLower(q))
			}
			return nil
		}))
	}
}
