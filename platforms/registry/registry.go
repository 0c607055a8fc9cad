// Package registry builds the nine adapters from their configurations.
package registry

import (
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/bluesky"
	"github.com/heraldhq/herald/platforms/facebook"
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/linkedin"
	"github.com/heraldhq/herald/platforms/pinterest"
	"github.com/heraldhq/herald/platforms/threads"
	"github.com/heraldhq/herald/platforms/tiktok"
	"github.com/heraldhq/herald/platforms/x"
	"github.com/heraldhq/herald/platforms/youtube"
)

// Adapters are the nine networks by platform.
type Adapters map[platforms.Platform]platforms.Adapter

// New builds every adapter; a platform missing from cfg gets the production defaults.
func New(cfg map[platforms.Platform]platforms.Config) Adapters {
	return Adapters{
		platforms.X:         x.New(cfg[platforms.X]),
		platforms.Bluesky:   bluesky.New(cfg[platforms.Bluesky]),
		platforms.LinkedIn:  linkedin.New(cfg[platforms.LinkedIn]),
		platforms.Facebook:  facebook.New(cfg[platforms.Facebook]),
		platforms.Instagram: instagram.New(cfg[platforms.Instagram]),
		platforms.Threads:   threads.New(cfg[platforms.Threads]),
		platforms.YouTube:   youtube.New(cfg[platforms.YouTube]),
		platforms.Pinterest: pinterest.New(cfg[platforms.Pinterest]),
		platforms.TikTok:    tiktok.New(cfg[platforms.TikTok]),
	}
}

// TextLimit is a network's limit on a post's text and how the network counts it. The limits are
// the adapters' own constants (each adapter's Validate checks them), so a page that counts with
// them and the publish check cannot disagree.
type TextLimit struct {
	Max int `json:"max"`
	// Count is how characters are counted: "runes" (code points), "graphemes" (what a person
	// sees), "x" (X's weighted length: URLs 23, most CJK and emoji 2), "bytes" (UTF-8), "utf16"
	// (UTF-16 code units), "threads" (graphemes, but emoji count as their UTF-8 bytes).
	Count string `json:"count"`
}

// TextLimits are the nine networks' text limits by platform.
var TextLimits = map[platforms.Platform]TextLimit{
	platforms.X:         {x.MaxWeightedLength, "x"},
	platforms.Bluesky:   {bluesky.MaxGraphemes, "graphemes"},
	platforms.LinkedIn:  {linkedin.MaxCommentary, "runes"},
	platforms.Instagram: {instagram.MaxCaptionRunes, "runes"},
	platforms.YouTube:   {youtube.MaxDescBytes, "bytes"},
	platforms.Pinterest: {pinterest.MaxDescChars, "runes"},
	platforms.TikTok:    {tiktok.MaxCaption, "utf16"},
	platforms.Threads:   {threads.MaxText, "threads"},
	platforms.Facebook:  {facebook.MaxTextRunes, "runes"},
}

// TextLimitOf is the text limit of a post of network p with these media: a TikTok photo post's
// text is its description (4,000 UTF-16 code units), not a video's caption.
func TextLimitOf(p platforms.Platform, media []platforms.Media) TextLimit {
	if p == platforms.TikTok && len(media) > 0 && !media[0].IsVideo() {
		return TextLimit{tiktok.MaxPhotoDesc, "utf16"}
	}
	return TextLimits[p]
}

// TextLength is the length of s as network p counts it (TextLimit.Count).
func TextLength(p platforms.Platform, s string) int {
	switch TextLimits[p].Count {
	case "x":
		return x.WeightedLength(s)
	case "graphemes":
		return platforms.GraphemeCount(s)
	case "bytes":
		return len(s)
	case "utf16":
		return tiktok.CaptionLength(s)
	case "threads":
		return threads.Length(s)
	}
	return utf8.RuneCountInString(s)
}

// ImageRules are the networks that take images only in some forms, and those forms: an image of
// another type is converted to JPEG before it is sent (platforms.ConformImages).
var ImageRules = map[platforms.Platform]platforms.ImageRule{
	platforms.Instagram: instagram.Images,
	platforms.TikTok:    tiktok.Photos,
}
