package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/platforms"
)

// errorsOf reads a refusal's details.targets as account id → "field: message" lines.
func errorsOf(t *testing.T, r *apptest.Response) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	details, _ := r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)
	targets, _ := details["targets"].([]any)
	for _, tc := range targets {
		tc := tc.(map[string]any)
		for _, e := range tc["errors"].([]any) {
			e := e.(map[string]any)
			out[tc["account_id"].(string)] = append(out[tc["account_id"].(string)], e["field"].(string)+": "+e["message"].(string))
		}
	}
	return out
}

// Each target goes out with its own text and options; the post's detail shows what each network
// received.
func TestTargetsPublishTheirOwnText(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.LinkedIn).ID
	r := h.Do("POST", "/v1/posts/publish", map[string]any{
		"content": "The shared text", "platforms": []string{x, bsky, li},
		"targets": []map[string]any{
			{"account_id": x, "content": "Short, for X", "options": map[string]any{"reply_settings": "following"}},
			{"account_id": bsky, "options": map[string]any{"langs": []string{"en", "pt-BR"}}},
		},
	})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID := r.JSON(t)["post_id"].(string)
	require.Equal(t, "completed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])
	assert.Equal(t, "Short, for X", h.App.Sim.Publications(platforms.X)[0].Text)
	assert.Equal(t, "The shared text", h.App.Sim.Publications(platforms.Bluesky)[0].Text)
	assert.Equal(t, "The shared text", h.App.Sim.Publications(platforms.LinkedIn)[0].Text)

	p := h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)
	byAccount := map[string]map[string]any{}
	for _, pl := range p["platforms"].([]any) {
		byAccount[pl.(map[string]any)["connected_account_id"].(string)] = pl.(map[string]any)
	}
	assert.Equal(t, "Short, for X", byAccount[x]["content"])
	assert.Equal(t, map[string]any{"reply_settings": "following"}, byAccount[x]["options"])
	assert.Equal(t, "The shared text", byAccount[bsky]["content"])
	assert.Equal(t, map[string]any{"langs": []any{"en", "pt-BR"}}, byAccount[bsky]["options"])
	assert.Equal(t, map[string]any{}, byAccount[li]["options"])
}

