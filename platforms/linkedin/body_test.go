package linkedin

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A post's body is written as the map it once was: the same bytes, with content or without.
func TestPostBodyMatchesTheMap(t *testing.T) {
	t.Parallel()
	article := map[string]any{"article": map[string]any{"source": "https://example.com/a?b=1&c=<2>", "title": "A"}}
	for _, content := range []map[string]any{nil, article} {
		body := postBody{Author: "urn:li:person:abc", Commentary: `Hello \(world\) "quoted" <b>`, Distribution: mainFeed, LifecycleState: "PUBLISHED", Visibility: "CONNECTIONS"}
		m := map[string]any{
			"author":     "urn:li:person:abc",
			"commentary": `Hello \(world\) "quoted" <b>`,
			"visibility": "CONNECTIONS",
			"distribution": map[string]any{
				"feedDistribution": "MAIN_FEED", "targetEntities": []any{}, "thirdPartyDistributionChannels": []any{},
			},
			"lifecycleState":            "PUBLISHED",
			"isReshareDisabledByAuthor": false,
		}
		if content != nil {
			body.Content = content
			m["content"] = content
		}
		got, err := json.Marshal(&body)
		require.NoError(t, err)
		want, err := json.Marshal(m)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}
