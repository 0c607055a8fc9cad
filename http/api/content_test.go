package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// PATCH /v1/posts/:id holds the post as changed to the rules of a create: content cannot become
// empty or blank on a post without media, media cannot be removed from a post without content,
// and every field rule of a create applies. A refused update changes nothing.
func TestPatchAppliesTheCreateRules(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	acct := h.Accounts[0].ID
	id := h.CreatePost("keep me", h.Accounts[0])
	media := h.UploadMedia("photo.png", "image/png", apptest.PNGFile)
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "", "platforms": []string{acct}, "media": []string{media}})
	require.Equal(t, 201, r.Status, "a post with media may have no text: %s", r.Body)
	withMedia := r.JSON(t)["id"].(string)
	tooMany := make([]string, 51)
	for i := range tooMany {
		tooMany[i] = uuid.NewString()
	}
	for _, tc := range []struct {
		name, id, body, message string
	}{
		{"empty content", id, `{"content": ""}`, "content: must not be empty when the post has no media"},
		{"blank content", id, `{"content": " \n\t "}`, "content: must not be empty when the post has no media"},
		{"blank content, other fields valid", id, `{"content": "  ", "platforms": ["` + acct + `"]}`, "content: must not be empty"},
		{"media removed from a post without text", withMedia, `{"media": []}`, "content: must not be empty when the post has no media"},
		{"content too long", id, `{"content": "` + strings.Repeat("a", 63207) + `"}`, "content: is 63207 characters; at most 63206"},
		{"control character", id, `{"content": "a\u0000b"}`, "content: contains control character U+0000 at position 1"},
		{"empty platforms", id, `{"platforms": []}`, "platforms: must contain at least one"},
		{"too many platforms", id, `{"platforms": ` + mustJSON(t, tooMany) + `}`, "platforms: at most 50"},
		{"unknown account", id, `{"platforms": ["` + uuid.NewString() + `"]}`, "does not exist or is not yours"},
		{"unknown media", id, `{"media": ["` + uuid.NewString() + `"]}`, "is not a confirmed media of yours"},
		{"too many media", id, `{"media": ` + mustJSON(t, tooMany[:36]) + `}`, "media: at most 35"},
		{"scheduledAt", id, `{"scheduledAt": "2030-01-01T10:00:00Z"}`, "scheduledAt: cannot be changed by PATCH; schedule the post again"},
		{"scheduledAt with content", id, `{"content": "x", "scheduledAt": "2030-01-01T10:00:00Z"}`, "scheduledAt: cannot be changed"},
		{"timezone", id, `{"timezone": "Europe/Paris"}`, "timezone: cannot be changed"},
	} {
		r := h.Do("PATCH", "/v1/posts/"+tc.id, []byte(tc.body))
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
		require.Contains(t, r.ErrorMessage(t), tc.message, tc.name)
	}
	p := h.Do("GET", "/v1/posts/"+id, nil).JSON(t)
	require.Equal(t, "keep me", p["content"], "refused updates changed nothing")
	require.Len(t, p["platforms"], 1)
	p = h.Do("GET", "/v1/posts/"+withMedia, nil).JSON(t)
	require.Equal(t, []any{media}, p["media_ids"])

	// What a create allows, an update allows.
	r = h.Do("PATCH", "/v1/posts/"+withMedia, map[string]any{"content": "   "})
	require.Equal(t, 200, r.Status, string(r.Body))
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": "line one\r\n\tline two", "media": []string{media}})
	require.Equal(t, 200, r.Status, string(r.Body))
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"content": ""})
	require.Equal(t, 200, r.Status, "a post with media may lose its text: %s", r.Body)
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"media": []string{}})
	require.Equal(t, 400, r.Status, "and then not its media")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Text with NUL or another control character (but tab, line feed and carriage return), or that is