// Every bad input of a target is refused with 400 validation_error naming the target and the
// field, and writes nothing.
func TestTargetsBadInput(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, yt, tt := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.YouTube).ID, h.Account(platforms.TikTok).ID
	photo := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
	video := h.UploadMedia("clip.mp4", "video/mp4", apptest.MP4File)
	other, otherKey := h.NewUser("other@example.com", "pro")
	_ = other
	theirs := h.UploadMediaKey(otherKey, "theirs.jpg", "image/jpeg", apptest.JPEGFile)
	longAlt := h.UploadMedia("alt.jpg", "image/jpeg", apptest.JPEGFile)
	require.Equal(t, 200, h.Do("PATCH", "/v1/media/"+longAlt, map[string]any{"alt_text": strings.Repeat("a", 1001)}).Status)
	before := h.CountPosts()

	for _, tc := range []struct {
		name    string
		targets []map[string]any
		msg     string
	}{
		{"an option of another network", []map[string]any{{"account_id": x, "options": map[string]any{"board_id": "b1"}}},
			`twitter_x: options.board_id: X has no option "board_id" (it is an option of Pinterest)`},
		{"an unknown key", []map[string]any{{"account_id": bsky, "options": map[string]any{"language": "en"}}},
			`bluesky: options.language: Bluesky has no option "language"`},
		{"a wrong type", []map[string]any{{"account_id": x, "options": map[string]any{"reply_settings": 3}}},
			`twitter_x: options.reply_settings: must be a string, not number`},
		{"an account not in platforms", []map[string]any{{"account_id": yt}},
			`targets.0.account_id: ` + yt + ` is not one of the post's platforms`},
		{"an account twice", []map[string]any{{"account_id": x}, {"account_id": x}},
			`targets.1.account_id: ` + x + ` is given twice; one entry per account`},
		{"a poll with media", []map[string]any{{"account_id": x, "media": []string{photo}, "options": map[string]any{"poll": map[string]any{"options": []string{"a", "b"}, "duration_minutes": 60}}}},
			`twitter_x: options.poll: a post with a poll cannot carry media`},
		{"alt text over X's limit", []map[string]any{{"account_id": x, "media": []string{longAlt}}},
			`twitter_x: media[0].alt_text: is 1001 characters; X allows 1000`},
		{"media of another user", []map[string]any{{"account_id": x, "media": []string{theirs}}},
			`targets.0.media: ` + theirs + ` is not a confirmed media of yours`},
		{"a target field unknown", []map[string]any{{"account_id": x, "text": "hi"}},
			`targets.0: unknown field "text"; a target takes account_id, content, media, options, thread and first_comment`},
	} {
		r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "hello", "platforms": []string{x, bsky}, "targets": tc.targets})
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Body)
		assert.Equal(t, "validation_error", r.ErrorCode(t), tc.name)
		assert.Equal(t, tc.msg, r.ErrorMessage(t), tc.name)
	}

	for _, tc := range []struct {
		name    string
		account string
		media   []string
		options map[string]any
		msg     string
	}{
		{"a YouTube title over 100 characters", yt, []string{video}, map[string]any{"title": strings.Repeat("t", 101)}, "youtube: options.title: is 101 characters; at most 100"},
		{"a YouTube title with <", yt, []string{video}, map[string]any{"title": "a <b>"}, "youtube: options.title: may not contain < or >"},
		{"a TikTok privacy level that is none of TikTok's", tt, []string{video}, map[string]any{"privacy_level": "EVERYONE"},
			`tiktok: options.privacy_level: must be one of PUBLIC_TO_EVERYONE, MUTUAL_FOLLOW_FRIENDS, FOLLOWER_OF_CREATOR, SELF_ONLY, not "EVERYONE"`},
		{"branded content with SELF_ONLY", tt, []string{video}, map[string]any{"privacy_level": "SELF_ONLY", "branded_content": true},
			"tiktok: options.branded_content: branded content cannot be private (SELF_ONLY); choose another privacy level"},
	} {
		r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "hello", "platforms": []string{tc.account}, "media": tc.media,
			"targets": []map[string]any{{"account_id": tc.account, "options": tc.options}}})
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Body)
		assert.Equal(t, tc.msg, r.ErrorMessage(t), tc.name)
		assert.NotEmpty(t, errorsOf(t, r)[tc.account], tc.name)
	}
	assert.Equal(t, before, h.CountPosts(), "nothing was written")
}

// A scheduled post whose account was since disconnected is refused when it is submitted again.
func TestTargetsOfADisconnectedAccount(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x := h.Account(platforms.X).ID
	gone := h.NewAccount(h.User.ID, "bluesky")
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "hello", "platforms": []string{x, gone.ID},
		"targets": []map[string]any{{"account_id": gone.ID, "options": map[string]any{"langs": []string{"en"}}}}})
	require.Equal(t, 201, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	require.Equal(t, 204, h.Do("DELETE", "/v1/accounts/"+gone.ID, nil).Status)
	r = h.Do("POST", "/v1/posts/"+id+"/publish", nil)
	require.Equal(t, 400, r.Status, string(r.Body))
	assert.Equal(t, "bluesky: account_id: the connected account was disconnected; connect it again", r.ErrorMessage(t))
	assert.Equal(t, "draft", h.Do("GET", "/v1/posts/"+id, nil).JSON(t)["status"])
}

