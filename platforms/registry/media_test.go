package registry

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// TestMediaShapes holds every network to the counts and mixes its MediaLimits publish: the
// largest carousel or gallery passes, one more is refused, a mix the network refuses is refused,
// and a PDF goes to LinkedIn only, alone.
func TestMediaShapes(t *testing.T) {
	t.Parallel()
	adapters := New(nil)
	jpeg := platforms.Media{ContentType: "image/jpeg", Size: 1000, Filename: "a.jpg", URL: "https://cdn.example/a.jpg"}
	mp4 := platforms.Media{ContentType: "video/mp4", Size: 1000, Filename: "v.mp4", URL: "https://cdn.example/v.mp4"}
	pdf := platforms.Media{ContentType: platforms.PDF, Size: 1000, Filename: "deck.pdf"}
	photos := func(n int) []platforms.Media { return slices.Repeat([]platforms.Media{jpeg}, n) }
	cases := []struct {
		p        platforms.Platform
		min, max int
		// mixed: photos and videos may share a post.
		mixed bool
	}{
		{platforms.Instagram, 2, 10, true},
		{platforms.Facebook, 2, 10, false},
		{platforms.Threads, 2, 20, true},
		{platforms.LinkedIn, 2, 20, false},
		{platforms.X, 2, 4, false},
		{platforms.Bluesky, 2, 4, false},
		{platforms.Pinterest, 2, 5, false},
		{platforms.TikTok, 2, 35, false},
	}
	for _, c := range cases {
		t.Run(string(c.p), func(t *testing.T) {
			t.Parallel()
			a := adapters[c.p]
			l := a.(platforms.MediaLimiter).MediaLimits()
			require.Equal(t, c.max, l.MaxItems)
			require.Equal(t, c.min, l.MinItems)
			require.Equal(t, c.max, l.MaxImages)
			require.Equal(t, c.mixed, l.Mixed)
			post := func(m []platforms.Media) platforms.Post {
				o := platforms.NewOptions(c.p)
				return platforms.Post{Text: "Hello", Media: m, Options: o}
			}
			require.NoError(t, a.Validate(post(photos(c.min))), "the smallest carousel")
			require.NoError(t, a.Validate(post(photos(c.max))), "the largest carousel")
			err := a.Validate(post(photos(c.max + 1)))
			require.Error(t, err, "one photo over")
			require.Equal(t, platforms.Invalid, platforms.KindOf(err))
			err = a.Validate(post([]platforms.Media{jpeg, mp4}))
			if c.mixed {
				require.NoError(t, err, "photos and videos mixed")
			} else {
				require.ErrorContains(t, err, "a video goes alone")
			}
			err = a.Validate(post([]platforms.Media{pdf}))
			if c.p == platforms.LinkedIn {
				require.NoError(t, err, "a document")
				require.ErrorContains(t, a.Validate(post([]platforms.Media{pdf, jpeg})), "a document goes alone")
				require.ErrorContains(t, a.Validate(post([]platforms.Media{pdf, pdf})), "a document goes alone")
				require.True(t, l.Documents)
				require.Equal(t, 300, l.MaxDocumentPages)
				require.EqualValues(t, 100<<20, l.MaxDocumentBytes)
			} else {
				require.ErrorContains(t, err, "goes to LinkedIn only")
				require.False(t, l.Documents)
			}
		})
	}
	t.Run("youtube", func(t *testing.T) {
		t.Parallel()
		a := adapters[platforms.YouTube]
		require.ErrorContains(t, a.Validate(platforms.Post{Text: "Hi", Media: []platforms.Media{pdf}}), "goes to LinkedIn only")
		require.Error(t, a.Validate(platforms.Post{Text: "Hi", Media: []platforms.Media{mp4, mp4}}))
	})
	t.Run("tiktok under its count", func(t *testing.T) {
		t.Parallel()
		err := adapters[platforms.TikTok].Validate(platforms.Post{Text: "Hi", Media: photos(1)})
		require.ErrorContains(t, err, "photo post takes 2 to 35")
	})
}
