package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFailureReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400)
	for _, c := range []struct {
		name   string
		failed []failure
		total  int
		want   string
	}{
		{"none", nil, 3, ""},
		{"the only target", []failure{{"twitter_x", "duplicate content"}}, 1, "twitter_x: duplicate content"},
		{"one of several", []failure{{"instagram", "needs a photo\nsecond line"}}, 3, "1 of 3 platforms failed: instagram: needs a photo"},
		{"several", []failure{{"instagram", "a"}, {"tiktok", " b "}}, 2, "2 of 2 platforms failed: instagram: a; tiktok: b"},
	} {
		got := failureReason(c.failed, c.total)
		if c.want == "" {
			require.Nil(t, got, c.name)
			continue
		}
		require.Equal(t, c.want, *got, c.name)
	}
	got := *failureReason([]failure{{"bluesky", long}}, 1)
	require.LessOrEqual(t, len(got), maxFailureReason+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))
	require.Equal(t, strings.ToValidUTF8(got, "?"), got, "cut on a character boundary")
}