// A post broken nine ways, one per network: validate lists every error under its target and
// writes nothing.
func TestValidateListsEveryTargetsErrors(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	id := func(p platforms.Platform) string { return h.Account(p).ID }
	photo := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
	var all []string
	for _, p := range platforms.All {
		all = append(all, id(p))
	}
	before := h.CountPosts()
	r := h.Do("POST", "/v1/posts/validate", map[string]any{
		"content": "A launch", "platforms": all, "media": []string{photo},
		"targets": []map[string]any{
			{"account_id": id(platforms.X), "content": strings.Repeat("x", 281)},
			{"account_id": id(platforms.Bluesky), "options": map[string]any{"board_id": "b"}},
			{"account_id": id(platforms.YouTube), "options": map[string]any{"title": "<script>"}},
			{"account_id": id(platforms.TikTok), "options": map[string]any{"branded_content": true}},
			{"account_id": id(platforms.Pinterest), "options": map[string]any{"board_id": "b", "link": "http://example.com"}},
			{"account_id": id(platforms.Instagram), "options": map[string]any{"type": "reel"}},
			{"account_id": id(platforms.Threads), "options": map[string]any{"topic_tag": "a.b"}},
			{"account_id": id(platforms.LinkedIn), "options": map[string]any{"visibility": "FRIENDS"}},
			{"account_id": id(platforms.Facebook), "options": map[string]any{"type": 5}},
		},
	})
	require.Equal(t, 200, r.Status, string(r.Body))
	v := r.JSON(t)
	assert.Equal(t, false, v["valid"])
	assert.Empty(t, v["errors"])
	got := map[string][]string{}
	for _, tc := range v["targets"].([]any) {
		tc := tc.(map[string]any)
		assert.Equal(t, false, tc["valid"], tc["platform"])
		for _, e := range tc["errors"].([]any) {
			e := e.(map[string]any)
			got[tc["platform"].(string)] = append(got[tc["platform"].(string)], e["field"].(string)+": "+e["message"].(string))
		}
		require.NotNil(t, tc["preview"], tc["platform"])
	}
	assert.Contains(t, got["twitter_x"], "content: text is 281 weighted characters; X allows 280 (URLs count 23, most emoji and CJK characters 2)")
	assert.Contains(t, got["bluesky"], `options.board_id: Bluesky has no option "board_id" (it is an option of Pinterest)`)
	assert.Contains(t, got["youtube"], "options.title: may not contain < or >")
	assert.Contains(t, got["tiktok"], "options.branded_content: branded content cannot be private (SELF_ONLY); choose another privacy level")
	assert.Contains(t, got["pinterest"], "options.link: must be an absolute https URL")
	assert.Contains(t, got["instagram"], "options.type: a reel is one video")
	assert.Contains(t, got["threads"], "options.topic_tag: may not contain a period or an ampersand")
	assert.Contains(t, got["linkedin"], `options.visibility: must be one of PUBLIC, CONNECTIONS, not "FRIENDS"`)
	assert.Contains(t, got["facebook"], "options.type: must be a string, not number")
	assert.Len(t, got, 9)
	assert.Equal(t, before, h.CountPosts(), "validate writes nothing")

	// A post that passes: valid, with a preview of what each network receives.
	r = h.Do("POST", "/v1/posts/validate", map[string]any{"content": "Hello", "platforms": []string{id(platforms.X)}, "scheduledAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 200, r.Status, string(r.Body))
	v = r.JSON(t)
	assert.Equal(t, true, v["valid"])
	pv := v["targets"].([]any)[0].(map[string]any)["preview"].(map[string]any)
	assert.Equal(t, map[string]any{"used": 5.0, "max": 280.0, "unit": "x"}, pv["length"])
	// A time in the past is the post's own error.
	r = h.Do("POST", "/v1/posts/validate", map[string]any{"content": "Hello", "platforms": []string{id(platforms.X)}, "scheduledAt": "2020-01-01T00:00:00Z"})
	require.Equal(t, 200, r.Status)
	assert.Equal(t, false, r.JSON(t)["valid"])
	assert.Equal(t, "scheduledAt", r.JSON(t)["errors"].([]any)[0].(map[string]any)["field"])
}

// An account's default options fill in what a target leaves out; they are checked as the
// network's, and capabilities show them.
func TestAccountDefaultOptions(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	bsky := h.Account(platforms.Bluesky).ID
	for body, msg := range map[string]string{
		`{"default_options":{"board_id":"b"}}`:    `default_options.board_id: Bluesky has no option "board_id" (it is an option of Pinterest)`,
		`{"default_options":{"labels":["gore"]}}`: `default_options.labels[0]: must be one of sexual, nudity, porn, graphic-media, not "gore"`,
		`{"default_options":[1]}`:                 "default_options: Expected object, received array",
		`{"name":"x"}`:                            "name: unknown field; an account's only changeable field is default_options",
	} {
		r := h.Do("PATCH", "/v1/accounts/"+bsky, body)
		require.Equal(t, 400, r.Status, body)
		assert.Equal(t, msg, r.ErrorMessage(t), body)
	}
	r := h.Do("PATCH", "/v1/accounts/"+bsky, map[string]any{"default_options": map[string]any{"langs": []string{"fr"}}})
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, map[string]any{"langs": []any{"fr"}}, r.JSON(t)["default_options"])

	r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "Bonjour", "platforms": []string{bsky}})
	require.Equal(t, 202, r.Status, string(r.Body))
	postID := r.JSON(t)["post_id"].(string)
	h.WaitJob(r.JSON(t)["tracking_id"].(string))
	pl := h.Do("GET", "/v1/posts/"+postID, nil).JSON(t)["platforms"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"langs": []any{"fr"}}, pl["options"])

	caps := h.Do("GET", "/v1/accounts/"+bsky+"/capabilities", nil)
	require.Equal(t, 200, caps.Status, string(caps.Body))
	c := caps.JSON(t)
	assert.Equal(t, "bluesky", c["platform"])
	assert.Equal(t, map[string]any{"langs": []any{"fr"}}, c["default_options"])
	assert.Equal(t, false, c["options_schema"].(map[string]any)["additionalProperties"])
	assert.Equal(t, map[string]any{"text_max": 300.0, "text_unit": "graphemes"}, map[string]any{"text_max": c["limits"].(map[string]any)["text_max"], "text_unit": c["limits"].(map[string]any)["text_unit"]})
	assert.Equal(t, 25.0, c["limits"].(map[string]any)["thread_max_parts"])
	assert.Equal(t, 300.0, c["limits"].(map[string]any)["first_comment_max"])

	// The demo TikTok account posts privately unless a post says otherwise; required_options says
	// what a TikTok post must have.
	tt := h.Do("GET", "/v1/accounts/"+h.Account(platforms.TikTok).ID+"/capabilities", nil).JSON(t)
	assert.Equal(t, map[string]any{"privacy_level": "SELF_ONLY"}, tt["default_options"])
	assert.Equal(t, []any{"privacy_level"}, tt["required_options"])
	assert.Equal(t, 0.0, tt["limits"].(map[string]any)["thread_max_parts"], "TikTok has no threads")
	assert.Equal(t, 0.0, tt["limits"].(map[string]any)["first_comment_max"], "nor first comments")

	// Another user's account: 403; none: 404.
	_, otherKey := h.NewUser("other@example.com", "pro")
	assert.Equal(t, 403, h.DoKey(otherKey, "PATCH", "/v1/accounts/"+bsky, map[string]any{"default_options": nil}, nil).Status)
	assert.Equal(t, 404, h.DoKey(otherKey, "GET", "/v1/accounts/"+bsky+"/capabilities", nil, nil).Status)
	// Validating a post on it says so, with an empty list of targets (the document's shape).
	r = h.DoKey(otherKey, "POST", "/v1/posts/validate", map[string]any{"content": "Hello", "platforms": []string{bsky}}, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, false, r.JSON(t)["valid"])
	assert.Equal(t, []any{}, r.JSON(t)["targets"])

	// Clearing them.
	r = h.Do("PATCH", "/v1/accounts/"+bsky, map[string]any{"default_options": nil})
	require.Equal(t, 200, r.Status)
	assert.Equal(t, map[string]any{}, r.JSON(t)["default_options"])
	a, err := actors.Ask[*account.Reply](context.Background(), h.App.Accounts.To(bsky), &account.Get{})
	require.NoError(t, err)
	assert.Empty(t, a.Account.DefaultOptions, "the account's actor holds the change")
}

