package platforms

import (
	"strings"

	"github.com/rivo/uniseg"
)

// GraphemeCount counts a text's user-perceived characters (extended grapheme clusters), as
// networks that limit graphemes count them. ASCII text, the common case, needs no segmentation:
// every byte is one character, except that CR LF is one.
func GraphemeCount(s string) int {
	if IsASCII(s) {
		return len(s) - strings.Count(s, "\r\n")
	}
	return uniseg.GraphemeClusterCount(s)
}

// IsASCII reports whether s holds only ASCII bytes.
func IsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
