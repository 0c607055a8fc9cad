package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// Every bad thread and first comment is refused with 400 validation_error naming the target and
// the field, and writes nothing.
func TestThreadAndFirstCommentBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li, pin, tt := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.LinkedIn).ID,
		h.Account(platforms.Pinterest).ID, h.Account(platforms.TikTok).ID
	before := h.CountPosts()
	parts := func(texts ...string) []map[string]any {
		out := make([]map[string]any, len(texts))
		for i, s := range texts {
			out[i] = map[string]any{"content": s}
		}
		return out
	}
	many := make([]string, platforms.MaxThreadParts)
	for i := range many {
		many[i] = "part"
	}
	for _, tc := range []struct {
		name     string
		accounts []string
		target   map[string]any
		msg      string
	}{
		{"a thread on LinkedIn", []string{li}, map[string]any{"account_id": li, "thread": parts("more")},
			"linkedin: thread: LinkedIn has no threads; threads are published on X, Bluesky and Threads"},
		{"a part over X's limit", []string{x}, map[string]any{"account_id": x, "thread": parts("fine", strings.Repeat("a", 281))},
			"twitter_x: thread.1.content: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)"},
		{"a part over Bluesky's limit", []string{bsky}, map[string]any{"account_id": bsky, "thread": parts(strings.Repeat("b", 301))},
			"bluesky: thread.0.content: text is 301 graphemes; Bluesky allows 300"},
		{"an empty part", []string{x}, map[string]any{"account_id": x, "thread": parts("one", "  ")},
			"targets.0.thread.1.content: a thread part needs text or media"},
		{"too many parts", []string{x}, map[string]any{"account_id": x, "thread": parts(many...)},
			"targets.0.thread: at most 24 parts after the post (a thread of 25)"},
		{"a part's unknown field", []string{x}, map[string]any{"account_id": x, "thread": []map[string]any{{"text": "hi"}}},
			`targets.0.thread.0: unknown field "text"; a thread part takes content and media`},
		{"a part without content", []string{x}, map[string]any{"account_id": x, "thread": []map[string]any{{}}},
			"targets.0.thread.0.content: Required"},
		{"a first comment on Pinterest", []string{pin}, map[string]any{"account_id": pin, "first_comment": map[string]any{"content": "hi"}},
			"first_comment: Pinterest offers no comment Herald can publish; first comments are published on LinkedIn, Instagram, Facebook, YouTube, X, Bluesky and Threads"},
		{"a first comment on TikTok", []string{tt}, map[string]any{"account_id": tt, "first_comment": map[string]any{"content": "hi"}},
			"first_comment: TikTok offers no comment Herald can publish; first comments are published on LinkedIn, Instagram, Facebook, YouTube, X, Bluesky and Threads"},
		{"a first comment over LinkedIn's limit", []string{li}, map[string]any{"account_id": li, "first_comment": map[string]any{"content": strings.Repeat("c", 1251)}},
			"linkedin: first_comment.content: is 1251 characters; LinkedIn takes comments of at most 1250"},
		{"a first comment over X's limit", []string{x}, map[string]any{"account_id": x, "first_comment": map[string]any{"content": strings.Repeat("c", 281)}},
			"twitter_x: first_comment.content: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)"},
		{"an empty first comment", []string{li}, map[string]any{"account_id": li, "first_comment": map[string]any{"content": " "}},
			"targets.0.first_comment.content: must not be empty"},
		{"a first comment that is a string", []string{li}, map[string]any{"account_id": li, "first_comment": "hi"},
			"targets.0.first_comment: Expected object, received string"},
	} {
		r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "hello", "platforms": tc.accounts, "targets": []map[string]any{tc.target}})
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Body)
		assert.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
		if strings.HasPrefix(tc.msg, "first_comment:") {
			// The network's own refusal of the post comes first; the comment's is in details.
			assert.Contains(t, errorsOf(t, r)[tc.accounts[0]], tc.msg, tc.name)
			continue
		}
		assert.Equal(t, tc.msg, r.ErrorMessage(t), tc.name)
	}
	// A draft is held to every rule but the networks': a thread where there are none is refused,
	// a part over the limit waits for the draft's publication.
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "hello", "platforms": []string{li}, "targets": []map[string]any{{"account_id": li, "thread": parts("more")}}})
	require.Equal(t, 400, r.Status, string(r.Body))
	assert.Equal(t, before, h.CountPosts(), "nothing was written")
}