// A media's alt text is set at confirm or by PATCH, shown, and goes to the networks that take it.
func TestMediaAltText(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	m := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
	r := h.Do("PATCH", "/v1/media/"+m, map[string]any{"alt_text": "A red bicycle against a wall"})
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, "A red bicycle against a wall", r.JSON(t)["alt_text"])
	assert.Equal(t, "A red bicycle against a wall", h.Do("GET", "/v1/media/"+m, nil).JSON(t)["alt_text"])
	r = h.Do("PATCH", "/v1/media/"+m, map[string]any{"alt_text": strings.Repeat("a", 4087)})
	require.Equal(t, 400, r.Status)
	assert.Equal(t, "alt_text: is 4087 characters; at most 4086", r.ErrorMessage(t))
	r = h.Do("PATCH", "/v1/media/"+m, map[string]any{"alt_text": "bell\a"})
	require.Equal(t, 400, r.Status)
	_, otherKey := h.NewUser("other@example.com", "pro")
	assert.Equal(t, 404, h.DoKey(otherKey, "PATCH", "/v1/media/"+m, map[string]any{"alt_text": "mine"}, nil).Status)

	// Validate shows it where the network takes it, and warns where it does not.
	r = h.Do("POST", "/v1/posts/validate", map[string]any{"content": "Bike", "platforms": []string{h.Account(platforms.Bluesky).ID}, "media": []string{m}})
	pv := r.JSON(t)["targets"].([]any)[0].(map[string]any)["preview"].(map[string]any)
	assert.Equal(t, "A red bicycle against a wall", pv["media"].([]any)[0].(map[string]any)["alt_text"])
}