// not UTF-8, is refused with 400 validation_error naming the field and where the fault is, on
// every route whose text reaches a network; nothing is created, changed or sent.
func TestContentControlCharactersAndInvalidUTF8AreRefused(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X).ID
	draft := h.CreatePost("the draft", h.Account(platforms.X))
	before := h.CountPosts()
	bodies := []struct {
		name, content, message string
	}{
		{"escaped NUL", `a\u0000b`, "content: contains control character U+0000 at position 1"},
		{"literal NUL byte", "a\x00b", "Malformed JSON"},
		{"escaped BEL", `ring \u0007`, "content: contains control character U+0007 at position 5"},
		{"literal BEL byte", "ring \x07", "Malformed JSON"},
		{"escaped ESC after an emoji", `👩‍👩‍👧\u001b[31m`, "content: contains control character U+001B at position 5"},
		{"DEL", "del \x7f", "content: contains control character U+007F at position 4"},
		{"escaped DEL", `del \u007F`, "U+007F at position 4"},
		{"C1 control", `nel \u0085`, "content: contains control character U+0085 at position 4"},
		{"C1 control as UTF-8", "csi \u009b", "U+009B at position 4"},
		{"bytes 0xff 0xfe", "ab\xff\xfe", "content: is not valid UTF-8: byte 0xFF at offset "},
		{"truncated UTF-8", "caf\xc3", "content: is not valid UTF-8: byte 0xC3"},
		{"unpaired high surrogate", `a\ud83d b`, `content: contains the unpaired surrogate escape \ud83d`},
		{"unpaired low surrogate", `\ude00`, `content: contains the unpaired surrogate escape \ude00`},
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/v1/posts", `{"content":"%s","platforms":["` + x + `"]}`},
		{"POST", "/v1/posts/publish", `{"content":"%s","platforms":["` + x + `"]}`},
		{"POST", "/v1/posts/schedule", `{"content":"%s","platforms":["` + x + `"],"scheduledAt":"` + time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339) + `"}`},
		{"PATCH", "/v1/posts/" + draft, `{"content":"%s"}`},
	}
	for _, rt := range routes {
		for _, tc := range bodies {
			body := strings.Replace(rt.body, "%s", tc.content, 1)
			r := h.Do(rt.method, rt.path, []byte(body))
			require.Equal(t, 400, r.Status, "%s %s %s: %s", rt.method, rt.path, tc.name, r.Body)
			require.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
			require.Contains(t, r.ErrorMessage(t), tc.message, "%s %s %s", rt.method, rt.path, tc.name)
		}
	}
	r := h.Do("POST", "/v1/posts", []byte(`{"content":"ab`+"\xff\xfe"+`","platforms":["`+x+`"]}`))
	require.Contains(t, r.ErrorMessage(t), "content: is not valid UTF-8: byte 0xFF at offset 14 of the request body")
	require.Equal(t, before, h.CountPosts(), "nothing was created")
	require.Equal(t, "the draft", h.Do("GET", "/v1/posts/"+draft, nil).JSON(t)["content"], "nothing was changed")
	for _, p := range platforms.All {
		require.Empty(t, h.App.Sim.Publications(p), "nothing was sent to %s", p)
	}

	// Tab, line feed and carriage return are text; so are format characters and U+FFFD itself.
	r = h.Do("POST", "/v1/posts", []byte(`{"content":"a\tb\nc\r\nd\u200be\ufeff\ufffd 😀 \ud83d\ude00","platforms":["`+x+`"]}`))
	require.Equal(t, 201, r.Status, string(r.Body))
	got := h.Do("GET", "/v1/posts/"+r.JSON(t)["id"].(string), nil).JSON(t)["content"]
	require.Equal(t, "a\tb\nc\r\nd\u200be\ufeff\ufffd 😀 😀", got)

	// Replies to comments and direct messages are held to the same rule, before any network call.
	for _, tc := range bodies {
		if strings.HasPrefix(tc.message, "content: ") {
			tc.message = "text: " + strings.TrimPrefix(tc.message, "content: ")
		}
		r := h.Do("POST", "/v1/inbox/comments/c-1/reply", []byte(`{"publication_id":"`+uuid.NewString()+`","text":"`+tc.content+`"}`))
		require.Equal(t, 400, r.Status, "comment reply %s: %s", tc.name, r.Body)
		require.Contains(t, r.ErrorMessage(t), tc.message, "comment reply %s", tc.name)
		r = h.Do("POST", "/v1/inbox/dms/conv-1/reply", []byte(`{"account_id":"`+x+`","text":"`+tc.content+`"}`))
		require.Equal(t, 400, r.Status, "DM reply %s: %s", tc.name, r.Body)
		require.Contains(t, r.ErrorMessage(t), tc.message, "DM reply %s", tc.name)
	}

	// The MCP connector's tools call the same routes, and get the same refusal.
	s := h.MCPSession(h.Key)
	msg := apptest.ToolError(t, apptest.CallTool(t, s, "create_draft", map[string]any{"content": "nul \x00 here", "accounts": []string{x}}))
	require.Contains(t, msg, "content: contains control character U+0000 at position 4")
	msg = apptest.ToolError(t, apptest.CallTool(t, s, "update_draft", map[string]any{"post_id": draft, "content": "bell \a"}))
	require.Contains(t, msg, "content: contains control character U+0007 at position 5")
	require.Equal(t, before+1, h.CountPosts())
}
