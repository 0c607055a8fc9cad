package platforms_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// Each network's schema names exactly the fields of its options type, and refuses other keys.
func TestOptionsSchemaMatchesTypes(t *testing.T) {
	t.Parallel()
	for _, p := range platforms.All {
		s := platforms.OptionsSchema(p)
		require.NotNil(t, s, p)
		assert.Equal(t, false, s["additionalProperties"], p)
		var schemaKeys []string
		for k := range s["properties"].(map[string]any) {
			schemaKeys = append(schemaKeys, k)
		}
		var fields []string
		ty := reflect.TypeOf(platforms.NewOptions(p)).Elem()
		for i := range ty.NumField() {
			name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
		}
		slices.Sort(schemaKeys)
		slices.Sort(fields)
		assert.Equal(t, fields, schemaKeys, p)
		_, err := json.Marshal(s)
		require.NoError(t, err)
	}
}

func TestDecodeOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p         platforms.Platform
		raw, want string
	}{
		{platforms.YouTube, `{"board_id":"b1"}`, `options.board_id: YouTube has no option "board_id" (it is an option of Pinterest)`},
		{platforms.YouTube, `{"nope":1}`, `options.nope: YouTube has no option "nope"`},
		{platforms.TikTok, `{"allow_comment":"yes"}`, `options.allow_comment: must be a boolean, not string`},
		{platforms.X, `{"poll":{"options":"a","duration_minutes":5}}`, `options.poll.options: must be an array, not string`},
		{platforms.X, `[1]`, `options: must be an object`},
		{platforms.X, `{"reply_settings":"everyone"} {}`, `options: must be one JSON object`},
	} {
		_, fe := platforms.DecodeOptions(tc.p, json.RawMessage(tc.raw))
		require.NotNil(t, fe, tc.raw)
		assert.Equal(t, tc.want, fe.Error())
	}
	o, fe := platforms.DecodeOptions(platforms.YouTube, json.RawMessage(`{"title":"T","privacy_status":"unlisted"}`))
	require.Nil(t, fe)
	assert.Equal(t, &platforms.YouTubeOptions{Title: "T", PrivacyStatus: "unlisted"}, o)
	o, fe = platforms.DecodeOptions(platforms.Bluesky, nil)
	require.Nil(t, fe)
	assert.Equal(t, &platforms.BlueskyOptions{}, o)
	assert.Nil(t, platforms.EncodeOptions(o))
}

