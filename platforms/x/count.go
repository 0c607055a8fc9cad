package x

import (
	"regexp"
	"strings"

	"github.com/heraldhq/herald/platforms"
	"github.com/rivo/uniseg"
)

// MaxWeightedLength is X's limit on a post's weighted length.
const MaxWeightedLength = 280

// urlPattern matches the http(s) URLs that X shortens to t.co links and counts as 23 characters.
var urlPattern = regexp.MustCompile(`https?://[^\s]+`)

// urlTrailing is punctuation that ends a sentence rather than a URL.
const urlTrailing = ".,;:!?'\")]}"

// WeightedLength is a text's length as X counts it (twitter-text v3): every http(s) URL counts 23,
// an emoji sequence (several code points joined into one grapheme) counts 2, and otherwise each
// code point in 0-4351, 8192-8205, 8208-8223 or 8242-8247 counts 1 and every other one 2.
func WeightedLength(s string) int {
	n, pos := 0, 0
	for _, loc := range urlPattern.FindAllStringIndex(s, -1) {
		u := strings.TrimRight(s[loc[0]:loc[1]], urlTrailing)
		n += weighText(s[pos:loc[0]]) + 23
		pos = loc[0] + len(u)
	}
	return n + weighText(s[pos:])
}

func weighText(s string) int {
	if platforms.IsASCII(s) {
		return len(s) // every ASCII code point weighs 1, and no ASCII grapheme is an emoji
	}
	return weighGraphemes(s)
}

func weighGraphemes(s string) int {
	n := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		runes := g.Runes()
		if len(runes) > 1 && isEmojiSequence(runes) {
			n += 2
			continue
		}
		for _, r := range runes {
			n += runeWeight(r)
		}
	}
	return n
}

func runeWeight(r rune) int {
	switch {
	case r >= 0 && r <= 4351, r >= 8192 && r <= 8205, r >= 8208 && r <= 8223, r >= 8242 && r <= 8247:
		return 1
	}
	return 2
}

// isEmojiSequence reports whether a multi-code-point grapheme is an emoji (ZWJ sequences, skin
// tones, keycaps, flags, tag sequences, presentation selectors).
func isEmojiSequence(runes []rune) bool {
	if runes[0] >= 0x1F000 {
		return true
	}
	for _, r := range runes[1:] {
		switch {
		case r == 0x200D, r == 0xFE0F, r == 0x20E3, r >= 0x1F3FB && r <= 0x1F3FF, r >= 0xE0020 && r <= 0xE007F:
			return true
		}
	}
	return false
}
