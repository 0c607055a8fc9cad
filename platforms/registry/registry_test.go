package registry_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

// Every network publishes its text limit, and it is the one its adapter's Validate holds a post
// to: a text of the limit's length passes, one character more is refused for its length (ASCII
// letters and a newline count one in every way of counting). Networks that need media are given
// a video.
func TestTextLimitsAreTheAdaptersOwn(t *testing.T) {
	t.Parallel()
	adapters := registry.New(nil)
	for _, p := range platforms.All {
		l, ok := registry.TextLimits[p]
		require.True(t, ok, "%s publishes no text limit", p)
		require.Positive(t, l.Max, p)
		require.Contains(t, []string{"runes", "graphemes", "x", "bytes", "utf16", "threads"}, l.Count, p)
		video := []platforms.Media{{ID: "m", ContentType: "video/mp4", Size: 1 << 20, Filename: "clip.mp4", URL: "https://media.example/clip.mp4"}}
		// A short first line: YouTube takes it for the title, which has a limit of its own.
		post := func(n int) platforms.Post {
			return platforms.Post{Text: "Title\n" + strings.Repeat("a", n-6), Media: video}
		}
		require.NoError(t, adapters[p].Validate(post(l.Max)), "%s: a text of %d", p, l.Max)
		err := adapters[p].Validate(post(l.Max + 1))
		require.Error(t, err, "%s: a text of %d", p, l.Max+1)
		require.Contains(t, err.Error(), "allows", p)
	}
}