func TestMergeOptions(t *testing.T) {
	t.Parallel()
	m, err := platforms.MergeOptions(json.RawMessage(`{"privacy_level":"SELF_ONLY","allow_comment":true}`), json.RawMessage(`{"privacy_level":"PUBLIC_TO_EVERYONE"}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"privacy_level":"PUBLIC_TO_EVERYONE","allow_comment":true}`, string(m))
	m, err = platforms.MergeOptions(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, m)
}

func TestCheckOptions(t *testing.T) {
	t.Parallel()
	video := platforms.Media{ContentType: "video/mp4"}
	photo := platforms.Media{ContentType: "image/jpeg"}
	creator := &platforms.Choices{PrivacyLevelOptions: []string{"FOLLOWER_OF_CREATOR", "SELF_ONLY"}, DuetDisabled: true}
	boards := &platforms.Choices{Boards: []platforms.Choice{{ID: "b1", Name: "Recipes"}}}
	for _, tc := range []struct {
		name string
		o    platforms.Options
		t    platforms.Target
		errs []string
	}{
		{"youtube fine", &platforms.YouTubeOptions{Title: "T", PrivacyStatus: "private"}, platforms.Target{Media: []platforms.Media{video}}, nil},
		{"youtube title", &platforms.YouTubeOptions{Title: strings.Repeat("a", 101) + "<"}, platforms.Target{}, []string{"options.title: is 102 characters; at most 100", "options.title: may not contain < or >"}},
		{"youtube privacy", &platforms.YouTubeOptions{Title: "t", PrivacyStatus: "secret"}, platforms.Target{}, []string{`options.privacy_status: must be one of public, unlisted, private, not "secret"`}},
		{"tiktok none", &platforms.TikTokOptions{}, platforms.Target{Choices: creator}, []string{"options.privacy_level: is required: TikTok asks the creator to choose; this creator may post with FOLLOWER_OF_CREATOR, SELF_ONLY"}},
		{"tiktok not offered", &platforms.TikTokOptions{PrivacyLevel: "PUBLIC_TO_EVERYONE"}, platforms.Target{Choices: creator}, []string{"options.privacy_level: PUBLIC_TO_EVERYONE is not offered to this creator now; TikTok offers FOLLOWER_OF_CREATOR, SELF_ONLY"}},
		{"tiktok duet off", &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", AllowDuet: true}, platforms.Target{Choices: creator}, []string{"options.allow_duet: the creator has turned this interaction off in TikTok's settings"}},
		{"tiktok branded private", &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", BrandedContent: true}, platforms.Target{Choices: creator}, []string{"options.branded_content: branded content cannot be private (SELF_ONLY); choose another privacy level"}},
		{"pinterest board", &platforms.PinterestOptions{BoardID: "b2"}, platforms.Target{Choices: boards}, []string{`options.board_id: "b2" is not a board of this account`}},
		{"pinterest no board", &platforms.PinterestOptions{}, platforms.Target{Choices: boards}, []string{"options.board_id: is required: choose the board the Pin goes to; the account's boards are b1 (Recipes)"}},
		{"pinterest http link", &platforms.PinterestOptions{BoardID: "b1", Link: "http://x.example"}, platforms.Target{Choices: boards}, []string{"options.link: must be an absolute https URL"}},
		{"instagram reel of a photo", &platforms.InstagramOptions{Type: "reel"}, platforms.Target{Media: []platforms.Media{photo}}, []string{"options.type: a reel is one video"}},
		{"instagram collaborators", &platforms.InstagramOptions{Collaborators: []string{"a", "b", "c", "d"}}, platforms.Target{Media: []platforms.Media{photo}}, []string{"options.collaborators: are 4; at most 3"}},
		{"x poll with media", &platforms.XOptions{Poll: &platforms.XPoll{Options: []string{"a", "b"}, DurationMinutes: 60}}, platforms.Target{Media: []platforms.Media{photo}}, []string{"options.poll: a post with a poll cannot carry media"}},
		{"x poll shape", &platforms.XOptions{Poll: &platforms.XPoll{Options: []string{"a"}, DurationMinutes: 4}}, platforms.Target{}, []string{"options.poll.options: are 1; a poll has 2 to 4", "options.poll.duration_minutes: is 4; 5 to 10080 minutes (seven days)"}},
		{"bluesky langs", &platforms.BlueskyOptions{Langs: []string{"en", "pt-BR", "not a tag"}, Labels: []string{"gore"}}, platforms.Target{}, []string{`options.langs[2]: "not a tag" is not a BCP 47 language tag`, `options.labels[0]: must be one of sexual, nudity, porn, graphic-media, not "gore"`}},
		{"threads topic", &platforms.ThreadsOptions{TopicTag: "a.b"}, platforms.Target{}, []string{"options.topic_tag: may not contain a period or an ampersand"}},
		{"tiktok cover of a photo post", &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", PhotoCoverIndex: 1}, platforms.Target{Choices: creator, Media: []platforms.Media{photo, photo}}, nil},
		{"tiktok cover past the photos", &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", PhotoCoverIndex: 2}, platforms.Target{Choices: creator, Media: []platforms.Media{photo, photo}}, []string{"options.photo_cover_index: is 2; the post has 2 photos, numbered from 0 to 1"}},
		{"tiktok negative cover", &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", PhotoCoverIndex: -1}, platforms.Target{Choices: creator, Media: []platforms.Media{photo, photo}}, []string{"options.photo_cover_index: is -1; the first photo is 0"}},
		{"tiktok duet turned off, on a photo post", &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", AllowDuet: true}, platforms.Target{Choices: creator, Media: []platforms.Media{photo, photo}}, nil},
		{"tiktok cover of a video", &platforms.TikTokOptions{PrivacyLevel: "SELF_ONLY", PhotoCoverIndex: 1}, platforms.Target{Choices: creator, Media: []platforms.Media{video}}, []string{"options.photo_cover_index: applies to photo posts only"}},
		{"linkedin document title", &platforms.LinkedInOptions{DocumentTitle: "Q3 deck"}, platforms.Target{Media: []platforms.Media{{ContentType: platforms.PDF}}}, nil},
		{"linkedin document title without a document", &platforms.LinkedInOptions{DocumentTitle: "Q3 deck"}, platforms.Target{Media: []platforms.Media{photo}}, []string{"options.document_title: applies to a document post (one PDF) only"}},
		{"linkedin document title too long", &platforms.LinkedInOptions{DocumentTitle: strings.Repeat("a", 401)}, platforms.Target{Media: []platforms.Media{{ContentType: platforms.PDF}}}, []string{"options.document_title: is 401 characters; at most 400"}},
		{"alt text too long", &platforms.XOptions{}, platforms.Target{Media: []platforms.Media{{ContentType: "image/png", AltText: strings.Repeat("a", 1001)}}}, []string{"media[0].alt_text: is 1001 characters; X allows 1000"}},
	} {
		errs, _ := platforms.CheckOptions(tc.o, tc.t)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		assert.Equal(t, tc.errs, got, tc.name)
	}
	_, warnings := platforms.CheckOptions(&platforms.YouTubeOptions{}, platforms.Target{Text: "First line\nmore"})
	require.Len(t, warnings, 1)
	assert.Equal(t, `options.title: not given; the title is the text's first line: "First line"`, warnings[0].Error())
}

func TestDocumentTitle(t *testing.T) {
	t.Parallel()
	pdf := platforms.Media{ContentType: platforms.PDF, Filename: "Q3 results.final.pdf"}
	require.Equal(t, "Q3 results.final", platforms.DocumentTitle(nil, pdf), "the file's name without its extension")
	require.Equal(t, "Deck", platforms.DocumentTitle(&platforms.LinkedInOptions{DocumentTitle: "Deck"}, pdf))
	require.Equal(t, "Document", platforms.DocumentTitle(nil, platforms.Media{ContentType: platforms.PDF, Filename: ".pdf"}))
}

func TestDocumentAltTextIsNotSent(t *testing.T) {
	t.Parallel()
	errs, warnings := platforms.CheckOptions(&platforms.LinkedInOptions{}, platforms.Target{Media: []platforms.Media{{ContentType: platforms.PDF, AltText: "slides"}}})
	require.Empty(t, errs)
	require.Equal(t, []platforms.FieldError{{Field: "media[0].alt_text", Message: "a document takes no alt text; it is not sent"}}, warnings)
}
