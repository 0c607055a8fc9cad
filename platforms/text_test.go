package platforms_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/heraldhq/herald/platforms"
)

func FuzzGraphemeCount(f *testing.F) {
	for _, s := range []string{"", "plain text", "a\r\nb\n\rc\r\r\n", "\x00\x7f", "émoji 👩‍👩‍👧 🇫🇷", "\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := platforms.GraphemeCount(s), uniseg.GraphemeClusterCount(s); got != want {
			t.Fatalf("%q: %d graphemes, want %d", s, got, want)
		}
	})
}

func TestCheckText(t *testing.T) {
	for _, ok := range []string{"", "Hello", "tab\there", "lines\nand\r\nreturns\r", "émoji 👩‍👩‍👧 🇫🇷", "zero\u200bwidth", "bom\ufeff", "sep\u2028\u2029", "\u00a0nbsp", "replacement \ufffd as text"} {
		if err := platforms.CheckText(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tc := range []struct {
		in   string
		r    rune
		pos  int
		want string
	}{
		{"\x00", 0, 0, "contains control character U+0000 at position 0"},
		{"nul \x00 here", 0, 4, "U+0000 at position 4"},
		{"bell\a", 7, 4, "U+0007 at position 4"},
		{"é\x1b[31m", 0x1b, 1, "U+001B at position 1"},
		{"del\x7f", 0x7f, 3, "U+007F at position 3"},
		{"👩‍👩‍👧\u0085", 0x85, 5, "U+0085 at position 5"},
		{"c1 \u009f", 0x9f, 3, "U+009F at position 3"},
		{"\v", 0x0b, 0, "U+000B"},
		{"\f", 0x0c, 0, "U+000C"},
		{"ab\xff\xfe", utf8.RuneError, 2, "is not valid UTF-8: byte 0xFF at position 2"},
		{"\xed\xa0\x80", utf8.RuneError, 0, "byte 0xED"}, // an encoded surrogate
		{"é\xc3", utf8.RuneError, 1, "byte 0xC3 at position 1"},
	} {
		err := platforms.CheckText(tc.in)
		var te *platforms.TextError
		if !errors.As(err, &te) {
			t.Fatalf("%q: %v, want a TextError", tc.in, err)
		}
		if te.Rune != tc.r || te.Position != tc.pos || !strings.Contains(te.Error(), tc.want) {
			t.Errorf("%q: %+v %q, want rune %U at %d (%q)", tc.in, te, te.Error(), tc.r, tc.pos, tc.want)
		}
	}
	// Exactly the Cc category but tab, LF and CR is refused.
	for r := rune(0); r < 0x3000; r++ {
		refused := platforms.CheckText(string(r)) != nil
		want := unicode.Is(unicode.Cc, r) && r != '\t' && r != '\n' && r != '\r'
		if refused != want {
			t.Errorf("%U: refused %v, want %v", r, refused, want)
		}
	}
}
