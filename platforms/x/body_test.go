package x

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tweet's body is written as the map it once was: the same bytes, every field present or not.
func TestTweetBodyMatchesTheMap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body tweetBody
		m    map[string]any
	}{
		{tweetBody{Text: "hello"}, map[string]any{"text": "hello"}},
		{tweetBody{}, map[string]any{}},
		{tweetBody{Media: &tweetMedia{MediaIDs: []string{"1", "2"}}}, map[string]any{"media": map[string]any{"media_ids": []string{"1", "2"}}}},
		{
			tweetBody{Text: "<b>&\"x\"", ReplySettings: "mentionedUsers", Reply: &tweetReply{InReplyToTweetID: "42"},
				Poll: &tweetPoll{DurationMinutes: 60, Options: []string{"a", "b"}}},
			map[string]any{"text": "<b>&\"x\"", "reply_settings": "mentionedUsers", "reply": map[string]string{"in_reply_to_tweet_id": "42"},
				"poll": map[string]any{"options": []string{"a", "b"}, "duration_minutes": 60}},
		},
		{tweetBody{Poll: &tweetPoll{DurationMinutes: 5}}, map[string]any{"poll": map[string]any{"options": []string(nil), "duration_minutes": 5}}},
	}
	for _, c := range cases {
		got, err := json.Marshal(&c.body)
		require.NoError(t, err)
		want, err := json.Marshal(c.m)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}