// PATCH replaces the targets' own content; platforms changed without targets keep them.
func TestPatchTargets(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	x, bsky, li := h.Account(platforms.X).ID, h.Account(platforms.Bluesky).ID, h.Account(platforms.LinkedIn).ID
	r := h.Do("POST", "/v1/posts", map[string]any{"content": "shared", "platforms": []string{x, bsky}})
	require.Equal(t, 201, r.Status)
	id := r.JSON(t)["id"].(string)
	content := func(p map[string]any, acct string) any {
		for _, pl := range p["platforms"].([]any) {
			if pl.(map[string]any)["connected_account_id"] == acct {
				return pl.(map[string]any)["content"]
			}
		}
		return nil
	}
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"targets": []map[string]any{{"account_id": x, "content": "for X"}}})
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, "for X", content(r.JSON(t), x))
	assert.Equal(t, "shared", content(r.JSON(t), bsky))
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"platforms": []string{x, li}})
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, "for X", content(r.JSON(t), x), "kept")
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"targets": []map[string]any{{"account_id": bsky, "content": "gone"}}})
	require.Equal(t, 400, r.Status)
	assert.Equal(t, "targets.0.account_id: "+bsky+" is not one of the post's platforms", r.ErrorMessage(t))
	// A draft may be incomplete; its scheduling is held to the networks' rules.
	r = h.Do("PATCH", "/v1/posts/"+id, map[string]any{"targets": []map[string]any{{"account_id": x, "content": strings.Repeat("x", 300)}}})
	require.Equal(t, 200, r.Status, string(r.Body))
	r = h.Do("POST", "/v1/posts/"+id+"/schedule", map[string]any{"scheduledAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	require.Equal(t, 400, r.Status)
	assert.True(t, strings.HasPrefix(r.ErrorMessage(t), "twitter_x: text is 300 weighted characters"), r.ErrorMessage(t))
	assert.Contains(t, errorsOf(t, r), x)
}

// The choices only the network knows are read live: a TikTok privacy level the creator is not
// offered now, an interaction the creator turned off, a board that is not the account's.
func TestTargetsAgainstLiveChoices(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	h.App.Sim.SetTikTokAudited(false) // an unaudited client: SELF_ONLY only
	h.App.Sim.TikTokInteractions(true, false, false)
	tt, pin := h.Account(platforms.TikTok).ID, h.Account(platforms.Pinterest).ID
	video := h.UploadMedia("clip.mp4", "video/mp4", apptest.MP4File)
	photo := h.UploadMedia("photo.jpg", "image/jpeg", apptest.JPEGFile)
	before := h.CountPosts()
	for _, tc := range []struct {
		name, account, media string
		options              map[string]any
		msg                  string
	}{
		{"a level not offered now", tt, video, map[string]any{"privacy_level": "PUBLIC_TO_EVERYONE"},
			"tiktok: options.privacy_level: PUBLIC_TO_EVERYONE is not offered to this creator now; TikTok offers SELF_ONLY"},
		{"an interaction turned off", tt, video, map[string]any{"privacy_level": "SELF_ONLY", "allow_comment": true},
			"tiktok: options.allow_comment: the creator has turned this interaction off in TikTok's settings"},
		{"a board not the account's", pin, photo, map[string]any{"board_id": "549755813888"},
			`pinterest: options.board_id: "549755813888" is not a board of this account`},
	} {
		r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "hello", "platforms": []string{tc.account}, "media": []string{tc.media},
			"targets": []map[string]any{{"account_id": tc.account, "options": tc.options}}})
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Body)
		assert.Equal(t, tc.msg, r.ErrorMessage(t), tc.name)
	}
	assert.Equal(t, before, h.CountPosts(), "nothing was written")
	caps := h.Do("GET", "/v1/accounts/"+tt+"/capabilities", nil).JSON(t)["choices"].(map[string]any)
	assert.Equal(t, []any{"SELF_ONLY"}, caps["privacy_level_options"])
	assert.Equal(t, true, caps["comment_disabled"])
}
