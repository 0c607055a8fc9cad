package platforms

import (
	"fmt"
	"strings"
	"unicode/utf8"

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

// TextError is text no network is sent: a control character, or bytes that are not UTF-8. Its
// message is safe to show and names the character and where it is.
type TextError struct {
	// Rune is the control character (utf8.RuneError when the text is not UTF-8).
	Rune rune
	// Byte is the first byte that is not UTF-8 (when Rune is utf8.RuneError).
	Byte byte
	// Position is where it is, in characters (Unicode code points) counted from 0.
	Position int
}

func (e *TextError) Error() string {
	if e.Rune == utf8.RuneError {
		return fmt.Sprintf("is not valid UTF-8: byte 0x%02X at position %d", e.Byte, e.Position)
	}
	return fmt.Sprintf("contains control character U+%04X at position %d; of the control characters only tab, line feed and carriage return are allowed", e.Rune, e.Position)
}

// CheckText refuses text that must not reach a network: bytes that are not UTF-8, and the
// control characters (Unicode category Cc) other than tab, line feed and carriage return: NUL and
// the other C0 controls (U+0000 to U+001F), DEL (U+007F) and the C1 controls (U+0080 to U+009F),
// which no network displays and several reject or truncate at. Other invisible characters
// (format characters such as U+200B or U+FEFF, and line and paragraph separators) are text and
// pass.
func CheckText(s string) error {
	pos := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
				return &TextError{Rune: rune(c), Position: pos}
			}
			i++
			pos++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return &TextError{Rune: utf8.RuneError, Byte: c, Position: pos}
		}
		if r >= 0x80 && r <= 0x9f {
			return &TextError{Rune: r, Position: pos}
		}
		i += size
		pos++
	}
	return nil
}

// Excerpt is the start of a text for a list: white space folded to single spaces, at most n
// characters (code points), with "…" in place of the rest when it was cut. It is data, never
// markup.
func Excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
